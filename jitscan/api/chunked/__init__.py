"""Dask arrays: a scan of a chunked array is a lazy Dask graph with jitscan on every chunk.

A 1-D scan has two plans, chosen when the graph is built (``dask.config`` key
``"jitscan.dask-plan"``: ``"chain"``, ``"tree"``, ``"placed"`` or ``"auto"``, the default):

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

  For a persisted array on a distributed cluster and a built-in op, ``"auto"`` (and
  ``"placed"``) take the *placed tree* (``placed.py``): one totals task per worker over
  the chunks it holds, and each chunk's scan folds the totals before it itself (two
  levels of tasks, ``chunks + workers`` tasks).

A segmented scan carries the lifted pair: in the tree a chunk's summary is whether it
holds a head and the total after its last head; a carry stops at the chunk's first head
(in the chain, the previous chunk's last result is that running value already). Along an
axis the carry of a block is an array (a row of totals): the block is scanned with it
in front, which costs one copy. Reductions are Dask's tree reduction with jitscan on the
chunks. Chunks may be NumPy arrays (scanned on the default device) or CuPy arrays
(scanned on the GPU that holds them); the graph runs on any Dask scheduler.
"""

from __future__ import annotations

from typing import Any

from ..call import Call, is_dask
from .common import PLAN_KEY, UFUNCS, carry_after, combine
from .scans import reduce, scan
from .segments import segmented_reduce, segmented_scan


def run(x: Any, call: Call) -> Any:
    """``call`` on the Dask array ``x`` (refused already where it does not apply): a lazy
    Dask array, or a Dask array of the reduction."""
    form = call.form
    if form == "reduce":
        return reduce(x, call)
    if form == "segmented":
        return segmented_scan(x, call)
    if form == "segmented_reduce":
        return segmented_reduce(x, call)
    return scan(x, call)


__all__ = [
    "PLAN_KEY",
    "UFUNCS",
    "carry_after",
    "combine",
    "is_dask",
    "reduce",
    "run",
    "scan",
    "segmented_reduce",
    "segmented_scan",
]
