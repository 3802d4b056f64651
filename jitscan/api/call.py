"""One call of a public function as one value, the kind of its input, and what is refused.

Every public function (``scan``, ``reduce``, ``cumsum`` and its kin, the segmented ones)
describes its call as a :class:`Call` and hands it to one dispatch (``dispatch.py``),
which picks the input's kind once (:func:`kind_of`: tuple, Dask, Awkward, complex,
axis, plain) and asks :func:`refuse` whether that kind takes the call's options. The
refusals are one table (:data:`REFUSALS`), so a combination is refused the same way,
with the same message, whichever function was called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import variants
from ..kernels.spec import KINDS, check_choice
from . import awkward, complexes, conventions
from .cache import as_array

#: the kinds of a segmented scan (segmented_reduce is the reduction)
SEGMENTED_KINDS = tuple(k for k in KINDS if k != "reduce")


def reduction_by_offsets(variant: str | None) -> str:
    """The variant of a reduction by segments (segmented_reduce, reduce along axes): the one
    asked for, which must reduce by offsets, else the registry's pick for reductions."""
    return variants.choose(variant, "offsets", "reduce", reduction=True)


#: the kinds of input, in the order :func:`kind_of` tells them apart
TUPLE, DASK, AWKWARD, COMPLEX, AXIS, PLAIN = "tuple", "dask", "awkward", "complex", "axis", "plain"
KINDS_OF_INPUT = (TUPLE, DASK, AWKWARD, COMPLEX, AXIS, PLAIN)
#: the kinds held in one device's (or the host's) memory: what a Dask chunk is
IN_MEMORY = (COMPLEX, AXIS, PLAIN)

#: what each public function computes: a scan, a reduction, or either by segments
FORMS = {
    "scan": "scan",
    "memcpy": "scan",
    "reduce": "reduce",
    "segmented_scan": "segmented",
    "segmented_reduce": "segmented_reduce",
}


@dataclass(frozen=True)
class Call:
    """The options of one call of a public function (everything but the input).

    ``function`` is the public function that made it (its name; the NumPy-named ones
    make scans, see :data:`FORMS`); ``rule`` the NumPy dtype rule of its result
    (``conventions.types``: ``"keep"`` or ``"numpy"``); ``nan`` what a NaN input counts
    as (``nancumsum``), and ``include_initial`` the Array API's zero first. Segments are
    ``flags`` or ``offsets`` (Awkward Arrays bring their own); lanes along ``axis``
    become rows, which the runner gives the prepared scan as ``row_len``.
    """

    function: str = "scan"
    op: Any = "add"
    kind: str = "inclusive"
    variant: str | None = None
    backend: str | None = None
    dtype: Any = None
    out: Any = None
    stats: dict | None = None
    axis: Any = None
    keepdims: bool = False
    output: Any = None
    initial: Any = None
    flags: Any = None
    offsets: Any = None
    rule: str = "keep"
    include_initial: bool = False
    nan: float | None = None
    knobs: dict[str, Any] = field(default_factory=dict)

    @property
    def form(self) -> str:
        """``"scan"``, ``"reduce"``, ``"segmented"`` or ``"segmented_reduce"``."""
        return FORMS.get(self.function, "scan")

    @property
    def segmented(self) -> bool:
        return self.form in ("segmented", "segmented_reduce")

    @property
    def reduces(self) -> bool:
        """Whether the call's result is one value per array or segment (``reduce``,
        ``segmented_reduce``), which ``out=`` takes whole."""
        return self.form in ("reduce", "segmented_reduce")

    @property
    def segments(self) -> str:
        """The segmented mode the call's segments ask for ("" for none or both)."""
        if (self.offsets is None) == (self.flags is None):
            return ""
        return "offsets" if self.offsets is not None else "flags"

    @property
    def input_name(self) -> str:
        """The name of the input argument, as messages say it."""
        return "values" if self.segmented else "x"


def is_dask(x: Any) -> bool:
    """Whether ``x`` is a Dask array (without importing Dask)."""
    t = type(x)
    return t.__name__ == "Array" and t.__module__.startswith("dask.array")


def whole(axis: Any, ndim: int) -> bool:
    """Whether a reduction along ``axis`` reduces every axis of an ``ndim``-D array (not for
    ``axis=()``, which reduces none, nor for axes out of range, which the axis path refuses)."""
    if axis is None:
        return True
    if axis == ():
        return False
    try:
        return len(conventions.normalize_axes(axis, ndim)) == ndim
    except (TypeError, ValueError):  # AxisError is a ValueError
        return False


def kind_of(x: Any, call: Call) -> tuple[str, Any]:
    """The kind of ``x`` for ``call``, and ``x`` as that kind's handler takes it.

    Tuple values first (a tuple of arrays of any kind), then Dask and Awkward arrays
    (whose modules are not imported to tell), then arrays in memory: complex ones (split
    into real scans), scans along an axis or reductions over some of the axes, and the
    plain scan of the flattened array.
    """
    if type(x) is tuple:
        return TUPLE, x
    if is_dask(x):
        return DASK, x
    if awkward.module_of(x) is not None:
        return AWKWARD, x
    x = as_array(x)
    if complexes.is_complex(x, call.dtype):
        return COMPLEX, x
    if call.axis is not None and not (call.form == "reduce" and whole(call.axis, len(x.shape))):
        return AXIS, x
    return PLAIN, x


@dataclass(frozen=True)
class Refusal:
    """A combination refused: for inputs of ``kinds``, a call ``when(call, x)`` holds for."""

    kinds: tuple[str, ...]
    when: Callable[[Call, Any], bool]
    error: type[Exception]
    message: str


_ARRAYS = (DASK, AWKWARD, COMPLEX, AXIS, PLAIN)
_SCANS = ("scan", "segmented")
_ONE_OF = "give exactly one of offsets= (CSR, nseg + 1 entries) or flags= (one per value)"

#: every combination of options and input kind that is refused, in the order checked;
#: the message may name ``{input}``, the input argument (``x`` or ``values``)
REFUSALS = (
    Refusal(
        (TUPLE,),
        lambda c, x: c.initial is not None,
        ValueError,
        "initial= takes one value; tuple values do not take one yet (combine it into the first "
        "element instead)",
    ),
    Refusal(
        _ARRAYS,
        lambda c, x: c.output is not None,
        TypeError,
        "output= selects fields of a tuple value; {input} is one array",
    ),
    Refusal(
        (TUPLE,),
        lambda c, x: c.form == "reduce" and (c.keepdims or isinstance(c.axis, tuple)),
        ValueError,
        "a reduction of tuple values takes one axis= (an int) and no keepdims=",
    ),
    Refusal(
        _ARRAYS,
        lambda c, x: c.form == "scan" and c.kind == "reduce" and c.axis is not None,
        ValueError,
        "kind='reduce' with axis= is reduce(x, op, axis=...)",
    ),
    Refusal(
        (AWKWARD,),
        lambda c, x: c.flags is not None or c.offsets is not None,
        ValueError,
        "an Awkward Array carries its own segments; do not pass offsets= or flags=",
    ),
    Refusal(
        (AWKWARD,),
        lambda c, x: c.out is not None,
        ValueError,
        "out= does not apply to an Awkward Array: the result is a new Awkward Array",
    ),
    Refusal(
        (TUPLE, DASK, COMPLEX, AXIS, PLAIN),
        lambda c, x: c.form == "segmented" and not c.segments,
        ValueError,
        _ONE_OF,
    ),
    Refusal(
        (TUPLE, DASK, COMPLEX, AXIS, PLAIN),
        lambda c, x: c.form == "segmented_reduce" and c.offsets is None,
        ValueError,
        "segmented_reduce needs offsets= (CSR, nseg + 1 entries)",
    ),
    Refusal(
        (DASK,),
        lambda c, x: c.out is not None,
        ValueError,
        "out= does not apply to a Dask array: the result is a new Dask array",
    ),
    Refusal(
        (TUPLE,),
        lambda c, x: c.out is not None and c.reduces,
        ValueError,
        "out= is not taken by a reduction of tuple values: it returns each field's value",
    ),
    Refusal(
        (DASK,),
        lambda c, x: c.stats is not None,
        ValueError,
        "stats= does not apply to a Dask array: its chunks run as separate tasks",
    ),
    Refusal(
        (DASK, AWKWARD, COMPLEX, PLAIN),
        # a list of an Awkward Array starts a segment, as an offset does
        lambda c, x: c.initial is not None and c.segmented and c.flags is None,
        ValueError,
        "initial= carries into a segmented scan up to its first head: give flags= (flags[0] == 0 "
        "for a segment that goes on from before), not segments by offsets",
    ),
    Refusal(
        (COMPLEX,),
        lambda c, x: c.initial is not None,
        ValueError,
        "initial= takes a real number: complex scans do not take one yet",
    ),
    Refusal(
        (COMPLEX,),
        lambda c, x: c.stats is not None,
        ValueError,
        "stats= is not available for complex input (it runs as several scans)",
    ),
    Refusal(
        (DASK, AXIS),
        lambda c, x: c.initial is not None and c.form in _SCANS and c.axis is not None,
        ValueError,
        "initial= is one value for the whole (flattened) array; it takes no axis=",
    ),
    Refusal(
        (DASK, AXIS),
        lambda c, x: c.initial is not None and c.form == "reduce" and not whole(c.axis, x.ndim),
        ValueError,
        "initial= takes a real number and reduces the whole array (no axis=)",
    ),
    Refusal(
        (AXIS,),
        lambda c, x: c.stats is not None and c.form == "reduce",
        ValueError,
        "stats= applies to a reduction of the whole array (no axis=)",
    ),
)


def refuse(call: Call, kind: str, x: Any = None) -> None:
    """Raise for an option the call's function or ``x``'s kind does not take.

    First the choices of the function itself (a segmented scan's kind; the cumulative
    and segmented functions do not copy, ``memcpy``), then :data:`REFUSALS`. What only
    the dtypes or the device can tell (an op a dtype does not take, a variant without a
    carry) is refused further down, by the prepared scan, the same way for every function.
    """
    if call.form == "segmented":
        check_choice("kind", call.kind, SEGMENTED_KINDS)
    if call.variant is not None and call.function not in ("scan", "reduce", "memcpy"):
        # the cumulative functions scan (a copy does not); the segmented ones need the form
        variants.require(call.variant, "segmented" if call.form.startswith("segmented") else "scan")
    for r in _REFUSALS_OF[kind]:
        if r.when(call, x):
            raise r.error(r.message.format(input=call.input_name))


#: the refusals that apply to each kind of input, in the table's order
_REFUSALS_OF = {kind: tuple(r for r in REFUSALS if kind in r.kinds) for kind in KINDS_OF_INPUT}


__all__ = [
    "AWKWARD",
    "AXIS",
    "COMPLEX",
    "Call",
    "DASK",
    "IN_MEMORY",
    "KINDS_OF_INPUT",
    "PLAIN",
    "REFUSALS",
    "Refusal",
    "SEGMENTED_KINDS",
    "reduction_by_offsets",
    "TUPLE",
    "is_dask",
    "kind_of",
    "refuse",
    "whole",
]
