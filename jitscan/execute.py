"""Runs a spec over device arrays: scratch buffers, launches, deadlock and stats readout."""

from __future__ import annotations

from typing import Any

from .backends.base import Backend
from .errors import DeadlockError
from .kernels import CHECK_OFFSETS, SEG_FIRST
from .spec import ScanSpec

#: names of the instrumentation counters, in the order of the ctrl words after the first two
STAT_NAMES = ("spins", "lookback_steps", "fallbacks", "insertions")
_CTRL_WORDS = 8
#: last epoch used per chained scratch buffer
_EPOCHS: dict[tuple, int] = {}


def run(
    backend: Backend,
    queue: Any,
    spec: ScanSpec,
    src: Any,
    dst: Any,
    n: int,
    check: bool = True,
    heads: Any = None,
    row_len: int = 0,
    offsets: Any = None,
    row_tiles: int = 0,
) -> dict[str, int] | None:
    """Scan ``n`` elements of contiguous ``src`` into ``dst`` (one element for a reduction).

    Returns the instrumentation counters when ``spec.stats`` is set. With ``check`` (the
    default) a look-back run waits for the kernel to read its deadlock flag; benchmarks
    turn that off to keep launches back to back. Segmented specs take ``heads`` (a
    contiguous uint8 array, nonzero at segment heads), ``row_len`` (heads every
    ``row_len`` elements) or ``offsets`` (CSR offsets as a contiguous uint64 device
    array; with kind ``reduce`` ``dst`` receives one total per segment). A plain
    chained spec takes ``row_tiles``: independent rows of that many whole tiles.

    Raises
    ------
    DeadlockError
        When the look-back watchdog fired.
    """
    if spec.row_tiles and row_tiles < 1:
        raise ValueError("a spec with row_tiles needs row_tiles >= 1 (tiles per row)")
    if not (backend.aligned(src) and backend.aligned(dst)):
        # the kernels load and store 16-byte vectors; backend.contiguous copies such views
        raise ValueError("execute.run needs 16-byte aligned arrays")
    for name, arr in (("heads", heads), ("offsets", offsets)):
        # passed as bare buffers (no offset argument), so they must start their buffer
        if arr is not None and (backend.buffer(arr)[1] or not backend.aligned(arr)):
            raise ValueError(f"execute.run needs {name} at the start of an aligned buffer")
    prog = backend.program(spec, queue)
    in_buf, in_off = backend.buffer(src)
    out_buf, out_off = backend.buffer(dst)
    tiles = -(-n // spec.tile)
    seg: list[Any] = []
    if spec.segmented == "offsets":
        off_buf = backend.buffer(offsets)[0]
        nseg = offsets.shape[0] - 1
        first, _ = backend.scratch((tiles + 1) * 8, queue, "seg-first")
        prog.launch(SEG_FIRST, -(-(tiles + 1) // spec.threads), [off_buf, nseg, n, first])
        seg = [off_buf, first, nseg]
    elif spec.segmented:
        # with row_len the heads buffer is never read; any buffer will do
        seg = [backend.buffer(heads)[0] if heads is not None else in_buf, row_len]
    if spec.variant == "memcpy":
        prog.launch("js_memcpy", tiles, [in_buf, in_off, out_buf, out_off, n])
        return None
    if spec.variant == "rts":
        spine, _ = backend.scratch(tiles * spec.element_bytes, queue, "spine")
        stage: list[Any] = []
        if spec.stages_tile:
            # a segmented reduction: the tile pass also stores whole segments, a fix-up the rest
            carry, _ = backend.scratch(tiles * spec.dtype_info.itemsize, queue, "carry")
            stage = [out_buf, out_off, carry]
        prog.launch("js_rts_reduce", tiles, [in_buf, in_off, n, spine, *stage, *seg])
        prog.launch("js_rts_spine", 1, [spine, tiles, out_buf, out_off, spec.kind_code])
        if spec.stages_tile:
            fixups = -(-tiles // spec.threads)
            prog.launch("js_rts_seg_fixup", fixups, [spine, carry, out_buf, out_off, tiles, seg[1]])
        elif spec.kind != "reduce":
            prog.launch(
                "js_rts_scan", tiles, [in_buf, in_off, out_buf, out_off, n, spine, spec.kind_code, *seg]
            )
        return None
    # chained: control words (tile counter, deadlock flag, counters), then the tile
    # descriptors. Descriptors carry the launch's epoch, so stale ones read as
    # NOT_READY and the buffer is zeroed only when new, at epoch overflow, or to count
    nbytes = _CTRL_WORDS * 4 + tiles * spec.state_parts * spec.state_word_bytes
    ctrl, fresh = backend.scratch(nbytes, queue, f"chained-{spec.tile_state}")
    key = (backend.name, id(ctrl))
    epoch = 1 if fresh else _EPOCHS.get(key, 0) + 1
    if epoch > spec.epoch_limit:
        # every word, not just this launch's: a stale word of a higher epoch would
        # win the atomic max against the restarted epochs
        backend.zero(ctrl, None, queue)
        epoch = 1
    elif spec.stats:
        backend.zero(ctrl, _CTRL_WORDS * 4, queue)  # the counters only
    _EPOCHS[key] = epoch
    prog.launch(
        "js_chained",
        tiles,
        [
            in_buf,
            in_off,
            out_buf,
            out_off,
            n,
            ctrl,
            spec.kind_code,
            epoch,
            spec.spin_limit,
            spec.block_every,
            row_tiles,
            *seg,
        ],
    )
    if (spec.variant == "lookback" and check) or spec.stats:
        words = backend.read_u32(ctrl, _CTRL_WORDS, queue)
        if words[1]:
            # an aborted launch leaves the counter and flag set: clear before the next
            backend.zero(ctrl, None, queue)
            _EPOCHS[key] = 0
            raise DeadlockError(
                f"look-back deadlock: a workgroup spun {spec.spin_limit} times on a predecessor "
                "that never posted. This device gives no forward-progress guarantee; use "
                "variant='fallback'."
            )
        if spec.stats:
            out = {name: int(words[2 + i]) for i, name in enumerate(STAT_NAMES)}
            out["tiles"] = tiles
            return out
    return None


def offsets_ok(backend: Backend, queue: Any, spec: ScanSpec, offsets: Any, n: int) -> bool:
    """Whether contiguous uint64 device ``offsets`` start at 0, end at ``n`` and never decrease.

    Runs on the device (``spec`` must be segmented by offsets) and reads back one word.
    """
    prog = backend.program(spec, queue)
    bad, _ = backend.scratch(4, queue, "offsets-check")
    backend.zero(bad, 4, queue)
    nseg = offsets.shape[0] - 1
    prog.launch(CHECK_OFFSETS, -(-(nseg + 1) // spec.threads), [backend.buffer(offsets)[0], nseg, n, bad])
    return int(backend.read_u32(bad, 1, queue)[0]) == 0
