"""Monoids written in C: the associative operators a scan combines with.

A monoid is a C expression over two values ``a`` (the earlier one) and ``b`` (the
later one) plus an identity element. jitscan never reorders the operands of a monoid you
write, so it need not be commutative: ``a`` always stands for the elements before ``b``.
(The CPU tiles reduce the built-in integer operators and float add and mul lane by lane,
out of order: those commute bit for bit.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..dtypes import DType, lookup
from . import expression

Number = int | float


def check_identity(name: str, identity: object) -> tuple:
    """The identity as sorted (dtype name or ``"*"``, number) items, or an error naming what is wrong.

    A number, or a mapping of dtype names (``"*"`` for the rest) to numbers; a number given
    for a named dtype must be one of its values.
    """

    def number(value: object, where: str) -> None:
        numeric = isinstance(value, (int, float, np.integer, np.floating))
        if isinstance(value, (bool, np.bool_)) or not numeric:
            got = f"{value!r} ({type(value).__name__})"
            raise TypeError(f"monoid {name!r}: the identity{where} must be a number, got {got}")

    if not isinstance(identity, Mapping):
        number(identity, "")
        return (("*", identity),)
    if not identity:
        raise ValueError(f"monoid {name!r}: the identity mapping names no dtype")
    items = []
    for key, value in identity.items():
        if key != "*":
            try:
                key = lookup(key).name
            except (TypeError, ValueError) as why:
                raise ValueError(
                    f"monoid {name!r}: the identity names {key!r}, not a dtype jitscan scans: {why}"
                ) from None
        number(value, f" for {key}")
        items.append((key, value))
    if len({k for k, _ in items}) != len(items):
        raise ValueError(f"monoid {name!r}: the identity names a dtype twice: {identity!r}")
    items = tuple(sorted(items, key=lambda kv: kv[0]))
    for key, value in items:
        if key != "*":
            _fitted(name, value, lookup(key))
    return items


def _fitted(name: str, value: Number, dtype: DType) -> np.generic:
    """``value`` as a NumPy scalar of ``dtype``, or ValueError when it is not one of its values."""
    if dtype.is_float:
        return dtype.numpy.type(value)
    info = np.iinfo(dtype.numpy)
    integral = math.isfinite(value) and float(value).is_integer()
    if isinstance(value, (float, np.floating)) and not integral:
        raise ValueError(f"identity {value} of monoid {name!r} is not an integer, for {dtype.name}")
    value = int(value)
    if not info.min <= value <= info.max:
        raise ValueError(f"identity {value} of monoid {name!r} does not fit {dtype.name}")
    return dtype.numpy.type(value)


@dataclass(frozen=True)
class Monoid:
    """An associative operator with an identity, written as a C expression.

    Parameters
    ----------
    name : str
        A short name; it appears in kernel names and error messages.
    combine : str
        A C expression over ``a`` and ``b`` of the element type, e.g. ``"a + b"``.
        ``a`` is the combination of earlier elements, ``b`` of later ones.
    identity : int, float or mapping of dtype name to number
        The identity element: ``combine(identity, x) == combine(x, identity) == x``.
        A mapping gives one value per dtype name, with ``"*"`` for the dtypes it
        does not name.
    commutative : bool, optional
        Informational; jitscan keeps a user monoid's operands in order either way.
    integer_only : bool, optional
        Refuse floating-point dtypes (bitwise operators).

    Examples
    --------
    Forward fill (zeros are gaps, carried over by the last non-zero value):

    >>> ffill = Monoid("ffill", combine="b != 0 ? b : a", identity=0)
    """

    name: str
    combine: str
    identity: Number | Mapping[str, Number] = 0
    commutative: bool = False
    integer_only: bool = False
    _identity_items: tuple = field(init=False, repr=False, compare=True, hash=True)
    _expression: str = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"monoid name must be a C identifier, got {self.name!r}")
        # parsed against the grammar of an expression over a and b (operators.expression)
        object.__setattr__(self, "_expression", expression.render(self.name, self.combine))
        object.__setattr__(self, "_identity_items", check_identity(self.name, self.identity))

    def __hash__(self) -> int:  # identity may be an unhashable mapping
        return hash((self.name, self.combine, self._identity_items, self.commutative, self.integer_only))

    def check_dtype(self, dtype: DType) -> None:
        """Raise TypeError when this monoid cannot combine ``dtype``."""
        if self.integer_only and dtype.is_float:
            raise TypeError(f"op {self.name!r} is defined for integer dtypes only, not {dtype.name}")
        items = dict(self._identity_items)
        if "*" not in items and dtype.name not in items:
            raise TypeError(f"monoid {self.name!r} has no identity for dtype {dtype.name}")

    @property
    def expression(self) -> str:
        """The C the kernels combine with: ``combine`` as the grammar parsed it (divisions guarded)."""
        return self._expression

    def c_function(self, dtype: DType) -> str:
        """The C function ``js_vop(a, b)`` the kernels combine values of ``dtype`` with."""
        return f"JS_DEVICE_FN js_val js_vop(js_val a, js_val b) {{ return ({self._expression}); }}"

    def identity_for(self, dtype: DType) -> np.generic:
        """The identity as a NumPy scalar of ``dtype``."""
        self.check_dtype(dtype)
        items = dict(self._identity_items)
        return _fitted(self.name, items.get(dtype.name, items.get("*")), dtype)


def empty_value(monoid: Monoid, dtype: DType) -> np.generic:
    """A reduction of nothing: the identity, but +0.0 where it is -0.0 (NumPy's empty sum)."""
    value = monoid.identity_for(dtype)
    return dtype.numpy.type(0) if dtype.is_float and value == 0 else value


def _min_max_identity(dtype_name: str, want_max: bool) -> Number:
    dt = np.dtype(dtype_name)
    if dt.kind == "f":
        return float("inf") if want_max else float("-inf")
    info = np.iinfo(dt)
    return int(info.max if want_max else info.min)


def _per_dtype(want_max: bool) -> dict[str, Number]:
    from ..dtypes import DTYPES

    return {name: _min_max_identity(name, want_max) for name in DTYPES}


_ALL_ONES = {"int32": -1, "int64": -1, "uint32": 2**32 - 1, "uint64": 2**64 - 1}

# NaN-propagating min/max, as numpy.minimum / numpy.maximum. JS_ISNAN(x) is defined by
# every prelude (constant 0 for integer types), and user expressions may use it too.
BUILTIN: dict[str, Monoid] = {
    m.name: m
    for m in (
        # -0.0, not +0.0, for floats: -0.0 + x is x for every x, so a sum of -0.0 stays
        # -0.0 wherever the identity pads a tile or starts a segment (as in NumPy)
        Monoid("add", "a + b", {"*": 0, "float32": -0.0, "float64": -0.0}, commutative=True),
        Monoid("mul", "a * b", 1, commutative=True),
        Monoid("min", "(a < b || JS_ISNAN(a)) ? a : b", _per_dtype(True), commutative=True),
        Monoid("max", "(a > b || JS_ISNAN(a)) ? a : b", _per_dtype(False), commutative=True),
        Monoid("and", "a & b", _ALL_ONES, commutative=True, integer_only=True),
        Monoid("or", "a | b", 0, commutative=True, integer_only=True),
        Monoid("xor", "a ^ b", 0, commutative=True, integer_only=True),
    )
}


#: complex64 products on the values' bits as uint64 (jitscan scans no complex type itself):
#: (a.re + i a.im)(b.re + i b.im), the identity 1 + 0i
CMUL64 = Monoid(
    "cmul64",
    "JS_C64(JS_C64_RE(a) * JS_C64_RE(b) - JS_C64_IM(a) * JS_C64_IM(b), "
    "JS_C64_RE(a) * JS_C64_IM(b) + JS_C64_IM(a) * JS_C64_RE(b))",
    {"uint64": int(np.array([1.0], np.complex64).view(np.uint64)[0])},
)


def resolve(op: str | Monoid) -> Monoid:
    """Return the monoid for a built-in name or a Monoid instance."""
    if isinstance(op, Monoid):
        return op
    if isinstance(op, str) and op in BUILTIN:
        return BUILTIN[op]
    raise ValueError(f"unknown op {op!r}; valid ops: {', '.join(BUILTIN)} or a jitscan.Monoid")
