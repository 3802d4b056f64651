"""Segmented scans against a NumPy reference: ragged segments, heads at tile edges, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import (
    DTYPES,
    FFILL,
    alarm_copied_every_call,
    assert_scan_equal,
    device_info,
    op_dtype_pairs,
    poison,
    random_input,
    reference,
    tile_size,
)

import jitscan
from jitscan import backends

VARIANTS = ("fallback", "lookback", "rts")


def lengths(rng: np.random.Generator, n: int, mean: float) -> np.ndarray:
    """Random segment lengths (geometric, empty segments included) that sum to n."""
    out = []
    total = 0
    while total < n:
        k = int(rng.geometric(1.0 / (mean + 1.0))) - 1
        k = min(k, n - total)
        out.append(k)
        total += k
    return np.array(out, dtype=np.int64)


def offsets_of(lens: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)


def seg_reference(x: np.ndarray, off: np.ndarray, op: object, kind: str) -> np.ndarray:
    """Scan each segment on its own with the flat reference."""
    out = np.empty(x.size, dtype=np.float64 if x.dtype.kind == "f" else x.dtype)
    for s, e in zip(off[:-1], off[1:], strict=True):
        if e > s:
            out[s:e] = reference(x[s:e], op, kind)
    return out


def seg_reduce_reference(x: np.ndarray, off: np.ndarray, op: object) -> np.ndarray:
    m = op if isinstance(op, jitscan.Monoid) else jitscan.BUILTIN_OPS[op]
    ident = m.identity_for(jitscan.dtypes.lookup(x.dtype.name))
    return np.array(
        [reference(x[s:e], op, "reduce") if e > s else ident for s, e in zip(off[:-1], off[1:], strict=True)]
    )


def run_segmented(backend, x, op, kind, variant, offsets=None, flags=None, **knobs):
    b = backends.get(backend)
    q = b.queue_of(None)
    out = b.to_device(poison(x.size, x.dtype.name), q)
    res = jitscan.segmented_scan(
        b.to_device(x, q), offsets=offsets, flags=flags, op=op, kind=kind, variant=variant, out=out, **knobs
    )
    assert res is out
    return b.to_host(out)


def check_ops(backend, rng, variant, op, dtype):
    tile = tile_size(backend, dtype)
    for mean in (1, 10, 1000):
        n = 3 * tile + 17
        off = offsets_of(lengths(rng, n, mean))
        x = random_input(rng, n, dtype, op)
        for kind in ("inclusive", "exclusive"):
            got = run_segmented(backend, x, op, kind, variant, offsets=off)
            assert_scan_equal(got, seg_reference(x, off, op, kind), x, op)


@pytest.mark.parametrize(("op", "dtype"), op_dtype_pairs())
def test_every_op_and_dtype_per_segment(backend, rng, op, dtype):
    check_ops(backend, rng, "fallback", op, dtype)


# the other variants share the element layer and the lifted operator with fallback:
# one op per dtype keeps the PoCL compile count (about 3 s a program) in bounds
@pytest.mark.parametrize("variant", ["lookback", "rts"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_other_variants_per_segment(backend, rng, variant, dtype):
    check_ops(backend, rng, variant, "add", dtype)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_non_commutative_monoid_per_segment(backend, rng, variant, dtype):
    n = 4 * tile_size(backend, dtype) + 1
    off = offsets_of(lengths(rng, n, 10))
    x = random_input(rng, n, dtype, FFILL)
    for kind in ("inclusive", "exclusive"):
        got = run_segmented(backend, x, FFILL, kind, variant, offsets=off)
        assert_scan_equal(got, seg_reference(x, off, FFILL, kind), x, FFILL)


def tricky_offsets(n: int, tile: int) -> dict[str, np.ndarray]:
    """Segment layouts that trip segmented scans up, for n = 12 tiles."""
    cases = {
        "one segment over everything": np.array([0, n]),
        "a head on every element": np.arange(n + 1),
        "heads exactly at tile boundaries": np.arange(0, n + 1, tile),
        "heads one after tile boundaries": np.concatenate([[0], np.arange(1, n, tile), [n]]),
        "empty segments everywhere": np.repeat(np.arange(0, n + 1, 7 * tile // 3), 3)[2:],
        "segments spanning many tiles": np.array([0, 1, 5 * tile + 3, 5 * tile + 3, n - 1, n]),
        "one huge segment among tiny ones": offsets_of(
            np.concatenate([np.ones(50, int), [n - 100], np.ones(50, int)])
        ),
        "empty segments at both ends": np.array([0, 0, 0, tile - 1, n, n, n]),
    }
    for name, off in cases.items():
        off = np.unique(off) if "empty" not in name else np.sort(off)
        off[0], off[-1] = 0, n
        cases[name] = off
    return cases


@pytest.mark.parametrize("given", ["offsets", "flags"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_segment_shapes_that_trip_scans_up(backend, rng, variant, given):
    tile = tile_size(backend, "int32", given, variant, "inclusive")  # the segmented tile
    n = 12 * tile
    for name, off in tricky_offsets(n, tile).items():
        x = random_input(rng, n, "int32")
        segments = {"offsets": off}
        if given == "flags":
            flags = np.zeros(n, np.uint8)
            flags[off[:-1][off[:-1] < n]] = 1
            segments = {"flags": flags}
        for kind in ("inclusive", "exclusive"):
            got = run_segmented(backend, x, "add", kind, variant, **segments)
            assert_scan_equal(got, seg_reference(x, off, "add", kind), x), name


@pytest.mark.parametrize("variant", VARIANTS)
def test_segmented_reduce_on_shapes_that_trip_scans_up(backend, rng, variant):
    tile = tile_size(backend, "int32", "offsets", variant, "reduce")
    n = 12 * tile
    for name, off in tricky_offsets(n, tile).items():
        x = random_input(rng, n, "int32")
        got = jitscan.segmented_reduce(x, offsets=off, op=FFILL, variant=variant, backend=backend)
        np.testing.assert_array_equal(got, seg_reduce_reference(x, off, FFILL), err_msg=name)


@pytest.mark.parametrize("tile_state", ["packed", "split"])
@pytest.mark.parametrize("every", [2, 64])
def test_fallback_under_simulated_blocking(backend, rng, tile_state, every):
    tiles = max(2 * every, 40)
    n = tiles * tile_size(backend, "int64", "offsets") - 3
    for mean in (1, 10, 1000):
        off = offsets_of(lengths(rng, n, mean))
        x = random_input(rng, n, "int64")
        stats: dict = {}
        got = run_segmented(
            backend,
            x,
            "add",
            "inclusive",
            "fallback",
            offsets=off,
            tile_state=tile_state,
            simulate_blocking=every,
            spin_limit=4,
            stats=stats,
        )
        assert_scan_equal(got, seg_reference(x, off, "add", "inclusive"), x)
        assert stats["fallbacks"] >= 1
        red = jitscan.segmented_reduce(
            x,
            offsets=off,
            backend=backend,
            variant="fallback",
            tile_state=tile_state,
            simulate_blocking=every,
            spin_limit=4,
        )
        np.testing.assert_array_equal(red, seg_reduce_reference(x, off, "add"))


def test_flags_give_the_same_segments_as_offsets(backend, rng):
    b = backends.get(backend)
    n = 5 * tile_size(backend, "float32", "flags") + 9
    off = offsets_of(lengths(rng, n, 10))
    x = random_input(rng, n, "float32")
    heads = np.zeros(n, dtype=bool)
    heads[off[:-1][off[:-1] < off[1:]]] = True
    ref = seg_reference(x, off, "add", "inclusive")
    for flags in (
        heads,
        heads.astype(np.uint8),
        heads.astype(np.int32),
        b.to_device(heads.astype(np.uint8), b.queue_of(None)),
    ):
        assert_scan_equal(run_segmented(backend, x, "add", "inclusive", "fallback", flags=flags), ref, x)


@pytest.mark.parametrize("mean", [1, 10, 1000])
def test_any_nonzero_flag_byte_is_a_head(backend, rng, mean):
    """Flag bytes of 1 to 255 all mark heads, however densely they fall (a CPU tile reads
    its flags 64 at a time and skips the runs of 64 with no head)."""
    n = 3 * tile_size(backend, "float32", "flags") + 17
    off = offsets_of(lengths(rng, n, mean))
    x = random_input(rng, n, "float32")
    flags = np.zeros(n, dtype=np.uint8)
    starts = off[:-1][off[:-1] < off[1:]]
    flags[starts] = rng.integers(1, 256, starts.size)
    flags[starts[:3]] = (128, 255, 1)[: min(3, starts.size)]
    got = run_segmented(backend, x, "add", "inclusive", "fallback", flags=flags)
    assert_scan_equal(got, seg_reference(x, off, "add", "inclusive"), x)


@pytest.mark.parametrize("op", ["add", "max", "min", "mul"])
def test_segmented_reduce_gives_one_value_per_segment(backend, rng, op):
    b = backends.get(backend)
    n = 6 * tile_size(backend, "int32", "offsets") + 5
    off = offsets_of(lengths(rng, n, 10))
    x = random_input(rng, n, "int32", op)
    ref = seg_reduce_reference(x, off, op)
    np.testing.assert_array_equal(jitscan.segmented_reduce(x, offsets=off, op=op, backend=backend), ref)
    dev = jitscan.segmented_reduce(b.to_device(x, b.queue_of(None)), offsets=off, op=op)
    assert b.owns(dev)
    np.testing.assert_array_equal(b.to_host(dev), ref)


@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_rts_spine_longer_than_its_own_tile(backend, rng, dtype):
    # small tiles (32 threads x 1 vector): more tile totals than a spine pass holds, so the
    # spine scans whole passes of (value, head) pairs, moved as 16-byte words, and a partial one
    knobs = dict(threads=32, vectors=1)
    tile = 32 * (16 // np.dtype(dtype).itemsize)
    n = 5 * tile * tile // 2 + 7
    off = offsets_of(lengths(rng, n, 10))
    flags = np.zeros(n, bool)
    flags[off[:-1][off[:-1] < n]] = True
    x = random_input(rng, n, dtype)
    for kind in ("inclusive", "exclusive"):
        ref = seg_reference(x, off, "add", kind)
        assert_scan_equal(run_segmented(backend, x, "add", kind, "rts", offsets=off, **knobs), ref, x)
        assert_scan_equal(run_segmented(backend, x, "add", kind, "rts", flags=flags, **knobs), ref, x)
    got = jitscan.segmented_reduce(x, offsets=off, variant="rts", backend=backend, **knobs)
    assert_scan_equal(got, seg_reduce_reference(x, off, "add"), x)


@pytest.mark.parametrize("vectors", [8, 16])
def test_tiles_of_one_head_word_or_less(backend, rng, vectors):
    """Tiles of 32 and 64 int32 items a thread on a CPU: the head bits of a thread's
    vectors fit one 64-bit word, read from offsets, flag bytes and row lengths alike."""
    n = 40 * vectors * 4 + 5
    for mean in (1, 30):
        off = offsets_of(lengths(rng, n, mean))
        flags = np.zeros(n, np.uint8)
        flags[off[:-1][off[:-1] < n]] = 255
        x = random_input(rng, n, "int32")
        for kind in ("inclusive", "exclusive"):
            ref = seg_reference(x, off, "add", kind)
            for segments in ({"offsets": off}, {"flags": flags}):
                got = run_segmented(backend, x, "add", kind, "fallback", vectors=vectors, **segments)
                assert_scan_equal(got, ref, x)
    rows = random_input(rng, 7 * 60, "int32").reshape(7, 60)
    got = jitscan.cumsum(rows, axis=-1, vectors=vectors, backend=backend)
    np.testing.assert_array_equal(got, np.cumsum(rows, axis=-1))


@pytest.mark.parametrize("variant", VARIANTS)
def test_narrow_vectors_per_segment(backend, rng, variant):
    # vector_width is a knob; pairs then move one at a time
    n = 5000
    off = offsets_of(lengths(rng, n, 10))
    x = random_input(rng, n, "int32")
    for width in (1, 2):
        got = run_segmented(backend, x, "add", "inclusive", variant, offsets=off, vector_width=width)
        assert_scan_equal(got, seg_reference(x, off, "add", "inclusive"), x)


@pytest.mark.parametrize("variant", VARIANTS)
def test_wide_vectors_per_segment(backend, rng, variant):
    # 16 lanes of int32 in one-thread tiles (OpenCL, CPUs), by offsets and by flags, with
    # tiles of fewer than 64 items (the flags then load a vector's bytes at a time)
    if device_info(backend).is_gpu:
        pytest.skip("vectors wider than 16 bytes are for a CPU's one-thread tiles")
    n = 5000
    off = offsets_of(lengths(rng, n, 10))
    flags = np.zeros(n, np.uint8)
    flags[off[:-1]] = 1
    x = random_input(rng, n, "int32")
    want = seg_reference(x, off, "add", "inclusive")
    for vectors in (2, 8):
        got = run_segmented(
            backend, x, "add", "inclusive", variant, offsets=off, threads=1, vectors=vectors, vector_width=16
        )
        assert_scan_equal(got, want, x)
        got = run_segmented(
            backend, x, "add", "inclusive", variant, flags=flags, threads=1, vectors=vectors, vector_width=16
        )
        assert_scan_equal(got, want, x)


def test_empty_inputs():
    assert jitscan.segmented_cumsum(np.empty(0, np.int32), offsets=np.array([0])).shape == (0,)
    np.testing.assert_array_equal(
        jitscan.segmented_reduce(np.empty(0, np.int32), offsets=np.array([0, 0, 0])), [0, 0]
    )
    np.testing.assert_array_equal(
        jitscan.segmented_reduce(np.array([5], np.int32), offsets=[0, 0, 1], op="max"),
        [np.iinfo(np.int32).min, 5],
    )


def test_segmented_cumsum_wrapper(rng):
    x = random_input(rng, 1000, "int32")
    off = offsets_of(lengths(rng, 1000, 10))
    np.testing.assert_array_equal(
        jitscan.segmented_cumsum(x, offsets=off), seg_reference(x, off, "add", "inclusive")
    )
    np.testing.assert_array_equal(
        jitscan.segmented_cumsum(x, offsets=off, exclusive=True), seg_reference(x, off, "add", "exclusive")
    )


# -- batched scans along an axis --------------------------------------------------------


@pytest.mark.parametrize("shape", [(7, 1000), (3, 4, 513), (1, 1), (5, 0), (2000, 3)])
def test_cumsum_along_every_axis_matches_numpy(rng, shape):
    x = rng.integers(-50, 50, shape).astype(np.int64)
    for axis in range(-len(shape), len(shape)):
        np.testing.assert_array_equal(jitscan.cumsum(x, axis=axis), np.cumsum(x, axis=axis))
    np.testing.assert_array_equal(jitscan.cummax(x, axis=0), np.maximum.accumulate(x, axis=0))


@pytest.mark.parametrize("variant", VARIANTS)
def test_rows_of_whole_tiles_scan_like_rows_of_any_length(backend, rng, variant):
    # rows a multiple of the tile long restart the plain chained scan at each row
    tile = tile_size(backend, "int64")
    for rows, tiles_per_row in ((5, 1), (3, 4)):
        x = random_input(rng, rows * tiles_per_row * tile, "int64").reshape(rows, -1)
        for exclusive in (False, True):
            got = jitscan.cumsum(x, axis=-1, backend=backend, variant=variant, exclusive=exclusive)
            ref = np.cumsum(x, axis=-1)
            if exclusive:
                ref = np.concatenate([np.zeros((rows, 1), x.dtype), ref[:, :-1]], axis=1)
            np.testing.assert_array_equal(got, ref)
    if variant == "fallback":
        x = random_input(rng, 40 * tile, "int64").reshape(8, -1)
        stats: dict = {}
        got = jitscan.cumsum(x, axis=1, backend=backend, simulate_blocking=2, spin_limit=4, stats=stats)
        np.testing.assert_array_equal(got, np.cumsum(x, axis=1))
        assert stats["fallbacks"] >= 1


def test_axis_on_device_arrays(backend, rng):
    b = backends.get(backend)
    x = rng.integers(-50, 50, (37, 301)).astype(np.float32)
    xd = b.to_device(x, b.queue_of(None))
    for axis in (0, 1, -1):
        y = jitscan.cumsum(xd, axis=axis)
        assert b.owns(y) and tuple(y.shape) == x.shape
        np.testing.assert_array_equal(b.to_host(y), np.cumsum(x, axis=axis))


def test_axis_out_of_bounds():
    with pytest.raises(ValueError, match="out of bounds"):
        jitscan.cumsum(np.ones((2, 3), np.int32), axis=2)


# -- bad input ---------------------------------------------------------------------------

X = np.arange(10, dtype=np.int32)


BAD_OFFSETS = [
    (np.array([1, 5, 10]), r"start at 0: offsets\[0\] == 1"),
    (np.array([0, 5, 9]), r"end at n == 10: offsets\[2\] == 9"),
    (np.array([0, 6, 4, 10]), r"non-decreasing: offsets\[2\] == 4 < offsets\[1\] == 6"),
    (np.array([0, -1, 10]), r"non-decreasing: offsets\[1\] == -1 < offsets\[0\] == 0"),
]


@pytest.mark.parametrize(("offsets", "message"), BAD_OFFSETS)
def test_bad_device_offsets_raise_at_the_call_with_the_host_checks_message_given_check_now(
    backend, offsets, message
):
    b = backends.get(backend)
    q = b.queue_of(None)
    with pytest.raises(ValueError, match=message):
        jitscan.segmented_cumsum(b.to_device(X, q), offsets=b.to_device(offsets, q), check="now")
    with pytest.raises(ValueError, match=message):
        d_off = b.to_device(offsets.astype(np.int32), q)
        jitscan.segmented_reduce(b.to_device(X, q), offsets=d_off, check="now")


#: js_check_offset's words for BAD_OFFSETS: the first bad index and the rule it breaks
DEVICE_WORDS = [
    r"start at 0: offsets\[0\] != 0",
    r"end at n == n: offsets\[2\] != n",
    r"non-decreasing: offsets\[2\] < offsets\[1\]",
    r"non-decreasing: offsets\[1\] < offsets\[0\]",
]


@pytest.mark.parametrize(
    ("offsets", "message"), list(zip([o for o, _ in BAD_OFFSETS], DEVICE_WORDS, strict=True))
)
def test_bad_device_offsets_raise_at_the_next_call_by_offsets_on_their_queue(
    backend, offsets, message, monkeypatch
):
    # the call itself does not wait for the check: the next call by offsets on the queue
    # raises, naming the earlier call's first bad index, and the one after runs
    b = backends.get(backend)
    q = b.queue_of(None)
    alarm_copied_every_call(backend, q, monkeypatch)
    x, good = b.to_device(X, q), b.to_device(np.array([0, 4, 10]), q)
    wrong = jitscan.segmented_cumsum(x, offsets=b.to_device(offsets, q))
    assert b.to_host(wrong).shape == X.shape  # a result of the right shape, not a scan: waits too
    with pytest.raises(ValueError, match="earlier call on this queue.*" + message):
        jitscan.segmented_cumsum(x, offsets=good)
    got = jitscan.segmented_cumsum(x, offsets=good)
    np.testing.assert_array_equal(b.to_host(got), np.r_[np.cumsum(X[:4]), np.cumsum(X[4:])])
    for bad in (offsets, offsets.astype(np.int32)):  # int32 offsets: converted on the device
        jitscan.segmented_reduce(x, offsets=b.to_device(bad, q))
        b.to_host(x)
        with pytest.raises(ValueError, match="earlier call on this queue.*" + message):
            jitscan.segmented_reduce(x, offsets=good)


@pytest.mark.parametrize("reader", ["driver", "pyopencl"])
def test_bad_offsets_reach_the_host_through_the_flags_copy_where_the_device_writes_no_host_memory(
    monkeypatch, reader
):
    # an OpenCL GPU writes no host memory: the flag is copied back behind each call by
    # offsets (into pinned memory); a CPU device made to do the same shows that copy's path:
    # the driver's own read, with no event (backends/opencl_icd.py), or PyOpenCL's
    cl = pytest.importorskip("pyopencl")
    from jitscan.backends import opencl as opencl_backend
    from jitscan.backends import opencl_icd

    b = backends.get("opencl")
    if not b.available():
        pytest.skip(f"backend 'opencl' unavailable here: {b.unavailable_reason()}")
    if reader == "driver" and opencl_icd._loader() is None:
        pytest.skip("no OpenCL ICD loader that ctypes loads")
    if reader == "pyopencl":
        monkeypatch.setattr(opencl_icd, "reader", lambda *args: None)
    monkeypatch.setattr(type(b), "_writes_in_place", lambda self, queue: False)
    monkeypatch.setattr(opencl_backend, "ALARM_COPY_EVERY", 0.0)  # a copy behind every launch
    q = cl.CommandQueue(b.default_queue().context)  # a queue of its own: its alarm is made now
    alarm = b.alarm(q)
    assert alarm._copy is not None  # the flag's copy, not the host's own memory
    # the driver's read tells nothing of when it runs; PyOpenCL's gives an event to ask
    alarm.watch()
    assert (alarm._pending is None) == (reader == "driver")
    q.finish()
    assert not alarm.rung()
    x, good = b.to_device(X, q), b.to_device(np.array([0, 4, 10]), q)
    for bad, message in zip([o for o, _ in BAD_OFFSETS], DEVICE_WORDS, strict=True):
        jitscan.segmented_cumsum(x, offsets=b.to_device(bad, q))
        q.finish()
        with pytest.raises(ValueError, match="earlier call on this queue.*" + message):
            jitscan.segmented_cumsum(x, offsets=good)
        got = jitscan.segmented_cumsum(x, offsets=good)
        np.testing.assert_array_equal(b.to_host(got), np.r_[np.cumsum(X[:4]), np.cumsum(X[4:])])


def test_device_offsets_stay_on_the_device(backend, rng):
    b = backends.get(backend)
    q = b.queue_of(None)
    n = 5 * tile_size(backend, "int32", "offsets") + 3
    off = offsets_of(lengths(rng, n, 10))
    x = random_input(rng, n, "int32")
    for dtype in (np.int64, np.int32, np.uint64):
        d_off = b.to_device(off.astype(dtype), q)
        got = jitscan.segmented_cumsum(b.to_device(x, q), offsets=d_off)
        assert_scan_equal(b.to_host(got), seg_reference(x, off, "add", "inclusive"), x)
        red = jitscan.segmented_reduce(b.to_device(x, q), offsets=d_off)
        np.testing.assert_array_equal(b.to_host(red), seg_reduce_reference(x, off, "add"))
    for skip in (1, 2):  # offsets that are a view into a larger device array
        d_off = b.to_device(np.concatenate([np.full(skip, 7), off]), q)[skip:]
        red = jitscan.segmented_reduce(b.to_device(x, q), offsets=d_off)
        np.testing.assert_array_equal(b.to_host(red), seg_reduce_reference(x, off, "add"))


def test_float_sums_by_offsets_of_device_arrays_give_numpys_zero_without_the_host_waiting(
    backend, monkeypatch
):
    # a sum of negative zeros is +0.0 in NumPy: made so on the device, never by reading back
    b = backends.get(backend)
    q = b.queue_of(None)
    x = b.to_device(-np.zeros(64, np.float32), q)
    x2 = b.to_device(-np.zeros((4, 16), np.float64), q)
    d_off = b.to_device(np.array([0, 16, 16, 64], np.int64), q)
    for _ in range(2):  # the first call and the warm one
        with monkeypatch.context() as m:
            for read in ("to_host", "read_u32"):
                m.setattr(b, read, lambda *a, **k: pytest.fail("a read back to the host"))
            red = jitscan.segmented_reduce(x, offsets=d_off)
            lanes = jitscan.reduce(x2, axis=1)
        for got, n in ((red, 3), (lanes, 4)):
            host = b.to_host(got)
            assert host.shape == (n,) and not np.signbit(host).any()


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        (np.array([1, 5, 10]), r"start at 0: offsets\[0\] == 1"),
        (np.array([0, 5, 9]), r"end at n == 10: offsets\[2\] == 9"),
        (np.array([0, 6, 4, 10]), r"non-decreasing: offsets\[2\] == 4 < offsets\[1\] == 6"),
        (np.array([0.0, 10.0]), "integer dtype"),
        (np.array([]), "non-empty"),
    ],
)
def test_bad_offsets_name_the_problem_and_the_first_bad_index(offsets, message):
    with pytest.raises(ValueError, match=message):
        jitscan.segmented_cumsum(X, offsets=offsets)


def test_flags_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"flags has 9 entries \(shape \(9,\)\); the values have 10"):
        jitscan.segmented_cumsum(X, flags=np.ones(9, bool))


def test_both_or_neither_of_flags_and_offsets():
    with pytest.raises(ValueError, match="exactly one"):
        jitscan.segmented_cumsum(X)
    with pytest.raises(ValueError, match="exactly one"):
        jitscan.segmented_cumsum(X, offsets=[0, 10], flags=np.ones(10, bool))


def test_awkward_arrays_keep_their_structure(rng):
    ak = pytest.importorskip("awkward", reason="awkward is an optional dependency")
    lists = [list(rng.integers(0, 9, k)) for k in (3, 0, 1, 7, 2)]
    arr = ak.Array(lists)
    y = jitscan.segmented_cumsum(arr)
    assert isinstance(y, ak.Array)
    assert y.tolist() == [list(np.cumsum(v)) for v in lists]
    # the max of an empty list is None, as ak.max gives it
    assert jitscan.segmented_reduce(arr, op="max").tolist() == ak.max(arr, axis=1).tolist()
    assert jitscan.segmented_reduce(arr).tolist() == [sum(v) for v in lists]


def test_a_loop_of_segmented_calls_prepares_once(backend, rng, monkeypatch):
    # as cumsum's common call: one lookup keyed on what can differ between such calls,
    # and a call of another form (flags, no segments) is another key, not a wrong scan
    from jitscan.api import warm

    jitscan.api.cache.clear()
    made = []
    real = warm.shortcut_for
    monkeypatch.setattr(warm, "shortcut_for", lambda *a, **k: made.append(a) or real(*a, **k))
    x = random_input(rng, 3000, "float32")
    off = offsets_of(lengths(rng, 3000, 100))
    want = seg_reference(x, off, "add", "inclusive")
    for _ in range(3):
        np.testing.assert_allclose(jitscan.segmented_cumsum(x, offsets=off, backend=backend), want, rtol=1e-5)
    assert len(made) == 1
    with pytest.raises(ValueError, match="exactly one"):
        jitscan.segmented_cumsum(x, backend=backend)
    flags = np.zeros(3000, bool)
    flags[off[:-1][off[:-1] < 3000]] = True
    got = jitscan.segmented_cumsum(x, flags=flags, backend=backend)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert len(made) == 2  # the call without segments took the long way, which raised


def test_initial_must_fit_the_result_type_of_a_narrow_segmented_scan():
    # the scan runs in 32 bits; initial= is checked against the result's type, as scan() does
    v = np.array([1, 2, 3, 4], np.int8)
    f = np.array([0, 0, 1, 0], bool)
    with pytest.raises(ValueError, match="out of int8's range"):
        jitscan.segmented_scan(v, flags=f, initial=200)
    with pytest.raises(ValueError, match="out of uint8's range"):
        jitscan.segmented_scan(v.astype(np.uint8), flags=f, initial=-1)
    np.testing.assert_array_equal(jitscan.segmented_scan(v, flags=f, initial=100), [101, 103, 3, 7])


def test_an_awkward_array_refuses_initial_as_offsets_do():
    ak = pytest.importorskip("awkward", reason="awkward is an optional dependency")
    with pytest.raises(ValueError, match="give flags="):
        jitscan.segmented_scan(ak.Array([[1, 2], [3]]), initial=100)


def test_offsets_beyond_int64_are_named_as_given():
    with pytest.raises(ValueError, match=r"fit int64: offsets\[1\] == 9223372036854775813"):
        jitscan.segmented_cumsum(np.arange(8), offsets=np.array([0, 2**63 + 5, 8], np.uint64))


def test_large_reductions_by_offsets_in_stages_stay_right_call_after_call(backend, rng):
    # past tuning.RTS_SEG_REDUCE_BYTES a GPU reduces by offsets in rts's stages (the
    # pre-pass, the tile pass, the spine, the fix-up), which CUDA's compiled call launches
    # after Python's first: every call, of sizes that grow the queue's buffers and shrink
    # again, with segments of every length, gives NumPy's totals
    from jitscan.plan import tuning

    b = backends.get(backend)
    if not device_info(backend).is_gpu:
        pytest.skip("a CPU reduces by offsets in rts at every size: the other tests hold it")
    q = b.queue_of(None)
    base = tuning.RTS_SEG_REDUCE_BYTES // 4
    for n in (base + 4099, base + 3 * 8192 + 5, base + 4099, base + 1):
        x = rng.integers(-9, 9, n).astype(np.int32)
        off = np.r_[0, np.sort(rng.choice(np.arange(1, n), 2000, replace=False)), n].astype(np.int64)
        off[5:9] = off[5]  # empty segments
        off[10] = off[11] = off[12]
        dx, d_off = b.to_device(x, q), b.to_device(off, q)
        want = np.add.reduceat(x, off[:-1]).astype(np.int32)
        want[np.diff(off) == 0] = 0
        for _ in range(3):
            np.testing.assert_array_equal(b.to_host(jitscan.segmented_reduce(dx, offsets=d_off)), want)
