"""NumPy arrays on a device that works in host memory (OpenCL on a CPU) are scanned in place.

The kernels read the NumPy input and write the NumPy result through buffers over their
own memory (``Backend.shared``), with no copy in or out; where that cannot be (a GPU, an
input not aligned to the kernels' vectors, a result that overlaps the input) the scan
copies as before and is just as right.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from conftest import device_info, tile_size

import jitscan
from jitscan import backends
from jitscan.bench import numpy_segmented
from jitscan.plan import tuning


@pytest.fixture
def cpu_opencl():
    b = backends.get("opencl")
    if not b.available():
        pytest.skip(f"backend 'opencl' unavailable here: {b.unavailable_reason()}")
    if device_info("opencl").is_gpu:
        pytest.skip("the default OpenCL device is a GPU: NumPy arrays are copied to it")
    return b


def test_a_numpy_scan_neither_uploads_nor_downloads(cpu_opencl, monkeypatch, rng):
    x = rng.integers(-100, 100, 10 * tile_size("opencl", "int32") + 3).astype(np.int32)
    jitscan.cumsum(x, dtype=np.int32, backend="opencl")  # compiled outside the check

    def copied(*args, **kwargs):
        raise AssertionError("copied")

    monkeypatch.setattr(cpu_opencl, "to_device", copied)
    monkeypatch.setattr(cpu_opencl, "to_host", copied)
    for variant in ("fallback", "lookback", "rts"):
        y = jitscan.cumsum(x, dtype=np.int32, backend="opencl", variant=variant)
        np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.int32))
        assert int(jitscan.reduce(x, backend="opencl", variant=variant)) == int(x.sum(dtype=np.int32))


def test_read_only_inputs_and_offsets_are_read_in_place_too(cpu_opencl, monkeypatch, rng):
    # their addresses come another way than a writable array's (backends.base.address)
    x = rng.integers(-100, 100, 10 * tile_size("opencl", "int32") + 3).astype(np.int32)
    offsets = np.array([0, 5, x.size // 2, x.size])
    x.flags.writeable = offsets.flags.writeable = False
    jitscan.segmented_cumsum(x, offsets, dtype=np.int32, backend="opencl")  # compiled first
    monkeypatch.setattr(cpu_opencl, "to_device", lambda *a, **k: pytest.fail("copied"))
    np.testing.assert_array_equal(
        jitscan.cumsum(x, dtype=np.int32, backend="opencl"), np.cumsum(x, dtype=np.int32)
    )
    want = np.concatenate(
        [np.cumsum(x[a:b], dtype=np.int32) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    )
    np.testing.assert_array_equal(
        jitscan.segmented_cumsum(x, offsets, dtype=np.int32, backend="opencl"), want
    )


def test_the_device_reads_and_writes_the_arrays_own_memory(cpu_opencl, rng):
    q = cpu_opencl.default_queue()
    host = rng.integers(0, 9, 4096).astype(np.float32)
    view = cpu_opencl.shared(host, q, True)
    assert view.base_data.hostbuf is host


def test_out_is_written_in_place_when_it_can_be(cpu_opencl, rng):
    n = 7 * tile_size("opencl", "float32") + 5
    x = rng.integers(-8, 9, n).astype(np.float32)
    raw = np.empty(n * 4 + 256, np.uint8)
    start = -raw.ctypes.data % 128
    out = raw[start : start + n * 4].view(np.float32)
    assert jitscan.cumsum(x, out=out, backend="opencl") is out
    np.testing.assert_array_equal(out, np.cumsum(x))
    misaligned = raw[start + 4 : start + 4 + n * 4].view(np.float32)
    assert jitscan.cumsum(x, out=misaligned, backend="opencl") is misaligned
    np.testing.assert_array_equal(misaligned, np.cumsum(x))


def test_results_as_large_as_the_cache_are_stored_around_it_and_still_right(cpu_opencl, rng):
    # from the device's cache of output (and at least tuning.CPU_STREAM_BYTES) the tiles
    # skip the cache (JS_STREAM_BIT): an ordinary store would first read each line it writes
    edge = max(device_info("opencl").cache_bytes, tuning.CPU_STREAM_BYTES)
    if edge > 1 << 26:
        pytest.skip(f"outputs stream from {edge} bytes on this device")
    n = edge // 4 + 4099  # past the edge, ending inside a tile and a vector
    x = rng.integers(-50, 50, n).astype(np.int32)
    want = np.cumsum(x, dtype=np.int32)
    np.testing.assert_array_equal(jitscan.cumsum(x, dtype=np.int32, backend="opencl"), want)
    np.testing.assert_array_equal(jitscan.cumsum(x, backend="opencl"), np.cumsum(x))  # int64 results
    before = jitscan.scan(x, "add", kind="exclusive", backend="opencl")
    np.testing.assert_array_equal(before, want - x)
    np.testing.assert_array_equal(jitscan.scan(x, "add", initial=7, backend="opencl"), want + 7)
    f = x.astype(np.float32)
    np.testing.assert_allclose(jitscan.cumsum(f, backend="opencl"), np.cumsum(f, dtype=np.float64), atol=1e-2)
    # and memcpy, the yardstick of the scans' loads and stores, stores as they do
    np.testing.assert_array_equal(jitscan.plan("int32", variant="memcpy", backend="opencl")(x), x)


@pytest.mark.parametrize("where", ["in place", "misaligned input", "strided input"])
def test_inputs_the_device_cannot_share_are_copied_and_still_right(cpu_opencl, rng, where):
    n = 9 * tile_size("opencl", "int32") + 1
    base = rng.integers(-100, 100, 2 * n + 1).astype(np.int32)
    if where == "in place":
        x = base[:n].copy()
        want = np.cumsum(x, dtype=np.int32)
        assert jitscan.cumsum(x, dtype=np.int32, out=x, backend="opencl") is x
        np.testing.assert_array_equal(x, want)
        return
    x = base[1 : n + 1] if where == "misaligned input" else base[: 2 * n : 2]
    np.testing.assert_array_equal(
        jitscan.cumsum(x, dtype=np.int32, backend="opencl"), np.cumsum(x, dtype=np.int32)
    )


def test_segmented_and_axis_scans_of_numpy_arrays(cpu_opencl, rng):
    n = 12 * tile_size("opencl", "int32") + 7
    x = rng.integers(-100, 100, n).astype(np.int32)
    off = np.array([0, 5, 5, n // 2, n], np.int64)
    got = jitscan.segmented_cumsum(x, off, dtype=np.int32, backend="opencl")
    want = np.concatenate([np.cumsum(x[a:b], dtype=np.int32) for a, b in zip(off[:-1], off[1:], strict=True)])
    np.testing.assert_array_equal(got, want)
    m = x[: (n // 4) * 4].reshape(4, -1)
    np.testing.assert_array_equal(
        jitscan.cumsum(m, axis=1, dtype=np.int32, backend="opencl"), np.cumsum(m, 1, dtype=np.int32)
    )


def test_common_calls_wrap_the_numpy_memory_in_bare_buffers(cpu_opencl, monkeypatch, rng):
    # a prepared scan's common call (a contiguous NumPy input, out= None or a fitting
    # array) builds no pyopencl Array (Backend.shared): its constructor would cost more
    # than a small scan. Conversions, N-D and 0-d input and reductions answer as always.
    n = 5 * tile_size("opencl", "int64") + 3
    x = rng.integers(-100, 100, n).astype(np.int32)
    scan = jitscan.plan("int64", backend="opencl")
    total = jitscan.plan("int64", kind="reduce", backend="opencl")
    scan(x)

    def wrapped(*args, **kwargs):
        raise AssertionError("went through Backend.shared")

    monkeypatch.setattr(cpu_opencl, "shared", wrapped)
    np.testing.assert_array_equal(scan(x), np.cumsum(x))
    out = np.empty(n, np.int64)
    assert scan(x, out=out) is out
    np.testing.assert_array_equal(out, np.cumsum(x))
    np.testing.assert_array_equal(scan(x[: n - 3].reshape(-1, 5)), np.cumsum(x[: n - 3]))
    assert scan(np.array(7, np.int64)).tolist() == [7]
    got = total(x)
    assert type(got) is np.int64 and got == x.sum(dtype=np.int64)
    np.testing.assert_array_equal(jitscan.cumsum(x, backend="opencl"), np.cumsum(x))


def test_scans_by_offsets_of_numpy_arrays_take_the_common_path_too(cpu_opencl, monkeypatch, rng):
    # values and result in bare buffers, the checked offsets read in place: none of the
    # general path's moves (plan/arrays.to_input), in every kind and variant, out= too
    from jitscan.plan import arrays

    n = 5 * tile_size("opencl", "int32", "offsets") + 3
    x = rng.integers(-100, 100, n).astype(np.int32)
    offsets = np.array([0, 1, 1, n // 3, n - 1, n], np.int32)
    scans = [
        jitscan.plan("int32", segmented="offsets", kind=kind, variant=variant, backend="opencl")
        for kind in ("inclusive", "exclusive")
        for variant in ("fallback", "lookback", "rts")
    ]
    for scan in scans:
        scan(x, offsets=offsets)  # compiled outside the check
    monkeypatch.setattr(arrays, "to_input", lambda *a, **k: pytest.fail("took the general path"))
    for scan in scans:
        want = np.concatenate(
            [
                np.cumsum(x[a:b], dtype=np.int32) - (x[a:b] if scan.kind == "exclusive" else 0)
                for a, b in zip(offsets[:-1], offsets[1:], strict=True)
            ]
        )
        np.testing.assert_array_equal(scan(x, offsets=offsets), want)
        out = np.empty(n, np.int32)
        assert scan(x, out, offsets=offsets) is out
        np.testing.assert_array_equal(out, want)
    with pytest.raises(ValueError, match="non-decreasing"):
        scans[0](x, offsets=np.array([0, n // 2, n // 3, n]))


def test_results_need_no_map_where_the_device_writes_the_host_array(cpu_opencl, monkeypatch, rng):
    # PoCL's CPU device keeps a host-pointer buffer in the array itself: once the queue
    # finishes, the result is there, and mapping it would only cost a command and a wait.
    # The backend probes that once per device; a runtime that keeps copies is mapped.
    import pyopencl as cl

    if not cpu_opencl._writes_in_place(cpu_opencl.default_queue()):
        pytest.skip("this CPU runtime keeps its own copies of host-pointer buffers: results are mapped")
    tile = tile_size("opencl", "float32")
    for n in (1, tile - 1, 5 * tile + 3):
        jitscan.cumsum(np.ones(n, np.float32), backend="opencl")  # compiled outside the check

    def mapped(*args, **kwargs):
        raise AssertionError("mapped")

    monkeypatch.setattr(cl, "enqueue_map_buffer", mapped)
    for n in (1, tile - 1, 5 * tile + 3):
        x = rng.integers(-8, 9, n).astype(np.float32)
        for _ in range(3):
            np.testing.assert_array_equal(jitscan.cumsum(x, backend="opencl"), np.cumsum(x))


def test_small_host_calls_poll_for_their_end_where_worker_threads_run_the_kernels(
    cpu_opencl, monkeypatch, rng
):
    # PoCL's threaded driver wakes a thread blocked in clFinish only after its workers are
    # done: a call of up to POLL_BYTES looks at a marker instead, a larger one, which would
    # share the cores with the workers, blocks. Every result is whole either way.
    from jitscan.backends import opencl

    q = cpu_opencl.default_queue()
    if q.device.max_compute_units < 2 or cpu_opencl.host_sibling(q) is not None:
        pytest.skip("host calls here run on a device of one compute unit, in the waiting thread")
    small = rng.integers(-8, 9, 1000).astype(np.int32)
    big = rng.integers(-8, 9, opencl.POLL_BYTES // 4 + 1).astype(np.int32)

    def both(x):  # a plain and a segmented host call, and what they should give
        cut = np.array([0, 10, x.size // 2, x.size])
        got = jitscan.cumsum(x, dtype=np.int32), jitscan.segmented_cumsum(x, cut, dtype=np.int32)
        parts = [np.cumsum(x[a:b], dtype=np.int32) for a, b in zip(cut[:-1], cut[1:], strict=True)]
        return got, (np.cumsum(x, dtype=np.int32), np.concatenate(parts))

    both(small), both(big)  # compiled outside the count
    polled = []
    poll = opencl.OpenCLBackend._poll
    monkeypatch.setattr(
        opencl.OpenCLBackend, "_poll", staticmethod(lambda queue: (polled.append(1), poll(queue)))
    )
    for x in (small, big):
        got, want = both(x)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
    assert len(polled) == 2  # the small calls'


_IN_THREAD_SCRIPT = """
import json
import numpy as np, jitscan
from jitscan import backends
from jitscan.plan import tuning

b = backends.get("opencl")
ran_on = []
real = b.host_operands


def spy(x, out, dtype, one, queue, loads):
    ran_on.append(queue.device.max_compute_units)
    return real(x, out, dtype, one, queue, loads)


b.host_operands = spy
assert b.default_queue().device.max_compute_units > 1, "the threaded driver is the default device"
p = jitscan.plan("int32", backend="opencl")
small = np.arange(1000, dtype=np.int32) % 7
big = np.arange(tuning.CPU_IN_THREAD_BYTES // 4 + 1, dtype=np.int32) % 7
for x in (small, big):
    np.testing.assert_array_equal(p(x), np.cumsum(x, dtype=np.int32))
# a carry in a device array of the default queue: the call stays in that queue's context
import pyopencl.array as cla

seven = cla.to_device(b.default_queue(), np.array([7], np.int32))
np.testing.assert_array_equal(p(small, initial=seven), 7 + np.cumsum(small, dtype=np.int32))
print(json.dumps(ran_on[:2]))
"""


def on_pocl_devices(cpu_opencl, devices: str, script: str) -> Any:
    """What ``script`` prints last (JSON), run in a process of its own whose PoCL lists ``devices``."""
    if "Portable Computing Language" not in cpu_opencl.default_queue().device.platform.name:
        pytest.skip("the default OpenCL device is not PoCL's")
    env = dict(os.environ, POCL_DEVICES=devices)
    env.pop("PYOPENCL_CTX", None)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_small_numpy_calls_run_in_the_calling_thread_where_pocl_offers_its_single_thread_driver(cpu_opencl):
    # POCL_DEVICES="pthread basic" lists PoCL's single-thread driver beside the threaded
    # one: small calls skip the hand-off to worker threads, large ones keep every core
    small, big = on_pocl_devices(cpu_opencl, "pthread basic", _IN_THREAD_SCRIPT)
    assert small == 1 and big > 1  # the compute units of the device each call ran on


_ONE_UNIT_SCRIPT = """
import json, numpy as np, jitscan
from jitscan import backends

b = backends.get("opencl")
assert b.device_info(b.default_queue()).compute_units == 1
rng = np.random.default_rng(3)
assert "#define JS_SERIAL 1" in jitscan.plan("int32", backend="opencl").source(1 << 20)
assert "#define JS_SERIAL 1" in jitscan.plan("float32", backend="opencl").source(1 << 20)
# a deterministic float scan's total must not depend on whether a stall made a fallback reduce it
det = jitscan.plan("float32", backend="opencl", deterministic=True)
assert "#define JS_SERIAL 0" in det.source(1 << 20)
f = rng.standard_normal(1 << 18).astype(np.float32)
np.testing.assert_allclose(jitscan.cumsum(f), np.cumsum(f, dtype=np.float64), rtol=1e-4, atol=1e-2)
blocked = jitscan.cumsum(f, deterministic=True, simulate_blocking=3, spin_limit=2)
assert (det(f) == blocked).all()
sizes = (1, 4097, 16384 * 3 + 5, 1 << 20)
for n in sizes:
    x = rng.integers(-50, 50, n).astype(np.int32)
    want = np.cumsum(x, dtype=np.int32)
    np.testing.assert_array_equal(jitscan.cumsum(x, dtype=np.int32), want)
    exclusive = np.concatenate([[0], want[:-1]]).astype(np.int32)
    np.testing.assert_array_equal(jitscan.cumsum(x, dtype=np.int32, exclusive=True), exclusive)
    np.testing.assert_array_equal(jitscan.cumsum(x, dtype=np.int32, simulate_blocking=3, spin_limit=2), want)
    np.testing.assert_array_equal(jitscan.cumsum(x, dtype=np.int32, variant="lookback"), want)
    np.testing.assert_array_equal(jitscan.scan(x, "add", initial=9), want + np.int32(9))
    np.testing.assert_array_equal(jitscan.cumsum(x.reshape(1, -1), axis=1, dtype=np.int32)[0], want)
print(json.dumps(len(sizes)))
"""


def test_on_a_device_of_one_compute_unit_plain_scans_take_one_pass_tiles_in_every_form(cpu_opencl):
    # PoCL's single-thread driver runs workgroups one after another in tile order: each
    # tile finds its predecessor's inclusive prefix posted, and scans and stores in one
    # pass; a tile that never posts (simulated blocking) sends its successor the usual way
    assert on_pocl_devices(cpu_opencl, "basic", _ONE_UNIT_SCRIPT) == 4  # every size ran


_ONE_UNIT_SEGMENTED_SCRIPT = """
import json, numpy as np, jitscan
from jitscan.bench import numpy_segmented

assert "#define JS_SERIAL 1" in jitscan.plan("int32", segmented="offsets", backend="opencl").source(1 << 20)
assert "#define JS_SERIAL 1" in jitscan.plan("float32", segmented="flags", backend="opencl").source(1 << 20)
det = jitscan.plan("float32", segmented="flags", backend="opencl", deterministic=True)
assert "#define JS_SERIAL 0" in det.source(1 << 20)
rng = np.random.default_rng(5)
sizes = (1, 4097, 4096 * 5 + 3, 1 << 20)
for n in sizes:
    x = rng.integers(-50, 50, n).astype(np.int32)
    # short segments, empty ones, and one long segment across many tiles in the middle
    early, late = rng.integers(0, n // 3 + 1, n // 60), rng.integers(2 * n // 3, n + 1, n // 60)
    cuts = np.sort(np.concatenate([early, late]))
    off = np.concatenate([[0], cuts, [n]])
    heads = np.zeros(n, np.uint8)
    heads[off[:-1][off[:-1] < n]] = 7
    want = numpy_segmented(x, off)
    before = want - x  # the exclusive scan
    np.testing.assert_array_equal(jitscan.segmented_cumsum(x, offsets=off), want)
    np.testing.assert_array_equal(jitscan.segmented_cumsum(x, flags=heads), want)
    np.testing.assert_array_equal(jitscan.segmented_cumsum(x, offsets=off, exclusive=True), before)
    np.testing.assert_array_equal(jitscan.segmented_cumsum(x, flags=heads, exclusive=True), before)
    blocked = jitscan.segmented_cumsum(x, offsets=off, simulate_blocking=3, spin_limit=2)
    np.testing.assert_array_equal(blocked, want)
    f = x.astype(np.float32)
    np.testing.assert_array_equal(det(f, flags=heads), jitscan.segmented_scan(
        f, flags=heads, deterministic=True, simulate_blocking=3, spin_limit=2))
    np.testing.assert_allclose(jitscan.segmented_cumsum(f, flags=heads), want, rtol=1e-5)
print(json.dumps(len(sizes)))
"""


def test_on_a_device_of_one_compute_unit_segmented_scans_take_one_pass_tiles_too(cpu_opencl):
    # as above, each segmented tile in one pass from its predecessor's inclusive prefix
    # (a head cuts the prefix off), inclusive or exclusive, by offsets or flags
    assert on_pocl_devices(cpu_opencl, "basic", _ONE_UNIT_SEGMENTED_SCRIPT) == 4  # every size ran


def test_segmented_tiles_on_a_cpu_find_their_aggregate_without_scanning_it(cpu_opencl, rng):
    # a one-thread segmented tile's protocol pass combines only its items after its last
    # head (read back from the tile's end); its store pass scans it from the prefix. The
    # aggregate is what successors that fall back read, so tiles are blocked here: heads
    # as the last item of every tile, as the first, on every item, and long stretches of
    # none, by offsets and by flags, inclusive and exclusive
    def source(dtype, segmented, **knobs):
        return jitscan.plan(dtype, segmented=segmented, backend="opencl", **knobs).source(1 << 20)

    assert "#define JS_SEG_STORE_PASS 1" in source("int32", "offsets")
    assert "#define JS_SEG_STORE_PASS 1" in source("float32", "flags")
    # float max keeps its order of combines; a deterministic float scan its scanned tiles
    assert "#define JS_SEG_STORE_PASS 0" in source("float32", "flags", op="max")
    assert "#define JS_SEG_STORE_PASS 0" in source("float32", "offsets", deterministic=True)
    tile = tile_size("opencl", "int32", "offsets")
    n = 24 * tile + 5
    starts = {
        "last item of each tile": np.arange(tile - 1, n, tile),
        "first item of each tile": np.arange(tile, n, tile),
        "every item": np.arange(1, n),
        "long stretches without": np.array([3, 2 * tile + 7, 9 * tile + 1, n - 2]),
    }
    # an input shorter than a tile is one tile: its whole words of heads, then its tail
    short = tile // 2 + 37
    cases = [(n, name, cuts) for name, cuts in starts.items()]
    cases += [(short, "a short input, heads near its end", np.array([5, short - 70, short - 2]))]
    for n, name, cuts in cases:
        off = np.concatenate([[0], cuts, [n]]).astype(np.int64)
        heads = np.zeros(n, np.uint8)
        heads[off[:-1]] = 1
        x = rng.integers(-50, 50, n).astype(np.int32)
        want = numpy_segmented(x, off)
        for given in ({"offsets": off}, {"flags": heads}):
            for every in (0, 2):
                blocked = {**given, "simulate_blocking": every, "spin_limit": 2}
                stats: dict = {}
                got = jitscan.segmented_cumsum(x, **blocked, stats=stats)
                np.testing.assert_array_equal(got, want, err_msg=name)
                assert stats["fallbacks"] >= (1 if every and n > tile else 0), name  # (one tile: none)
                before = jitscan.segmented_cumsum(x, **blocked, exclusive=True)
                np.testing.assert_array_equal(before, want - x, err_msg=name)
                f = jitscan.segmented_cumsum(x.astype(np.float32), **blocked)
                np.testing.assert_array_equal(f, want.astype(np.float32), err_msg=name)  # small sums: exact
