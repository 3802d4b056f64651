"""Compaction and partition of Dask arrays: lazy, each chunk on its own, of unknown size.

Each chunk's part is the function on that chunk (``api/selection.py``, handed in as
``per_block``, so this module imports nothing above it); the results are Dask arrays whose
chunks have unknown sizes (``nan``), as ``dask.array``'s own boolean indexing gives them.
Positions (``flatnonzero``, ``nonzero``) are offset by where each chunk starts. Nothing is
computed until the caller asks. ``size=`` and ``return_count=`` are for arrays in memory:
a Dask result's size is what Dask learns when it computes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def _flat(x: Any) -> Any:
    return x.reshape(-1) if x.ndim != 1 else x


def _unknown(x: Any) -> tuple[tuple[float, ...]]:
    return ((np.nan,) * x.numblocks[0],)


def refuse_fixed_size(fn: str, size: Any, return_count: bool) -> None:
    """The Dask forms take neither ``size=`` nor ``return_count=``."""
    if size is not None or return_count:
        raise TypeError(
            f"jitscan.{fn}: size= and return_count= are for arrays in memory; a Dask result has "
            "chunks of unknown size, which compute() learns"
        )


def extract(per_block: Callable[..., Any], condition: Any, arr: Any) -> Any:
    """The elements of Dask ``arr`` where ``condition`` (Dask, or in memory) is nonzero, lazily."""
    import dask.array as da

    values = _flat(da.asarray(arr))
    cond = _flat(da.asarray(condition))
    if cond.shape[0] > values.shape[0]:
        raise ValueError(
            f"jitscan.extract of Dask arrays: the condition ({cond.shape[0]} entries) is longer than "
            f"the values ({values.shape[0]}); NumPy would check that the extra entries are zero"
        )
    values = values[: cond.shape[0]].rechunk(cond.chunks)
    return da.map_blocks(per_block, cond, values, chunks=_unknown(values), dtype=values.dtype)


def flatnonzero(per_block: Callable[..., Any], a: Any) -> Any:
    """Positions of the nonzero elements of Dask ``a`` flattened, lazily (int64)."""
    import dask.array as da

    flat = _flat(da.asarray(a))

    def block(b: Any, block_info: Any = None) -> Any:
        start = block_info[0]["array-location"][0][0] if block_info else 0
        return per_block(b) + np.int64(start)

    return da.map_blocks(block, flat, chunks=_unknown(flat), dtype=np.int64)


def nonzero(per_block: Callable[..., Any], a: Any) -> tuple[Any, ...]:
    """The indices of the nonzero elements of Dask ``a``, one lazy int64 array per dimension."""
    import dask.array as da

    a = da.asarray(a)
    flat = flatnonzero(per_block, a)
    if a.ndim == 1:
        return (flat,)
    return tuple(da.unravel_index(flat, a.shape))


def copy_if(per_block: Callable[..., Any], x: Any) -> Any:
    """The elements of Dask ``x`` (flattened) for which ``per_block``'s predicate holds, lazily."""
    import dask.array as da

    flat = _flat(da.asarray(x))
    return da.map_blocks(per_block, flat, chunks=_unknown(flat), dtype=flat.dtype)


def stable_partition(partition: Callable[[Any], tuple[Any, Any]], x: Any) -> tuple[Any, Any]:
    """Two-way stable partition of Dask ``x`` (flattened), lazily: every chunk's kept elements
    in order, then every chunk's others; and the count, a lazy 0-d array."""
    import dask.array as da

    flat = _flat(da.asarray(x))

    def kept(b: Any) -> Any:
        y, k = partition(b)
        return y[: int(k)]

    def others(b: Any) -> Any:
        y, k = partition(b)
        return y[int(k) :]

    def count(b: Any) -> Any:
        _, k = partition(b)
        out = b[:0].astype(np.int64).reshape(0)  # an empty array of the chunk's kind
        return _one(out, int(k))

    first = da.map_blocks(kept, flat, chunks=_unknown(flat), dtype=flat.dtype)
    rest = da.map_blocks(others, flat, chunks=_unknown(flat), dtype=flat.dtype)
    counts = da.map_blocks(count, flat, chunks=((1,) * flat.numblocks[0],), dtype=np.int64)
    return da.concatenate([first, rest]), counts.sum()


def _one(like: Any, value: int) -> Any:
    """A one-element int64 array of ``like``'s kind (NumPy or CuPy) holding ``value``."""
    if type(like).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy.full(1, value, np.int64)
    return np.full(1, value, np.int64)


def _xp(block: Any) -> Any:
    """NumPy or CuPy, by the kind of a chunk."""
    if type(block).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return np


def _same(a: Any, b: Any) -> bool:
    """Whether two keys (a scalar each, or a tuple of them) are one key: no field differs by !=."""
    pairs = zip(a, b, strict=True) if isinstance(a, tuple) else ((a, b),)
    return not any(bool(x != y) for x, y in pairs)


def unique_consecutive(
    per_block: Callable[[Any], tuple[Any, Any]], x: Any, return_inverse: bool, return_counts: bool
) -> Any:
    """unique_consecutive of Dask ``x`` (flattened), lazily: each chunk's runs (``per_block``
    gives its values and counts), then one task that joins a chunk's last run to the next
    chunk's first where their values are one (the results: one chunk each, of unknown size
    but for the inverse, of ``x``'s)."""
    import dask
    import dask.array as da

    flat = _flat(da.asarray(x))
    parts = [dask.delayed(per_block)(b) for b in flat.to_delayed().ravel()]

    def joined(*runs: tuple[Any, Any]) -> tuple[Any, Any, Any]:
        xp = _xp(runs[0][0]) if runs else np
        vals = [v for v, _ in runs if len(v)]
        cnts = [c for v, c in runs if len(v)]
        if not vals:
            empty = xp.zeros(0, np.int64)
            return runs[0][0][:0] if runs else np.zeros(0), empty, empty
        values, counts = [vals[0]], [cnts[0].astype(np.int64)]
        for v, c in zip(vals[1:], cnts[1:], strict=True):
            c = c.astype(np.int64)
            if _same(values[-1][-1].item(), v[0].item()):
                counts[-1] = counts[-1].copy()
                counts[-1][-1] += c[0]
                v, c = v[1:], c[1:]
                if not len(v):  # the chunk was one run, joined to the one before: nothing new
                    continue
            values.append(v)
            counts.append(c)
        v, c = xp.concatenate(values), xp.concatenate(counts)
        return v, c, xp.repeat(xp.arange(c.size, dtype=np.int64), c)

    done = dask.delayed(joined, nout=3)(*parts)
    values = da.from_delayed(done[0], shape=(np.nan,), dtype=flat.dtype, meta=flat._meta)
    out = [values]
    if return_inverse:
        inverse = da.from_delayed(
            done[2], shape=(flat.shape[0],), dtype=np.int64, meta=flat._meta.astype(np.int64)
        )
        out.append(inverse.reshape(da.asarray(x).shape))
    if return_counts:
        out.append(
            da.from_delayed(done[1], shape=(np.nan,), dtype=np.int64, meta=flat._meta.astype(np.int64))
        )
    return out[0] if len(out) == 1 else tuple(out)


def reduce_by_key(
    per_block: Callable[..., tuple[Any, Any]],
    combine: Callable[[Any, Any], Any],
    keys: list[Any],
    values: Any,
) -> tuple[Any, Any]:
    """reduce_by_key of Dask ``keys`` (a list of fields) and ``values``, lazily: each chunk's
    runs (``per_block(*key_chunks, value_chunk)`` gives their keys and totals), then one task
    that joins a chunk's last run to the next chunk's first where their keys are one,
    combining the two totals (``combine``). Results of one chunk each, of unknown size."""
    import dask
    import dask.array as da

    vals = _flat(da.asarray(values))
    fields = [_flat(da.asarray(k)).rechunk(vals.chunks) for k in keys]
    if any(f.shape[0] != vals.shape[0] for f in fields):
        raise ValueError(f"jitscan.reduce_by_key: {fields[0].shape[0]} keys for {vals.shape[0]} values")
    blocks = zip(*(f.to_delayed().ravel() for f in fields), vals.to_delayed().ravel(), strict=True)
    parts = [dask.delayed(per_block)(*b) for b in blocks]
    nf = len(fields)

    def joined(*runs: tuple[Any, Any]) -> tuple[Any, ...]:
        runs_ = [(k if isinstance(k, tuple) else (k,), t) for k, t in runs if len(t)]
        if not runs_:
            k0, t0 = runs[0]
            k0 = k0 if isinstance(k0, tuple) else (k0,)
            return (*(k[:0] for k in k0), t0[:0])
        ks, ts = [list(runs_[0][0])], [runs_[0][1]]
        for k, t in runs_[1:]:
            last = tuple(f[-1].item() for f in ks[-1])
            first = tuple(f[0].item() for f in k)
            if _same(last, first):
                ts[-1] = ts[-1].copy()
                ts[-1][-1] = combine(ts[-1][-1:], t[:1])
                k, t = tuple(f[1:] for f in k), t[1:]
                if not len(t):  # the chunk was one run, joined to the one before: nothing new
                    continue
            ks.append(list(k))
            ts.append(t)
        xp = _xp(ts[0])
        return (*(xp.concatenate([k[j] for k in ks]) for j in range(nf)), xp.concatenate(ts))

    done = dask.delayed(joined, nout=nf + 1)(*parts)
    out_keys = [
        da.from_delayed(done[j], shape=(np.nan,), dtype=fields[j].dtype, meta=fields[j]._meta)
        for j in range(nf)
    ]
    # the totals' dtype is what the chunks' reductions give: one chunk's, computed on its meta
    meta = per_block(*(f._meta[:0] for f in fields), vals._meta[:0])[1]
    totals = da.from_delayed(done[nf], shape=(np.nan,), dtype=meta.dtype, meta=meta)
    return out_keys, totals


def scan_by_key(segmented_scan: Callable[..., Any], keys: list[Any], values: Any, **kw: Any) -> Any:
    """scan_by_key of Dask arrays: the segmented scan of Dask arrays by head flags where a
    key differs from the one before it (made lazily, chunk by chunk: Dask's segments may
    cross chunks, whose carries the segmented scan passes on)."""
    import dask.array as da

    vals = _flat(da.asarray(values))
    heads = None
    for k in keys:
        f = _flat(da.asarray(k)).rechunk(vals.chunks)
        if f.shape[0] != vals.shape[0]:
            raise ValueError(f"jitscan.scan_by_key: {f.shape[0]} keys for {vals.shape[0]} values")
        changed = da.concatenate([da.ones(1, dtype=bool, chunks=1), f[1:] != f[:-1]]).rechunk(vals.chunks)
        heads = changed if heads is None else heads | changed
    return segmented_scan(vals, flags=heads, **kw)


__all__ = [
    "copy_if",
    "extract",
    "flatnonzero",
    "nonzero",
    "reduce_by_key",
    "refuse_fixed_size",
    "scan_by_key",
    "stable_partition",
    "unique_consecutive",
]
