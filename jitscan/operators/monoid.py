"""Monoids written in C: the associative operators a scan combines with.

A monoid is a C expression over two values ``a`` (the earlier one) and ``b`` (the
later one) plus an identity element. jitscan never reorders the operands of a monoid you
write, so it need not be commutative: ``a`` always stands for the elements before ``b``.
(The CPU tiles reduce the built-in integer operators and float add and mul lane by lane,
out of order: those commute bit for bit.)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..dtypes import DType, lookup

Number = int | float

#: the longest ``combine`` expression accepted
COMBINE_LIMIT = 2000
#: the names a ``combine`` expression may use: the operands, the preludes' helpers, casts
#: to the value types, and the math functions both dialects have (C's, overloaded)
COMBINE_NAMES = frozenset(
    (
        "a b JS_ISNAN JS_C64 JS_C64_RE JS_C64_IM "
        "js_val int unsigned long float double short char signed js_i64 js_u64 js_u32 "
        "min max fmin fmax fabs abs sqrt exp log log1p expm1 log2 log10 sin cos tan asin acos "
        "atan atan2 sinh cosh tanh floor ceil trunc round pow hypot copysign fmod isnan isinf "
        "isfinite erf erfc"
    ).split()
)
_TOKEN = re.compile(
    r"\s+"
    r"|(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[uUlLfF]*"
    r"|(?P<name>[A-Za-z_]\w*)"
    r"|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^~!<>?:(),]"
)


def check_combine(name: str, combine: str) -> None:
    """Refuse a ``combine`` that is not an expression over ``a`` and ``b`` (ValueError).

    The text is pasted into the kernels' C, so it may hold only what an expression needs:
    the operands, number literals, C's operators and parentheses, ``?:``, casts to the
    value types, ``JS_ISNAN`` / ``JS_C64*`` and the math functions of
    :data:`COMBINE_NAMES`. Anything else (another name, a brace, a semicolon, a ``#``, a
    string, a member access) could end the function or reach outside the kernel.
    """
    if len(combine) > COMBINE_LIMIT:
        raise ValueError(f"monoid {name!r}: combine is {len(combine)} characters, over {COMBINE_LIMIT}")
    for comment in ("//", "/*"):
        if comment in combine:
            raise ValueError(f"monoid {name!r}: combine may not hold a comment ({comment!r} in {combine!r})")
    at = 0
    while at < len(combine):
        m = _TOKEN.match(combine, at)
        if m is None:
            raise ValueError(
                f"monoid {name!r}: combine may not hold {combine[at]!r} (at {at} of {combine!r}); it is an "
                "expression over a and b"
            )
        word = m.group("name")
        if word is not None and word not in COMBINE_NAMES:
            raise ValueError(
                f"monoid {name!r}: combine uses the name {word!r}; an expression over a and b may use "
                f"only {', '.join(sorted(COMBINE_NAMES))}"
            )
        at = m.end()


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

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"monoid name must be a C identifier, got {self.name!r}")
        if not isinstance(self.combine, str) or not self.combine.strip():
            raise ValueError("monoid combine must be a non-empty C expression over a and b")
        check_combine(self.name, self.combine)
        if isinstance(self.identity, Mapping):
            # "*": every dtype not named
            items = tuple(sorted((k if k == "*" else lookup(k).name, v) for k, v in self.identity.items()))
        elif isinstance(self.identity, (int, float, np.integer, np.floating)) and not isinstance(
            self.identity, (bool, np.bool_)
        ):
            items = (("*", self.identity),)
        else:
            raise TypeError(f"monoid identity must be a number or a mapping, got {self.identity!r}")
        object.__setattr__(self, "_identity_items", items)

    def __hash__(self) -> int:  # identity may be an unhashable mapping
        return hash((self.name, self.combine, self._identity_items, self.commutative, self.integer_only))

    def check_dtype(self, dtype: DType) -> None:
        """Raise TypeError when this monoid cannot combine ``dtype``."""
        if self.integer_only and dtype.is_float:
            raise TypeError(f"op {self.name!r} is defined for integer dtypes only, not {dtype.name}")
        items = dict(self._identity_items)
        if "*" not in items and dtype.name not in items:
            raise TypeError(f"monoid {self.name!r} has no identity for dtype {dtype.name}")

    def c_function(self, dtype: DType) -> str:
        """The C function ``js_vop(a, b)`` the kernels combine values of ``dtype`` with."""
        return f"JS_DEVICE_FN js_val js_vop(js_val a, js_val b) {{ return ({self.combine}); }}"

    def identity_for(self, dtype: DType) -> np.generic:
        """The identity as a NumPy scalar of ``dtype``."""
        self.check_dtype(dtype)
        items = dict(self._identity_items)
        value = items.get(dtype.name, items.get("*"))
        if dtype.is_float:
            return dtype.numpy.type(value)
        info = np.iinfo(dtype.numpy)
        integral = math.isfinite(value) and float(value).is_integer()
        if isinstance(value, (float, np.floating)) and not integral:
            raise ValueError(f"identity {value} of monoid {self.name!r} is not an integer, for {dtype.name}")
        value = int(value)
        if not info.min <= value <= info.max:
            raise ValueError(f"identity {value} of monoid {self.name!r} does not fit {dtype.name}")
        return dtype.numpy.type(value)


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
