"""Inputs past what the device allocates: scanned in pieces, or refused naming the sizes.

A NumPy input whose buffers would pass the device's largest allocation is scanned in
pieces of at most half of it, each started from the carry of those before (``initial=``),
as a Dask array's chunks are. Any allocation that fails all the same becomes a
:class:`~jitscan.DeviceMemoryError` saying how to split the input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DeviceMemoryError


def piece_items(room: int, width: int) -> int:
    """Elements of ``width`` bytes a piece holds in ``room`` bytes: a power of two, at most half."""
    fit = max(1, room // max(1, 2 * width))
    return 1 << (fit.bit_length() - 1)


def in_pieces(scan: Any, x: np.ndarray, out: Any, initial: Any) -> Any:
    """``scan`` (a PreparedScan) of ``x`` piece by piece; None where it takes no carry
    (reduce-then-scan, deterministic scans): the call then fails as the device does."""
    if not scan._variant.takes_carry(scan.knobs.get("deterministic")):
        return None
    piece = piece_items(scan._largest, max(scan._itemsize, x.dtype.itemsize))
    flat = x.reshape(-1)
    n, carry = flat.size, initial
    if scan._reduce:
        for at in range(0, n, piece):
            carry = scan(flat[at : at + piece], initial=carry)
        if out is None:
            return carry
        out[0] = carry
        return out
    res = np.empty(n, scan._np) if out is None else out
    for at in range(0, n, piece):
        part = flat[at : at + piece]
        scan(part, res[at : at + piece], initial=carry)
        if at + piece >= n:
            break
        if scan.kind == "inclusive":
            carry = res[at + piece - 1 : at + piece].copy()
        else:  # an exclusive scan's carry is everything so far: the carry and this piece reduced
            carry = _reduction(scan)(part, initial=carry)
    return res


def _reduction(scan: Any) -> Any:
    """The reduction of ``scan``'s dtype, op, variant, device and knobs (made once, kept on it)."""
    if scan._reduction is None:
        scan._reduction = type(scan)(
            scan.dtype.name,
            scan.monoid,
            kind="reduce",
            variant=scan.variant,
            backend=scan.backend.name,
            device=scan._device,
            **scan.knobs,
        )
    return scan._reduction


def memory_error(scan: Any, exc: Exception, x: Any) -> DeviceMemoryError | None:
    """``exc`` as a DeviceMemoryError naming the sizes, where the runtime failed to allocate."""
    b = scan.backend
    limit = b.memory_limit(exc, b.queue_of(x) if b.owns(x) else b.queue_for(scan._device))
    if limit is None:
        return None
    said, room = limit
    n = int(np.size(x[0] if isinstance(x, tuple) else x))
    width = max(scan.dtype.packed_bytes, int(getattr(getattr(x, "dtype", None), "itemsize", 0) or 0))
    piece = piece_items(room, width)
    what = "a reduction" if scan.kind == "reduce" else f"an {scan.kind} scan"
    return DeviceMemoryError(
        f"{what} of {n:,} elements of {scan.dtype.name} needs buffers of {n * width:,} bytes: {said}. "
        f"Scan it in pieces: as a Dask array of smaller chunks (dask.array.from_array(x, chunks={piece})), "
        f"or in calls of at most {piece:,} elements, each given initial= the last value of the one before"
    )
