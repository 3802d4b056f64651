"""Segmented scans: many variable-length sequences scanned at once, in one pass.

Segments are given as head flags (nonzero where a segment starts), as CSR offsets
(``offsets[0] == 0``, ``offsets[-1] == n``, non-decreasing; repeated offsets are empty
segments), or by an Awkward Array of lists. The kernels scan (head, value) pairs with
the lifted operator; look-back stops at a tile whose aggregate contains a head, and a
stalled tile is reduced by its waiting successor like any other (decoupled fallback).
"""

from __future__ import annotations

from typing import Any

from ..kernels.spec import KINDS, check_choice
from ..monoid import Monoid
from ..plan.arrays import check_offsets
from ..variants import VARIANTS
from . import awkward
from .cache import as_array, prepared

#: variants a segmented scan can use; "rts" is the multi-pass baseline
SEGMENTED_VARIANTS = tuple(v for v in VARIANTS if v != "memcpy")
#: segmented_reduce's default variant (see its docstring)
REDUCE_VARIANT = "rts"


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
    ak = awkward.module_of(values)
    if ak is not None:
        if offsets is not None or flags is not None:
            raise ValueError("an Awkward Array carries its own segments; do not pass offsets= or flags=")
        flat, counts, offs = awkward.flatten(ak, values)
        res = segmented_scan(
            flat,
            offsets=offs,
            op=op,
            kind=kind,
            variant=variant,
            backend=backend,
            dtype=dtype,
            stats=stats,
            **knobs,
        )
        return awkward.unflatten(ak, res, counts)
    if variant is not None:
        check_choice("variant", variant, SEGMENTED_VARIANTS)
    if (offsets is None) == (flags is None):
        raise ValueError("give exactly one of offsets= (CSR, nseg + 1 entries) or flags= (one per value)")
    which = "offsets" if offsets is not None else "flags"
    values = as_array(values)
    p = prepared(values, op, kind, variant, backend, dtype, stats is not None, knobs, segmented=which)
    return p(values, out, flags=flags, offsets=offsets, stats=stats)


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
    ak = awkward.module_of(values)
    if ak is not None:
        if offsets is not None:
            raise ValueError("an Awkward Array carries its own segments; do not pass offsets=")
        values, _, offsets = awkward.flatten(ak, values)
    if offsets is None:
        raise ValueError("segmented_reduce needs offsets= (CSR, nseg + 1 entries)")
    variant = REDUCE_VARIANT if variant is None else check_choice("variant", variant, SEGMENTED_VARIANTS)
    values = as_array(values)
    p = prepared(values, op, "reduce", variant, backend, dtype, False, knobs, segmented="offsets")
    return p(values, offsets=offsets)


__all__ = ["segmented_scan", "segmented_cumsum", "segmented_reduce", "check_offsets", "SEGMENTED_VARIANTS"]
