"""Segmented scans: many variable-length sequences scanned at once, in one pass.

Segments are given as head flags (nonzero where a segment starts), as CSR offsets
(``offsets[0] == 0``, ``offsets[-1] == n``, non-decreasing; repeated offsets are empty
segments), as rows of an N-D array along an axis, or as an Awkward Array of lists.
The kernels scan (head, value) pairs with the lifted operator; look-back stops at a
tile whose aggregate contains a head, and a stalled tile is reduced by its waiting
successor like any other (decoupled fallback).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from . import api, execute
from .monoid import Monoid, resolve
from .spec import KINDS, VARIANTS, check_choice

#: variants a segmented scan can use; "rts" is the multi-pass baseline
SEGMENTED_VARIANTS = tuple(v for v in VARIANTS if v != "memcpy")


#: segmented_reduce's default variant (see its docstring)
REDUCE_VARIANT = "rts"


def _awkward(values: Any) -> Any:
    """The awkward module if ``values`` is an Awkward Array, else None."""
    mod = type(values).__module__
    if not mod.startswith("awkward"):
        return None
    import awkward as ak

    return ak


def _to_host(x: Any) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    b = api.backends.for_array(x)
    return b.to_host(b.contiguous(x)) if b is not None else np.asarray(x)


def check_offsets(offsets: Any, n: int) -> np.ndarray:
    """Validate CSR offsets for ``n`` values; return them as int64 on the host.

    Raises
    ------
    ValueError
        Naming the problem and the first bad index.
    """
    off = _to_host(offsets)
    if off.ndim != 1 or off.size == 0:
        raise ValueError(f"offsets must be a non-empty 1-D array (nseg + 1 entries), got shape {off.shape}")
    if off.dtype.kind not in "iu":
        raise ValueError(f"offsets must have an integer dtype, got {off.dtype}")
    off = off.astype(np.int64)
    if off[0] != 0:
        raise ValueError(f"offsets must start at 0: offsets[0] == {off[0]}")
    if off[-1] != n:
        raise ValueError(f"offsets must end at n == {n}: offsets[{off.size - 1}] == {off[-1]}")
    drops = np.flatnonzero(np.diff(off) < 0)
    if drops.size:
        i = int(drops[0]) + 1
        raise ValueError(
            f"offsets must be non-decreasing: offsets[{i}] == {off[i]} < offsets[{i - 1}] == {off[i - 1]}"
        )
    return off


def _heads_from_flags(flags: Any, n: int, backend: Any, queue: Any, on_device: bool) -> Any:
    if on_device and backend.owns(flags):
        if flags.ndim != 1 or flags.size != n:
            raise ValueError(f"flags must have one entry per value: {flags.size} flags for {n} values")
        if np.dtype(flags.dtype).kind not in "biu":
            raise ValueError(f"flags must be bool or integer, got {flags.dtype}")
        return backend.contiguous((flags != 0).astype(np.uint8))
    host = np.asarray(_to_host(flags))
    if host.ndim != 1 or host.size != n:
        raise ValueError(f"flags must have one entry per value: {host.size} flags for {n} values")
    if host.dtype.kind not in "biu":
        raise ValueError(f"flags must be bool or integer, got {host.dtype}")
    heads = np.ascontiguousarray(host != 0, dtype=np.uint8)
    return backend.to_device(heads, queue) if n else None


def _segments(offsets: Any, flags: Any) -> str:
    if (offsets is None) == (flags is None):
        raise ValueError("give exactly one of offsets= (CSR, nseg + 1 entries) or flags= (one per value)")
    return "offsets" if offsets is not None else "flags"


def segmented_scan(
    values: Any,
    offsets: Any = None,
    flags: Any = None,
    op: str | Monoid = "add",
    *,
    kind: str = "inclusive",
    variant: str | None = None,
    backend: str | None = None,
    dtype: Any = None,
    out: Any = None,
    stats: dict | None = None,
    **knobs: Any,
) -> Any:
    """Scan every segment of ``values`` independently, in one pass over memory.

    Parameters
    ----------
    values : array_like, device array or Awkward Array of lists
        1-D values (N-D arrays are flattened), or an Awkward Array of variable-length
        lists (then ``offsets``/``flags`` are taken from it and the result has its
        structure).
    offsets : array of int, optional
        CSR segment boundaries: ``offsets[0] == 0``, ``offsets[-1] == n``,
        non-decreasing; repeated offsets are empty segments.
    flags : array of bool / int, optional
        One per value, nonzero where a segment starts. Exactly one of ``offsets``
        and ``flags`` is required.
    op, kind, variant, backend, dtype, out, stats, **knobs
        As in :func:`jitscan.scan`; ``kind`` is "inclusive" or "exclusive" (an
        exclusive segment starts from the identity), ``variant`` one of "fallback"
        (default), "lookback", "rts" (the multi-pass baseline).

    Returns
    -------
    array
        Same length and array type as ``values`` (an Awkward Array for one).
    """
    check_choice("kind", kind, tuple(k for k in KINDS if k != "reduce"))
    ak = _awkward(values)
    if ak is not None:
        if offsets is not None or flags is not None:
            raise ValueError("an Awkward Array carries its own segments; do not pass offsets= or flags=")
        flat, counts = _from_awkward(ak, values)
        off = np.concatenate([[0], np.cumsum(counts)])
        res = segmented_scan(
            flat,
            offsets=off,
            op=op,
            kind=kind,
            variant=variant,
            backend=backend,
            dtype=dtype,
            stats=stats,
            **knobs,
        )
        return ak.unflatten(res, counts)
    variant = api.DEFAULT_VARIANT if variant is None else check_choice("variant", variant, SEGMENTED_VARIANTS)
    monoid = resolve(op)
    which = _segments(offsets, flags)
    inp = api._prepare(values, backend, dtype)
    api._check_out(out, inp, (inp.n,))
    spec = api._spec(inp, variant, kind, monoid, stats is not None, knobs, segmented=which)
    if which == "offsets":
        segments = {"offsets": _offsets_on_device(offsets, inp, spec)[0]}
    else:
        segments = {"heads": _heads_from_flags(flags, inp.n, inp.backend, inp.queue, inp.on_device)}
    if inp.n == 0:
        return api._empty_result(inp, out)
    return api._run(inp, spec, inp.n, out, stats, **segments)


def segmented_cumsum(
    values: Any,
    offsets: Any = None,
    flags: Any = None,
    dtype: Any = None,
    out: Any = None,
    *,
    exclusive: bool = False,
    **kwargs: Any,
) -> Any:
    """Cumulative sum within each segment (see :func:`segmented_scan`)."""
    return segmented_scan(
        values,
        offsets=offsets,
        flags=flags,
        op="add",
        kind="exclusive" if exclusive else "inclusive",
        dtype=dtype,
        out=out,
        **kwargs,
    )


def segmented_reduce(
    values: Any,
    offsets: Any = None,
    op: str | Monoid = "add",
    *,
    variant: str | None = None,
    backend: str | None = None,
    dtype: Any = None,
    **knobs: Any,
) -> Any:
    """One combined value per segment; the identity for empty segments.

    ``values`` and ``offsets`` as in :func:`segmented_scan` (an Awkward Array of
    lists needs no offsets). Returns an array of ``nseg`` values, NumPy for host and
    Awkward input, a device array for device input.

    The values are read once: tiles scan in registers, stage their results in local
    memory and store only each segment's last element (the identity for empty
    segments). The default variant is ``rts``: a tile stores the segments it holds
    whole without waiting on any other tile, and a small fix-up pass completes the
    segments that cross tile edges, so it needs no forward-progress guarantee and
    measured faster than the chained variants (``fallback``, ``lookback``), which
    finish those segments by look-back.
    """
    ak = _awkward(values)
    if ak is not None:
        if offsets is not None:
            raise ValueError("an Awkward Array carries its own segments; do not pass offsets=")
        flat, counts = _from_awkward(ak, values)
        offsets = np.concatenate([[0], np.cumsum(counts)])
        values = flat
    if offsets is None:
        raise ValueError("segmented_reduce needs offsets= (CSR, nseg + 1 entries)")
    variant = REDUCE_VARIANT if variant is None else check_choice("variant", variant, SEGMENTED_VARIANTS)
    monoid = resolve(op)
    inp = api._prepare(values, backend, dtype)
    spec = api._spec(inp, variant, "reduce", monoid, False, knobs, segmented="offsets")
    dev, nseg = _offsets_on_device(offsets, inp, spec)
    b = inp.backend
    if inp.n == 0 or nseg == 0:
        result = np.full(nseg, monoid.identity_for(inp.dtype), inp.dtype.numpy)
        return b.to_device(result, inp.queue) if inp.on_device else result
    return api._run(inp, spec, nseg, None, None, offsets=dev)


def _offsets_on_device(offsets: Any, inp: Any, spec: Any) -> tuple[Any, int]:
    """Validated offsets as the uint64 device array the kernels read, and the segment count.

    Offsets already on the values' device are checked there (one small kernel and a
    one-word read); only bad ones come to the host, to name the first bad index.
    """
    b = inp.backend
    if inp.n and inp.on_device and b.owns(offsets):
        shape = tuple(offsets.shape)
        if len(shape) == 1 and shape[0] > 0 and np.dtype(offsets.dtype).kind in "iu":
            dev = b.contiguous(offsets)
            if dev.dtype.itemsize == 8 and not b.buffer(dev)[1]:
                # read in place as uint64: a negative int64 reads huge, and the check
                # below then fails it (nothing after it can reach back down to n)
                dev = dev.view(np.uint64)
            else:
                dev = dev.astype(np.uint64)  # a new array, at the start of its buffer
            if execute.offsets_ok(b, inp.queue, spec, dev, inp.n):
                return dev, shape[0] - 1
        check_offsets(offsets, inp.n)  # raises, naming the problem
        raise ValueError("offsets failed the device check (values beyond int64?)")
    off = check_offsets(offsets, inp.n)
    dev = b.to_device(off.astype(np.uint64), inp.queue) if inp.n else None
    return dev, off.size - 1


def scan_along_axis(
    x: Any,
    op: Monoid,
    axis: int,
    kind: str,
    variant: str,
    backend: str | None,
    dtype: Any,
    out: Any,
    stats: dict | None,
    knobs: dict,
) -> Any:
    """Independent scans of every 1-D lane of ``x`` along ``axis`` (rows are segments)."""
    b, on_device = api._pick_backend(x, backend)
    xa = x if on_device else np.asarray(x)
    ndim = len(xa.shape)
    if ndim == 0:
        raise ValueError("jitscan scans arrays of at least one dimension, got a 0-d array")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for an array of dimension {ndim}")
    axis %= ndim
    moved = _moveaxis(xa, axis, on_device)
    shape = tuple(moved.shape)
    row = shape[-1]
    inp = api._prepare(moved, backend, dtype)
    result_shape = tuple(xa.shape)
    if out is not None:
        api._check_out(out, inp, result_shape)
    # rows of whole tiles need no heads: the plain chained scan restarts at each row
    spec = api._spec(inp, variant, kind, op, stats is not None, knobs)
    if spec.chained and row % spec.tile == 0:
        segments = {"row_tiles": row // spec.tile}
        spec = replace(spec, row_tiles=True)
    else:
        spec = api._spec(inp, variant, kind, op, stats is not None, knobs, segmented="rows")
        segments = {"row_len": row}
    if inp.n == 0:
        res = api._empty_result(inp, None)
    else:
        res = api._run(inp, spec, inp.n, None, stats, **segments)
    res = _moveaxis(res.reshape(shape), axis, inp.on_device, back=True)
    if inp.on_device:
        res = b.contiguous(res)
    if out is not None:
        if inp.on_device:
            b.copy(out, res)
        else:
            out[...] = res
        return out
    return res


def _moveaxis(a: Any, axis: int, on_device: bool, back: bool = False) -> Any:
    ndim = len(a.shape)
    if axis == ndim - 1:
        return a
    order = list(range(ndim))
    if back:
        order.insert(axis, order.pop(-1))
    else:
        order.append(order.pop(axis))
    return a.transpose(order)


def _from_awkward(ak: Any, values: Any) -> tuple[np.ndarray, np.ndarray]:
    if values.ndim != 2:
        raise ValueError(f"jitscan takes Awkward Arrays of lists of numbers (ndim 2), got ndim {values.ndim}")
    counts = np.asarray(ak.num(values, axis=1), dtype=np.int64)
    flat = np.asarray(ak.to_numpy(ak.flatten(values, axis=1)))
    return flat, counts


__all__ = ["segmented_scan", "segmented_cumsum", "segmented_reduce", "check_offsets", "SEGMENTED_VARIANTS"]
