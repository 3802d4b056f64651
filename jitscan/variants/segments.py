"""Where segments start: the arguments the segmented forms of a variant take.

Every segmented mode appends its own parameters (``JS_SEG_PARAMS`` in the dialect) to
the entry points that load input; ``offsets`` also compiles the two small kernels of
``offsets.h``: a pre-pass that finds each tile's first segment and checks the offsets,
and the check alone, where tiles of one thread find their first segment themselves. A
bad offset raises the queue's alarm (``backends.Alarm``): :func:`offsets_error` says what
its word holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..backends.launch import ARG_FIRST, ARG_SEG, ARG_SEGN

#: parameters appended per mode (the order of JS_SEG_PARAMS in kernels/dialect.py)
PARAMS: dict[str, tuple[str, ...]] = {
    "": (),
    "flags": ("buf", "size"),  # head flags, row length 0
    "rows": ("buf", "size"),  # an unused buffer, the row length
    "offsets": ("buf", "buf", "size"),  # CSR offsets, each tile's first segment, nseg
}
#: what each of PARAMS holds, as a launch plan's slots (backends.launch): the values
#: :func:`args` returns, in this order
SLOTS: dict[str, tuple[int, ...]] = {
    "": (),
    "flags": (ARG_SEG, ARG_SEGN),
    "rows": (ARG_SEG, ARG_SEGN),
    "offsets": (ARG_SEG, ARG_FIRST, ARG_SEGN),
}

#: the pre-pass of "offsets": each tile's first segment (and the check of device offsets)
SEG_FIRST = "js_seg_first"
#: the check alone, where tiles of one thread find their first segment themselves
CHECK_OFFSETS = "js_check_offsets"
#: extra entry points compiled per mode, with their argument kinds
ENTRIES: dict[str, dict[str, tuple[str, ...]]] = {
    "": {},
    "flags": {},
    "rows": {},
    "offsets": {
        SEG_FIRST: ("buf", "size", "size", "buf", "buf", "buf", "u32"),
        CHECK_OFFSETS: ("buf", "size", "size", "buf", "buf"),
    },
}

#: what js_check_offset found, by its rule number
_RULES = (
    "offsets must start at 0: offsets[{s}] != 0",
    "offsets must be non-decreasing: offsets[{s}] < offsets[{p}]",
    "offsets must end at n == {n}: offsets[{s}] != {n}",
)
#: js_check_offset's JS_OFFSET_INDEX_LIMIT: an index it reports past this reads as this
INDEX_LIMIT = 0x3FFFFFFE


@dataclass(frozen=True)
class Segments:
    """One call's segments: head flags, a row length, CSR offsets, or whole-tile rows.

    ``heads`` is a contiguous uint8 device array at the start of its buffer (nonzero
    at heads); ``offsets`` a contiguous uint64 device array likewise, ``checked`` where
    they were checked on the host (device offsets are checked by the kernels, which
    raise the queue's alarm: :func:`offsets_error`); ``row_tiles`` (plain chained scans
    of rows a whole number of tiles long) is the tiles per row.
    """

    heads: Any = None
    row_len: int = 0
    offsets: Any = None
    row_tiles: int = 0
    checked: bool = False

    @property
    def nseg(self) -> int:
        return int(self.offsets.shape[0]) - 1


#: a plain scan
NONE = Segments()


def args(bound: Any, queue: Any, seg: Segments, src: Any, tiles: int, n: int) -> list[Any]:
    """The mode's kernel arguments for one call of ``tiles`` tiles (in :data:`SLOTS`
    order); runs the offsets pre-pass first (:func:`offsets_tail`).

    ``bound`` is a variant's ``Bound`` (variants.base, which imports this module).
    """
    mode, backend = bound.spec.segmented, bound.backend
    if not mode:
        return []
    if mode == "offsets":
        alarm = backend.alarm(queue)
        return offsets_tail(bound, alarm, queue, seg.offsets, n, tiles, seg.checked)
    # with row_len the heads buffer is never read; the input's will do
    if seg.heads is None:
        src = getattr(src, "first", src)  # a tuple value's first array (variants.base.Fields)
    return [backend.buffer(seg.heads if seg.heads is not None else src)[0], seg.row_len]


def offsets_tail(
    bound: Any, alarm: Any, queue: Any, offsets: Any, n: int, tiles: int, checked: bool = False
) -> list[Any]:
    """The arguments of a launch by ``offsets`` (in :data:`SLOTS` order), after the
    pre-pass that finds each tile's first segment: enqueued here, on ``queue``.

    Offsets not ``checked`` (on the host) are checked on the device there (or by
    ``js_check_offsets`` where no pre-pass runs: tiles of one thread search the offsets
    themselves), and ``alarm`` (the queue's) is watched: the host learns of bad ones
    without waiting for the device.
    """
    backend, spec = bound.backend, bound.spec
    off = backend.buffer(offsets)[0]
    nseg = offsets.shape[0] - 1
    threads = spec.threads
    if spec.searches_segments:  # the table is not read: the offsets stand in for it
        if not checked:
            groups = -(-(nseg + 1) // threads)
            bound.program.launch(CHECK_OFFSETS, groups, [off, nseg, n, alarm.word, alarm.flag], queue)
            alarm.watch()
        return [off, off, nseg]
    first = backend.scratch((tiles + 1) * 8, queue, "seg-first").buf
    items = tiles if checked else max(tiles, nseg)
    groups = -(-(items + 1) // threads)
    bound.program.launch(
        SEG_FIRST, groups, [off, nseg, n, first, alarm.word, alarm.flag, 0 if checked else 1], queue
    )
    if not checked:
        alarm.watch()
    return [off, first, nseg]


def offsets_error(word: int, n: int, earlier: bool) -> ValueError:
    """The error for the alarm's ``word`` (nonzero: js_check_offset found a bad offset).

    ``earlier``: the host learns of it at a later call than the one that was given them.
    """
    code = 0xFFFFFFFF - word
    s, rule = code >> 2, code & 3
    what = _RULES[rule].format(s=s, p=s - 1, n=n if not earlier else "n")
    if s >= INDEX_LIMIT:
        what += f" (the first bad index is {INDEX_LIMIT} or later)"
    if earlier:
        return ValueError(
            f"the device offsets of an earlier call on this queue were bad ({what}), so that call's "
            "result is not its segments' scan (its kernels stayed inside the arrays). Pass "
            "check='now' to have a call wait for its check and raise there."
        )
    return ValueError(what)
