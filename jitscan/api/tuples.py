"""Scans of tuple values: a tuple of arrays in, a tuple of arrays out.

A tuple value is a few numbers combined together by an operator written in Python
(``jitscan.operator``): a linear recurrence's ``(a, b)``, argmax's ``(value, index)``,
Welford's ``(count, mean, M2)``. Its fields live in arrays of their own (a structure of
arrays, as NumPy users keep them); the kernels read each field's array, combine
structs in registers and write the fields asked for (``output=``). ``jitscan.index``
stands for the element's position: a field computed as loaded, never stored.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import variants
from ..dtypes import lookup
from ..operators import Monoid, Operator
from ..plan import PreparedScan, arrays, check_knobs
from .cache import LIMIT, host_tag, shortcut
from .call import Call
from .conventions import move_axis, normalize_axis


class Index:
    """The position of each element, as a field of a tuple value (``jitscan.index``).

    Positions count from 0 over the flattened input; along an axis (``axis=``), along
    that axis. The default type is int64; ``jitscan.index.astype("int32")`` gives
    another integer type.
    """

    def __init__(self, dtype: Any = "int64") -> None:
        d = lookup(dtype)
        if d.is_float:
            raise TypeError(f"an index is an integer, not {d.name}")
        self.dtype = d.numpy

    def astype(self, dtype: Any) -> Index:
        return Index(dtype)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Index) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("jitscan.index", self.dtype))

    def __repr__(self) -> str:
        return "jitscan.index" if self.dtype == np.int64 else f"jitscan.index.astype({self.dtype.name!r})"


index = Index()

#: prepared tuple scans by call signature (emptied by jitscan.api.clear_cache)
_PREPARED: dict[tuple, PreparedScan] = shortcut()


def is_fields(x: Any) -> bool:
    """Whether ``x`` is the tuple of arrays of a tuple value."""
    return type(x) is tuple


def run(xs: tuple, call: Call) -> Any:
    """A scan or reduction of tuple values (see :func:`jitscan.scan`), refused already where
    it does not apply (``call.refuse``)."""
    if call.axis is not None:
        return _along_axis(xs, call)
    p, single = prepared_call(xs, call)
    res = p(xs, call.out, flags=call.flags, offsets=call.offsets, stats=call.stats)
    return res[0] if single else res


def prepared_call(xs: tuple, call: Call) -> tuple[PreparedScan, bool]:
    """The prepared scan of a call on tuple values without ``axis``, and whether it returns
    one array (``output=`` an int) rather than a tuple; what does not fit raises here."""
    op, outputs, single, b, _, xs, fields = _checked(xs, call)
    index_fields = tuple(k for k, x in enumerate(xs) if isinstance(x, Index))
    kind = "reduce" if call.form in ("reduce", "segmented_reduce") else call.kind
    seg = call.segments
    p = _prepared(
        op, kind, call.variant, b.name, fields, index_fields, outputs, seg, call.stats, call.knobs, xs
    )
    return p, single


def _checked(
    xs: tuple, call: Call
) -> tuple[Operator, tuple[int, ...], bool, Any, bool, tuple, tuple[str, ...]]:
    """The operator, the fields written, whether one is returned, the backend, whether the
    fields are on its device, the fields (host ones as NumPy arrays) and their types: what
    every call on tuple values checks."""
    op = _operator(call.op, xs)
    outputs, single = _outputs(call.output, len(xs))
    given = [x for x in xs if not isinstance(x, Index)]
    if not given:
        raise ValueError("a tuple value needs at least one field given as an array")
    b, on_device = arrays.pick_backend(given[0], call.backend)
    xs = tuple(x if isinstance(x, Index) or on_device else np.asarray(x) for x in xs)
    shapes = {tuple(x.shape) for x in xs if not isinstance(x, Index)}
    if len(shapes) != 1:
        raise ValueError(f"the arrays of a tuple value differ in shape: {sorted(shapes)}")
    return op, outputs, single, b, on_device, xs, _field_types(xs, call.dtype)


def _along_axis(xs: tuple, call: Call) -> Any:
    """Every 1-D lane along ``call.axis`` on its own: lanes become rows (segments) of the
    flattened fields.

    An index field is then the position along the axis, so it is given as an array.
    A reduction along ``axis`` reduces each lane to one value (the axis removed).
    """
    op, outputs, single, b, on_device, xs, fields = _checked(xs, call)
    kind, variant, knobs, stats, out = call.kind, call.variant, call.knobs, call.stats, call.out
    if call.form == "reduce":
        kind = "reduce"
    shape = next(tuple(x.shape) for x in xs if not isinstance(x, Index))
    ax = normalize_axis(call.axis, len(shape))
    queue = b.queue_of(next(x for x in xs if not isinstance(x, Index))) if on_device else None
    moved = []
    for x in xs:
        if isinstance(x, Index):
            host = np.broadcast_to(
                np.arange(shape[ax], dtype=x.dtype).reshape(
                    [-1 if i == ax else 1 for i in range(len(shape))]
                ),
                shape,
            )
            x = b.to_device(np.ascontiguousarray(host), queue) if on_device else host
        moved.append(move_axis(x, ax))
    lanes = tuple(moved[0].shape)
    row = lanes[-1]
    if kind == "reduce":
        seg, n_lanes = "offsets", int(np.prod(lanes[:-1], dtype=np.int64))
        variant = variants.choose(variant, reduction=True)
        p = _prepared(op, "reduce", variant, b.name, fields, (), outputs, seg, False, knobs, moved)
        res = p(tuple(moved), offsets=np.arange(0, n_lanes * row + 1, row, dtype=np.int64))
        res = tuple(r.reshape(lanes[:-1]) for r in res)
    else:
        p = _prepared(op, kind, variant, b.name, fields, (), outputs, "rows", stats is not None, knobs, moved)
        flat = p(tuple(moved), row_len=row, stats=stats) if row else _empty_lanes(p, moved, on_device, b)
        res = tuple(move_axis(r.reshape(lanes), ax, back=True) for r in flat)
        res = tuple(b.contiguous(r) if on_device else np.ascontiguousarray(r) for r in res)
    if out is not None:
        outs = out if isinstance(out, tuple) else (out,)
        for o, r in zip(outs, res, strict=True):
            if on_device:
                b.copy(o, r)
            else:
                o[...] = r
        res = outs
    return res[0] if single else res


def _empty_lanes(p: PreparedScan, moved: list, on_device: bool, b: Any) -> tuple:
    shape = tuple(moved[0].shape)
    res = tuple(np.empty(shape, p.dtype.fields[k].numpy) for k in p.outputs)
    return tuple(b.to_device(r, b.queue_of(moved[0])) for r in res) if on_device else res


def _operator(op: Any, xs: tuple) -> Operator:
    if not isinstance(op, Operator):
        what = op.name if isinstance(op, Monoid) else repr(op)
        raise TypeError(
            f"a tuple of arrays is scanned by an operator written in Python (jitscan.operator), not {what}"
        )
    if op.arity != len(xs):
        raise ValueError(
            f"operator {op.name!r} combines values of {op.arity} fields; {len(xs)} arrays were given"
        )
    return op


def _outputs(output: Any, arity: int) -> tuple[tuple[int, ...], bool]:
    """The fields written, and whether the result is one array rather than a tuple."""
    if output is None:
        return tuple(range(arity)), False
    single = isinstance(output, (int, np.integer))
    wanted = (int(output),) if single else tuple(int(k) for k in output)
    if not wanted or len(set(wanted)) != len(wanted) or not all(-arity <= k < arity for k in wanted):
        raise ValueError(f"output= names distinct fields of 0..{arity - 1}, got {output!r}")
    wanted = tuple(k % arity for k in wanted)
    if list(wanted) != sorted(wanted):
        raise ValueError(f"output= names fields in increasing order, got {output!r}")
    return wanted, single


def _field_types(xs: tuple, dtype: Any) -> tuple[str, ...]:
    if dtype is None:
        return tuple(lookup(x.dtype).name for x in xs)
    if not isinstance(dtype, (tuple, list)) or len(dtype) != len(xs):
        raise ValueError(f"dtype= of a tuple value is a tuple of {len(xs)} dtypes")
    return tuple(lookup(d).name for d in dtype)


def _prepared(
    op: Operator,
    kind: str,
    variant: str | None,
    backend: str,
    fields: tuple[str, ...],
    index_fields: tuple[int, ...],
    outputs: tuple[int, ...],
    segmented: str,
    stats: bool | dict | None,
    knobs: dict[str, Any],
    xs: Any,
) -> PreparedScan:
    first = next(x for x in xs if not isinstance(x, Index))
    counting = bool(stats) if isinstance(stats, bool) else stats is not None
    key = (type(first), op, kind, variant, backend, fields, index_fields, outputs, segmented, counting)
    key += (*knobs.items(), *host_tag(first))
    p = _PREPARED.get(key)
    if p is None:
        check_knobs(knobs)
        b, on_device = arrays.pick_backend(first, backend)
        p = PreparedScan(
            fields,
            op,
            kind=kind,
            variant=variant,
            backend=backend,
            device=b.device_of(first) if on_device else None,
            segmented=segmented,
            stats=counting,
            index_fields=index_fields,
            outputs=outputs,
            **knobs,
        )
        if len(_PREPARED) >= LIMIT:
            del _PREPARED[next(iter(_PREPARED))]
        _PREPARED[key] = p
    return p
