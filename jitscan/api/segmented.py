"""Segmented scans: many variable-length sequences scanned at once, in one pass.

Segments are given as head flags (nonzero where a segment starts), as CSR offsets
(``offsets[0] == 0``, ``offsets[-1] == n``, non-decreasing; repeated offsets are empty
segments), or by an Awkward Array of lists. The kernels scan (head, value) pairs with
the lifted operator; look-back stops at a tile whose aggregate contains a head, and a
stalled tile is reduced by its waiting successor like any other (decoupled fallback).
"""

from __future__ import annotations

from typing import Any

from .. import variants
from ..kernels.spec import KINDS, check_choice
from ..operators import Monoid, resolve
from ..plan.arrays import check_initial, check_offsets
from . import awkward, chunked, conventions, tuples
from .cache import as_array, call_key, prepared, remember, shortcut, shortcut_for

#: the kinds of a segmented scan (segmented_reduce is the reduction)
SEGMENTED_KINDS = tuple(k for k in KINDS if k != "reduce")


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
        bad index), or neither or both given.
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
    if stats is None and output is None and initial is None:
        # the common call: one lookup, keyed on what can differ between such calls
        key = call_key(values, out, knobs, op, kind, variant, backend, dtype, offsets is None, flags is None)
        try:
            p = _SHORTCUTS[key]
        except (KeyError, TypeError):
            p = _shortcut_for(values, offsets, flags, op, kind, variant, backend, dtype, out, knobs)
            remember(_SHORTCUTS, key, p)
        if p is not None:
            return p(values, out, flags=flags, offsets=offsets)
    check_choice("kind", kind, SEGMENTED_KINDS)
    if type(values) is tuple:
        tuples.refuse_initial(initial)
        if variant is not None:
            variants.require(variant, "segmented")
        if (offsets is None) == (flags is None):
            raise ValueError(_ONE_OF)
        kw = {
            "variant": variant,
            "backend": backend,
            "dtype": dtype,
            "out": out,
            "stats": stats,
            "axis": None,
        }
        seg = "offsets" if offsets is not None else "flags"
        return tuples.scan(
            values,
            op,
            kind=kind,
            output=output,
            knobs=knobs,
            segmented=seg,
            flags=flags,
            offsets=offsets,
            **kw,
        )
    if output is not None:
        raise TypeError("output= selects fields of a tuple value; values is one array")
    if chunked.is_dask(values):
        if variant is not None:
            variants.require(variant, "segmented")
        return chunked.segmented_scan(
            values, offsets, flags, op, kind, variant, backend, dtype, out, stats, knobs, initial
        )
    ak = awkward.module_of(values)
    if ak is not None:
        if offsets is not None or flags is not None:
            raise ValueError("an Awkward Array carries its own segments; do not pass offsets= or flags=")
        if out is not None:
            raise ValueError("out= does not apply to an Awkward Array: the result is a new Awkward Array")
        lists = awkward.flatten(ak, values)
        res = segmented_scan(
            lists.fill(_identity(op, lists.flat, dtype)),
            offsets=lists.offsets,
            op=op,
            kind=kind,
            variant=variant,
            backend=backend,
            dtype=dtype,
            stats=stats,
            initial=initial,  # refused there: a list's first element starts a segment
            **knobs,
        )
        return awkward.unflatten(ak, res, lists)
    if variant is not None:
        variants.require(variant, "segmented")
    if (offsets is None) == (flags is None):
        raise ValueError(_ONE_OF)
    which = "offsets" if offsets is not None else "flags"
    values = as_array(values)
    t = conventions.types(conventions.input_dtype(values), dtype, "keep")
    conventions.check_out_cast(t.result, out)
    if initial is not None:
        check_initial(initial, t.result)  # in the result's range (a narrow int), as scan() checks
    values, op = conventions.narrowed(values, op, t)
    direct = t.takes(out)
    p = prepared(values, op, kind, variant, backend, t.scan.name, stats is not None, knobs, segmented=which)
    res = p(values, out if direct else None, flags=flags, offsets=offsets, stats=stats, initial=initial)
    if direct:
        return res
    res = t.finish(res)
    return res if out is None else conventions.put(out, res)


_ONE_OF = "give exactly one of offsets= (CSR, nseg + 1 entries) or flags= (one per value)"
#: prepared scans of segmented_scan()'s common calls (None: that call takes the long way)
_SHORTCUTS = shortcut()


def _shortcut_for(
    values: Any,
    offsets: Any,
    flags: Any,
    op: str | Monoid,
    kind: str,
    variant: str | None,
    backend: str | None,
    dtype: Any,
    out: Any,
    knobs: dict[str, Any],
) -> Any:
    """The prepared scan that does the whole call, as :func:`jitscan.api.cache.shortcut_for`
    finds it (None: the long way, which also raises what is wrong with the call)."""
    if kind not in SEGMENTED_KINDS or (variant is not None and not variants.supports(variant, "segmented")):
        return None
    if (offsets is None) == (flags is None):
        return None
    which = "offsets" if offsets is not None else "flags"
    return shortcut_for(values, op, kind, "keep", dtype, out, variant, backend, knobs, which)


def _identity(op: str | Monoid, flat: Any, dtype: Any) -> Any:
    """The op's identity in the dtype a scan of ``flat`` runs in (what a missing value counts as)."""
    t = conventions.types(conventions.input_dtype(flat), dtype, "keep")
    return resolve(op).identity_for(t.scan)


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
    return segmented_scan(
        values,
        offsets=offsets,
        flags=flags,
        op="add",
        kind="exclusive" if exclusive else "inclusive",
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

    With an Awkward Array, ``None`` inside a list is skipped (as ``ak.sum`` skips it)
    and a missing list gives ``None``.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> jitscan.segmented_reduce(np.array([1.0, 2.0, 3.0]), offsets=[0, 2, 2, 3])
    array([3., 0., 3.])
    """
    if type(values) is tuple:
        if offsets is None:
            raise ValueError("segmented_reduce needs offsets= (CSR, nseg + 1 entries)")
        variant = variants.choose(variant, "offsets", "reduce", reduction=True)
        kw = {
            "variant": variant,
            "backend": backend,
            "dtype": dtype,
            "out": None,
            "stats": None,
            "axis": None,
        }
        return tuples.scan(
            values, op, kind="reduce", output=output, knobs=knobs, segmented="offsets", offsets=offsets, **kw
        )
    if output is not None:
        raise TypeError("output= selects fields of a tuple value; values is one array")
    if chunked.is_dask(values):
        if offsets is None:
            raise ValueError("segmented_reduce needs offsets= (CSR, nseg + 1 entries)")
        variant = variants.choose(variant, "offsets", "reduce", reduction=True)
        return chunked.segmented_reduce(values, offsets, op, variant, backend, dtype, knobs)
    ak = awkward.module_of(values)
    lists = None
    if ak is not None:
        if offsets is not None:
            raise ValueError("an Awkward Array carries its own segments; do not pass offsets=")
        lists = awkward.flatten(ak, values)
        values, offsets = lists.fill(_identity(op, lists.flat, dtype)), lists.offsets
    if offsets is None:
        raise ValueError("segmented_reduce needs offsets= (CSR, nseg + 1 entries)")
    variant = variants.choose(variant, "offsets", "reduce", reduction=True)
    values = as_array(values)
    t = conventions.types(conventions.input_dtype(values), dtype, "keep")
    values, op = conventions.narrowed(values, op, t)
    p = prepared(values, op, "reduce", variant, backend, t.scan.name, False, knobs, segmented="offsets")
    res = conventions.numpy_sum_zero(p(values, offsets=offsets), op, t.scan.numpy)
    res = t.finish(res)
    return res if lists is None else awkward.per_list(ak, res, lists, op)


__all__ = ["segmented_scan", "segmented_cumsum", "segmented_reduce", "check_offsets"]
