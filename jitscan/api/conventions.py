"""NumPy's and the Array API's conventions: result dtypes, axes, 0-d input and ``out=`` casts.

The kernels scan six element types (``jitscan.dtypes.DTYPES``). Every other real type
NumPy has is scanned in one of them and the result converted: bool, 8- and 16-bit
integers in the 32-bit integer of their signedness (exact for every built-in op, whose
results only depend on the low bits or on order), float16 in float32 (then rounded once,
where NumPy rounds at every step).

Two rules choose the dtype of a result when ``dtype=`` is not given:

- ``"numpy"`` (``cumsum``, ``cumprod``, ``nancumsum``, ``nancumprod``,
  ``cumulative_sum``, ``cumulative_prod``): NumPy's, bool and integers narrower than
  the platform integer become int64 (unsigned: uint64), floats stay;
- ``"keep"`` (``scan``, ``reduce``, ``cummax``, ``cummin``, the segmented functions):
  the input's dtype.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import backends
from ..dtypes import DTYPES, DType, lookup
from ..operators import Monoid, Operator, resolve
from ..plan import arrays

try:  # NumPy >= 1.25
    from numpy.exceptions import AxisError
except ImportError:  # pragma: no cover - older NumPy
    AxisError = np.AxisError  # type: ignore[attr-defined,misc]

#: input dtypes scanned in a wider type, and that type
WIDENED = {
    "bool": "uint32",
    "int8": "int32",
    "int16": "int32",
    "uint8": "uint32",
    "uint16": "uint32",
    "float16": "float32",
}
#: every dtype jitscan takes as input
INPUT_DTYPES = tuple(DTYPES) + tuple(WIDENED)
RULES = ("numpy", "keep")


@dataclass(frozen=True)
class Types:
    """The dtype a scan runs in (one the kernels scan) and the dtype of its result."""

    scan: DType
    result: np.dtype

    @property
    def converted(self) -> bool:
        """Whether the scan's output must be converted to the result dtype."""
        return self.scan.numpy != self.result

    def takes(self, out: Any) -> bool:
        """Whether the scan can write into ``out`` as it is (no conversion on the way)."""
        return out is not None and not self.converted and same(out.dtype, self.result)

    def finish(self, res: Any) -> Any:
        """The scan's output in the result dtype (converted where the scan ran wider)."""
        return arrays.astype(res, self.result) if self.converted else res


def _unsupported(dt: np.dtype) -> TypeError:
    hint = ""
    if dt.kind == "c":
        hint = " (complex input takes op='add', and 'mul' in complex64: cumsum, cumprod, scan, reduce)"
    elif dt.kind in "OSUVMm":
        hint = " (scan a numeric array)"
    return TypeError(
        f"jitscan does not scan dtype {dt}{hint}; it takes {', '.join(INPUT_DTYPES)} "
        "(or name the type to scan in with dtype=)"
    )


def input_dtype(x: Any) -> np.dtype:
    """The NumPy dtype of an array (its byte order aside), or TypeError for one jitscan cannot scan."""
    dt = getattr(x, "dtype", None)
    dt = np.dtype(dt if dt is not None else np.asarray(x).dtype)
    dt = dt.newbyteorder("=") if dt.byteorder not in "=|" else dt
    if dt.name not in DTYPES and dt.name not in WIDENED:
        raise _unsupported(dt)
    return dt


def types(src: np.dtype, dtype: Any, rule: str) -> Types:
    """The scan and result dtypes of a call on input of dtype ``src`` with ``dtype=``."""
    if dtype is not None:
        want = np.dtype(dtype)
        if not want.isnative:  # NumPy's results are in native byte order whatever dtype= says
            want = want.newbyteorder("=")
        if want.name in WIDENED:
            return Types(lookup(WIDENED[want.name]), want)
        if want.name not in DTYPES:
            raise _unsupported(want)
        return Types(lookup(want), want)
    if rule == "numpy":
        if src.kind == "b" or (src.kind == "i" and src.itemsize < 8):
            return Types(lookup("int64"), np.dtype("int64"))
        if src.kind == "u" and src.itemsize < 8:
            return Types(lookup("uint64"), np.dtype("uint64"))
    if src.name in WIDENED:
        return Types(lookup(WIDENED[src.name]), src)
    return Types(lookup(src), src)


def narrowed(x: Any, op: Any, t: Types) -> tuple[Any, Any]:
    """``x`` and ``op`` for a scan in a type wider than its result (``WIDENED``).

    The input is first cast to the result's dtype, as NumPy casts to ``dtype=`` before
    it scans (``cummax(int32, dtype=int8)`` wraps the values, then scans). An integer
    op's identity is the wide type's, clipped to the result's range: still an identity
    for values of the result's type, and what an exclusive scan or an empty reduction
    shows (int8's 127 for ``min``, not int32's maximum cast to int8).
    """
    if not t.converted:
        return x, op
    if np.dtype(x.dtype) != t.result:
        x = arrays.astype(x, t.result)
    if t.result.kind in "biu":
        m = resolve(op)
        ident = int(m.identity_for(t.scan))
        lo, hi = (
            (0, 1) if t.result.kind == "b" else (int(np.iinfo(t.result).min), int(np.iinfo(t.result).max))
        )
        if not lo <= ident <= hi:
            clipped = min(max(ident, lo), hi)
            if isinstance(m, Operator):  # the same Python function, for this call's type
                op = replace(m, identity=clipped)
            else:
                op = Monoid(m.name, m.combine, {t.scan.name: clipped}, m.commutative, m.integer_only)
    return x, op


def check_out_cast(result: np.dtype, out: Any) -> None:
    """TypeError unless a result of dtype ``result`` may go into ``out`` (NumPy's ``same_kind`` rule)."""
    if out is None:
        return
    if not hasattr(out, "dtype"):
        raise TypeError(f"out= must be an array, got {type(out).__name__}")
    to = np.dtype(out.dtype)
    if not np.can_cast(result, to, casting="same_kind"):
        raise TypeError(
            f"cannot cast the result from dtype {result} to out= of dtype {to} with casting rule 'same_kind'"
        )


def same(a: Any, b: np.dtype) -> bool:
    """Whether dtype ``a`` is ``b`` in native byte order (what a kernel may write into)."""
    a = np.dtype(a)
    return a == b and a.isnative


def put(out: Any, res: Any) -> Any:
    """``res`` into ``out`` (same shape), cast to out's dtype."""
    if tuple(out.shape) != tuple(res.shape):
        raise ValueError(f"out= has shape {tuple(out.shape)}, expected {tuple(res.shape)}")
    if isinstance(out, np.ndarray):
        out[...] = arrays.to_host(res)
        return out
    b = backends.for_array(out)
    if b is None or not b.owns(res):
        raise TypeError(f"out= must be an array of the input's kind ({type(res).__name__})")
    if not out.flags.c_contiguous:
        raise ValueError("out= must be C-contiguous")
    if np.dtype(res.dtype) != np.dtype(out.dtype):
        res = arrays.astype(res, out.dtype)
    b.copy(out, b.contiguous(res))
    return out


def put_reduction(out: Any, res: Any) -> Any:
    """A reduction's result ``res`` (a NumPy scalar, or an array) into ``out``, as NumPy's
    ``out=`` of a reduction: of the result's shape (0-d for a whole array's), cast to
    out's dtype by the ``same_kind`` rule. Returns ``out``."""
    if res is out:
        return out
    res = np.asarray(res) if isinstance(res, np.generic) else res
    check_out_cast(np.dtype(res.dtype), out)
    arrays.check_out_kind(out, backends.for_array(res))  # as a scan's out=
    return put(out, res)


def numpy_sum_zero(res: Any, op: Any, dtype: np.dtype) -> Any:
    """A reduction's result with NumPy's sign of zero: its float sums start from +0.0.

    The identity of float ``add`` is -0.0 (so scans keep the sign of -0.0 as NumPy's
    do), but ``numpy.sum`` of nothing or of negative zeros is +0.0: adding +0.0 changes
    exactly those results and no other.
    """
    if op != "add" or dtype.kind != "f":
        return res
    b = backends.for_array(res)
    if b is not None:  # on the device, without the host waiting (Backend.plus_zero)
        return b.plus_zero(res)
    return res + dtype.type(0)


def replace_nan(x: Any, value: float) -> Any:
    """``x`` with every NaN replaced by ``value`` (a copy)."""
    if isinstance(x, np.ndarray):
        return np.where(np.isnan(x), x.dtype.type(value), x)
    return backends.for_array(x).replace_nan(x, value)


def normalize_axis(axis: Any, ndim: int) -> int:
    """``axis`` as an index in ``range(ndim)``.

    Raises AxisError (a ValueError and an IndexError) when it is out of range.
    """
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an integer or None, got {axis!r}")
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise AxisError(axis, ndim)
    return axis % ndim


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """An axis or a tuple of axes (no repeats) as sorted indices; AxisError when out of range."""
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = tuple(normalize_axis(a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis!r}")
    return tuple(sorted(out))


__all__ = [
    "INPUT_DTYPES",
    "RULES",
    "WIDENED",
    "AxisError",
    "narrowed",
    "Types",
    "check_out_cast",
    "input_dtype",
    "move_axis",
    "normalize_axes",
    "normalize_axis",
    "numpy_sum_zero",
    "put",
    "replace_nan",
    "same",
    "types",
]


def move_axis(a: Any, axis: int, back: bool = False) -> Any:
    """``a`` with ``axis`` moved last (``back``: the last axis moved to ``axis``), as a view."""
    ndim = len(a.shape)
    if axis == ndim - 1:
        return a
    order = list(range(ndim))
    if back:
        order.insert(axis, order.pop(-1))
    else:
        order.append(order.pop(axis))
    return a.transpose(order)


def call_types(x: Any, op: str | Monoid, rule: str, dtype: Any, out: Any) -> Types:
    """The scan and result dtypes of a call (``types``, with an integer ``out``'s own)."""
    t = types(input_dtype(x), dtype, rule)
    if dtype is None and out is not None and rule == "numpy" and wraps_alike(op, x, out):
        # integers: the scan in out's dtype has exactly the bits of the promoted one, cast
        t = Types(lookup(np.dtype(out.dtype)), np.dtype(out.dtype))
    return t


def wraps_alike(op: str | Monoid, x: Any, out: Any) -> bool:
    """Whether an integer sum or product in ``out``'s dtype equals the wider one cast to it."""
    to = np.dtype(out.dtype)
    ints = x.dtype.kind in "biu" and to.kind in "iu"
    return op in ("add", "mul") and ints and to.isnative and to.name in DTYPES
