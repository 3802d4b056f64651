"""Launch plans of every variant, followed without a device through a recording backend.

Which kernels a scan launches, over how many workgroups, with which arguments, and what
it asks of its scratch buffers around them: the host half of each variant's protocol.
The recording program also refuses any launch whose arguments do not match the kinds
its Build declares for that entry point.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from recording import CPU, GPU, Array, Buffer, Launch, RecordingBackend

import jitscan
from jitscan import backends, variants
from jitscan.backends.launch import NO_CARRY
from jitscan.dtypes import lookup
from jitscan.kernels import tile_state
from jitscan.kernels.spec import (
    KIND_CARRY,
    KIND_CARRY_ARGS,
    KIND_CODES,
    KIND_STREAM,
    KINDS,
    LaunchArgs,
    ScanSpec,
)
from jitscan.operators import resolve
from jitscan.plan import tuning
from jitscan.variants import CHAINED, chained, segments
from jitscan.variants.base import expand
from jitscan.variants.rts import FIXUP, REDUCE, SCAN, SPINE
from jitscan.variants.segments import NONE, SEG_FIRST, Segments

#: element offsets of the input and output in their buffers: distinct, so a swap shows
IN_OFF, OUT_OFF = 3, 5


@pytest.fixture
def rb() -> RecordingBackend:
    return RecordingBackend()


def spec_of(variant: str, dtype: str = "int32", kind: str = "inclusive", **knobs) -> ScanSpec:
    return tuning.spec_for(
        GPU, variant=variant, kind=kind, dtype=lookup(dtype), monoid=resolve("add"), **knobs
    )


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class Plan:
    """A variant bound on the recording backend, with input and output arrays at offsets."""

    def __init__(self, rb: RecordingBackend, spec: ScanSpec, n: int, length: int | None = None) -> None:
        self.rb, self.spec = rb, spec
        self.variant = variants.get(spec.variant)
        self.bound = self.variant.bind(spec, rb, rb.default_queue)
        self.resize(n, length)

    def resize(self, n: int, length: int | None = None) -> None:
        self.n = n
        self.src = Array((n,), self.spec.dtype, offset=IN_OFF)
        self.dst = Array((n if length is None else length,), self.spec.dtype, offset=OUT_OFF)

    def __call__(
        self, launch: LaunchArgs | None = None, seg: Segments = NONE, check: bool = True
    ) -> dict[str, int] | None:
        launch = launch if launch is not None else LaunchArgs()
        q = self.rb.default_queue
        return self.variant.run(self.bound, q, launch, self.src, self.dst, self.n, seg, check)

    @property
    def ctrl(self) -> Buffer:
        return self.rb.scratch_buffer(self.spec.tile_state)


def epochs_launched(rb: RecordingBackend) -> list[int]:
    # js_chained's arguments: in, in_off, out, out_off, n, ctrl, kind, epoch, ...
    return [launch.args[7] for launch in rb.launches()]


def around_launches(rb: RecordingBackend) -> list[tuple]:
    """The zeroings, launches and read-backs, in order."""
    return [e for e in rb.log if e[0] in ("zero", "launch", "read_u32")]


# -- memcpy ------------------------------------------------------------------------------


def test_memcpy_is_one_copy_launch_with_a_workgroup_per_tile(rb):
    spec = spec_of("memcpy")
    p = Plan(rb, spec, 3 * spec.tile + 1)
    rb.clear()
    assert p() is None
    # the last argument: whether whole tiles store around the cache (never on a GPU)
    assert rb.launches() == [Launch("js_memcpy", 4, (p.src.buf, IN_OFF, p.dst.buf, OUT_OFF, p.n, 0))]
    assert rb.calls() == ["buffer", "buffer", "launch"]


# -- reduce-then-scan --------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["inclusive", "exclusive"])
def test_rts_scan_reduces_tiles_scans_the_spine_in_one_workgroup_then_scans_tiles_again(rb, kind):
    spec = spec_of("rts", kind=kind)
    p = Plan(rb, spec, 5 * spec.tile - 2)
    p(LaunchArgs(kind))
    spine, code = rb.scratch_buffer("spine"), KIND_CODES[kind]
    assert rb.launches() == [
        Launch(REDUCE, 5, (p.src.buf, IN_OFF, p.n, spine)),
        Launch(SPINE, 1, (spine, 5, p.dst.buf, OUT_OFF, code)),
        Launch(SCAN, 5, (p.src.buf, IN_OFF, p.dst.buf, OUT_OFF, p.n, spine, code)),
    ]


def test_rts_reduction_stops_after_the_spine(rb):
    spec = spec_of("rts", kind="reduce")
    p = Plan(rb, spec, 9 * spec.tile, length=1)
    p(LaunchArgs("reduce"))
    spine = rb.scratch_buffer("spine")
    assert rb.launches() == [
        Launch(REDUCE, 9, (p.src.buf, IN_OFF, p.n, spine)),
        Launch(SPINE, 1, (spine, 9, p.dst.buf, OUT_OFF, KIND_CODES["reduce"])),
    ]


@pytest.mark.parametrize("segmented", ["", "flags"])
@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_rts_spine_holds_one_element_per_tile_a_pair_when_segmented(rb, dtype, segmented):
    spec = spec_of("rts", dtype=dtype, segmented=segmented)
    p = Plan(rb, spec, 11 * spec.tile)
    heads = Array((p.n,), np.uint8)
    p(seg=Segments(heads=heads) if segmented else NONE)
    pair = 2 if segmented else 1
    assert [e[:2] for e in rb.events("scratch")] == [("spine", 11 * pair * lookup(dtype).itemsize)]


def test_rts_reduction_by_offsets_finds_first_segments_stages_tiles_and_fixes_up_what_crosses_them(rb):
    spec = spec_of("rts", kind="reduce", segmented="offsets")
    assert spec.stages_tile
    # more tiles than threads, so that the pre-pass and the fix-up need several workgroups
    tiles, nseg = 2 * spec.threads, 1000
    p = Plan(rb, spec, tiles * spec.tile - 1, length=nseg)
    offsets = Array((nseg + 1,), np.uint64)
    p(LaunchArgs("reduce"), Segments(offsets=offsets, checked=True))
    first, spine, carry = (rb.scratch_buffer(slot) for slot in ("seg-first", "spine", "carry"))
    src, dst, n = p.src.buf, p.dst.buf, p.n
    alarm = rb.alarm(rb.default_queue)
    word = alarm.word
    pre = (offsets.buf, nseg, n, first, word, alarm.flag, 0)  # checked on the host: no check here
    assert rb.launches() == [
        Launch(SEG_FIRST, ceil_div(tiles + 1, spec.threads), pre),
        Launch(
            REDUCE,
            tiles,
            (src, IN_OFF, n, spine, dst, OUT_OFF, carry, offsets.buf, first, nseg, word, alarm.flag),
        ),
        Launch(SPINE, 1, (spine, tiles, dst, OUT_OFF, KIND_CODES["reduce"])),
        Launch(FIXUP, ceil_div(tiles, spec.threads), (spine, carry, dst, OUT_OFF, tiles, first)),
    ]
    itemsize = spec.dtype_info.itemsize
    assert {e[0]: e[1] for e in rb.events("scratch")} == {
        "seg-first": (tiles + 1) * 8,
        "spine": tiles * 2 * itemsize,
        "carry": tiles * itemsize,
    }


def test_one_thread_tiles_by_offsets_find_their_first_segments_without_the_pre_pass(rb):
    # a CPU's tiles search the offsets themselves (JS_SEARCH_SEGMENTS): one launch, and
    # the offsets stand in for the table of first segments, which is not read
    add, int32 = resolve("add"), lookup("int32")
    spec = tuning.spec_for(
        CPU, variant="fallback", kind="inclusive", dtype=int32, monoid=add, segmented="offsets"
    )
    assert spec.threads == 1 and spec.searches_segments
    assert "#define JS_SEARCH_SEGMENTS 1" in variants.get("fallback").source(spec, "opencl")
    p = Plan(rb, spec, 4 * spec.tile)
    offsets = Array((8,), np.uint64)
    alarm = rb.alarm(rb.default_queue)
    p(seg=Segments(offsets=offsets, checked=True))
    (launch,) = rb.launches()
    tail = (offsets.buf, offsets.buf, 7, alarm.word, alarm.flag)
    assert launch.entry == chained.KERNEL and launch.args[-5:] == tail
    assert not [e for e in rb.events("scratch") if e[0] == "seg-first" and e[1]]  # no table made
    # device offsets, not checked on the host: the check alone runs first
    rb.clear()
    p(seg=Segments(offsets=offsets))
    check, launch = rb.launches()
    assert check == Launch(
        segments.CHECK_OFFSETS, 8 // spec.threads, (offsets.buf, 7, p.n, alarm.word, alarm.flag)
    )
    assert launch.entry == chained.KERNEL
    # a reduction that stages its tiles reads the table: it keeps the pre-pass
    staged = tuning.spec_for(CPU, variant="rts", kind="reduce", dtype=int32, monoid=add, segmented="offsets")
    assert staged.stages_tile and not staged.searches_segments


@pytest.mark.parametrize(
    ("op", "dtype", "direct"),
    [("add", "float32", True), ("max", "int64", True), ("max", "float32", False), ("min", "float64", False)],
)
def test_a_cpus_segmented_reduction_sums_each_segments_part_in_lanes_where_order_does_not_matter(
    op, dtype, direct
):
    # no scan and no staging (js_lanes_seg_totals), but for float min and max, which keep
    # the items' order: min(+0.0, -0.0) is not min(-0.0, +0.0)
    spec = tuning.spec_for(
        CPU, variant="rts", kind="reduce", dtype=lookup(dtype), monoid=resolve(op), segmented="offsets"
    )
    assert spec.threads == 1 and spec.stages_tile and spec.lanes
    assert spec.lane_totals == direct
    assert f"#define JS_LANE_TOTALS {int(direct)}" in variants.get("rts").source(spec, "opencl")


def test_rts_scan_by_offsets_runs_the_pre_pass_then_both_tile_passes_with_the_segments(rb):
    spec = spec_of("rts", segmented="offsets")
    assert not spec.stages_tile
    p = Plan(rb, spec, 4 * spec.tile)
    offsets = Array((8,), np.uint64)
    p(seg=Segments(offsets=offsets))
    first, spine = rb.scratch_buffer("seg-first"), rb.scratch_buffer("spine")
    alarm = rb.alarm(rb.default_queue)
    seg = (offsets.buf, first, 7, alarm.word, alarm.flag)
    assert rb.launches() == [
        Launch(SEG_FIRST, 1, (offsets.buf, 7, p.n, first, alarm.word, alarm.flag, 1)),
        Launch(REDUCE, 4, (p.src.buf, IN_OFF, p.n, spine, *seg)),
        Launch(SPINE, 1, (spine, 4, p.dst.buf, OUT_OFF, KIND_CODES["inclusive"])),
        Launch(SCAN, 4, (p.src.buf, IN_OFF, p.dst.buf, OUT_OFF, p.n, spine, KIND_CODES["inclusive"], *seg)),
    ]


# -- chained -----------------------------------------------------------------------------


@pytest.mark.parametrize("variant", CHAINED)
def test_chained_scan_is_one_launch_over_the_tiles_with_the_launch_arguments(rb, variant):
    spec = spec_of(variant)
    p = Plan(rb, spec, 7 * spec.tile + 1)
    block_every = 9 if variant == "fallback" else 0
    wait = 5 if variant == "lookback" else 0
    p(LaunchArgs("exclusive", spin_limit=77, block_every=block_every, wait_limit=wait), check=False)
    ctrl = p.ctrl
    args = (
        p.src.buf,
        IN_OFF,
        p.dst.buf,
        OUT_OFF,
        p.n,
        ctrl,
        KIND_CODES["exclusive"],
        1,
        77,
        wait,
        block_every,
        0,
        *NO_CARRY,  # no carry: zeros in its words
    )
    assert rb.launches() == [Launch(chained.KERNEL, 8, args)]
    assert [e[:2] for e in rb.events("scratch")] == [(spec.tile_state, tile_state.of_spec(spec).nbytes(8))]


@pytest.mark.parametrize("variant", CHAINED)
def test_each_launch_on_one_scratch_takes_the_next_epoch_without_clearing_it(rb, variant):
    p = Plan(rb, spec_of(variant), 1000)
    for _ in range(3):
        p(check=False)
    assert epochs_launched(rb) == [1, 2, 3]
    assert {launch.args[5] for launch in rb.launches()} == {p.ctrl}
    assert rb.events("zero") == []


def test_a_fresh_scratch_buffer_starts_again_at_epoch_one(rb):
    p = Plan(rb, spec_of("fallback"), 1000)
    p()
    p()
    old = p.ctrl
    p.resize(1000 * p.spec.tile)  # needs a larger scratch buffer
    p()
    assert p.ctrl is not old
    assert epochs_launched(rb) == [1, 2, 1]
    assert [launch.args[5] for launch in rb.launches()] == [old, old, p.ctrl]


@pytest.mark.parametrize("dtype", ["int32", "float64"])
@pytest.mark.parametrize("encoding", ["packed", "split"])
def test_past_the_epoch_limit_the_whole_scratch_is_zeroed_and_epochs_restart_at_one(rb, encoding, dtype):
    spec = spec_of("fallback", dtype=dtype, tile_state=encoding)
    limit = tile_state.of_spec(spec).epoch_limit
    p = Plan(rb, spec, 1000)
    p()
    ctrl = p.ctrl
    rb.scratch_of(encoding).epoch = limit - 1  # as if limit - 1 launches had run on it
    rb.clear()
    p()
    p()
    p()
    launches = rb.launches()
    assert [launch.args[7] for launch in launches] == [limit, 1, 2]
    # every word: a stale tag of a higher epoch would outrank the restarted ones
    assert around_launches(rb) == [
        ("launch", launches[0]),
        ("zero", ctrl, None),
        ("launch", launches[1]),
        ("launch", launches[2]),
    ]


def test_split_descriptors_wrap_their_epoch_after_epoch_limit_launches(rb):
    spec = spec_of("fallback", tile_state="split")
    limit = tile_state.of_spec(spec).epoch_limit
    assert limit == (1 << 13) - 1  # 16 tag bits: a 13-bit epoch above head and flag
    p = Plan(rb, spec, 100)
    for _ in range(limit + 1):
        p()
    assert epochs_launched(rb)[-2:] == [limit, 1]
    assert rb.events("zero") == [(p.ctrl, None)]


@pytest.mark.parametrize("variant", CHAINED)
def test_a_counting_scan_zeroes_its_counters_before_the_launch_and_reads_them_after(rb, variant):
    spec = spec_of(variant, stats=True)
    p = Plan(rb, spec, 6 * spec.tile)
    p()
    words = [0] * tile_state.CTRL_WORDS
    for i in range(len(tile_state.STAT_NAMES)):
        words[tile_state.CTRL_STATS + i] = 100 + i
    rb.plant(spec.tile_state, words)
    rb.clear()
    counters = p()
    ctrl = p.ctrl
    assert around_launches(rb) == [
        ("zero", ctrl, tile_state.CTRL_CARRY * 4),  # the words before the carry
        ("launch", rb.launches()[0]),
        ("read_u32", ctrl, tile_state.CTRL_WORDS),
    ]
    assert counters == {**{name: 100 + i for i, name in enumerate(tile_state.STAT_NAMES)}, "tiles": 6}


def test_a_checked_lookback_reads_back_the_control_words_and_returns_nothing(rb):
    p = Plan(rb, spec_of("lookback"), 1000)
    rb.clear()
    assert p(check=True) is None
    assert around_launches(rb) == [("launch", rb.launches()[0]), ("read_u32", p.ctrl, tile_state.CTRL_WORDS)]


def test_a_planted_deadlock_flag_raises_and_zeroes_the_scratch_for_a_fresh_start(rb):
    spec = spec_of("lookback")
    p = Plan(rb, spec, 1000)
    p()
    p()
    words = [0] * tile_state.CTRL_WORDS
    words[tile_state.CTRL_DEADLOCK] = 3 << 2 | tile_state.STUCK_SPINS  # the flag of the third launch
    rb.plant(spec.tile_state, words)
    rb.clear()
    with pytest.raises(jitscan.DeadlockError, match="variant='fallback'"):
        p()
    ctrl = p.ctrl
    assert around_launches(rb) == [
        ("launch", rb.launches()[0]),
        ("read_u32", ctrl, tile_state.CTRL_WORDS),
        ("zero", ctrl, None),
    ]
    # the aborted launch left the tile counter and the flag set; the zeroing cleared them
    rb.planted.clear()
    rb.clear()
    assert p() is None
    assert epochs_launched(rb) == [1]
    assert rb.events("zero") == []


def test_a_deadlock_flag_left_by_an_earlier_launch_is_not_this_launchs(rb):
    # an unchecked launch (a bench's) reads no flag back; its epoch tells it from a new one
    spec = spec_of("lookback")
    p = Plan(rb, spec, 1000)
    p()
    words = [0] * tile_state.CTRL_WORDS
    words[tile_state.CTRL_DEADLOCK] = 1 << 2 | tile_state.STUCK_TIME
    rb.plant(spec.tile_state, words)
    assert p() is None
    assert epochs_launched(rb) == [1, 2]


def test_an_unchecked_lookback_reads_nothing_back(rb):
    spec = spec_of("lookback")
    p = Plan(rb, spec, 1000)
    rb.plant(spec.tile_state, [0, 1])
    assert p(check=False) is None
    assert rb.events("read_u32") == []


@pytest.mark.parametrize("check", [True, False])
def test_fallback_without_stats_never_synchronizes(rb, check):
    spec = spec_of("fallback")
    p = Plan(rb, spec, 1000)
    p()
    # a fallback never waits, so a flag it could not have set is not even looked at
    rb.plant(spec.tile_state, [0, 1])
    rb.clear()
    assert p(check=check) is None
    assert rb.calls() == ["buffer", "buffer", "scratch", "launch"]


@pytest.mark.parametrize("variant", CHAINED)
def test_row_tiles_reach_the_chained_kernel_as_its_last_constant(rb, variant):
    spec = spec_of(variant, row_tiles=True)
    p = Plan(rb, spec, 12 * spec.tile)
    p(seg=Segments(row_tiles=4), check=False)
    p(check=False)
    assert [launch.args[11] for launch in rb.launches()] == [4, 0]


# -- segmented modes -----------------------------------------------------------------


#: stands for the offsets pre-pass's scratch buffer (each tile's first segment) until it exists
FIRST = object()


def segments_of(mode: str, p: Plan) -> tuple[Segments, tuple]:
    """One call's segments, and the arguments the segmented entry points should get for them."""
    if mode == "flags":
        heads = Array((p.n,), np.uint8)
        return Segments(heads=heads), (heads.buf, 0)
    if mode == "rows":
        # the kernels never read the heads buffer then: the input stands in for it
        return Segments(row_len=p.n // 4), (p.src.buf, p.n // 4)
    offsets = Array((30,), np.uint64)
    alarm = p.rb.alarm(p.rb.default_queue)
    return Segments(offsets=offsets), (offsets.buf, FIRST, 29, alarm.word, alarm.flag)


@pytest.mark.parametrize("mode", ["flags", "rows", "offsets"])
@pytest.mark.parametrize("variant", ["fallback", "lookback", "rts"])
def test_segmented_entry_points_take_exactly_the_modes_arguments_last(rb, variant, mode):
    spec = spec_of(variant, segmented=mode)
    p = Plan(rb, spec, 8 * spec.tile)
    seg, extra = segments_of(mode, p)
    rb.clear()
    p(seg=seg, check=False)
    extra = tuple(rb.scratch_buffer("seg-first") if a is FIRST else a for a in extra)
    v = p.variant
    assert len(extra) == len(segments.PARAMS[mode])
    launched = [launch.entry for launch in rb.launches()]
    assert set(v.segmented_entries) <= set(launched)
    assert (launched[0] == SEG_FIRST) == (mode == "offsets")
    for launch in rb.launches():
        own = v.signatures.get(launch.entry)
        own = None if own is None else expand(spec, own)  # "src" and "dst" as (buffer, offset)
        if launch.entry in v.segmented_entries:
            assert launch.args[len(own) :] == extra, launch.entry
        elif own is not None:
            assert len(launch.args) == len(own), launch.entry


def plan_cases() -> list[tuple[str, str, str, bool]]:
    """(variant, kind, segmented mode, stats) for every kind of call a prepared scan can make."""
    cases = []
    for name, v in variants.REGISTRY.items():
        for kind in KINDS:
            for mode in segments.PARAMS if v.segments_ok else ("",):
                # a reduction takes segments as offsets only; memcpy copies
                if kind == "reduce" and (mode not in ("", "offsets") or name == "memcpy"):
                    continue
                for stats in (False, True) if name in CHAINED else (False,):
                    cases.append((name, kind, mode, stats))
    return cases


@pytest.mark.parametrize(("variant", "kind", "mode", "stats"), plan_cases())
def test_every_launch_names_an_entry_point_of_the_build_with_its_declared_argument_kinds(
    rb, variant, kind, mode, stats
):
    spec = spec_of(variant, kind=kind, segmented=mode, stats=stats)
    nseg = 17
    p = Plan(rb, spec, 13 * spec.tile + 3, length=1 if kind == "reduce" and not mode else None)
    if kind == "reduce" and mode:
        p.resize(p.n, nseg)
    seg = {
        "": NONE,
        "flags": Segments(heads=Array((p.n,), np.uint8)),
        "rows": Segments(row_len=1),
        "offsets": Segments(offsets=Array((nseg + 1,), np.uint64)),
    }[mode]
    p(LaunchArgs(kind), seg, check=True)  # the recording program raises on a mismatch
    [(build, _)] = rb.builds
    assert build.entries == p.variant.entries(spec)
    assert {launch.entry for launch in rb.launches()} <= set(build.entries)
    for launch in rb.launches():
        if launch.entry in build.single:
            assert launch.groups == 1, launch.entry


def test_device_offsets_are_checked_by_the_pre_pass_and_nothing_is_read_back(rb):
    # the pre-pass covers every offset as well as every tile, and the host waits for nothing
    spec = spec_of("fallback", segmented="offsets")
    offsets, nseg = Array((3000,), np.uint64), 2999
    p = Plan(rb, spec, 4 * spec.tile)
    p(seg=Segments(offsets=offsets))
    alarm, first = rb.alarm(rb.default_queue), rb.scratch_buffer("seg-first")
    pre, scan = rb.launches()
    items = max(4, nseg) + 1
    assert pre == Launch(
        SEG_FIRST, ceil_div(items, spec.threads), (offsets.buf, nseg, p.n, first, alarm.word, alarm.flag, 1)
    )
    assert scan.entry == chained.KERNEL and scan.args[-5:] == (
        offsets.buf,
        first,
        nseg,
        alarm.word,
        alarm.flag,
    )
    assert rb.events("read_u32") == []


def test_small_launches_by_offsets_on_a_gpu_have_their_tiles_search_and_check_the_offsets(rb):
    # the programs of small size classes (tuning.SEARCH_SEGMENTS_BYTES) search the offsets
    # themselves (the offsets in the table's slot) and check what they read, raising the
    # queue's alarm in the kernel's own arguments: one launch
    add, int32 = resolve("add"), lookup("int32")
    small = tuning.SEARCH_SEGMENTS_REDUCE_BYTES // 4  # within both bounds

    def spec(n: int | None, variant: str = "fallback", kind: str = "inclusive") -> ScanSpec:
        return tuning.spec_for(
            GPU, variant=variant, kind=kind, dtype=int32, monoid=add, n=n, segmented="offsets"
        )

    assert spec(small).threads > 1 and spec(small).searches_segments
    assert spec(small, kind="reduce").searches_segments  # the chained reduction too
    assert "#define JS_SEARCH_SEGMENTS 1" in variants.get("fallback").source(spec(small), "cuda")
    offsets = Array((3000,), np.uint64)
    p = Plan(rb, spec(small), 4 * spec(small).tile)
    p(seg=Segments(offsets=offsets))
    alarm = rb.alarm(rb.default_queue)
    (scan,) = rb.launches()
    assert scan.entry == chained.KERNEL and scan.groups == 4
    assert scan.args[-5:] == (offsets.buf, offsets.buf, 2999, alarm.word, alarm.flag)
    # scans search in the classes up to SEARCH_SEGMENTS_BYTES, reductions up to
    # SEARCH_SEGMENTS_REDUCE_BYTES; the larger classes keep the pre-pass's table and its
    # kernel; rts's reductions, whose fix-up reads the table, never search
    scans = tuning.SEARCH_SEGMENTS_BYTES // 4
    assert spec(scans).searches_segments and not spec(scans + 1).searches_segments
    assert not spec(small + 1, kind="reduce").searches_segments
    assert not spec(None).searches_segments and not spec(None, kind="reduce").searches_segments
    assert not spec(small, "rts", "reduce").searches_segments


# -- prepared scans ------------------------------------------------------------------


@pytest.fixture
def registered(monkeypatch, rb) -> RecordingBackend:
    monkeypatch.setitem(backends._BACKENDS, "recording", rb)
    return rb


def test_a_prepared_scan_compiles_once_per_size_class(registered):
    rb = registered
    scan = jitscan.plan("int32", backend="recording")
    small, also_small, large = (Array((n,), np.int32) for n in (1000, 1001, 10**8))
    assert tuning.size_class(1000 * 4) == tuning.size_class(1001 * 4) != tuning.size_class(10**8 * 4)
    scan(small)
    scan(small)
    scan(also_small)
    assert len(rb.builds) == 1
    scan(large)
    scan(large)
    assert len(rb.builds) == 2
    (first, _), (second, _) = rb.builds
    assert first.key != second.key


def test_a_prepared_scan_compiles_once_per_device(registered):
    rb = registered
    scan = jitscan.plan("int32", backend="recording")
    other = rb.queue_for("device 1")
    x, y = Array((1000,), np.int32), Array((1000,), np.int32)
    for queue in (rb.default_queue, other, rb.default_queue, other):
        scan.launch(x, y, 1000, queue=queue)
    assert [(build.key, queue) for build, queue in rb.builds] == [
        (rb.builds[0][0].key, rb.default_queue),
        (rb.builds[0][0].key, other),
    ]


def test_a_prepared_scan_launches_into_the_out_array_it_is_given(registered):
    rb = registered
    scan = jitscan.plan("int32", backend="recording")
    x, y = Array((1000,), np.int32), Array((1000,), np.int32)
    assert scan(x, out=y) is y
    assert rb.launches()[-1].args[2] is y.buf


def test_a_warm_call_is_one_allocation_and_one_launch(registered):
    rb = registered
    scan = jitscan.plan("int32", backend="recording")
    x = Array((1000,), np.int32)
    scan(x)
    rb.clear()
    scan(x)
    assert rb.calls() == ["queue_of", "empty", "buffer", "buffer", "launch"]


def test_the_common_call_in_one_function_launches_as_the_prepared_scan_does(registered):
    rb = registered
    scan = jitscan.plan("int32", backend="recording")
    x, y = Array((1000,), np.int32), Array((1000,), np.int32)
    scan(x, out=y)
    rb.clear()
    assert scan.common(x, y, None) is y
    assert rb.calls() == ["queue_of", "buffer", "buffer", "launch"]
    assert rb.launches()[-1].args[2] is y.buf


def test_the_common_call_does_nothing_and_says_none_for_any_other_call(registered):
    rb = registered
    scan = jitscan.plan("int32", backend="recording")
    x = Array((1000,), np.int32)
    rb.clear()
    for args in [
        (np.zeros(1000, np.int32), None),  # host input takes the long way
        (x, Array((999,), np.int32)),  # an out of another size
        (x, Array((1000,), np.float32)),  # an out of another dtype
        (Array((0,), np.int32), None),  # nothing to scan
    ]:
        assert scan.common(*args, None) is None
    assert rb.launches() == []


def test_a_python_operators_common_call_waits_for_its_first_check(registered):
    pytest.importorskip("numba", reason="Python operators are typed by Numba")
    scan = jitscan.plan("int32", jitscan.operator(lambda a, b: a + b, identity=0), backend="recording")
    x = Array((1000,), np.int32)
    assert scan.common(x, None, None) is None  # not yet checked on this dtype
    scan.verify(np.arange(1000, dtype=np.int32))  # what the first call does with its input
    assert scan.common(x, None, None) is not None


@pytest.mark.parametrize("encoding", ["packed", "split"])
def test_the_common_call_also_zeroes_the_scratch_and_restarts_epochs_past_the_limit(registered, encoding):
    # the prepared scan's common call takes its own short path through the chained variant
    rb = registered
    scan = jitscan.plan("int32", backend="recording", tile_state=encoding)
    x = Array((1000,), np.int32)
    scan(x)
    ctrl = rb.launches()[-1].args[5]
    rb.scratch_of(encoding).epoch = tile_state.of(encoding, 4).epoch_limit - 1
    rb.clear()
    for _ in range(3):
        scan(x)
    launches = rb.launches()
    assert epochs_launched(rb) == [tile_state.of(encoding, 4).epoch_limit, 1, 2]
    assert around_launches(rb) == [
        ("launch", launches[0]),
        ("zero", ctrl, None),
        ("launch", launches[1]),
        ("launch", launches[2]),
    ]


@pytest.mark.parametrize(
    ("variant", "kind"),
    [(v, "inclusive") for v in jitscan.VARIANTS] + [("fallback", "reduce"), ("rts", "reduce")],
)
def test_a_call_makes_the_same_backend_calls_at_any_size(registered, variant, kind):
    rb = registered
    scan = jitscan.plan("int32", kind=kind, variant=variant, backend="recording")
    small, huge = Array((10,), np.int32), Array((10**9,), np.int32)
    scan(small)  # compile both size classes
    scan(huge)
    plans = []
    for x in (small, huge):
        rb.clear()
        scan(x)
        plans.append((rb.calls(), [launch.entry for launch in rb.launches()]))
    assert plans[0] == plans[1]
    assert "program" not in plans[0][0]


def entries_of_a_call(rb: RecordingBackend, scan, n: int, **kw) -> list[str]:
    rb.clear()
    scan(Array((n,), np.int32), **kw)
    return [launch.entry for launch in rb.launches()]


def test_a_reduction_given_no_variant_reduces_large_inputs_on_a_gpu_in_rts_two_passes(registered):
    # no tile waits on another there: the H100 reduced 1.04-1.42x faster so from 8 MiB
    rb = registered
    edge = tuning.RTS_REDUCE_BYTES // 4
    scan = jitscan.plan("int32", kind="reduce", backend="recording")
    assert entries_of_a_call(rb, scan, edge) == [chained.KERNEL]
    assert entries_of_a_call(rb, scan, edge + 1) == [REDUCE, SPINE]
    assert entries_of_a_call(rb, scan, 10**9) == [REDUCE, SPINE]
    # deterministic as it is: the option changes nothing there
    det = jitscan.plan("int32", kind="reduce", backend="recording", deterministic=True)
    assert entries_of_a_call(rb, det, edge + 1) == [REDUCE, SPINE]
    # the scan says which variant runs a size; its variant attribute names the chained one
    assert scan.variant == scan.variant_for(edge) == "fallback"
    assert scan.variant_for(edge + 1) == "rts"
    assert scan.variant_for(edge + 1, initial=True) == "fallback"


def test_a_reduction_by_offsets_given_no_variant_launches_twice_up_to_its_bound_then_runs_rts(registered):
    # below tuning.RTS_SEG_REDUCE_BYTES on a GPU launches, not memory, take the time: the
    # chained scan's pre-pass and one pass, not rts's four launches
    rb = registered
    edge = tuning.RTS_SEG_REDUCE_BYTES // 4
    scan = jitscan.plan("int32", kind="reduce", segmented="offsets", backend="recording")

    def entries(n: int) -> list[str]:
        rb.clear()
        offsets = Array((3,), np.int64)
        scan(Array((n,), np.int32), Array((2,), np.int32), offsets=offsets)
        return [launch.entry for launch in rb.launches()]

    assert entries(edge) == [segments.SEG_FIRST, chained.KERNEL]
    # (rts's launcher set up once: ReduceThenScan.form_launcher, the same launches as its run)
    assert entries(edge + 1) == [segments.SEG_FIRST, REDUCE, SPINE, FIXUP]
    assert entries(edge + 1) == [segments.SEG_FIRST, REDUCE, SPINE, FIXUP]
    assert scan.variant_for(edge) == "fallback" and scan.variant_for(edge + 1) == "rts"
    asked = jitscan.plan("int32", kind="reduce", segmented="offsets", variant="rts", backend="recording")
    assert asked.variant_for(edge) == "rts"


def test_on_a_cpu_outputs_as_large_as_the_cache_are_stored_around_it(monkeypatch):
    # an ordinary store first reads each line it writes: past the cache, a third pass
    # over memory (tuning.launch_for, JS_STREAM_BIT); the kind argument says which
    cache = 4 * tuning.CPU_STREAM_BYTES
    rb = RecordingBackend(dataclasses.replace(CPU, cache_bytes=cache), dialect="opencl")
    monkeypatch.setitem(backends._BACKENDS, "recording", rb)

    def kinds(scan, sizes, dtype=np.int32, at=6, **kw) -> list[int]:
        out = []
        for n in sizes:
            rb.clear()
            scan(Array((n,), dtype), **kw)
            out.append(rb.launches()[-1].args[at])  # js_chained's kind (js_memcpy's stream)
        return out

    edge = cache // 4
    scan = jitscan.plan("int32", backend="recording")
    assert kinds(scan, (edge - 1, edge, 10**8)) == [0, KIND_STREAM, KIND_STREAM]
    # the output's bytes count: int64 results of half the items fill the cache
    wide = jitscan.plan("int64", backend="recording")
    assert kinds(wide, (edge // 2 - 1, edge // 2), np.int64) == [0, KIND_STREAM]
    # exclusive scans and scans from a value too; the bits stay apart
    exclusive = jitscan.plan("int32", kind="exclusive", backend="recording")
    assert kinds(exclusive, (edge,)) == [KIND_CODES["exclusive"] | KIND_STREAM]
    assert kinds(scan, (edge,), initial=3) == [KIND_STREAM | KIND_CARRY | KIND_CARRY_ARGS]
    # so do rows of whole tiles, plain scans; segmented scans and reductions store no tile
    # in lanes, and GPUs never stream
    rows = jitscan.plan("int32", segmented="rows", backend="recording")
    assert kinds(rows, (edge,), row_len=edge) == [KIND_STREAM]
    flags = jitscan.plan("int32", segmented="flags", backend="recording")
    assert kinds(flags, (edge,), flags=Array((edge,), np.uint8)) == [0]
    assert kinds(jitscan.plan("int32", kind="reduce", backend="recording"), (edge,)) == [KIND_CODES["reduce"]]
    # the yardstick of the scans' loads and stores stores as they do
    copy = jitscan.plan("int32", variant="memcpy", backend="recording")
    assert kinds(copy, (edge - 1, edge), at=5) == [0, 1]
    # a device that reports a small cache (a core's L2) streams from CPU_STREAM_BYTES on
    rb = RecordingBackend(dataclasses.replace(CPU, cache_bytes=1 << 20), dialect="opencl")
    monkeypatch.setitem(backends._BACKENDS, "recording", rb)
    floor = tuning.CPU_STREAM_BYTES // 4
    assert kinds(jitscan.plan("int32", backend="recording"), (floor - 1, floor)) == [0, KIND_STREAM]
    rb = RecordingBackend(dataclasses.replace(GPU, cache_bytes=cache))
    monkeypatch.setitem(backends._BACKENDS, "recording", rb)
    assert kinds(jitscan.plan("int32", backend="recording"), (10**8,)) == [0]


def test_a_deterministic_segmented_scan_on_a_gpu_picks_its_tile_by_size_inside_the_2_to_16_mib_class(
    registered,
):
    # tiles that fit in one wave or fill several (tuning.DET_SEGMENTED_SHAPES): float32
    # changes tile at 8, 10 and 12 MiB, a class each; float64 keeps one tile there
    rb = registered
    info, mib = rb.default_queue.info, 1 << 20

    def tiles(scan, nbytes: int, itemsize: int) -> tuple[int, int, int, int]:
        spec = scan.spec(info, scan.size_class(nbytes // itemsize))
        return spec.threads, spec.vectors, spec.min_blocks, spec.lookback_width

    f32 = jitscan.plan("float32", segmented="flags", deterministic=True, backend="recording")
    assert [
        tiles(f32, b, 4) for b in (3 * mib, 8 * mib, 9 * mib, 10 * mib, 11 * mib, 12 * mib, 16 * mib)
    ] == [
        (256, 4, 4, 256),
        (256, 4, 4, 256),
        (128, 8, 5, 128),
        (128, 8, 5, 128),
        (128, 4, 6, 128),
        (128, 4, 6, 128),
        (128, 8, 4, 128),
    ]
    assert f32.size_class(8 * mib // 4) != f32.size_class(8 * mib // 4 + 1)
    f64 = jitscan.plan("float64", segmented="offsets", deterministic=True, backend="recording")
    assert {tiles(f64, b, 8) for b in (3 * mib, 9 * mib, 16 * mib)} == {(256, 4, 4, 256)}
    assert f64.size_class(3 * mib // 8) == f64.size_class(16 * mib // 8)
    # a GPU of fewer multiprocessors fills a wave sooner: the bounds move with them
    half = dataclasses.replace(info, compute_units=tuning.DET_SEGMENTED_UNITS // 2)
    assert tuning.det_segmented_bounds(lookup("float32"), half) == (4 * mib, 5 * mib, 6 * mib, 16 * mib)
    assert tuning.det_segmented_shape(4 * mib + 4, lookup("float32"), half) == (128, 8, 5, 128)
    assert tuning.det_segmented_bounds(lookup("float32"), info) == (8 * mib, 10 * mib, 12 * mib, 16 * mib)
    # the ordinary scan has no such classes, and the smallest class keeps its own tile
    plain = jitscan.plan("float32", segmented="flags", backend="recording")
    assert plain.size_class(8 * mib // 4) == plain.size_class(12 * mib // 4)
    assert tiles(f32, 4000, 4)[0::3] == (128, 128)


def test_64_bit_integer_tiles_of_half_a_mib_to_16_mib_scan_their_rows_through_shared_memory(registered):
    # each step of a row scan by shuffles is two shuffles and a two-instruction add for
    # 64-bit integers; read across in shared memory, a subgroup scans once
    # (tuning.rows_in_smem). Other types, sizes and segmented scans keep the shuffles
    info, mib = registered.default_queue.info, 1 << 20

    def across(dtype: str, nbytes: int, **kw) -> bool:
        scan = jitscan.plan(dtype, backend="recording", **kw)
        return scan.spec(info, scan.size_class(nbytes // np.dtype(dtype).itemsize)).rows_in_smem

    assert [across("int64", b) for b in (mib // 2, mib, 4 * mib, 16 * mib, 17 * mib)] == [
        False,
        True,
        True,
        True,
        False,
    ]
    assert across("uint64", 4 * mib, kind="exclusive") and across("int64", 4 * mib, deterministic=True)
    assert not any(across(d, 4 * mib) for d in ("int32", "uint32", "float32", "float64"))
    assert not across("int64", 4 * mib, segmented="flags")
    # a tile whose rows would overfill SMEM_ROWS_BYTES keeps the shuffles, and so do
    # tiles of 16 vectors a thread, which measured slower so
    assert not across("int64", 4 * mib, threads=512, vectors=8)
    assert not across("int64", 4 * mib, threads=128, vectors=16)
    # devices without shuffles scan rows in local memory as they did; a tile of one row
    # has one subgroup scan anyway
    spec = dataclasses.replace(spec_of("fallback", "int64"), rows_in_smem=True)
    assert spec.rows_in_smem
    assert not dataclasses.replace(spec, shuffle=False, subgroup=spec.threads).rows_in_smem
    assert not dataclasses.replace(spec, vectors=1).rows_in_smem


@pytest.mark.parametrize(
    "knobs",
    [{"variant": "fallback"}, {"variant": "lookback"}, {"stats": True}, {"spin_limit": 4}, {"threads": 64}],
)
def test_a_reduction_that_asks_for_a_chained_variant_or_its_knobs_stays_chained(registered, knobs):
    rb = registered
    scan = jitscan.plan("int32", kind="reduce", backend="recording", **knobs)
    call = {"stats": {}} if "stats" in knobs else {}
    assert entries_of_a_call(rb, scan, 10**8, **call) == [chained.KERNEL]


def test_a_large_reduction_from_an_initial_value_runs_the_chained_scan_which_takes_the_carry(registered):
    rb = registered
    scan = jitscan.plan("int32", kind="reduce", backend="recording")
    assert entries_of_a_call(rb, scan, 10**8, initial=5) == [chained.KERNEL]
    assert entries_of_a_call(rb, scan, 10**8) == [REDUCE, SPINE]
    assert entries_of_a_call(rb, scan, 10**8, initial=5) == [chained.KERNEL]


def test_a_scan_given_no_variant_stays_chained_at_every_size(registered):
    rb = registered
    for kind in ("inclusive", "exclusive"):
        scan = jitscan.plan("int32", kind=kind, backend="recording")
        assert entries_of_a_call(rb, scan, 10**8) == [chained.KERNEL]


def test_device_offsets_are_checked_on_the_device_without_a_wait(registered):
    rb = registered
    scan = jitscan.plan("int32", kind="reduce", backend="recording", segmented="offsets")
    x, offsets = Array((50_000,), np.int32), Array((101,), np.int64)
    scan(x, offsets=offsets)
    rb.clear()
    y = scan(x, offsets=offsets)
    assert y.shape == (100,)
    launched = [launch.entry for launch in rb.launches()]
    assert launched == [chained.KERNEL]  # a small class: its tiles search and check them
    big = Array((1 << 20,), np.int32)  # past tuning.SEARCH_SEGMENTS_REDUCE_BYTES: the pre-pass checks
    scan(big, offsets=offsets)
    rb.clear()
    scan(big, offsets=offsets)
    launched = [launch.entry for launch in rb.launches()]
    assert launched[0] == SEG_FIRST and segments.CHECK_OFFSETS not in launched
    assert rb.events("read_u32") == []  # nothing comes back: the call does not wait


def test_bad_device_offsets_raise_at_the_next_call_by_offsets_on_the_queue(registered):
    rb = registered
    scan = jitscan.plan("int32", kind="reduce", backend="recording", segmented="offsets")
    x, offsets = Array((50_000,), np.int32), Array((101,), np.int64)
    scan(x, offsets=offsets)  # the kernels found offsets[7] < offsets[6]: rule 1 at index 7
    rb.ring(0xFFFFFFFF - (7 * 4 + 1))
    rb.clear()
    with pytest.raises(ValueError, match=r"earlier call.*offsets\[7\] < offsets\[6\]"):
        scan(x, offsets=offsets)
    assert rb.launches() == []  # raised before anything was enqueued
    word = rb.alarm(rb.default_queue).word
    assert ("zero", word, 4) in rb.log  # the alarm is cleared: the next call runs
    rb.clear()
    scan(x, offsets=offsets)
    assert chained.KERNEL in [launch.entry for launch in rb.launches()]


def test_check_now_waits_for_the_check_and_raises_at_the_call(registered):
    rb = registered
    scan = jitscan.plan("int32", backend="recording", segmented="offsets", check="now")
    x, offsets = Array((50_000,), np.int32), Array((101,), np.int64)
    rb.plant("alarm-word", [0xFFFFFFFF - (100 * 4 + 2)])
    # the call's offsets read back, checked as host offsets are: the same message, values named
    with pytest.raises(ValueError, match=r"must end at n == 50000: offsets\[100\] == 0") as raised:
        scan(x, offsets=offsets)
    assert "earlier" not in str(raised.value)
    assert rb.events("read_u32")[-1] == (rb.alarm(rb.default_queue).word, 1)


@pytest.mark.parametrize("variant", CHAINED)
def test_rows_of_whole_tiles_run_the_plain_chained_program_that_restarts_at_each_row(registered, variant):
    rb = registered
    scan = jitscan.plan("int32", variant=variant, backend="recording", segmented="rows")
    tile = scan.spec(GPU, 0, row_tiles=True).tile  # of the smallest inputs, as these are
    x, y = Array((8 * 3 * tile,), np.int32), Array((8 * (3 * tile + 8),), np.int32)
    assert tuning.size_class(4 * x.size) == tuning.size_class(4 * y.size) == 0
    scan(x, row_len=3 * tile)
    scan(y, row_len=3 * tile + 8)  # not whole tiles: the segmented program, by row length
    (plain, _), (by_rows, _) = rb.builds
    assert (plain.key.row_tiles, plain.key.segmented) == (True, "")
    assert (by_rows.key.row_tiles, by_rows.key.segmented) == (False, "rows")
    whole, partial = rb.launches()
    assert whole.args[11] == 3 and whole.args[12:] == NO_CARRY  # row_tiles, the last constant
    assert partial.args[-3:] == (0, y.buf, 3 * tile + 8)


@pytest.mark.parametrize("variant", CHAINED)
def test_a_spin_limit_wider_than_the_kernels_32_bits_is_refused_when_the_scan_is_prepared(
    registered, variant
):
    with pytest.raises(ValueError, match="spin_limit"):
        jitscan.plan("int32", variant=variant, backend="recording", spin_limit=1 << 32)


# -- a device that mis-scans partial look-back windows (DeviceInfo.partial_windows) ---------------

#: PoCL 3.1 as the tuning sees it: a CPU whose workgroups of several threads mis-scan some look-backs
POCL31 = dataclasses.replace(CPU, name="recording PoCL 3.1", partial_windows=False)


def _spec(info, dtype="int32", **knobs):  # noqa: ANN001, ANN202
    return tuning.spec_for(info, variant="fallback", dtype=lookup(dtype), monoid=resolve("add"), **knobs)


def test_where_partial_windows_mis_scan_the_whole_workgroup_reads_the_window():
    # elsewhere a CPU's window is 32 predecessors, one a thread, whatever the workgroup
    assert _spec(CPU, threads=64).lookback_width == 32
    assert _spec(POCL31, threads=64).lookback_width == 64
    assert _spec(POCL31, threads=16).lookback_width == 16
    assert _spec(POCL31).threads == 1 and _spec(POCL31).lookback_width == 1  # the CPU's own tiles


@pytest.mark.parametrize("width", [2, 16, 32])
def test_where_partial_windows_mis_scan_a_window_narrower_than_the_workgroup_is_refused(width):
    assert _spec(CPU, threads=64, lookback_width=width).lookback_width == width
    refused = f"lookback_width={width} with threads=64: recording PoCL 3.1 mis-scans"
    with pytest.raises(ValueError, match=refused):
        _spec(POCL31, threads=64, lookback_width=width)
    # a window of one thread, or of the whole workgroup, scans right there
    assert _spec(POCL31, threads=64, lookback_width=1).lookback_width == 1
    assert _spec(POCL31, threads=64, lookback_width=64).lookback_width == 64


def test_where_partial_windows_mis_scan_deterministic_scans_keep_one_thread_a_workgroup():
    assert _spec(POCL31, "float32", deterministic=True).threads == 1
    assert _spec(CPU, "float32", deterministic=True, threads=4).threads == 4
    with pytest.raises(ValueError, match="deterministic=True with threads=4: recording PoCL 3.1 mis-scans"):
        _spec(POCL31, "float32", deterministic=True, threads=4)
