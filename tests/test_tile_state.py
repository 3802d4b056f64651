"""Tile-state encodings, simulated blocking, the fallback path and the look-back watchdog."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import FFILL, assert_scan_equal, device_info, random_input, reference, tile_size
from test_scan import run_on_device

import jitscan
from jitscan import backends, variants
from jitscan.backends import clock
from jitscan.dtypes import lookup
from jitscan.kernels.spec import LaunchArgs
from jitscan.kernels.tile_state import of as state_of
from jitscan.operators import resolve
from jitscan.plan import tuning


@pytest.mark.parametrize("tile_state", ["packed", "split"])
@pytest.mark.parametrize("variant", ["fallback", "lookback"])
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint64", "float32", "float64"])
def test_both_encodings_carry_every_dtype(backend, rng, tile_state, variant, dtype):
    n = 37 * tile_size(backend, dtype) + 5
    # a non-commutative monoid on the 32- and 64-bit float paths; add everywhere
    # (each op is another program: PoCL compiles take about 3 s each)
    for op in ("add", FFILL) if dtype in ("int32", "float64") else ("add",):
        x = random_input(rng, n, dtype, op)
        for kind in ("inclusive", "reduce"):
            got = run_on_device(backend, x, op, kind, variant, tile_state=tile_state)
            assert_scan_equal(got, reference(x, op, kind), x, op)


def test_split_encoding_uses_only_32_bit_atomics_with_16_value_bits():
    src = jitscan.source("float64", variant="fallback", tile_state="split", backend="opencl")
    assert "typedef js_u32 js_sw;" in src
    assert "#define JS_PART_BITS 16" in src
    assert "#define JS_NPARTS 4" in src
    assert "atom_max" not in src and "cl_khr_int64_base_atomics" not in src


def test_packed_encoding_is_one_64_bit_word_for_32_bit_types():
    src = jitscan.source("int32", variant="fallback", tile_state="packed", backend="opencl")
    assert "typedef js_u64 js_sw;" in src and "#define JS_NPARTS 1" in src


def test_split_is_chosen_where_the_device_lacks_64_bit_atomics():
    info = backends.typical_device("opencl")
    no64 = type(info)(**{**info.__dict__, "int64_atomics": False})
    spec = tuning.spec_for(
        no64, variant="fallback", kind="inclusive", dtype=lookup("int64"), monoid=resolve("add")
    )
    assert spec.tile_state == "split"
    with pytest.raises(ValueError, match="64-bit atomics"):
        tuning.spec_for(
            no64,
            variant="fallback",
            kind="inclusive",
            dtype=lookup("int64"),
            monoid=resolve("add"),
            tile_state="packed",
        )


@pytest.mark.parametrize("tile_state", ["packed", "split"])
@pytest.mark.parametrize("every", [2, 8, 512])
@pytest.mark.parametrize(
    ("dtype", "op"), [("int32", "add"), ("float64", "add"), ("uint64", "xor"), ("int32", FFILL)]
)
def test_fallback_survives_simulated_blocking(backend, rng, tile_state, every, dtype, op):
    tiles = max(3 * every, 40)
    n = tiles * tile_size(backend, dtype) - 7
    x = random_input(rng, n, dtype, op)
    stats: dict = {}
    for kind in jitscan.KINDS:
        got = run_on_device(
            backend,
            x,
            op,
            kind,
            "fallback",
            tile_state=tile_state,
            simulate_blocking=every,
            spin_limit=4,
            stats=stats,
        )
        assert_scan_equal(got, reference(x, op, kind), x, op)
        blocked = len(range(0, tiles, every))
        # every blocked tile with a successor must have been inserted by some fallback
        assert stats["fallbacks"] >= blocked - 1
        assert stats["insertions"] >= blocked - 1


#: affine maps x -> m x + c (mod 2^32) packed as m << 32 | c and composed left to right:
#: every element and its place matter, so a predecessor dropped, taken twice or out of
#: order shows in the result
AFFINE = jitscan.Monoid(
    "affine",
    combine="(((a >> 32) * (b >> 32)) << 32)"
    " | (((a & 0xffffffffu) * (b >> 32) + (b & 0xffffffffu)) & 0xffffffffu)",
    identity=1 << 32,
)


def affine_scan(x: np.ndarray, kind: str = "inclusive", heads: np.ndarray | None = None) -> np.ndarray:
    """Scan of AFFINE in NumPy, restarting at every head (Hillis-Steele per segment)."""
    low = np.uint64(0xFFFFFFFF)
    starts = [0] if heads is None else sorted({0, *np.flatnonzero(heads).tolist()})
    out = np.empty_like(x)
    for a, b in zip(starts, starts[1:] + [x.size], strict=True):
        m, c = x[a:b] >> np.uint64(32), x[a:b] & low
        d = 1
        while d < b - a:
            m[d:], c[d:] = (m[:-d] * m[d:]) & low, (c[:-d] * m[d:] + c[d:]) & low
            d *= 2
        seg = (m << np.uint64(32)) | c
        if kind == "exclusive":
            seg = np.concatenate([[np.uint64(AFFINE.identity)], seg[:-1]])
        out[a:b] = seg
    return out


WINDOWS = [(32, 32), (64, 16), (64, 64), (128, 64), (128, 128), (256, 128)]


def _window_knobs(backend: str, variant: str, threads: int, width: int) -> dict:
    info = device_info(backend)
    sg = info.shuffle_width or threads
    if threads < sg:
        pytest.skip(f"a workgroup of {threads} threads is narrower than this device's subgroup ({sg})")
    if not info.partial_windows and 1 < width < threads:
        # refused there rather than scanned wrong (test_launch_plans: ...partial_windows...)
        pytest.skip(f"{info.name} mis-scans windows of more than one and fewer than all of a workgroup")
    knobs: dict = {"threads": threads, "vectors": 2, "lookback_width": width}
    if variant == "fallback":
        knobs.update(simulate_blocking=8, spin_limit=2)
    return knobs


@pytest.mark.parametrize("variant", ["fallback", "lookback"])
@pytest.mark.parametrize(("threads", "width"), WINDOWS)
def test_look_back_windows_of_any_width_and_workgroups_of_one_subgroup(backend, rng, variant, threads, width):
    # GPUs walk a window of one subgroup by shuffles, several subgroups in parallel, and a
    # window narrower than the subgroup in local memory; a workgroup of one subgroup scans
    # its tile without a barrier of its own
    knobs = _window_knobs(backend, variant, threads, width)
    tile = threads * 2 * (16 // 4)
    x = random_input(rng, 300 * tile + 5, "int32", FFILL)
    for kind in jitscan.KINDS:
        got = run_on_device(backend, x, FFILL, kind, variant, **knobs)
        assert_scan_equal(got, reference(x, FFILL, kind), x, FFILL)


def _affine_input(rng: np.random.Generator, n: int) -> np.ndarray:
    # odd multipliers: every map is invertible, so no predecessor's part can vanish
    m = rng.integers(0, 1 << 31, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    return (m << np.uint64(32)) | rng.integers(0, 1 << 32, n, dtype=np.uint64)


@pytest.mark.parametrize("kind", ["inclusive", "exclusive"])
@pytest.mark.parametrize("variant", ["fallback", "lookback"])
@pytest.mark.parametrize(("threads", "width"), WINDOWS[::2] + [WINDOWS[-1]])
def test_look_back_takes_every_predecessor_once_and_in_order(backend, rng, variant, kind, threads, width):
    knobs = _window_knobs(backend, variant, threads, width)
    n = 300 * threads * 2 * (16 // 8) + 5
    # how far a walk goes depends on scheduling: a few runs give a misstep more chances
    for _ in range(3):
        x = _affine_input(rng, n)
        got = run_on_device(backend, x, AFFINE, kind, variant, **knobs)
        np.testing.assert_array_equal(got, affine_scan(x.copy(), kind))


@pytest.mark.parametrize("kind", ["inclusive", "exclusive"])
@pytest.mark.parametrize(("threads", "width"), WINDOWS[::2] + [WINDOWS[-1]])
def test_segmented_look_back_stops_at_each_head_in_every_window(backend, rng, kind, threads, width):
    # segments tens of tiles long: walks cross many (value, head) pairs before a head ends them
    knobs = _window_knobs(backend, "fallback", threads, width)
    n = 300 * threads * 2 * (16 // 8) + 5
    heads = np.zeros(n, dtype=np.uint8)
    heads[rng.choice(n, 8, replace=False)] = 1
    x = _affine_input(rng, n)
    got = jitscan.segmented_scan(x, flags=heads, op=AFFINE, kind=kind, backend=backend, **knobs)
    np.testing.assert_array_equal(np.asarray(got), affine_scan(x.copy(), kind, heads))


def test_stats_count_the_look_back(backend, rng):
    n = 50 * tile_size(backend, "int32")
    stats: dict = {}
    jitscan.scan(random_input(rng, n, "int32"), stats=stats, backend=backend)
    assert stats["tiles"] == 50
    # every tile after the first takes at least one predecessor: by a look-back step, or
    # by a fallback on one that had not posted yet (CPUs under load)
    assert stats["lookback_steps"] + stats["fallbacks"] >= 49


def test_lookback_refuses_simulated_blocking_because_it_would_deadlock(rng):
    x = random_input(rng, 1000, "int32")
    with pytest.raises(ValueError, match="deadlock"):
        jitscan.cumsum(x, variant="lookback", simulate_blocking=8)


@pytest.mark.parametrize("every", [1, 513, 0.5])
def test_blocking_rate_must_be_between_2_and_512(every):
    with pytest.raises((ValueError, TypeError)):
        jitscan.cumsum(np.arange(10, dtype=np.int32), simulate_blocking=every)


def test_lookback_watchdog_reports_a_deadlock_instead_of_hanging(backend, rng):
    # Built below the API, which refuses this combination: a look-back kernel facing
    # tiles that never post must stop at its watchdog and say so.
    b = backends.get(backend)
    q = b.queue_of(None)
    p = jitscan.plan("int32", variant="lookback", backend=backend)
    n = 20 * tile_size(backend, "int32")
    bound = p.bound(q, n)
    x = b.to_device(random_input(rng, n, "int32"), q)
    blocking = LaunchArgs("inclusive", spin_limit=200, block_every=4)
    with pytest.raises(jitscan.DeadlockError, match="forward-progress") as stuck:
        variants.get("lookback").run(
            bound, q, blocking, x, b.empty((n,), np.dtype("int32"), q), n, variants.NONE
        )
    # the spin limit ran out, and the message says so: the predecessor may only be slow
    assert stuck.value.cause == "spins" and "raise spin_limit" in str(stuck.value)
    # and the next scan on the same device is fine
    assert_scan_equal(
        b.to_host(jitscan.scan(x, variant="lookback")),
        reference(b.to_host(x), "add", "inclusive"),
        b.to_host(x),
    )


@pytest.mark.parametrize("deterministic", [False, True])
def test_lookback_watchdog_bounds_a_wait_in_time_where_the_device_has_a_clock(backend, rng, deterministic):
    # A spin limit of 2**32 - 1 would keep a CPU device spinning for hours; the device's
    # clock ends the wait after the time given, and the error names scheduling as the cause.
    b = backends.get(backend)
    q = b.queue_of(None)
    info = b.device_info(q)
    if not info.clock:
        pytest.skip(f"{info.name} has no clock its kernels can read: spins alone bound a wait there")
    p = jitscan.plan("int32", variant="lookback", backend=backend, deterministic=deterministic)
    n = 20 * tile_size(backend, "int32")
    bound = p.bound(q, n)
    x = b.to_device(random_input(rng, n, "int32"), q)
    endless = LaunchArgs(
        "inclusive", spin_limit=2**32 - 1, block_every=4, wait_limit=clock.wait_units(info.clock, 0.2)
    )
    with pytest.raises(jitscan.DeadlockError, match="posted nothing for") as stuck:
        variants.get("lookback").run(
            bound, q, endless, x, b.empty((n,), np.dtype("int32"), q), n, variants.NONE
        )
    assert stuck.value.cause == "time"
    # the longest wait that fired: at least the bound, and far from hours
    assert 0.2 <= stuck.value.waited < 60
    np.testing.assert_array_equal(
        b.to_host(jitscan.scan(x, variant="lookback", dtype=np.int32)),
        np.cumsum(b.to_host(x), dtype=np.int32),
    )


def test_spin_timeout_is_a_launch_argument_in_units_of_the_devices_clock():
    b = backends.get("opencl")
    if not b.available():  # the source is for the default device, whose clock it names
        pytest.skip(f"backend 'opencl' unavailable here: {b.unavailable_reason()}")
    src = jitscan.source("int32", variant="lookback", spin_timeout=0.5, backend="opencl")
    info = device_info("opencl")
    expect = clock.wait_units(info.clock, 0.5) if info.clock else 0
    assert f"launch argument wait_limit = {expect}" in src
    # the fallback scan, which needs no watchdog, reads no clock
    assert "#define JS_HAVE_CLOCK 0" in jitscan.source("int32", variant="fallback", backend="opencl")


def test_spin_limit_and_blocking_are_launch_arguments_of_one_program(backend, rng):
    src = jitscan.source("int32", spin_limit=7, simulate_blocking=3, backend="opencl")
    assert "launch argument spin_limit = 7" in src and "launch argument block_every = 3" in src
    b = backends.get(backend)
    x = random_input(rng, 20 * tile_size(backend, "int32"), "int32")
    jitscan.scan(x, backend=backend, spin_limit=5)
    before = b.compiled_count
    for k in (2, 7, 100):
        y = jitscan.scan(x, backend=backend, spin_limit=k, simulate_blocking=k)
        assert_scan_equal(y, reference(x, "add", "inclusive"), x)
    assert b.compiled_count == before


def _is_pocl() -> bool:
    b = backends.get("opencl")
    return b.available() and "Portable Computing Language" in b.device_info(b.queue_of(None)).name


@pytest.mark.skipif(
    not _is_pocl(), reason="needs PoCL: oversubscribed worker threads give an unfair scheduler"
)
def test_fallback_is_correct_under_an_unfair_scheduler():
    # More PoCL worker threads than cores: the OS preempts threads whose tiles others wait on.
    code = textwrap.dedent(
        """
        import numpy as np, jitscan
        x = np.random.default_rng().integers(-50, 50, 1 << 21).astype(np.int32)
        for variant in ("fallback", "lookback"):
            s = {}
            y = jitscan.scan(x, variant=variant, stats=s, spin_limit=8 if variant == "fallback" else None)
            assert np.array_equal(y, np.cumsum(x, dtype=np.int32)), variant
            print(variant, s)
        """
    )
    env = {**os.environ, "POCL_MAX_PTHREAD_COUNT": "8", "JITSCAN_BACKEND": "opencl"}
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("tile_state", ["packed", "split"])
def test_descriptors_of_earlier_launches_never_leak_into_a_later_one(backend, rng, tile_state):
    # Descriptors are not cleared between launches: each launch tags them with a new
    # epoch. Run across the point where the epoch overflows its tag and the buffer is
    # cleared, with sizes shrinking so that stale descriptors sit in range.
    tile = tile_size(backend, "int32")
    for k, n in enumerate([40 * tile + 3, 25 * tile, 7 * tile + 1, 30 * tile]):
        if k == 1:
            # the next launch takes the last epoch the tag holds, the one after it overflows
            b = backends.get(backend)
            b.scratch(0, b.queue_of(None), tile_state).epoch = state_of(tile_state, 4).epoch_limit - 1
        x = random_input(rng, n, "int32")
        got = run_on_device(backend, x, "add", "inclusive", "fallback", tile_state=tile_state)
        assert_scan_equal(got, reference(x, "add", "inclusive"), x)
