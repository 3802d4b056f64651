"""Where segments start: the arguments the segmented forms of a variant take.

Every segmented mode appends its own parameters (``JS_SEG_PARAMS`` in the dialect) to
the entry points that load input; ``offsets`` also compiles two small kernels of
``tile.h``: a pre-pass that finds each tile's first segment (skipped where tiles of one
thread find it themselves) and the device-side check of offsets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Bound

#: parameters appended per mode (the order of JS_SEG_PARAMS in kernels/dialect.py)
PARAMS: dict[str, tuple[str, ...]] = {
    "": (),
    "flags": ("buf", "size"),  # head flags, row length 0
    "rows": ("buf", "size"),  # an unused buffer, the row length
    "offsets": ("buf", "buf", "size"),  # CSR offsets, each tile's first segment, nseg
}

#: the pre-pass of "offsets": each tile's first segment
SEG_FIRST = "js_seg_first"
#: "offsets" also checks device offsets where they are
CHECK_OFFSETS = "js_check_offsets"
#: extra entry points compiled per mode, with their argument kinds
ENTRIES: dict[str, dict[str, tuple[str, ...]]] = {
    "": {},
    "flags": {},
    "rows": {},
    "offsets": {SEG_FIRST: ("buf", "size", "size", "buf"), CHECK_OFFSETS: ("buf", "size", "size", "buf")},
}


@dataclass(frozen=True)
class Segments:
    """One call's segments: head flags, a row length, CSR offsets, or whole-tile rows.

    ``heads`` is a contiguous uint8 device array at the start of its buffer (nonzero
    at heads); ``offsets`` a contiguous uint64 device array likewise; ``row_tiles``
    (plain chained scans of rows a whole number of tiles long) is the tiles per row.
    """

    heads: Any = None
    row_len: int = 0
    offsets: Any = None
    row_tiles: int = 0

    @property
    def nseg(self) -> int:
        return int(self.offsets.shape[0]) - 1


#: a plain scan
NONE = Segments()


def args(bound: Bound, queue: Any, seg: Segments, src: Any, tiles: int, n: int) -> list[Any]:
    """The mode's kernel arguments for one call of ``tiles`` tiles; runs the offsets pre-pass first."""
    mode, backend = bound.spec.segmented, bound.backend
    if not mode:
        return []
    if mode == "offsets":
        off_buf = backend.buffer(seg.offsets)[0]
        nseg = seg.nseg
        if bound.spec.searches_segments:  # the table is not read: the offsets stand in for it
            return [off_buf, off_buf, nseg]
        first = backend.scratch((tiles + 1) * 8, queue, "seg-first").buf
        groups = -(-(tiles + 1) // bound.spec.threads)
        bound.program.launch(SEG_FIRST, groups, [off_buf, nseg, n, first], queue)
        return [off_buf, first, nseg]
    # with row_len the heads buffer is never read; the input's will do
    if seg.heads is None:
        src = getattr(src, "first", src)  # a tuple value's first array (variants.base.Fields)
    return [backend.buffer(seg.heads if seg.heads is not None else src)[0], seg.row_len]


def offsets_ok(bound: Bound, queue: Any, offsets: Any, n: int) -> bool:
    """Whether contiguous uint64 device ``offsets`` start at 0, end at ``n`` and never decrease.

    Runs on the device (``bound`` must be compiled for ``offsets``) and reads back one word.
    """
    from .base import LOCK

    backend = bound.backend
    with LOCK:  # the flag word is the queue's, until it is read back
        bad = backend.scratch(4, queue, "offsets-check").buf
        backend.zero(bad, 4, queue)
        nseg = int(offsets.shape[0]) - 1
        groups = -(-(nseg + 1) // bound.spec.threads)
        bound.program.launch(CHECK_OFFSETS, groups, [backend.buffer(offsets)[0], nseg, n, bad], queue)
        return int(backend.read_u32(bad, 1, queue)[0]) == 0
