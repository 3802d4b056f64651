"""Where segments start: the arguments the segmented forms of a variant take.

Every segmented mode appends its own parameters (``JS_SEG_PARAMS`` in the dialect) to
the entry points that load input; ``offsets`` also compiles the pre-pass of ``offsets.h``,
which finds each tile's first segment and checks the offsets. Programs whose tiles search
the offsets themselves (``ScanSpec.searches_segments``: GPUs' small size classes, CPUs'
one-thread tiles) launch no pre-pass (:class:`Prepass`); many-thread tiles check what they
read, and a check launch runs beside one-thread tiles. A bad offset raises
the queue's alarm (``backends.Alarm``): :func:`offsets_error` says what its word holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..backends.launch import ARG_FIRST, ARG_FLAG, ARG_SEG, ARG_SEGN, ARG_WORD

#: parameters appended per mode (the order of JS_SEG_PARAMS in kernels/dialect.py)
PARAMS: dict[str, tuple[str, ...]] = {
    "": (),
    "flags": ("buf", "size"),  # head flags, row length 0
    "rows": ("buf", "size"),  # an unused buffer, the row length
    # CSR offsets, each tile's first segment (the offsets where tiles search), nseg, the alarm
    "offsets": ("buf", "buf", "size", "buf", "buf"),
}
#: what each of PARAMS holds, as a launch plan's slots (backends.launch): the values
#: :func:`args` returns, in this order
SLOTS: dict[str, tuple[int, ...]] = {
    "": (),
    "flags": (ARG_SEG, ARG_SEGN),
    "rows": (ARG_SEG, ARG_SEGN),
    "offsets": (ARG_SEG, ARG_FIRST, ARG_SEGN, ARG_WORD, ARG_FLAG),
}

#: the pre-pass of "offsets": each tile's first segment (and the check of device offsets)
SEG_FIRST = "js_seg_first"
#: the check alone, beside a launch of one-thread tiles (which search, but do not check)
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
    order); runs the offsets pre-pass first (:class:`Prepass`).

    ``bound`` is a variant's ``Bound`` (variants.base, which imports this module).
    """
    mode, backend = bound.spec.segmented, bound.backend
    if not mode:
        return []
    if mode == "offsets":
        return prepass(bound, queue)(seg.offsets, n, tiles, seg.checked)
    return heads_tail(backend, src, seg.heads, seg.row_len)


def heads_tail(backend: Any, src: Any, heads: Any, row_len: int) -> list[Any]:
    """The arguments of a launch by head flags ``heads`` (row length 0), or of rows of
    ``row_len`` (heads None: the heads buffer is never read, and the input's will do), in
    :data:`SLOTS` order."""
    if heads is None:
        heads = getattr(src, "first", src)  # a tuple value's first array (variants.base.Fields)
    return [backend.buffer(heads)[0], row_len]


class Prepass:
    """What a launch by offsets runs first on one queue, and the arguments it passes: the
    pre-pass that finds each tile's first segment (``js_seg_first``) and checks the
    offsets, or where the program's tiles search the offsets themselves (the offsets go in
    the table's slot) nothing, as they check what they read, or beside one-thread tiles
    the check alone (``js_check_offsets``).

    Called as ``prepass(offsets, n, tiles, checked=False)``, it enqueues what runs first
    and returns the arguments of the launch by these offsets (in :data:`SLOTS` order).
    Offsets not ``checked`` (on the host) are checked on the device; after the launch
    the caller has the host watch the queue's alarm (``alarm.watch()``), so that it learns
    of bad ones without waiting for the device. Made once per program and queue
    (:func:`prepass`); its calls hold the queue's lock.
    """

    def __init__(self, bound: Any, queue: Any) -> None:
        b, spec = bound.backend, bound.spec
        self.backend, self.queue, self.threads = b, queue, spec.threads
        self.alarm = alarm = b.alarm(queue)
        #: whether the program's tiles search the offsets (every launch of it, or none)
        self.searches = spec.searches_segments
        self._alarm = alarm.word, alarm.flag  # as kernels take them
        self.fire = bound.program.fixed(SEG_FIRST, queue, (alarm.word, alarm.flag, 1))
        #: the check beside one-thread tiles (None: tiles that search check what they read)
        self.check = bound.program.fixed(CHECK_OFFSETS, queue, self._alarm) if spec.threads == 1 else None
        self._checked: Any = None  # the pre-pass of offsets checked on the host: made on first use
        self._program = bound.program
        #: each tile's first segment, a Scratch of the queue (it only grows)
        self.first = b.scratch(0, queue, "seg-first")
        #: ``copy_due(offsets)``: whether a launch by ``offsets`` copies the alarm's flag
        #: back now (offsets not jitscan's own, :func:`trusted`, and the alarm's copy due):
        #: what a compiled call asks, as Python's launch does (backends/opencl_calls.py)
        self.copy_due = lambda offsets: not trusted(offsets) and alarm.due()

    def __call__(self, offsets: Any, n: int, tiles: int, checked: bool = False) -> list[Any]:
        off = self.backend.buffer(offsets)[0]
        nseg = offsets.shape[0] - 1
        word, flag = self._alarm
        if self.searches:
            if self.check is not None and not checked:
                self.check(-(-(nseg + 1) // self.threads), off, nseg, n)
            return [off, off, nseg, word, flag]
        first = self.first
        if first.nbytes < (tiles + 1) * 8:
            first = self.first = self.backend.scratch((tiles + 1) * 8, self.queue, "seg-first")
        threads = self.threads
        if checked:
            if self._checked is None:
                alarm = self.alarm
                self._checked = self._program.fixed(SEG_FIRST, self.queue, (alarm.word, alarm.flag, 0))
            self._checked(-(-(tiles + 1) // threads), off, nseg, n, first.buf)
        else:
            self.fire(-(-(max(tiles, nseg) + 1) // threads), off, nseg, n, first.buf)
        return [off, first.buf, nseg, word, flag]


#: offsets jitscan made itself and never hands to a user (the lanes of a reduction over an
#: axis, the runs' starts of reduce_by_key), by id: they need no check, so that a launch by
#: them has the host watch no alarm (on an OpenCL GPU the alarm's copy back costs as much
#: as a launch); the arrays are held, so an id stays theirs
_TRUSTED: dict[int, Any] = {}
_TRUSTED_MOST = 64


def trust(offsets: Any) -> Any:
    """Mark ``offsets`` (device offsets jitscan made, never handed to a user) as checked:
    launches by them skip the device check and the alarm's watch. Returns ``offsets``."""
    if len(_TRUSTED) >= _TRUSTED_MOST:
        _TRUSTED.clear()  # (those let go are checked again: only a cost)
    _TRUSTED[id(offsets)] = offsets
    return offsets


def distrust(offsets: Any) -> None:
    """Forget what :func:`trust` marked (offsets made for one call)."""
    if _TRUSTED.get(id(offsets)) is offsets:
        _TRUSTED.pop(id(offsets), None)  # (another thread may have cleared them all since)


def trusted(offsets: Any) -> bool:
    """Whether ``offsets`` are ones :func:`trust` marked."""
    return _TRUSTED.get(id(offsets)) is offsets


#: Prepass by (program, queue): at most _PREPASSES of them, the oldest dropped first
_prepasses: dict[tuple, Prepass] = {}
_PREPASSES = 64


def prepass(bound: Any, queue: Any) -> Prepass:
    """The :class:`Prepass` of ``bound``'s program on ``queue`` (made on first use; the
    queue's lock held, which guards its scratch)."""
    key = (bound.program, queue)
    got = _prepasses.get(key)
    if got is None:
        while len(_prepasses) >= _PREPASSES:
            del _prepasses[next(iter(_prepasses))]
        got = _prepasses[key] = Prepass(bound, queue)
    return got


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
