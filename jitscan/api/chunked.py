"""Dask arrays: a scan of a chunked array is a lazy Dask graph with jitscan on every chunk.

A 1-D scan has two plans, chosen when the graph is built (``dask.config`` key
``"jitscan.dask-plan"``: ``"chain"``, ``"tree"`` or ``"auto"``, the default):

- the *chain* reads each element once and writes it once: chunk i is scanned from the
  last element of chunk i - 1's result (``initial=`` a one-element device array, which
  the kernel's carry is copied from on the device, so no task waits for the GPU). Its
  chunks run one after the other, which costs nothing where they share one device; it
  is the plan ``"auto"`` takes under Dask's in-process schedulers (threads, synchronous);
- the *tree* reads each element twice and writes it once, and its chunks run in
  parallel, on several devices or machines. ``"auto"`` takes it under a distributed
  client, where each link of a chain would wait for a round trip through the scheduler
  (measured: 6 ms a chunk on one dask-cuda worker), and under ``scheduler="processes"``:

  1. each chunk but the last is reduced to one value (its total: one read);
  2. one small task folds the totals in order into each chunk's carry (the combination
     of every chunk before it, and of ``initial=``);
  3. each chunk is scanned from its carry by the single-pass chained kernel (one read,
     one write; ``initial=`` of :func:`jitscan.scan`).

A segmented scan carries the lifted pair: in the tree a chunk's summary is whether it
holds a head and the total after its last head; a carry stops at the chunk's first head
(in the chain, the previous chunk's last result is that running value already). Along an
axis the carry of a block is an array (a row of totals): the block is scanned with it
in front, which costs one copy. Reductions are Dask's tree reduction with jitscan on the
chunks. Chunks may be NumPy arrays (scanned on the default device) or CuPy arrays
(scanned on the GPU that holds them); the graph runs on any Dask scheduler.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import backends
from ..operators import Monoid, resolve
from ..plan.arrays import initial_value, to_host
from . import conventions
from .cache import host_tag, remember, shortcut

#: the ``dask.config`` key of a 1-D scan's plan: "chain", "tree" or "auto" (the default)
PLAN_KEY = "jitscan.dask-plan"

#: the NumPy ufunc of each built-in op (the carries' fold computes with them)
UFUNCS = {
    "add": np.add,
    "mul": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


def is_dask(x: Any) -> bool:
    """Whether ``x`` is a Dask array (without importing Dask)."""
    t = type(x)
    return t.__name__ == "Array" and t.__module__.startswith("dask.array")


def _dask() -> Any:
    try:
        import dask.array as da
        from dask.base import tokenize
        from dask.highlevelgraph import HighLevelGraph
    except ImportError as exc:  # pragma: no cover - is_dask() was true
        raise ImportError("Dask arrays need dask[array]: pip install 'jitscan[dask]'") from exc
    return da, tokenize, HighLevelGraph


def _like(host: np.ndarray, device: Any) -> Any:
    """``host`` on the device and queue of ``device`` when that is a backend's array, else itself."""
    b = backends.for_array(device)
    return host if b is None else b.to_device(host, b.queue_of(device))


def _host_scalar(v: Any) -> Any:
    """A 0-d or one-element result as a NumPy scalar (a device's comes to the host)."""
    return np.asarray(to_host(v)).reshape(-1)[0]


def combine(a: Any, b: Any, op: str | Monoid, dtype: np.dtype) -> Any:
    """``op(a, b)`` of two values of ``dtype``: by NumPy for a built-in op, else by jitscan."""
    if a is None:
        return b
    if isinstance(op, str) and op in UFUNCS:
        return UFUNCS[op](np.asarray(a, dtype), np.asarray(b, dtype), dtype=dtype)[()]
    from .flat import run

    return _host_scalar(
        run(np.array([a, b], dtype), op, "reduce", "keep", None, None, dtype, None, None, None, {})
    )


def _known_chunks(values: Any) -> None:
    """Segments are placed by chunk sizes: refuse chunks of unknown size (NaN), as Dask does."""
    if any(c != c for c in values.chunks[0]):
        raise ValueError(
            "the chunk sizes of this Dask array are unknown (NaN); segments are placed by them: "
            "call values.compute_chunk_sizes() first"
        )


def _check_carried(dtype: np.dtype, variant: Any, knobs: dict[str, Any]) -> None:
    """A chunk is scanned from its carry: refuse what takes none, at graph construction."""
    if variant not in (None, "fallback", "lookback") or knobs.get("deterministic"):
        what = "deterministic=True" if knobs.get("deterministic") else f"variant={variant!r}"
        raise ValueError(
            f"a Dask array's chunks are scanned from their carries (initial=), which needs variant "
            f"'fallback' or 'lookback', not deterministic; got {what}"
        )
    if dtype.kind == "c":
        raise TypeError(
            "a Dask array of complex values is not scanned yet (a chunk's carry is one real value)"
        )


def _check(out: Any, stats: Any) -> None:
    if out is not None:
        raise ValueError("out= does not apply to a Dask array: the result is a new Dask array")
    if stats is not None:
        raise ValueError("stats= does not apply to a Dask array: its chunks run as separate tasks")


# -- scans -------------------------------------------------------------------------------


def scan(x: Any, calls: Calls, out: Any, stats: Any, axis: int | None, initial: Any = None) -> Any:
    """``flat.run`` of a Dask array (its arguments but these in ``calls``): a lazy Dask array."""
    _check(out, stats)
    op, kind, rule, variant, dtype, knobs = (
        calls.op,
        calls.kind,
        calls.rule,
        calls.variant,
        calls.dtype,
        calls.knobs,
    )
    if kind == "reduce":
        return reduce(x, op, None, False, variant, calls.backend, dtype, knobs, initial)
    resolve(op)  # an unknown op fails here, not in a task
    _check_carried(np.dtype(x.dtype), variant, knobs)
    t = conventions.types(conventions.input_dtype(x._meta), dtype, rule)
    result = np.dtype(t.result)
    if axis is None:
        x = x.reshape(-1) if x.ndim != 1 else x
        axis = 0
    else:
        if initial is not None:
            raise ValueError("initial= is one value for the whole (flattened) array; it takes no axis=")
        axis = conventions.normalize_axis(axis, x.ndim)
    if x.ndim == 1 and axis == 0:
        if _chained(x, calls.kind, calls.nan):
            return _chain_1d(x, calls, initial, result)
        return _scan_1d(x, calls, initial, result)
    return _scan_axis(x, calls, axis, result)


@dataclass(frozen=True)
class Calls:
    """A Dask scan's chunk calls: ``flat.run``'s arguments beside the chunk (one task argument)."""

    op: Any
    kind: str
    rule: str
    variant: Any
    backend: Any
    dtype: Any
    knobs: dict
    include_initial: bool
    nan: Any

    def run(
        self, block: Any, kind: str, *, axis: Any = None, first: bool = False, initial: Any = None
    ) -> Any:
        """``flat.run`` of one chunk; ``first``: the chunk that takes ``include_initial``."""
        from .flat import run, shortcut_for

        plain = kind != "reduce" and self.nan is None and not (first and self.include_initial)
        if axis is None and plain:
            # a chain's or a tree's chunk call: the prepared scan of the whole call, looked
            # up once per process (as cumsum's common call), not flat.run's way
            key = (type(block), block.dtype, self.op, kind, self.rule, self.variant, self.backend, self.dtype)
            key += (*self.knobs.items(), *host_tag(block))
            try:  # as the running functions' shortcuts (api/running.py)
                p = _CHUNK_CALLS[key]
            except (KeyError, TypeError):
                p = shortcut_for(
                    block, self.op, kind, self.rule, self.dtype, None, self.variant, self.backend, self.knobs
                )
                remember(_CHUNK_CALLS, key, p)
            if p is not None:
                return p(block, initial=initial)
        return run(
            block,
            self.op,
            kind,
            self.rule,
            self.variant,
            self.backend,
            self.dtype,
            None,
            None,
            axis,
            self.knobs,
            self.include_initial and first,
            self.nan,
            initial=initial,
        )


#: the prepared scans of chunk calls (Calls.run), per call and chunk type
_CHUNK_CALLS: dict = shortcut()


def _scan_1d(x: Any, calls: Calls, initial: Any, result: np.dtype) -> Any:
    da, tokenize, HighLevelGraph = _dask()
    token = tokenize(x, calls, initial)
    total, carries, name = f"jitscan-total-{token}", f"jitscan-carries-{token}", f"jitscan-scan-{token}"
    blocks = len(x.chunks[0])
    dsk: dict = {(total, i): (_block_total, (x.name, i), calls) for i in range(blocks - 1)}
    first = None if initial is None else initial_value(initial, result)
    dsk[carries] = (_fold, [(total, i) for i in range(blocks - 1)], first, calls.op, result)
    for i in range(blocks):
        dsk[(name, i)] = (_block_scan, (x.name, i), carries, i, calls)
    chunks = list(x.chunks[0])
    if calls.include_initial:
        chunks[0] += 1
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, (tuple(chunks),), meta=x._meta.astype(result))


def _chained(values: Any, kind: str, nan: Any = None) -> bool:
    """Whether a scan's chunks take their carries along a chain (see the module's notes)."""
    import dask

    plan = dask.config.get(PLAN_KEY, "auto")
    if plan not in ("auto", "chain", "tree"):
        raise ValueError(f"dask.config {PLAN_KEY!r} must be 'auto', 'chain' or 'tree', got {plan!r}")
    if any(c != c for c in values.chunks[0]) or (kind == "exclusive" and nan is not None):
        return False  # a chain finds its links by the chunk sizes; NaN exclusive: no such call
    if plan != "auto":
        return plan == "chain"
    return _in_process()


def _in_process() -> bool:
    """Whether a compute now would run its tasks in this process (Dask's threads or
    synchronous scheduler). Elsewhere each link of a chain would wait for its predecessor's
    result to travel: through a distributed scheduler, or between the processes of
    ``scheduler="processes"``."""
    import dask.base
    import dask.local
    import dask.threaded

    return dask.base.get_scheduler() in (None, dask.threaded.get, dask.local.get_sync)


def _chain_1d(x: Any, calls: Calls, initial: Any, result: np.dtype) -> Any:
    """Chunk i is scanned from the end of chunk i - 1's result, read on the device."""
    da, tokenize, HighLevelGraph = _dask()
    token = tokenize(x, calls, initial, "chain")
    name = f"jitscan-chain-{token}"
    first = None if initial is None else initial_value(initial, result)
    dsk: dict = {}
    before = None  # the last chunk before with elements: its result and input end the carry
    exclusive = calls.kind == "exclusive"  # whose carry also needs the input's last element
    for i, size in enumerate(x.chunks[0]):
        link = (None, None) if before is None else ((name, before), (x.name, before) if exclusive else None)
        dsk[(name, i)] = (_chain_scan, (x.name, i), *link, first, i, calls, result)
        before = i if size else before
    chunks = list(x.chunks[0])
    if calls.include_initial:
        chunks[0] += 1
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, (tuple(chunks),), meta=x._meta.astype(result))


def _chain_scan(block: Any, done: Any, done_in: Any, first: Any, i: int, calls: Calls, result: Any) -> Any:
    call = (calls.op, calls.variant, calls.backend)
    carry = first if done is None else carry_after(done, done_in, calls.kind, *call, result)
    return calls.run(block, calls.kind, first=i == 0, initial=carry if block.size else None)


def carry_after(
    done: Any, done_in: Any, kind: str, op: Any, variant: Any, backend: Any, result: np.dtype
) -> Any:
    """The running value at the end of a scanned chunk: its result ``done`` of input ``done_in``.

    One element, left on the device that holds it (the next scan reads it there); of an
    exclusive scan, the last result combined with the last input.
    """
    on_device = backends.for_array(done)
    if kind == "inclusive":
        return done[-1:] if on_device else done[-1]
    last_in = done_in[-1:].astype(result)
    if not on_device:
        return combine(done[-1], last_in[0], op, result)
    from .flat import run

    both = on_device.concatenate([done[-1:], last_in])
    return run(both, op, "reduce", "keep", variant, backend, result, None, None, None, {})


def _block_total(block: Any, calls: Calls) -> Any:
    # left where it is: a CuPy total stays on the GPU, so that the reductions of the
    # chunks queue back to back, and the fold reads them all back at once
    return calls.run(block, "reduce")


def _to_host(values: list) -> list:
    """Scalars and 0-d arrays as NumPy scalars; read back once every reduction is queued
    (the first read waits for the GPU, the others find their values there)."""
    return [_host_scalar(v) for v in values]


def _fold(totals: list, first: Any, op: Any, dtype: np.dtype) -> list:
    """Each block's carry: None for the first (without ``initial=``), then the running combination."""
    carries, acc = [first], first
    for v in _to_host(totals):
        acc = combine(acc, v, op, dtype)
        carries.append(acc)
    return carries


def _block_scan(block: Any, carries: list, i: int, calls: Calls) -> Any:
    carry = carries[i] if block.size else None  # an empty chunk takes none
    return calls.run(block, calls.kind, first=i == 0, initial=carry)


def _scan_axis(x: Any, calls: Calls, axis: int, result: np.dtype) -> Any:
    """Along ``axis``: block j is scanned with the row of its carries in front (one copy)."""
    da, tokenize, HighLevelGraph = _dask()
    token = tokenize(x, calls, axis)
    total, carry, name = f"jitscan-total-{token}", f"jitscan-carry-{token}", f"jitscan-scan-{token}"
    dsk: dict = {}
    for idx in np.ndindex(*x.numblocks):
        j = idx[axis]
        if j + 1 < x.numblocks[axis]:
            dsk[(total, *idx)] = (_row_total_of, (x.name, *idx), axis, calls)
        if j >= 1:
            prev = idx[:axis] + (j - 1,) + idx[axis + 1 :]
            before = (carry, *prev) if j >= 2 else None
            dsk[(carry, *idx)] = (_row_combine, before, (total, *prev), axis, calls.op, result)
        args = (carry, *idx) if j >= 1 else None
        dsk[(name, *idx)] = (_block_scan_axis, (x.name, *idx), args, axis, j == 0, calls)
    chunks = list(x.chunks)
    if calls.include_initial:
        chunks[axis] = (chunks[axis][0] + 1, *chunks[axis][1:])
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, tuple(chunks), meta=x._meta.astype(result))


def _row_total_of(block: Any, axis: int, calls: Calls) -> Any:
    if block.shape[axis] == 0:
        return None  # an empty block: nothing to carry
    return _take(calls.run(block, "inclusive", axis=axis), axis, -1)


def _take(a: Any, axis: int, at: int) -> Any:
    """The slice ``at`` of ``a`` along ``axis``, kept as an axis of length one."""
    index = [slice(None)] * a.ndim
    index[axis] = slice(at, at + 1) if at != -1 else slice(-1, None)
    return a[tuple(index)]


def _row_combine(before: Any, total: Any, axis: int, op: Any, dtype: np.dtype) -> Any:
    """The carry row of a block: the rows of the blocks before it, combined (None: nothing yet)."""
    if before is None or total is None:
        return total if before is None else before
    from .flat import run

    both = _concat([before.astype(dtype), total.astype(dtype)], axis)
    return _take(run(both, op, "inclusive", "keep", None, None, dtype, None, None, axis, {}), axis, -1)


def _concat(parts: list, axis: int) -> Any:
    return np.concatenate(parts, axis=axis)  # CuPy's through __array_function__


def _block_scan_axis(block: Any, carry: Any, axis: int, first: bool, calls: Calls) -> Any:
    if carry is None:
        return calls.run(block, calls.kind, axis=axis, first=first)
    from .flat import run

    scan_dtype = np.dtype(conventions.types(conventions.input_dtype(block), calls.dtype, calls.rule).result)
    if calls.nan is not None and block.dtype.kind == "f":
        block = conventions.replace_nan(block, calls.nan)
    joined = _concat([carry.astype(scan_dtype), block.astype(scan_dtype)], axis)
    inc = run(
        joined,
        calls.op,
        "inclusive",
        "keep",
        calls.variant,
        calls.backend,
        scan_dtype,
        None,
        None,
        axis,
        calls.knobs,
    )
    index = [slice(None)] * inc.ndim
    index[axis] = slice(1, None) if calls.kind == "inclusive" else slice(None, -1)
    return inc[tuple(index)]


# -- reductions --------------------------------------------------------------------------


def reduce(
    x: Any,
    op: str | Monoid,
    axis: Any,
    keepdims: bool,
    variant: str | None,
    backend: str | None,
    dtype: Any,
    knobs: dict[str, Any],
    initial: Any = None,
) -> Any:
    """:func:`jitscan.reduce` of a Dask array: Dask's tree reduction, jitscan on the chunks."""
    da, _, _ = _dask()
    resolve(op)
    from .flat import reduce as reduce_

    def chunk(block: Any, axis: Any = None, keepdims: bool = True) -> Any:
        return reduce_(
            block, op, axis=axis, keepdims=True, variant=variant, backend=backend, dtype=dtype, **knobs
        )

    def combine_(block: Any, axis: Any = None, keepdims: bool = True) -> Any:
        return reduce_(block, op, axis=axis, keepdims=True, dtype=dtype)

    def aggregate(block: Any, axis: Any = None, keepdims: bool = False) -> Any:
        res = reduce_(block, op, axis=axis, keepdims=keepdims, dtype=dtype)
        if start is not None:  # the whole array's reduction, of any shape (keepdims)
            value = combine(start, _host_scalar(res), op, np.dtype(res.dtype))
            res = np.asarray(value, res.dtype).reshape(res.shape)
        return res

    t = conventions.types(conventions.input_dtype(x._meta), dtype, "keep")
    out = np.dtype(t.result)
    whole = axis is None or (
        isinstance(axis, tuple) and sorted(a % x.ndim for a in axis) == list(range(x.ndim))
    )
    if initial is not None and not whole:
        raise ValueError("initial= takes a real number and reduces the whole array (no axis=)")
    start = None if initial is None else initial_value(initial, out)
    return da.reduction(
        x, chunk, aggregate, combine=combine_, axis=axis, keepdims=keepdims, dtype=out, concatenate=True
    )


# -- segmented scans -----------------------------------------------------------------------


def segmented_scan(
    values: Any,
    offsets: Any,
    flags: Any,
    op: str | Monoid,
    kind: str,
    variant: str | None,
    backend: str | None,
    dtype: Any,
    out: Any,
    stats: Any,
    knobs: dict[str, Any],
    initial: Any = None,
) -> Any:
    """:func:`jitscan.segmented_scan` of a Dask array: segments may cross chunks."""
    da, tokenize, HighLevelGraph = _dask()
    _check(out, stats)
    resolve(op)
    _check_carried(np.dtype(values.dtype), variant, knobs)
    if (offsets is None) == (flags is None):
        raise ValueError("give exactly one of offsets= (CSR, nseg + 1 entries) or flags= (one per value)")
    if initial is not None and offsets is not None:
        raise ValueError(
            "initial= carries into a segmented scan up to its first head: give flags= (flags[0] == 0 "
            "for a segment that goes on from before), not segments by offsets"
        )
    values = values.reshape(-1) if values.ndim != 1 else values
    _known_chunks(values)
    n = values.shape[0]
    t = conventions.types(conventions.input_dtype(values._meta), dtype, "keep")
    result = np.dtype(t.result)
    token = tokenize(values, offsets, flags, op, kind, variant, backend, dtype, knobs, initial)
    heads = f"jitscan-heads-{token}"
    dsk: dict = {}
    deps = [values]
    starts = np.cumsum((0, *values.chunks[0]))
    if flags is not None:
        if is_dask(flags):
            flags = flags.reshape(-1).rechunk(values.chunks)
        else:
            flags = np.asarray(flags).reshape(-1)
            if flags.size != n:
                raise ValueError(f"flags has {flags.size} entries; the values have {n}")
            flags = da.from_array(flags, chunks=values.chunks)
        deps.append(flags)
        for i in range(len(values.chunks[0])):
            dsk[(heads, i)] = (_as_heads, (flags.name, i))
    else:
        if is_dask(offsets):
            offsets = offsets.reshape(-1).rechunk(-1)
            deps.append(offsets)
            whole = (offsets.name, 0)
        else:
            from ..plan.arrays import check_offsets

            whole = np.asarray(offsets)
            check_offsets(whole, n)
        for i in range(len(values.chunks[0])):
            dsk[(heads, i)] = (_heads_from_offsets, whole, int(starts[i]), int(starts[i + 1]))
    summary, carries, name = f"jitscan-tail-{token}", f"jitscan-carries-{token}", f"jitscan-segscan-{token}"
    call = (op, variant, backend, dtype, knobs)
    blocks = len(values.chunks[0])
    first = None if initial is None else initial_value(initial, result)
    if _chained(values, kind):
        name = f"jitscan-segchain-{token}"
        before = None  # as _chain_1d: the carry comes from the last chunk before with elements
        for i, size in enumerate(values.chunks[0]):
            last_in = (values.name, before) if kind == "exclusive" else None
            link = (None, None) if before is None else ((name, before), last_in)
            chunk = ((values.name, i), (heads, i), *link)
            dsk[(name, i)] = (_chain_segmented, *chunk, first, kind, result, *call)
            before = i if size else before
        graph = HighLevelGraph.from_collections(name, dsk, dependencies=deps)
        return da.Array(graph, name, values.chunks, meta=values._meta.astype(result))
    for i in range(blocks - 1):
        dsk[(summary, i)] = (_block_tail, (values.name, i), (heads, i), *call)
    dsk[carries] = (_fold_segments, [(summary, i) for i in range(blocks - 1)], first, op, result)
    for i in range(blocks):
        carry = (operator.getitem, carries, i)  # a task inside the task: this chunk's carry
        dsk[(name, i)] = (_block_segmented, (values.name, i), (heads, i), carry, kind, *call)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=deps)
    return da.Array(graph, name, values.chunks, meta=values._meta.astype(result))


def _as_heads(flags: Any) -> Any:
    return flags


def _heads_from_offsets(offsets: Any, start: int, stop: int) -> np.ndarray:
    """The chunk ``[start, stop)``'s head flags from the whole array's CSR offsets."""
    offsets = to_host(offsets).astype(np.int64)
    at = offsets[(offsets >= start) & (offsets < stop)] - start
    heads = np.zeros(stop - start, np.uint8)
    heads[at] = 1
    return heads


def _block_tail(
    values: Any, heads: Any, op: Any, variant: Any, backend: Any, dtype: Any, knobs: dict
) -> tuple:
    """(whether the chunk holds a head, the total of its elements after the last head)."""
    from .flat import run

    h = to_host(heads)
    marked = np.flatnonzero(h)
    last = int(marked[-1]) if marked.size else 0
    tail = run(values[last:], op, "reduce", "keep", variant, backend, dtype, None, None, None, knobs)
    return bool(marked.size), _host_scalar(tail)


def _fold_segments(summaries: list, first: Any, op: Any, dtype: np.dtype) -> list:
    """Each chunk's carry into its first segment: the lifted operator's fold of the summaries."""
    carries, acc = [first], first
    for has_head, tail in summaries:
        acc = tail if has_head else combine(acc, tail, op, dtype)
        carries.append(acc)
    return carries


def _block_segmented(
    values: Any,
    heads: Any,
    carry: Any,
    kind: str,
    op: Any,
    variant: Any,
    backend: Any,
    dtype: Any,
    knobs: dict,
) -> Any:
    from .segmented import segmented_scan as scan_

    if values.size == 0:
        return values.astype(np.dtype(dtype) if dtype is not None else values.dtype)
    heads = _like(to_host(heads), values)
    kw = {"kind": kind, "variant": variant, "backend": backend, "dtype": dtype, "initial": carry}
    return scan_(values, flags=heads, op=op, **kw, **knobs)


def _chain_segmented(
    values: Any, heads: Any, done: Any, done_in: Any, first: Any, kind: str, result: np.dtype, *call: Any
) -> Any:
    """A chain's chunk: ``call`` is ``_block_segmented``'s (op, variant, backend, dtype, knobs)."""
    op, variant, backend = call[:3]
    carry = first if done is None else carry_after(done, done_in, kind, op, variant, backend, result)
    return _block_segmented(values, heads, carry, kind, *call)


# -- segmented reductions -------------------------------------------------------------------


def segmented_reduce(
    values: Any,
    offsets: Any,
    op: str | Monoid,
    variant: str | None,
    backend: str | None,
    dtype: Any,
    knobs: dict[str, Any],
) -> Any:
    """:func:`jitscan.segmented_reduce` of a Dask array, offsets given as a NumPy array.

    Chunk c reduces the pieces of the segments it meets (one read); output block i holds
    the segments that start in chunk i, each the combination of its pieces in order.
    """
    da, tokenize, HighLevelGraph = _dask()
    from ..plan.arrays import check_offsets

    if is_dask(offsets):
        raise ValueError(
            "segmented_reduce of a Dask array takes offsets as a NumPy array: the result's "
            "chunks follow where segments start (offsets.compute() gives them)"
        )
    resolve(op)
    values = values.reshape(-1) if values.ndim != 1 else values
    _known_chunks(values)
    n = values.shape[0]
    offsets = np.asarray(offsets).astype(np.int64)
    check_offsets(offsets, n)
    t = conventions.types(conventions.input_dtype(values._meta), dtype, "keep")
    result = np.dtype(t.result)
    starts = np.cumsum((0, *values.chunks[0]))
    blocks = len(values.chunks[0])
    nseg = offsets.size - 1
    # the segments each chunk meets, [a_c, b_c), and where each segment's first element lies
    meets = [
        (
            int(np.searchsorted(offsets[1:], starts[c], "right")),
            int(np.searchsorted(offsets[:-1], starts[c + 1], "left")),
        )
        for c in range(blocks)
    ]
    home = np.clip(np.searchsorted(starts[1:], offsets[:-1], "right"), 0, blocks - 1)
    bounds = np.searchsorted(home, np.arange(blocks + 1), "left")  # segments starting in block i
    token = tokenize(values, offsets, op, variant, backend, dtype, knobs)
    pieces, name = f"jitscan-pieces-{token}", f"jitscan-segreduce-{token}"
    call = (op, variant, backend, dtype, knobs)
    dsk: dict = {}
    for c, (a, b) in enumerate(meets):
        if b > a and starts[c + 1] > starts[c]:
            local = np.clip(offsets[a : b + 1], starts[c], starts[c + 1]) - starts[c]
            dsk[(pieces, c)] = (_block_pieces, (values.name, c), local, *call)
    for i in range(blocks):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        touched = [(c, a, b) for c, (a, b) in enumerate(meets) if (pieces, c) in dsk and a < hi and b > lo]
        parts = [(pieces, c) for c, _, _ in touched]
        spans = [(a, b) for _, a, b in touched]
        dsk[(name, i)] = (_block_segments, parts, spans, lo, hi, op, result)
    chunks = tuple(int(bounds[i + 1] - bounds[i]) for i in range(blocks))
    assert sum(chunks) == nseg
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[values])
    return da.Array(graph, name, (chunks,), meta=values._meta.astype(result))


def _block_pieces(
    values: Any, local: np.ndarray, op: Any, variant: Any, backend: Any, dtype: Any, knobs: dict
) -> Any:
    from .segmented import segmented_reduce as reduce_

    return reduce_(
        values, offsets=_like(local, values), op=op, variant=variant, backend=backend, dtype=dtype, **knobs
    )


def _block_segments(parts: list, spans: list, lo: int, hi: int, op: Any, dtype: np.dtype) -> Any:
    """Segments [lo, hi): each the combination, in order, of its pieces in the chunks it meets."""
    from .flat import reduce as reduce_

    host = [to_host(p) for p in parts]
    identity = _host_scalar(reduce_(np.zeros(0, dtype), op, dtype=dtype))
    out = np.full(hi - lo, identity, dtype)
    seen = np.zeros(hi - lo, bool)
    for piece, (a, b) in zip(host, spans, strict=True):
        s0, s1 = max(a, lo), min(b, hi)
        if s1 <= s0:
            continue
        mine = piece[s0 - a : s1 - a].astype(dtype)
        first = ~seen[s0 - lo : s1 - lo]
        both = np.stack([out[s0 - lo : s1 - lo], mine])
        joined = np.asarray(reduce_(both, op, axis=0, dtype=dtype))  # earlier pieces on the left
        out[s0 - lo : s1 - lo] = np.where(first, mine, joined)
        seen[s0 - lo : s1 - lo] = True
    return _like(out, parts[0]) if parts else out
