"""Dask segmented scans and reductions: segments by offsets or flags, crossing chunks."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ...operators import resolve
from ...plan.arrays import check_offsets, initial_value, to_host
from .. import conventions, runner
from ..call import Call, is_dask
from .common import (
    carry_after,
    chained,
    check_carried,
    combine,
    dask_modules,
    host_scalar,
    known_chunks,
    like,
)

# -- segmented scans -----------------------------------------------------------------------


def segmented_scan(values: Any, call: Call) -> Any:
    """:func:`jitscan.segmented_scan` of a Dask array (refused already where it does not
    apply: ``call.refuse``): segments may cross chunks."""
    da, tokenize, HighLevelGraph = dask_modules()
    op, kind, variant, backend, dtype, knobs = (
        call.op,
        call.kind,
        call.variant,
        call.backend,
        call.dtype,
        call.knobs,
    )
    offsets, flags, initial = call.offsets, call.flags, call.initial
    resolve(op)
    check_carried(np.dtype(values.dtype), variant, knobs)
    values = values.reshape(-1) if values.ndim != 1 else values
    known_chunks(values)
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
            whole = np.asarray(offsets)
            check_offsets(whole, n)
        for i in range(len(values.chunks[0])):
            dsk[(heads, i)] = (_heads_from_offsets, whole, int(starts[i]), int(starts[i + 1]))
    summary, carries, name = f"jitscan-tail-{token}", f"jitscan-carries-{token}", f"jitscan-segscan-{token}"
    call = (op, variant, backend, dtype, knobs)
    blocks = len(values.chunks[0])
    first = None if initial is None else initial_value(initial, result)
    if chained(values, kind):
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
    h = to_host(heads)
    marked = np.flatnonzero(h)
    last = int(marked[-1]) if marked.size else 0
    call = Call(op=op, kind="reduce", variant=variant, backend=backend, dtype=dtype, knobs=knobs)
    tail = runner.run(values[last:], call)
    return bool(marked.size), host_scalar(tail)


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
    if values.size == 0:
        return values.astype(np.dtype(dtype) if dtype is not None else values.dtype)
    heads = like(to_host(heads), values)
    kw = {"kind": kind, "variant": variant, "backend": backend, "dtype": dtype, "knobs": knobs}
    return runner.run(values, Call("segmented_scan", op, flags=heads, initial=carry, **kw))


def _chain_segmented(
    values: Any, heads: Any, done: Any, done_in: Any, first: Any, kind: str, result: np.dtype, *call: Any
) -> Any:
    """A chain's chunk: ``call`` is ``_block_segmented``'s (op, variant, backend, dtype, knobs)."""
    op, variant, backend = call[:3]
    carry = first if done is None else carry_after(done, done_in, kind, op, variant, backend, result)
    return _block_segmented(values, heads, carry, kind, *call)


# -- segmented reductions -------------------------------------------------------------------


def segmented_reduce(values: Any, call: Call) -> Any:
    """:func:`jitscan.segmented_reduce` of a Dask array, offsets given as a NumPy array.

    Chunk c reduces the pieces of the segments it meets (one read); output block i holds
    the segments that start in chunk i, each the combination of its pieces in order.
    """
    da, tokenize, HighLevelGraph = dask_modules()
    op, variant, backend, dtype, knobs, offsets = (
        call.op,
        call.variant,
        call.backend,
        call.dtype,
        call.knobs,
        call.offsets,
    )
    if is_dask(offsets):
        raise ValueError(
            "segmented_reduce of a Dask array takes offsets as a NumPy array: the result's "
            "chunks follow where segments start (offsets.compute() gives them)"
        )
    resolve(op)
    values = values.reshape(-1) if values.ndim != 1 else values
    known_chunks(values)
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
    kw = {"variant": variant, "backend": backend, "dtype": dtype, "knobs": knobs}
    return runner.run(values, Call("segmented_reduce", op, kind="reduce", offsets=like(local, values), **kw))


def _block_segments(parts: list, spans: list, lo: int, hi: int, op: Any, dtype: np.dtype) -> Any:
    """Segments [lo, hi): each the combination, in order, of its pieces in the chunks it meets."""
    host = [to_host(p) for p in parts]
    identity = host_scalar(runner.run(np.zeros(0, dtype), Call("reduce", op, dtype=dtype)))
    out = np.full(hi - lo, identity, dtype)
    seen = np.zeros(hi - lo, bool)
    for piece, (a, b) in zip(host, spans, strict=True):
        s0, s1 = max(a, lo), min(b, hi)
        if s1 <= s0:
            continue
        mine = piece[s0 - a : s1 - a].astype(dtype)
        first = ~seen[s0 - lo : s1 - lo]
        both = np.stack([out[s0 - lo : s1 - lo], mine])
        joined = np.asarray(runner.run(both, Call("reduce", op, dtype=dtype, axis=0)))  # earlier on the left
        out[s0 - lo : s1 - lo] = np.where(first, mine, joined)
        seen[s0 - lo : s1 - lo] = True
    return like(out, parts[0]) if parts else out
