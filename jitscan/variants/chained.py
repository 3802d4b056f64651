"""Chained scans: one pass, tile aggregates passed on by decoupled look-back.

``fallback`` (the default: a stalled predecessor is reduced by the waiting workgroup,
so no forward-progress guarantee is needed) and ``lookback`` (waits; its spin limit is
a watchdog that reports a deadlock instead of hanging) share one kernel,
``js_chained`` in ``chained.c``, told apart by ``JS_FALLBACK``.

Launch sequence: (offsets pre-pass,) one launch of ``js_chained`` over the tiles,
with the scratch of ``tile_state.py``. A look-back launch with ``check`` reads the
deadlock flag back (a synchronization); so does a counting one.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from ..backends.base import Backend
from ..errors import DeadlockError
from ..kernels import tile_state
from ..kernels.spec import LaunchArgs, ScanSpec
from . import segments
from .base import Bound, Variant

KERNEL = "js_chained"


class Epochs:
    """The last epoch used on each scratch buffer, by the backend's name of the buffer.

    ``lock`` is held from the choice of an epoch to the launch that uses it: threads
    sharing a queue share its scratch buffer, and two launches with one epoch would read
    each other's descriptors as their own.
    """

    def __init__(self) -> None:
        self.last: dict[Any, int] = {}
        self.lock = threading.Lock()

    def next(self, buf: Any, fresh: bool, limit: int) -> int:
        """The epoch of the next launch on ``buf``; 0 asks the caller to zero the buffer first.

        After a zeroing the caller launches with :meth:`restart`'s epoch.
        """
        epoch = 1 if fresh else self.last.get(buf, 0) + 1
        if epoch > limit:
            return 0
        self.last[buf] = epoch
        return epoch

    def restart(self, buf: Any) -> int:
        """The epoch after a zeroing of every word of ``buf``."""
        self.last[buf] = 1
        return 1

    def forget(self, buf: Any) -> None:
        """``buf`` was zeroed after an aborted launch: its next launch starts over."""
        self.last[buf] = 0


#: epochs of every chained scratch buffer in this process
EPOCHS = Epochs()


class Chained(Variant):
    files = ("tile.h", "tile_state.h", "lookback.h", "chained.c")
    signatures = {KERNEL: ("buf", "size", "buf", "size", "size", "buf", "u32", "u32", "u32", "u32", "u32")}
    segmented_entries = (KERNEL,)
    rows_ok = True

    def __init__(self, name: str, fallback: bool) -> None:
        self.name = name
        self.fallback = fallback
        self.defines = (f"#define JS_FALLBACK {int(fallback)}",)

    def bind(self, spec: ScanSpec, backend: Backend, queue: Any) -> Bound:
        bound = super().bind(spec, backend, queue)
        return replace(bound, state=tile_state.of_spec(spec))

    def _launch(
        self,
        bound: Bound,
        queue: Any,
        launch: LaunchArgs,
        src: Any,
        dst: Any,
        n: int,
        tiles: int,
        tail: tuple,
    ) -> Any:
        """Scratch, epoch and the one launch; ``tail`` ends the arguments (row_tiles, segments).

        Returns the scratch buffer.
        """
        b, state, spec = bound.backend, bound.state, bound.spec
        in_buf, in_off = b.buffer(src)
        out_buf, out_off = b.buffer(dst)
        with EPOCHS.lock:
            ctrl, fresh = b.scratch(state.nbytes(tiles), queue, state.encoding)
            name = b.identity(ctrl)
            epoch = EPOCHS.next(name, fresh, state.epoch_limit)
            if not epoch:
                # every word, not just this launch's: a stale word of a higher epoch would
                # win the atomic max against the restarted epochs
                b.zero(ctrl, None, queue)
                epoch = EPOCHS.restart(name)
            elif spec.stats:
                b.zero(ctrl, tile_state.CTRL_WORDS * 4, queue)  # the counters only
            args = [in_buf, in_off, out_buf, out_off, n, ctrl, launch.kind_code, epoch, launch.spin_limit]
            args += (launch.block_every, *tail)
            bound.program.launch(KERNEL, tiles, args, queue)
        return ctrl

    def run_plain(self, bound: Bound, queue: Any, launch: LaunchArgs, src: Any, dst: Any, n: int) -> None:
        if self.fallback and not bound.spec.stats:
            self._launch(bound, queue, launch, src, dst, n, -(-n // bound.spec.tile), (0,))
        else:  # look-back reads its deadlock flag back; counting reads its counters
            self.run(bound, queue, launch, src, dst, n, segments.NONE, True)

    def run(
        self,
        bound: Bound,
        queue: Any,
        launch: LaunchArgs,
        src: Any,
        dst: Any,
        n: int,
        seg: segments.Segments,
        check: bool = True,
    ) -> dict[str, int] | None:
        spec, b = bound.spec, bound.backend
        tiles = -(-n // spec.tile)
        extra = segments.args(bound, queue, seg, src, tiles, n)
        ctrl = self._launch(bound, queue, launch, src, dst, n, tiles, (seg.row_tiles, *extra))
        if not ((check and not self.fallback) or spec.stats):
            return None
        words = b.read_u32(ctrl, tile_state.CTRL_WORDS, queue)
        if words[tile_state.CTRL_DEADLOCK]:
            # an aborted launch leaves the counter and flag set: clear before the next
            b.zero(ctrl, None, queue)
            EPOCHS.forget(b.identity(ctrl))
            raise DeadlockError(
                f"look-back deadlock: a workgroup spun {launch.spin_limit} times on a predecessor "
                "that never posted. This device gives no forward-progress guarantee; use "
                "variant='fallback'."
            )
        if not spec.stats:
            return None
        first = tile_state.CTRL_STATS
        out = {name: int(words[first + i]) for i, name in enumerate(tile_state.STAT_NAMES)}
        out["tiles"] = tiles
        return out


FALLBACK = Chained("fallback", fallback=True)
LOOKBACK = Chained("lookback", fallback=False)
