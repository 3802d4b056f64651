"""Operators written in Python: typed by Numba, lowered to C by :mod:`.lower`, checked.

An :class:`Operator` is a :class:`~jitscan.operators.Monoid` whose combine is a Python
function of two values, a number or a tuple of numbers. For each value type a scan
meets, Numba compiles the function (which is how it is typed, and how jitscan runs it
on the host), jitscan writes its C, and before the first scan of that type the host
checks on values sampled from the input that the identity is one and that the
function is associative.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dtypes import DType, Record
from .monoid import Monoid

#: pairs and triples a check samples
CHECK_SAMPLES = 256
#: relative tolerance of the checks on floats, by itemsize
_RTOL = {4: 1e-3, 8: 1e-9}


def _numba():
    try:
        import numba
    except ImportError as exc:  # pragma: no cover - numba is a dependency
        raise ImportError("operators written in Python need Numba: pip install numba") from exc
    return numba


def value_fields(value: DType | tuple[DType, ...]) -> tuple[DType, ...]:
    """The fields of a value type (one for a scalar)."""
    return value if isinstance(value, tuple) else (value,)


def _plain(dtype: DType | Record | tuple[DType, ...]) -> DType | tuple[DType, ...]:
    """A value type as the methods below take it: a DType, or a tuple of them."""
    return dtype.fields if isinstance(dtype, Record) else dtype


def numba_type(value: DType | tuple[DType, ...]) -> Any:
    """Numba's type of a value: a scalar, or a tuple of scalars."""
    numba = _numba()
    if isinstance(value, tuple):
        return numba.types.Tuple([numba.from_dtype(d.numpy) for d in value])
    return numba.from_dtype(value.numpy)


@dataclass(frozen=True)
class Compiled:
    """One operator on one value type: Numba's function and jitscan's C."""

    dispatcher: Any
    c_function: str


@dataclass(frozen=True, eq=False)
class Operator(Monoid):
    """An associative operator written in Python; make one with :func:`jitscan.operator`.

    Attributes
    ----------
    fn : callable
        ``fn(x, y)``: ``x`` combines the earlier elements, ``y`` the later ones.
    check : bool
        Check identity and associativity on sampled input before the first scan of
        each value type.
    """

    fn: Callable[[Any, Any], Any] | None = None
    check: bool = True
    #: what makes two operators the same (see _identity_key); their compilations and checks
    _key: Any = field(default=None, init=False, repr=False, compare=False)
    _compiled: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _checked: set = field(default_factory=set, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise TypeError(f"jitscan.operator takes a function, got {self.fn!r}")
        ident = self.identity
        if isinstance(ident, (tuple, list)):
            if not 1 <= len(ident) <= 4 or not all(_is_number(v) for v in ident):
                raise TypeError(f"a tuple identity holds 1 to 4 numbers, got {ident!r}")
            object.__setattr__(self, "identity", tuple(ident))
            object.__setattr__(self, "_identity_items", (("*", tuple(ident)),))
        elif _is_number(ident):
            object.__setattr__(self, "_identity_items", (("*", ident),))
        else:
            raise TypeError(f"an operator's identity is a number or a tuple of numbers, got {ident!r}")
        key = _identity_key(self)
        object.__setattr__(self, "_key", key)
        # operators made again from the same code (a lambda in a loop) share their work
        shared = _SHARED.setdefault(key, ({}, set())) if key[0] != "id" else ({}, set())
        object.__setattr__(self, "_compiled", shared[0])
        object.__setattr__(self, "_checked", shared[1])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Operator) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    @property
    def arity(self) -> int:
        """Fields of the values this operator combines (1: numbers)."""
        return len(self.identity) if isinstance(self.identity, tuple) else 1

    # -- types -----------------------------------------------------------------------
    def check_dtype(self, dtype: DType | tuple[DType, ...]) -> None:
        """Type the function for ``dtype`` with Numba; raise TypeError where it fails."""
        dtype = _plain(dtype)
        fields = value_fields(dtype)
        if len(fields) != self.arity:
            what = "numbers" if self.arity == 1 else f"tuples of {self.arity}"
            raise TypeError(f"operator {self.name!r} combines {what}, not values of {_type_name(dtype)}")
        self.identity_for(dtype)
        self.compiled(dtype)

    def identity_for(self, dtype: DType | tuple[DType, ...]) -> Any:
        """The identity in ``dtype``: a NumPy scalar, or a tuple of them."""
        dtype = _plain(dtype)
        fields = value_fields(dtype)
        values = self.identity if isinstance(self.identity, tuple) else (self.identity,)
        if len(values) != len(fields):
            raise TypeError(
                f"operator {self.name!r} has an identity of {len(values)} fields, not {len(fields)}"
            )
        out = tuple(_scalar(v, d, self.name) for v, d in zip(values, fields, strict=True))
        return out if isinstance(dtype, tuple) else out[0]

    def compiled(self, dtype: DType | tuple[DType, ...]) -> Compiled:
        """Numba's function and the C of this operator on ``dtype`` (made once)."""
        dtype = _plain(dtype)
        key = tuple(d.name for d in value_fields(dtype)) if isinstance(dtype, tuple) else dtype.name
        done = self._compiled.get(key)
        if done is None:
            done = self._compiled[key] = self._compile(dtype)
        return done

    def _compile(self, dtype: DType | tuple[DType, ...]) -> Compiled:
        numba = _numba()
        from .lower import lower

        vt = numba_type(dtype)
        sig = (vt, vt)
        try:
            dispatcher = numba.njit(sig, error_model="numpy")(self.fn)
        except numba.core.errors.NumbaError as exc:
            raise TypeError(
                f"Numba cannot type operator {self.name!r} on {_type_name(dtype)}:\n{exc}"
            ) from None
        cres = dispatcher.overloads[sig]
        _check_result(self.name, cres.signature.return_type, dtype)
        return Compiled(dispatcher, lower(self.fn, cres, vt, self.name).text)

    def c_function(self, dtype: DType | tuple[DType, ...]) -> str:
        return self.compiled(dtype).c_function

    # -- checks ----------------------------------------------------------------------
    def verify(self, dtype: DType | tuple[DType, ...], samples: Any) -> None:
        """Check the identity and associativity on ``samples`` (an array per field).

        Runs once per value type (later calls return at once), and not at all for an
        operator made with ``check=False``. Raises ValueError with a counterexample.
        """
        dtype = _plain(dtype)
        key = tuple(d.name for d in value_fields(dtype))
        if not self.check or key in self._checked:
            return
        fields = value_fields(dtype)
        columns = [np.asarray(s, dtype=d.numpy).ravel() for s, d in zip(samples, fields, strict=True)]
        n = min(len(c) for c in columns)
        if n:
            f = self.compiled(dtype).dispatcher
            pack = _packer(dtype)
            values = [pack(tuple(c[i] for c in columns)) for i in range(n)]
            e = pack(self.identity_for(dtype) if isinstance(dtype, tuple) else (self.identity_for(dtype),))
            rng = np.random.default_rng(0)
            for i in range(min(n, CHECK_SAMPLES)):
                x = values[i]
                for got, what in ((f(e, x), "op(identity, x)"), (f(x, e), "op(x, identity)")):
                    if not _same(got, x, fields):
                        raise ValueError(
                            f"the identity of operator {self.name!r} is not one on {_type_name(dtype)}: "
                            f"{what} = {_show(got)} for x = {_show(x)}; fix the identity, or make the "
                            "operator with check=False"
                        )
            for i, j, k in rng.integers(0, n, size=(CHECK_SAMPLES, 3)):
                x, y, z = values[i], values[j], values[k]
                left, right = f(f(x, y), z), f(x, f(y, z))
                if not _same(left, right, fields):
                    raise ValueError(
                        f"operator {self.name!r} is not associative on {_type_name(dtype)}: "
                        f"op(op(x, y), z) = {_show(left)} but op(x, op(y, z)) = {_show(right)} "
                        f"for x = {_show(x)}, y = {_show(y)}, z = {_show(z)}. A scan combines "
                        "in any grouping; make the operator with check=False to scan anyway"
                    )
        self._checked.add(key)


#: the compilations and checks of operators by identity key, shared between equal operators
_SHARED: dict[tuple, tuple[dict, set]] = {}


def _identity_key(op: Operator) -> tuple:
    """Equal for operators made from the same code with the same captured values, identity,
    name and check: ``jitscan.operator(lambda x, y: ..., identity=0)`` written inside a loop
    makes one operator, not one per iteration (each would be typed and compiled again).
    Functions whose captured values cannot be compared are only equal to themselves."""
    fn = op.fn
    code = getattr(fn, "__code__", None)
    try:
        # with their types: k=1 and k=1.0 compare equal, but they type the function apart
        cells = tuple(_typed(c.cell_contents) for c in (getattr(fn, "__closure__", None) or ()))
        defaults = tuple(_typed(v) for v in (getattr(fn, "__defaults__", None) or ()))
        items = tuple((k, _typed(v)) for k, v in op._identity_items)
        key = ("code", code, defaults, cells, items, op.name, op.check)
        hash(key)
    except (TypeError, ValueError):  # unhashable or empty cells
        return ("id", id(op))
    return key if code is not None else ("id", id(op))


def _typed(v: object) -> tuple:
    """A value as a key part that tells 1, 1.0, True and numpy.float32(1) apart."""
    if isinstance(v, tuple):
        return (tuple, tuple(_typed(x) for x in v))
    return (type(v), v)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating, np.bool_)) and not isinstance(v, complex)


def _type_name(dtype: DType | tuple[DType, ...]) -> str:
    if isinstance(dtype, tuple):
        return "(" + ", ".join(d.name for d in dtype) + ")"
    return dtype.name


def _scalar(value: Any, d: DType, name: str) -> np.generic:
    if d.is_float:
        return d.numpy.type(value)
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"identity {value} of operator {name!r} is not an integer, for a {d.name} field")
    info = np.iinfo(d.numpy)
    if not info.min <= int(value) <= info.max:
        raise ValueError(f"identity {value} of operator {name!r} does not fit {d.name}")
    return d.numpy.type(int(value))


def _packer(dtype: DType | tuple[DType, ...]) -> Callable[[tuple], Any]:
    if isinstance(dtype, tuple):
        return tuple
    return lambda t: t[0]


def _check_result(name: str, rt: Any, dtype: DType | tuple[DType, ...]) -> None:
    """Refuse a function whose result is not the value type (or does not cast to it in kind)."""
    numba = _numba()
    nt = numba.types
    fields = value_fields(dtype)
    if isinstance(dtype, tuple) != isinstance(rt, nt.BaseTuple) or (
        isinstance(rt, nt.BaseTuple) and len(rt) != len(fields)
    ):
        raise TypeError(f"operator {name!r} returns {rt}, not a value of {_type_name(dtype)}")
    for got, want in zip(rt if isinstance(rt, nt.BaseTuple) else (rt,), fields, strict=True):
        try:
            have = numba.np.numpy_support.as_dtype(nt.unliteral(got))
        except (NotImplementedError, numba.core.errors.NumbaError):
            raise TypeError(f"operator {name!r} returns {rt}, not a value of {_type_name(dtype)}") from None
        if not np.can_cast(have, want.numpy, "same_kind"):
            raise TypeError(
                f"operator {name!r} returns {rt} for values of {_type_name(dtype)}: {have} does not "
                f"convert to {want.name} in kind (cast it in the function if that is meant)"
            )


def _same(a: Any, b: Any, fields: tuple[DType, ...]) -> bool:
    ta = a if isinstance(a, tuple) else (a,)
    tb = b if isinstance(b, tuple) else (b,)
    scale = max((abs(float(v)) for v in (*ta, *tb) if math.isfinite(float(v))), default=0.0)
    for u, v, d in zip(ta, tb, fields, strict=True):
        if d.is_float:
            u, v = float(u), float(v)
            if math.isnan(u) and math.isnan(v) or u == v:
                continue
            if not (math.isfinite(u) and math.isfinite(v)) or abs(u - v) > _RTOL[d.itemsize] * max(
                scale, 1e-30
            ):
                return False
        elif int(u) != int(v):
            return False
    return True


def _show(v: Any) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(_show(u) for u in v) + ")"
    return repr(v.item() if isinstance(v, np.generic) else v)


def operator(
    fn: Callable[[Any, Any], Any] | None = None,
    *,
    identity: Any,
    name: str | None = None,
    check: bool = True,
) -> Any:
    """Make a scan operator from a Python function; usable as a decorator.

    Parameters
    ----------
    fn : callable
        ``fn(x, y)`` returning the combination of ``x`` (the earlier elements) and
        ``y`` (the later ones). Values are numbers, or tuples of up to 4 numbers when
        ``identity`` is a tuple. It must be associative; it need not be commutative.
        The function may use arithmetic, comparisons, ``and``/``or``/``not``,
        conditional expressions, ``if``/``else``, local variables, tuple indexing and
        unpacking, ``min``/``max``/``abs``, casts to number types (``float``, ``int``,
        ``numpy.float32``...) and the ``math`` functions both C dialects have.
    identity : number or tuple of numbers
        ``fn(identity, x) == fn(x, identity) == x``.
    name : str, optional
        A C identifier naming the operator in kernels and messages (default: the
        function's name).
    check : bool, optional
        Before the first scan of each value type, check on values sampled from the
        input that ``identity`` is one and that ``fn`` is associative (exactly for
        integers, within a tolerance for floats); a failure raises ValueError with the
        counterexample.

    Returns
    -------
    Operator
        Accepted as ``op=`` by every scan function. Numba types ``fn`` on the value
        type of each scan (a function it cannot type, or whose result does not convert
        to the value type in kind, raises TypeError with Numba's message); jitscan
        writes its C, which :func:`jitscan.source` shows.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> ffill = jitscan.operator(lambda x, y: y if y != 0 else x, identity=0)
    >>> jitscan.scan(np.array([0, 3, 0, 5, 0], np.int32), op=ffill)
    array([0, 3, 3, 5, 5], dtype=int32)
    >>> @jitscan.operator(identity=(1.0, 0.0))
    ... def affine(x, y):  # h = a * h + b as pairs (a, b)
    ...     return (x[0] * y[0], x[1] * y[0] + y[1])
    >>> jitscan.scan((np.array([0.5, 0.5, 2.0]), np.array([1.0, 1.0, 1.0])), op=affine, output=1)
    array([1. , 1.5, 4. ])
    """

    def make(f: Callable[[Any, Any], Any]) -> Operator:
        label = name or getattr(f, "__name__", "op")
        label = re.sub(r"\W", "_", label).strip("_") or "op"
        if not label[0].isalpha():
            label = "op_" + label
        return Operator(label, "", identity, fn=f, check=check)

    return make if fn is None else make(fn)
