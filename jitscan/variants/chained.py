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

from collections.abc import Callable
from dataclasses import replace
from functools import cache
from typing import Any

from ..backends import clock
from ..backends.base import Backend, DeviceInfo
from ..backends.launch import (
    ARG_CARRY,
    ARG_CODE,
    ARG_CONST,
    ARG_DST,
    ARG_EPOCH,
    ARG_N,
    ARG_SCRATCH,
    ARG_SRC,
    CARRY_WORDS,
    NO_CARRY,
    LaunchPlan,
)
from ..errors import DeadlockError
from ..kernels import tile_state
from ..kernels.spec import KIND_CARRY, KIND_CARRY_ARGS, KIND_STREAM, LaunchArgs, ScanSpec
from . import segments
from .base import Bound, Capabilities, Variant, operands

KERNEL = "js_chained"

#: spins on a NOT_READY predecessor before a fallback workgroup reduces its tile itself, on
#: GPUs. H100 (experiments/spin_sweep.py): 0.4 spins per workgroup without blocking, and no
#: false fallbacks at 16 (segmented: 0.003 per workgroup, at the same speed). A real stall
#: holds its successors for the whole limit: with 1 in 512 workgroups never posting, 16
#: spins ran at 206 Ge/s against 152 for 32 and 100 for 64
FALLBACK_SPINS = 16
#: the same on CPUs
CPU_FALLBACK_SPINS = 64
#: spins on one predecessor before the look-back variant declares a deadlock (GPUs)
LOOKBACK_WATCHDOG = 1 << 20
#: the same on CPUs: a spin there is one load, so 2^20 of them last about a millisecond,
#: less than the time slice for which the OS may preempt the predecessor's thread
CPU_LOOKBACK_WATCHDOG = 1 << 31
#: seconds a look-back waits on one predecessor before its watchdog fires, on devices
#: with a clock (backends.clock): far beyond any wait of a device that runs every
#: workgroup it started (an OS time slice on a CPU), far below a user's patience
LOOKBACK_TIMEOUT = 1.0

#: what both chained variants do: every segmented mode, carries, tile state, a
#: deterministic form (src/deterministic.h)
CHAINED_CAPS = Capabilities(carry=True, tile_state=True, deterministic="form")

#: what js_chained's arguments hold (Chained.signatures, before the segments' arguments):
#: the arrays, n, the scratch, kind, epoch, then the constants() of a launch, then the
#: words of a carry the host knows (JS_CARRY_ARGS_BIT: no copy into the scratch before the
#: launch)
SLOTS = (
    ARG_SRC,
    ARG_DST,
    ARG_N,
    ARG_SCRATCH,
    ARG_CODE,
    ARG_EPOCH,
    *[ARG_CONST] * 4,
    *[ARG_CARRY] * CARRY_WORDS,
)


@cache
def launch_plan(spec: ScanSpec) -> LaunchPlan:
    """The one launch of a chained scan of ``spec``: js_chained over the tiles, with the
    control words and a descriptor per tile of ``tile_state.py`` as its scratch."""
    state = tile_state.of_spec(spec)
    return LaunchPlan(
        entry=KERNEL,
        slots=SLOTS + segments.SLOTS[spec.segmented],
        tile=spec.tile,
        header=state.nbytes(0),
        per_tile=state.nbytes(1) - state.nbytes(0),
        slot=state.encoding,
        epoch_limit=state.epoch_limit,
        stream_bit=KIND_STREAM,
        carry_at=tile_state.CTRL_CARRY * 4,
        carry_bit=KIND_CARRY,
        carry_args_bit=KIND_CARRY_ARGS,
    )


def constants(launch: LaunchArgs, row_tiles: int = 0) -> tuple[int, int, int, int]:
    """SLOTS' constants for a launch: spin limit, wait limit, blocking period and row tiles
    (0 but for a scan of rows), the same on every plain launch."""
    return (launch.spin_limit, launch.wait_limit, launch.block_every, row_tiles)


class Chained(Variant):
    files = (
        "tile.h",
        "segments.h",
        "lanes.h",
        "scan.h",
        "offsets.h",
        "tile_state.h",
        "lookback.h",
        "deterministic.h",
        "chained.c",
    )
    signatures = {KERNEL: ("src", "dst", "size", "buf", *["u32"] * 6, *["size"] * CARRY_WORDS)}
    segmented_entries = (KERNEL,)
    rows_ok = True
    lane_tiles = True

    def __init__(self, name: str, fallback: bool) -> None:
        self.name = name
        self.fallback = fallback
        self.defines = (f"#define JS_FALLBACK {int(fallback)}",)
        # fallback needs no forward-progress guarantee, so it takes tiles that never post;
        # look-back waits for them, bounded by its watchdog
        self.caps = replace(CHAINED_CAPS, blocking=fallback, watchdog=not fallback)
        self.spin_timeout = 0.0 if fallback else LOOKBACK_TIMEOUT

    def spin_limit(self, info: DeviceInfo) -> int:
        """A fallback trigger, or look-back's watchdog."""
        if self.fallback:
            return FALLBACK_SPINS if info.is_gpu else CPU_FALLBACK_SPINS
        return LOOKBACK_WATCHDOG if info.is_gpu else CPU_LOOKBACK_WATCHDOG

    def bind(self, spec: ScanSpec, backend: Backend, queue: Any) -> Bound:
        bound = super().bind(spec, backend, queue)
        return replace(bound, state=tile_state.of_spec(spec), plan=launch_plan(spec))

    def _launch(
        self,
        bound: Bound,
        queue: Any,
        launch: LaunchArgs,
        src: Any,
        dst: Any,
        n: int,
        tiles: int,
        seg: segments.Segments,
        extra: list[Any],
    ) -> tuple[Any, int]:
        """Scratch, epoch and the one launch, as ``bound.plan`` says, then the segments'
        ``extra`` arguments (the queue's lock held).

        Returns the scratch buffer and the launch's epoch.
        """
        b, plan = bound.backend, bound.plan
        assert plan is not None  # bind() made it
        ins, outs = operands(b, src), operands(b, dst)
        scratch = b.scratch(plan.nbytes(tiles), queue, plan.slot)
        epoch = plan.next_epoch(b, scratch, queue)
        ctrl = scratch.buf
        if bound.spec.stats:
            b.zero(ctrl, tile_state.CTRL_CARRY * 4, queue)  # the counters only
        code = launch.kind_code | (plan.stream_bit if n >= launch.stream_from(bound.spec) else 0)
        words = NO_CARRY
        if launch.carry_from is not None:  # a value on the device: copied into the control words
            b.copy_bytes(ctrl, plan.carry_at, launch.carry_from, queue)
        elif launch.carry:  # one the host knows: in the launch's arguments
            words = plan.carry_words(launch.carry)
            code |= plan.carry_args_bit
        args = plan.arguments(ins, outs, n, ctrl, code, epoch, constants(launch, seg.row_tiles), extra, words)
        bound.program.launch(plan.entry, tiles, args, queue)
        return ctrl, epoch

    def plain_launcher(self, bound: Bound, queue: Any, launch: LaunchArgs) -> Callable[..., None]:
        if not self._lean(bound) or bound.spec.record:
            return super().plain_launcher(bound, queue, launch)
        return self._launcher(bound, queue, launch, False)

    def form_launcher(self, bound: Bound, queue: Any, launch: LaunchArgs) -> Callable[..., None]:
        if not self._lean(bound):
            return super().form_launcher(bound, queue, launch)
        return self._launcher(bound, queue, launch, True)

    def _lean(self, bound: Bound) -> bool:
        """Whether a launch of ``bound`` is set up ahead (_launcher): not where it reads
        something back (look-back its deadlock flag, a counting scan its counters)."""
        return self.fallback and not bound.spec.stats

    def _launcher(self, bound: Bound, queue: Any, launch: LaunchArgs, form: bool) -> Callable[..., None]:
        """_launch, from ``bound.plan``, with what does not depend on the arrays looked up
        once: ``go(src, dst, n, carry=None)`` of a plain scan (with the record a compiled
        common call reads, ``go.launch_state``), else the form launcher's ``go`` (a tuple
        value's Fields, the segments' array or row length: Variant.form_launcher)."""
        b, plan, spec = bound.backend, bound.plan, bound.spec
        assert plan is not None  # bind() made it
        tile, slot, limit = plan.tile, plan.slot, plan.epoch_limit
        nbytes, tiles_in = plan.nbytes, plan.tiles_in
        next_epoch, carry_at, carry_bit = plan.next_epoch, plan.carry_at, plan.carry_bit
        carry_args_bit, carry_words = plan.carry_args_bit, plan.carry_words
        kind, stream_from = launch.kind_code, launch.stream_from(spec)
        streaming = kind | plan.stream_bit
        lock = b.lock(queue)
        with lock:  # the backend's Scratch of the queue is made or grown under it
            scratch = b.scratch(0, queue, slot)  # the queue's one Scratch of this encoding
        room = tiles_in(scratch.nbytes)  # tiles its buffer holds: it only grows
        # the lock's own methods: "with lock" costs about 0.3 us more a call on the H100's
        # host, a quarter of this function's Python (experiments/host_path.py)
        acquire, release = lock.acquire, lock.release

        def begin(n: int, carry: Any) -> tuple[int, Any, int, int]:
            """(tiles, scratch buffer, code, epoch) of a launch of ``n``, a carry on the
            device copied before it in queue order (the lock held); one the host knows
            (bytes) goes in the launch's arguments (carry_words)."""
            nonlocal scratch, room
            tiles = -(-n // tile)
            if tiles > room:
                # the backend's Scratch of the queue, grown: once the backend has let this
                # queue's entry go (its bound on queues), that is a new one, and the one
                # held here would stay too small for the tiles
                scratch = b.scratch(nbytes(tiles), queue, slot)
                room = tiles_in(scratch.nbytes)
            epoch = scratch.epoch + 1
            if epoch > limit:  # the tags would overflow: the plan's rule zeroes the buffer
                epoch = next_epoch(b, scratch, queue)
            scratch.epoch = epoch
            code = kind if n < stream_from else streaming
            if carry is not None:
                if type(carry) is bytes:
                    code |= carry_bit | carry_args_bit
                else:
                    code |= carry_bit
                    b.copy_bytes(scratch.buf, carry_at, carry, queue)
            return tiles, scratch.buf, code, epoch

        if not form:
            # the constants are the same on every launch: the launcher sets them once
            fire = bound.program.launcher(plan, queue, b.buffer, constants(launch))

            def go(src: Any, dst: Any, n: int, carry: Any = None) -> None:
                acquire()
                try:
                    tiles, buf, code, epoch = begin(n, carry)
                    if type(carry) is bytes:
                        fire(tiles, src, dst, n, buf, code, epoch, carry_words(carry))
                    else:
                        fire(tiles, src, dst, n, buf, code, epoch)
                finally:
                    release()

            def launch_state() -> tuple:
                # what a compiled common call needs to launch as go does, with go's scratch
                # as it is now (CupyBackend.common_call, backends/_common_call.c)
                return (lock, scratch, plan, kind, stream_from, fire)

            go.launch_state = launch_state  # type: ignore[attr-defined]
            return go

        # a form's: the segments' arguments packed behind the plan's constants (and a
        # carry's words), the offsets' pre-pass first
        mode = spec.segmented
        packed = bound.program.packer(plan, queue, constants(launch))
        buffer = b.buffer
        with lock:  # its scratch is the queue's, made under it
            pre = segments.prepass(bound, queue) if mode == "offsets" else None
        record = bool(spec.record) or spec.transform is not None  # src and dst as Fields

        def form_go(
            src: Any, dst: Any, n: int, seg_array: Any = None, row_len: int = 0, carry: Any = None
        ) -> None:
            head = [*operands(b, src), *operands(b, dst)] if record else [*buffer(src), *buffer(dst)]
            acquire()
            try:
                tiles, buf, code, epoch = begin(n, carry)
                head += (n, buf, code, epoch)
                words = carry_words(carry) if type(carry) is bytes else None  # in the arguments
                consts = None
                checked = False
                if mode == "offsets":
                    checked = segments.trusted(seg_array)
                    tail = pre(seg_array, n, tiles, checked)  # type: ignore[misc]
                elif mode:  # by flags, or rows of row_len
                    tail = segments.heads_tail(b, src, seg_array if mode == "flags" else None, row_len)
                else:
                    tail = []
                    if row_len:  # rows of whole tiles: the plain program restarts at each
                        consts = constants(launch, row_len // tile)
                packed(tiles, head, tail, consts, words)
                if pre is not None and not checked:  # the host sees what the check raised (Prepass)
                    pre.alarm.watch()
            finally:
                release()

        # what a compiled form call needs (CupyBackend.form_call), as the plain one's
        form_go.launch_state = lambda: (lock, scratch, plan, kind, stream_from, packed, pre)  # type: ignore[attr-defined]
        return form_go

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
        # the offsets pre-pass, the launch and its read-back: no other launch on the queue between
        with b.lock(queue):
            extra = segments.args(bound, queue, seg, src, tiles, n)
            ctrl, epoch = self._launch(bound, queue, launch, src, dst, n, tiles, seg, extra)
            if spec.segmented == "offsets":  # the host sees what the launch's check raised
                b.alarm(queue).watch()
            if not ((check and not self.fallback) or spec.stats):
                return None
            words = b.read_u32(ctrl, tile_state.CTRL_WORDS, queue)
            flag = int(words[tile_state.CTRL_DEADLOCK])
            cause = flag & 3 if flag >> 2 == epoch else 0  # a flag of this launch's
            if cause:
                # an aborted launch leaves the counter and flag set: clear before the next
                b.zero(ctrl, None, queue)
                b.scratch(0, queue, bound.state.encoding).epoch = 0  # the next launch's is 1
                raise _deadlock(spec, launch, cause, int(words[tile_state.CTRL_WAITED]))
        if not spec.stats:
            return None
        first = tile_state.CTRL_STATS
        out = {name: int(words[first + i]) for i, name in enumerate(tile_state.STAT_NAMES)}
        out["tiles"] = tiles
        return out


def _deadlock(spec: ScanSpec, launch: LaunchArgs, cause: int, waited_units: int) -> DeadlockError:
    """The error for a look-back launch whose watchdog fired, saying which bound did."""
    waited = waited_units * 1024 / clock.ticks_per_second(spec.clock) if spec.clock else None
    lasted = f" after {waited:.3g} s" if waited is not None else ""
    if cause == tile_state.STUCK_TIME:
        return DeadlockError(
            f"look-back deadlock: a predecessor posted nothing for {waited:.3g} s (spin_timeout), so the "
            "device did not run its workgroup: it gives no forward-progress guarantee to workgroups "
            "that have started. Use variant='fallback', which needs none.",
            cause="time",
            waited=waited,
        )
    bound = (
        "; this device has no clock the kernel can read, so spins alone bound a wait"
        if not spec.clock
        else ""
    )
    return DeadlockError(
        f"look-back deadlock: a workgroup spun {launch.spin_limit} times (spin_limit){lasted} on a "
        f"predecessor that had not posted{bound}. The predecessor may only have been slow: raise "
        "spin_limit, or use variant='fallback', which needs no forward-progress guarantee.",
        cause="spins",
        waited=waited,
    )


FALLBACK = Chained("fallback", fallback=True)
LOOKBACK = Chained("lookback", fallback=False)
