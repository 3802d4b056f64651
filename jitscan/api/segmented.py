"""Segmented scans: many variable-length sequences scanned at once, in one pass.

Segments are given as head flags (nonzero where a segment starts), as CSR offsets
(``offsets[0] == 0``, ``offsets[-1] == n``, non-decreasing; repeated offsets are empty
segments), or by an Awkward Array of lists. The kernels scan (head, value) pairs with
the lifted operator; look-back stops at a tile whose aggregate contains a head, and a
stalled tile is reduced by its waiting successor like any other (decoupled fallback).
"""

from __future__ import annotations

from typing import Any

from ..operators import Monoid
from ..plan.arrays import check_offsets
from .cache import call_key, shortcut
from .call import SEGMENTED_KINDS, Call, reduction_by_offsets  # noqa: F401 (public names)
from .dispatch import first


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
    output: Any = None,
    initial: Any = None,
    **knobs: Any,
) -> Any:
    """Scan every segment of ``values`` independently, in one pass over memory.

    Parameters
    ----------
    values : array_like, device array, Dask array or Awkward Array of lists
        1-D values (N-D arrays are flattened), or an Awkward Array of variable-length
        lists (then ``offsets``/``flags`` are taken from it and the result has its
        structure). A Dask array gives a lazy Dask array of the same chunks; segments
        may cross chunks (offsets or flags as NumPy or Dask arrays).
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
    initial : scalar or one-element array, optional
        A value carried into the first segment, up to the first head: with ``flags``
        whose first entry is 0 (a segment that goes on from before, as a Dask chunk's).
        Chained variants; not with ``offsets``, whose first segment starts at 0. A
        device array is read on the device, as in :func:`scan`.

    Returns
    -------
    array
        Same length and array type as ``values`` (an Awkward Array for one), in
        ``values``' dtype unless ``dtype=`` is given (no promotion; bool, 8- and 16-bit
        integers and float16 are scanned in 32 bits and converted back).

    Raises
    ------
    ValueError
        Offsets or flags that do not describe the values (the message names the first
        bad index), or neither or both given. Offsets on the host are checked before the
        scan; device offsets by the kernels as it runs, and the next call by offsets on
        the same queue that has seen the check's word raises (this call's result is then
        not a scan of its segments; on an OpenCL GPU the word comes back at most once every
        0.5 ms, so in a loop a call a little later), or this call with ``check="now"``,
        which waits for the check.
    TypeError
        As :func:`jitscan.scan`; an Awkward Array of anything but lists of numbers.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> v = np.array([1, 2, 3, 4, 5], dtype=np.int32)
    >>> jitscan.segmented_scan(v, offsets=np.array([0, 2, 2, 5]))
    array([ 1,  3,  3,  7, 12], dtype=int32)
    >>> jitscan.segmented_scan(v, flags=np.array([1, 0, 1, 0, 0]), op="max")
    array([1, 2, 3, 4, 5], dtype=int32)
    """
    # the warm call: one lookup, keyed on what can differ between such calls (warm.py)
    seg = (offsets is None, flags is None, output, initial is None, stats is None)
    key = call_key(values, out, knobs, op, kind, variant, backend, dtype, *seg)
    try:
        go = _SHORTCUTS[key]
    except (KeyError, TypeError):
        go = None
    if go is not None:
        return go(values, out, flags, offsets, initial)
    options = {"output": output, "initial": initial, "flags": flags, "offsets": offsets, "knobs": knobs}
    return first(
        _SHORTCUTS,
        key,
        values,
        Call("segmented_scan", op, kind, variant, backend, dtype, out, stats, **options),
    )


#: the warm calls of segmented_scan() (None: that call takes the long way)
_SHORTCUTS = shortcut()


def segmented_cumsum(
    values: Any,
    offsets: Any = None,
    flags: Any = None,
    dtype: Any = None,
    out: Any = None,
    *,
    exclusive: bool = False,
    variant: str | None = None,
    backend: str | None = None,
    stats: dict | None = None,
    **knobs: Any,
) -> Any:
    """Cumulative sum within each segment (see :func:`segmented_scan`; no dtype promotion).

    Parameters
    ----------
    values, offsets, flags, dtype, out, variant, backend, stats
        As in :func:`segmented_scan`.
    exclusive : bool
        Each segment starts from 0 instead of its first element (-0.0 for floats: the
        identity of a float sum, see :func:`jitscan.cumsum`).
    **knobs
        Tuning knobs as in :func:`jitscan.scan` (``tile_state``, ``spin_limit``, ...).

    Returns
    -------
    array
        As :func:`segmented_scan`.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> v = np.array([1, 2, 3, 4], dtype=np.int32)
    >>> jitscan.segmented_cumsum(v, offsets=[0, 1, 4], exclusive=True)
    array([0, 0, 2, 5], dtype=int32)
    """
    kind = "exclusive" if exclusive else "inclusive"
    # segmented_scan()'s warm call, looked up here (its key: the same parts, in its order): one
    # call less on the path a loop takes
    seg = (offsets is None, flags is None, None, True, stats is None)
    key = call_key(values, out, knobs, "add", kind, variant, backend, dtype, *seg)
    try:
        go = _SHORTCUTS[key]
    except (KeyError, TypeError):
        go = None
    if go is not None:
        return go(values, out, flags, offsets, None)
    return segmented_scan(
        values,
        offsets=offsets,
        flags=flags,
        op="add",
        kind=kind,
        variant=variant,
        backend=backend,
        dtype=dtype,
        out=out,
        stats=stats,
        **knobs,
    )


def segmented_reduce(
    values: Any,
    offsets: Any = None,
    op: str | Monoid = "add",
    *,
    variant: str | None = None,
    backend: str | None = None,
    dtype: Any = None,
    output: Any = None,
    out: Any = None,
    **knobs: Any,
) -> Any:
    """One combined value per segment; the identity for empty segments.

    ``values`` and ``offsets`` as in :func:`segmented_scan` (an Awkward Array of
    lists needs no offsets). Returns an array of ``nseg`` values, NumPy for host and
    Awkward input, a device array for device input.

    The values are read once: tiles scan in registers, stage their results in local
    memory and store only each segment's last element (the identity for empty
    segments). Given no variant, inputs over 64 MiB on a GPU, and every input on a CPU,
    run ``rts``: a tile stores the segments it holds whole without waiting on any other
    tile, and a small fix-up pass completes the segments that cross tile edges, so it
    needs no forward-progress guarantee and measured faster there than the chained
    variants (``fallback``, ``lookback``), which finish those segments by look-back.
    Smaller inputs on a GPU run ``fallback``, whose two launches (the offsets' pre-pass
    and one pass) cost less than rts's four where launches, not memory, take the time;
    up to 2 MiB its tiles search the offsets themselves, and it is one launch.

    With an Awkward Array, ``None`` inside a list is skipped (as ``ak.sum`` skips it)
    and a missing list gives ``None``.

    ``out=`` takes the result as NumPy's reductions do: an array of ``nseg`` elements of
    the input's kind, of a dtype the result casts to (``same_kind``), returned; on a
    device, one of the result's dtype is written by the kernels. Not for Awkward or Dask
    input, nor tuple values.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> jitscan.segmented_reduce(np.array([1.0, 2.0, 3.0]), offsets=[0, 2, 2, 3])
    array([3., 0., 3.])
    """
    # the warm call: one lookup, as segmented_scan()'s
    key = call_key(values, out, knobs, op, variant, backend, dtype, offsets is None, output, out is None)
    try:
        go = _REDUCE_SHORTCUTS[key]
    except (KeyError, TypeError):
        go = None
    if go is not None:
        return go(values, out, None, offsets, None)
    variant = reduction_by_offsets(variant)
    options = {"output": output, "offsets": offsets, "out": out, "knobs": knobs}
    return first(
        _REDUCE_SHORTCUTS,
        key,
        values,
        Call("segmented_reduce", op, "reduce", variant, backend, dtype, **options),
    )


#: the warm calls of segmented_reduce() (None: that call takes the long way)
_REDUCE_SHORTCUTS = shortcut()


__all__ = ["segmented_scan", "segmented_cumsum", "segmented_reduce", "check_offsets"]
