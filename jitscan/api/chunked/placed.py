"""The placed tree: a Dask scan's totals taken per worker, where the chunks already are.

Under a ``distributed`` client the chunks of a persisted array sit on known workers. The
tree's first level then needs one task per worker, not one per chunk: the task reduces
each of its worker's chunks on their device, the reductions queued back to back, and
reads the totals back once, as one vector. Each chunk's scan takes every worker's vector
and folds the totals before it in order itself (NumPy's ufunc, the tree's fold's
arithmetic), so no fold task stands between the levels. Two levels of tasks instead of
three, and ``chunks + workers`` tasks instead of ``2 chunks``: each level costs a round
trip through the scheduler, and each task its worker's overhead (experiments/notes/performance-log.md,
*Dask scans on two H200s*).

The placement is read when the graph is built (``Client.who_has``); it only chooses the
groups. Were the chunks to move before the graph runs, a group's task would fetch them:
slower, never wrong.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import backends
from ...plan.arrays import initial_value, to_host
from .common import UFUNCS, dask_modules, host_scalar, run_chunk


def placement(x: Any) -> list[str] | None:
    """The worker holding each chunk of ``x``, where ``x`` is a 1-D persisted array of a
    running synchronous ``distributed`` client, every chunk in the cluster's memory; else
    None (and the tree runs, which fails, if at all, when computed, not here)."""
    try:
        from distributed import futures_of
    except ImportError:
        return None
    futures = futures_of(x) if x.ndim == 1 else []
    if not futures or any(f.status != "finished" for f in futures):
        return None  # none, pending, cancelled or failed: nowhere to be asked about
    client = futures[0].client
    if client is None or client.asynchronous or client.status != "running":
        return None  # unpickled futures have no client; an asynchronous one cannot block here
    who = client.who_has(futures)
    where = []
    for key in x.__dask_keys__():
        holders = who.get(key)
        if not holders:  # a chunk not in memory: x is not (only) the persisted array
            return None
        where.append(sorted(holders)[0])
    return where


#: the most workers whose totals each chunk's scan takes (its edges in the graph: a
#: scan depends on every worker's vector, so chunks x workers edges in all; past this the
#: tree's fold task, 3 edges a chunk, costs the scheduler less)
MAX_WORKERS = 8


def choose(x: Any, op: Any) -> list[str] | None:
    """The worker of each chunk of ``x`` where the placed tree scans it with ``op``; else None.
    (The op first: it costs nothing, the placement a round trip to the scheduler.)"""
    if not _built_in(op):
        return None
    where = placement(x)
    return where if applies(op, where) else None


def _built_in(op: Any) -> bool:
    return isinstance(op, str) and op in UFUNCS


def applies(op: Any, where: list[str] | None) -> bool:
    """Whether the placed tree can scan: known places, a built-in op (each scan folds its
    own carry with NumPy; a Python operator's fold would launch a kernel per total), and
    fewer workers than chunks, at most :data:`MAX_WORKERS`."""
    if where is None or not _built_in(op):
        return False
    workers = len(set(where))
    return workers < len(where) and workers <= MAX_WORKERS


def scan_1d(x: Any, calls: Any, initial: Any, result: np.dtype, where: list[str]) -> Any:
    """The placed tree's graph of ``x`` (1-D, ``where`` from :func:`placement`)."""
    da, tokenize, HighLevelGraph = dask_modules()
    token = tokenize(x, calls, initial, where)
    totals, name = f"jitscan-worker-totals-{token}", f"jitscan-scan-{token}"
    layout = f"jitscan-layout-{token}"
    blocks = len(x.chunks[0])
    workers = sorted(set(where[:-1]))  # the last chunk's total carries into nothing
    group = np.array([workers.index(w) for w in where[:-1]], np.int32)  # of each chunk
    dsk: dict = {
        (totals, g): (_worker_totals, calls, *[(x.name, int(i)) for i in np.flatnonzero(group == g)])
        for g in range(len(workers))
    }
    dsk[layout] = group  # one value in the graph, not a copy in every scan's arguments
    first = None if initial is None else initial_value(initial, result)
    vectors = [(totals, g) for g in range(len(workers))]
    for i in range(blocks):
        dsk[(name, i)] = (_placed_scan, (x.name, i), i, layout, first, calls, result, *vectors)
    chunks = list(x.chunks[0])
    if calls.include_initial:
        chunks[0] += 1
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, (tuple(chunks),), meta=x._meta.astype(result))


def _worker_totals(calls: Any, *blocks: Any) -> np.ndarray:
    """The totals of one worker's chunks, in their order, read back to the host at once."""
    values = [run_chunk(b, calls, "reduce") for b in blocks]
    on = backends.for_array(values[0])
    if on is not None and all(backends.for_array(v) is on for v in values):
        return to_host(on.concatenate([v.reshape(1) for v in values]))
    return np.array([host_scalar(v) for v in values])


def _placed_scan(
    block: Any, i: int, group: np.ndarray, first: Any, calls: Any, result: np.dtype, *vectors: np.ndarray
) -> Any:
    """Chunk ``i`` scanned from the combination of ``first`` and every total before it
    (``group``: the worker group of each chunk, whose vector holds its total)."""
    carry = first
    if i and block.size:
        before = np.empty(i, result)  # the totals of chunks 0 .. i - 1, in order
        for g, vector in enumerate(vectors):
            at = np.flatnonzero(group[:i] == g)  # a group's chunks are in order in its vector
            before[at] = vector[: at.size]
        if first is not None:
            before = np.r_[np.asarray(first, result).reshape(1), before]
        # accumulate is sequential, so a float carry has the tree's fold's roundings
        carry = UFUNCS[calls.op].accumulate(before, dtype=result)[-1]
    return run_chunk(block, calls, calls.kind, first=i == 0, initial=carry if block.size else None)
