"""Reduce-then-scan: the multi-pass baseline, correct on any scheduler.

Launch sequence: ``js_rts_reduce`` (one aggregate per tile into the spine) ->
``js_rts_spine`` (one workgroup scans the spine) -> ``js_rts_scan`` (each tile scanned
again, seeded from the spine). A reduction stops after the spine. A segmented
reduction by offsets (``stages_tile``) stores whole segments in the tile pass, and a
small fix-up, ``js_rts_seg_fixup``, completes those that cross tile edges.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from ..backends.base import DeviceInfo
from ..backends.launch import (
    ARG_CONST,
    ARG_DST,
    ARG_N,
    ARG_OPEN,
    ARG_SPINE,
    ARG_SRC,
    ARG_TILES,
    GROUPS_ONE,
    GROUPS_TILES,
    GROUPS_TILES_PER_THREAD,
)
from ..kernels.spec import LaunchArgs, ScanSpec
from . import segments
from .base import Bound, Capabilities, Variant, expand, operands

REDUCE, SPINE, SCAN, FIXUP = "js_rts_reduce", "js_rts_spine", "js_rts_scan", "js_rts_seg_fixup"
#: js_rts_reduce of a segmented reduction also takes (out, carry)
STAGE_PARAMS = ("dst", "buf")


class ReduceThenScan(Variant):
    name = "rts"
    files = ("tile.h", "segments.h", "lanes.h", "scan.h", "offsets.h", "rts.c")
    signatures = {
        REDUCE: ("src", "size", "buf"),
        SPINE: ("buf", "size", "dst", "u32"),
        SCAN: ("src", "dst", "size", "buf", "u32"),
    }
    # the spine runs as one workgroup: no occupancy bound, every register
    single = frozenset({SPINE})
    segmented_entries = (REDUCE, SCAN)
    # no tile waits on another, and every total is one fixed expression of tile aggregates:
    # the same bits every run, and the pick for reductions (reads at the speed of CUB's)
    caps = Capabilities(deterministic="always", reductions=True)

    def shape(self, info: DeviceInfo, segmented: str, kind: str) -> dict[str, int]:
        if (
            info.is_gpu
            and info.shuffle_width
            and not info.amd
            and segmented == "offsets"
            and kind == "reduce"
        ):
            # no tile waits on another here, so registers buy loads in flight: 128 x 16
            # with 4 blocks per SM measured best (539 Ge/s at mean length 1000, against
            # 522-529 for 256 x 8 and 478 for 256 x 4)
            return {"threads": 128, "vectors": 16, "min_blocks": 4}
        return {}

    def entries(self, spec: ScanSpec) -> dict[str, tuple[str, ...]]:
        out = super().entries(spec)
        if spec.stages_tile:
            out[REDUCE] = expand(
                spec, self.signatures[REDUCE] + STAGE_PARAMS + segments.PARAMS[spec.segmented]
            )
            out[FIXUP] = expand(spec, ("buf", "buf", "dst", "size", "buf"))
        return out

    def form_launcher(self, bound: Bound, queue: Any, launch: LaunchArgs) -> Callable[..., None]:
        """A reduction by offsets (``stages_tile``) set up once on ``queue``: the pre-pass and
        :func:`_stages`, each launch packed by a launcher of its own (its kernel looked up
        once), not the general launch's per-call argument handling."""
        if not bound.spec.stages_tile:
            return super().form_launcher(bound, queue, launch)
        spec, b, prog = bound.spec, bound.backend, bound.program
        fixed = {entry: prog.fixed(entry, queue) for entry in (REDUCE, SPINE, FIXUP)}
        lock = b.lock(queue)
        with lock:  # the pre-pass's scratch is the queue's, made under it
            pre = segments.prepass(bound, queue)
        kind, tile = launch.kind_code, spec.tile

        def fire(entry: str, groups: int, *args: Any) -> None:
            fixed[entry](groups, *args)

        def go(
            src: Any, dst: Any, n: int, seg_array: Any = None, row_len: int = 0, carry: Any = None
        ) -> None:
            # (no carry comes here: a call with one runs the chained program, Programs.bound)
            ins, outs = operands(b, src), operands(b, dst)
            tiles = -(-n // tile)
            with lock:  # the spine, carry and first segments of this queue, through the last launch
                checked = segments.trusted(seg_array)
                extra = pre(seg_array, n, tiles, checked)
                _stages(spec, b, queue, fire, ins, outs, n, tiles, extra, kind)
                if not checked:
                    pre.alarm.watch()  # the host sees what the pre-pass's check raised

        launches = stage_codes(spec)

        def stages_state() -> tuple:
            # what a compiled form call needs to launch as go does (CupyBackend.form_call):
            # the lock, the spine's and the open segments' scratch of the queue and their
            # bytes a tile, each launch's launcher, workgroups rule and slots, the pre-pass
            spine, open_ = b.scratch(0, queue, "spine"), b.scratch(0, queue, "carry")
            fires = tuple((fixed[entry], groups, codes) for entry, groups, codes in launches)
            return lock, spine, open_, tile, spec.element_bytes, spec.dtype_info.itemsize, fires, pre

        go.stages_state = stages_state  # type: ignore[attr-defined]
        return go

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
    ) -> None:
        spec, b = bound.spec, bound.backend
        ins, outs = operands(b, src), operands(b, dst)
        tiles = -(-n // spec.tile)
        with b.lock(queue):  # the spine (and carry, first segments) of this queue, through the last launch
            self._run(bound, queue, launch, ins, outs, src, n, tiles, seg)

    def _run(
        self,
        bound: Bound,
        queue: Any,
        launch: LaunchArgs,
        ins: list[Any],
        outs: list[Any],
        src: Any,
        n: int,
        tiles: int,
        seg: segments.Segments,
    ) -> None:
        spec, b, prog = bound.spec, bound.backend, bound.program
        extra = segments.args(bound, queue, seg, src, tiles, n)
        if spec.stages_tile:

            def fire(entry: str, groups: int, *args: Any) -> None:
                prog.launch(entry, groups, list(args), queue)

            _stages(spec, b, queue, fire, ins, outs, n, tiles, extra, launch.kind_code)
        else:
            spine = b.scratch(tiles * spec.element_bytes, queue, "spine").buf
            prog.launch(REDUCE, tiles, [*ins, n, spine, *extra], queue)
            prog.launch(SPINE, 1, [spine, tiles, *outs, launch.kind_code], queue)
            if launch.kind != "reduce":
                prog.launch(SCAN, tiles, [*ins, *outs, n, spine, launch.kind_code, *extra], queue)
        if spec.segmented == "offsets":  # the host sees what the launches' checks raised
            b.alarm(queue).watch()


def _stages(
    spec: ScanSpec,
    b: Any,
    queue: Any,
    fire: Callable[..., None],
    ins: list[Any],
    outs: list[Any],
    n: int,
    tiles: int,
    extra: list[Any],
    kind_code: int,
) -> None:
    """A reduction by offsets (``stages_tile``) after its pre-pass, whose segments'
    arguments are ``extra``: the tile pass, the spine and the fix-up, each as
    ``fire(entry, groups, *args)`` (the general launch or one set up once; the queue's
    lock held)."""
    spine = b.scratch(tiles * spec.element_bytes, queue, "spine").buf
    carry = b.scratch(tiles * spec.dtype_info.itemsize, queue, "carry").buf
    fire(REDUCE, tiles, *ins, n, spine, *outs, carry, *extra)
    fire(SPINE, 1, spine, tiles, *outs, kind_code)
    # extra[1] is each tile's first segment, from the offsets pre-pass
    fire(FIXUP, -(-tiles // spec.threads), spine, carry, *outs, tiles, extra[1])


def stage_codes(spec: ScanSpec) -> tuple[tuple[str, int, bytes], ...]:
    """Each launch of :func:`_stages` after the pre-pass, in order: its entry point, the
    rule of its workgroups (``GROUPS_*``) and what each of its arguments holds
    (``ARG_*``, an array as its pointer and an offset of 0), from a run of it on stand-ins:
    the description a compiled call reads (``_common_call.c``'s MODE_STAGES), so that it is
    written once, here."""
    tiles = 1_000_003  # a count no workgroup rule or other argument comes to by chance
    src, dst, off, n, kind = (object() for _ in range(5))
    seg = [object() for _ in segments.SLOTS["offsets"]]
    codes = {id(src): ARG_SRC, id(dst): ARG_DST, id(off): ARG_CONST, id(n): ARG_N, id(kind): ARG_CONST}
    codes.update({id(t): code for t, code in zip(seg, segments.SLOTS["offsets"], strict=True)})
    held = {"spine": object(), "carry": object()}
    codes.update({id(held["spine"]): ARG_SPINE, id(held["carry"]): ARG_OPEN})
    backend = SimpleNamespace(scratch=lambda nbytes, queue, slot: SimpleNamespace(buf=held[slot]))
    # (one-thread tiles: a workgroup a thread's worth of tiles is one a tile, and named so)
    rules = {-(-tiles // spec.threads): GROUPS_TILES_PER_THREAD, 1: GROUPS_ONE, tiles: GROUPS_TILES}
    out: list[tuple[str, int, bytes]] = []

    def fire(entry: str, groups: int, *args: Any) -> None:
        slots = [ARG_TILES if type(a) is int and a == tiles else codes[id(a)] for a in args]
        out.append((entry, rules[groups], bytes(slots)))

    _stages(spec, backend, None, fire, [src, off], [dst, off], n, tiles, seg, kind)  # type: ignore[arg-type]
    return tuple(out)


RTS = ReduceThenScan()
