"""What a NumPy / PyOpenCL user sees: wrappers, dtypes, views, device arrays, out=, caching."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FFILL, assert_scan_equal, random_input, reference

import jitscan
from jitscan import backends


def test_cumsum_is_numpy_cumsum_with_its_promotion(rng):
    x = random_input(rng, 10_001, "int32")
    y = jitscan.cumsum(x)
    assert isinstance(y, np.ndarray) and y.dtype == np.int64
    np.testing.assert_array_equal(y, np.cumsum(x))
    y = jitscan.cumsum(x, dtype=np.int32)  # the 32-bit scan, asked for
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.int32))


def test_dtype_argument_sets_result_and_arithmetic_type(rng):
    x = rng.integers(2**30, 2**31 - 1, 5000).astype(np.int32)  # overflows int32 quickly
    y = jitscan.cumsum(x, dtype=np.int64)
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.int64))


@pytest.mark.parametrize(
    ("fn", "ufunc"),
    [
        (jitscan.cumsum, np.add),
        (jitscan.cumprod, np.multiply),
        (jitscan.cummax, np.maximum),
        (jitscan.cummin, np.minimum),
    ],
)
def test_wrappers_match_numpy_accumulate(rng, fn, ufunc):
    x = rng.uniform(0.999, 1.001, 7777).astype(np.float64)
    np.testing.assert_allclose(fn(x), ufunc.accumulate(x), rtol=1e-12)
    ex = fn(x, exclusive=True)
    np.testing.assert_allclose(ex[1:], ufunc.accumulate(x)[:-1], rtol=1e-12)


def test_exclusive_starts_with_the_identity(rng):
    x = random_input(rng, 3000, "int64")
    assert jitscan.cumsum(x, exclusive=True)[0] == 0
    assert jitscan.cummax(x, exclusive=True)[0] == np.iinfo(np.int64).min
    assert jitscan.scan(x, "mul", kind="exclusive")[0] == 1


def test_max_propagates_nan_like_numpy():
    x = np.array([1.0, 5.0, np.nan, 7.0, 2.0], dtype=np.float32)
    np.testing.assert_array_equal(jitscan.cummax(x), np.maximum.accumulate(x))


def test_reduce_returns_a_numpy_scalar(rng):
    x = random_input(rng, 12345, "uint32")
    s = jitscan.reduce(x)
    assert isinstance(s, np.uint32) and s == np.add.reduce(x, dtype=np.uint32)
    assert jitscan.reduce(x, op="max") == x.max()
    assert jitscan.reduce(x, op="xor") == np.bitwise_xor.reduce(x)


def test_nd_input_is_scanned_flattened_like_numpy_axis_none(rng):
    x = random_input(rng, 3 * 5 * 700, "int32").reshape(3, 5, 700)
    y = jitscan.cumsum(x)
    assert y.shape == (x.size,)
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.int32))


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a[::3],
        lambda a: a[::-1],
        lambda a: a[::-7],
        lambda a: a.reshape(100, -1).T,
    ],
)
def test_strided_and_negative_stride_views(rng, view):
    base = random_input(rng, 100 * 123, "float32")
    x = view(base)
    np.testing.assert_array_equal(jitscan.cumsum(x), np.cumsum(x.astype(np.float64)).astype(np.float32))


def test_empty_and_length_one():
    for dt in ("int32", "float64"):
        e = np.empty(0, dt)
        assert jitscan.cumsum(e).shape == (0,) and jitscan.cumsum(e).dtype == np.cumsum(e).dtype
        assert jitscan.reduce(e) == 0 and jitscan.reduce(e, op="mul") == 1
        assert jitscan.reduce(e, op="max") == (np.iinfo(dt).min if dt[0] == "i" else -np.inf)
        one = np.array([42], dt)
        np.testing.assert_array_equal(jitscan.cumsum(one), one)
        assert jitscan.cumsum(one, exclusive=True)[0] == 0
        assert jitscan.reduce(one) == 42


def test_out_receives_the_result(rng):
    x = random_input(rng, 5000, "int32")
    out = np.full(5000, -1, np.int32)
    y = jitscan.cumsum(x, out=out)
    assert y is out
    np.testing.assert_array_equal(out, np.cumsum(x, dtype=np.int32))


def test_user_monoid_forward_fill():
    x = np.array([0, 3, 0, 0, 7, 0, 2, 0], np.int32)
    np.testing.assert_array_equal(jitscan.scan(x, op=FFILL), [0, 3, 3, 3, 7, 7, 2, 2])


def test_memcpy_is_a_copy(rng):
    x = random_input(rng, 100_000, "float32")
    y = jitscan.memcpy(x)
    assert y is not x
    np.testing.assert_array_equal(y, x)


def test_second_call_with_the_same_spec_does_not_compile_again(backend, rng):
    b = backends.get(backend)
    x = random_input(rng, 4000, "int32")
    jitscan.scan(x, "or", backend=backend, variant="rts")
    before = b.compiled_count
    jitscan.scan(x, "or", backend=backend, variant="rts")
    jitscan.scan(x, "or", backend=backend, variant="rts", kind="exclusive")  # kind is a launch argument
    assert b.compiled_count == before


@pytest.mark.parametrize("call", ["cumsum", "scan"])
def test_calls_with_keyword_arguments_find_their_prepared_scan_in_one_lookup(backend, rng, monkeypatch, call):
    # variant=, backend= and knobs are part of the common call's key: a loop of such
    # calls prepares once and then takes the shortcut, as a plain call does
    from jitscan.api import warm

    b = backends.get(backend)
    x = b.to_device(random_input(rng, 4000, "float32"), b.queue_of(None))
    jitscan.api.cache.clear()  # a call of another test may have made this one's key
    made = []
    real = warm.shortcut_for
    monkeypatch.setattr(warm, "shortcut_for", lambda *a, **k: made.append(a) or real(*a, **k))
    fn = getattr(jitscan, call)
    # a watchdog no preempted PoCL worker outlasts (2^20 spins, about a millisecond on a
    # CPU, once reported a false deadlock on a loaded machine)
    knobs = dict(backend=backend, variant="lookback", deterministic=True, spin_limit=1 << 30)
    results = [b.to_host(fn(x, **knobs)) for _ in range(3)]
    assert len(made) == 1
    np.testing.assert_array_equal(results[0], results[2])
    fn(x, backend=backend, variant="lookback", deterministic=False)  # another key: prepared anew
    assert len(made) == 2


def test_source_is_readable_and_shows_the_monoid():
    src = jitscan.source("float32", op=FFILL, variant="fallback", backend="opencl")
    assert "b != 0 ? b : a" in src and "js_chained" in src and "__kernel" in src
    seg = jitscan.source("int32", backend="opencl", segmented="offsets")
    assert "#define JS_SEG_OFFSETS 1" in seg and "js_seg_first" in seg
    with pytest.raises(ValueError, match="segmented"):
        jitscan.source("int32", segmented="csr")


def test_stats_are_filled_for_chained_variants(rng):
    s: dict = {}
    jitscan.cumsum(random_input(rng, 100_000, "int32"), stats=s)
    assert set(s) >= {"spins", "lookback_steps", "fallbacks", "insertions", "tiles"}


# -- device arrays ---------------------------------------------------------------------


def _device(backend):
    b = backends.get(backend)
    return b, b.queue_of(None)


def test_device_input_stays_on_the_device(backend, rng):
    b, q = _device(backend)
    x = random_input(rng, 20_000, "float64")
    y = jitscan.cumsum(b.to_device(x, q))
    assert b.owns(y)
    assert_scan_equal(b.to_host(y), reference(x, "add", "inclusive"), x)
    r = jitscan.reduce(b.to_device(x, q))
    assert b.owns(r) and r.shape == ()
    assert_scan_equal(b.to_host(r), reference(x, "add", "reduce"), x)


def test_device_views_and_in_place(backend, rng):
    b, q = _device(backend)
    host = random_input(rng, 30_000, "int32")
    xd = b.to_device(host, q)
    np.testing.assert_array_equal(b.to_host(jitscan.cumsum(xd[::3])), np.cumsum(host[::3], dtype=np.int32))
    np.testing.assert_array_equal(b.to_host(jitscan.cumsum(xd[100:])), np.cumsum(host[100:], dtype=np.int32))
    for start in (1, 3):  # views whose data is not 16-byte aligned, as input and as out=
        np.testing.assert_array_equal(
            b.to_host(jitscan.cumsum(xd[start:])), np.cumsum(host[start:], dtype=np.int32)
        )
        dst = b.to_device(np.zeros(30_000, np.int32), q)
        jitscan.cumsum(xd[: 30_000 - start], out=dst[start:])
        expect = np.cumsum(host[: 30_000 - start], dtype=np.int32)
        np.testing.assert_array_equal(b.to_host(dst), np.concatenate([np.zeros(start, np.int32), expect]))
    jitscan.cumsum(xd, out=xd)  # in place: must not read its own output during a fallback
    np.testing.assert_array_equal(b.to_host(xd), np.cumsum(host, dtype=np.int32))


def test_device_dtype_conversion(backend, rng):
    b, q = _device(backend)
    host = random_input(rng, 5000, "int32")
    y = jitscan.cumsum(b.to_device(host, q), dtype="float64")
    np.testing.assert_array_equal(b.to_host(y), np.cumsum(host, dtype=np.float64))


# -- prepared scans ------------------------------------------------------------------------


def test_a_prepared_scan_takes_any_size_and_allocates_unless_given_out(backend, rng):
    b, q = _device(backend)
    scan = jitscan.plan("int32", "add", backend=backend)
    for n in (1, 1000, 300_001):  # several size classes, one prepared scan
        x = random_input(rng, n, "int32")
        y = scan(b.to_device(x, q))
        assert b.owns(y)
        np.testing.assert_array_equal(b.to_host(y), np.cumsum(x, dtype=np.int32))
        out = b.empty((n,), np.dtype(np.int32), q)
        assert scan(b.to_device(x, q), out=out) is out
        np.testing.assert_array_equal(b.to_host(out), np.cumsum(x, dtype=np.int32))
    np.testing.assert_array_equal(scan(x), np.cumsum(x, dtype=np.int32))  # NumPy in, NumPy out


def test_the_common_call_scans_device_arrays_as_they_are_and_leaves_every_other_call(backend, rng):
    b, q = _device(backend)
    scan = jitscan.plan("int32", "add", backend=backend)
    x = random_input(rng, 4096, "int32")
    dx, out = b.to_device(x, q), b.empty((4096,), np.dtype(np.int32), q)
    assert scan.common(dx, out, None) is out
    np.testing.assert_array_equal(b.to_host(out), np.cumsum(x, dtype=np.int32))
    made = scan.common(dx, None, None)  # allocates, as scan(dx) does
    assert b.owns(made)
    np.testing.assert_array_equal(b.to_host(made), np.cumsum(x, dtype=np.int32))
    for other in [
        (x, None),  # host input
        (dx[1:], None),  # not aligned for the kernels' vector loads
        (dx, dx),  # out over x
        (dx, b.empty((4096,), np.dtype(np.float32), q)),  # out of another dtype
        (dx, b.empty((4095,), np.dtype(np.int32), q)),  # out of another size
    ]:
        assert scan.common(*other, None) is None
    np.testing.assert_array_equal(b.to_host(dx), x)  # left as it was
    assert scan(dx[1:]) is not None  # the long way takes what the common call leaves


def test_a_prepared_scan_checks_its_arguments_when_it_is_made():
    with pytest.raises(ValueError, match="unknown op"):
        jitscan.plan("int32", "sum")
    with pytest.raises(TypeError, match="integer dtypes only"):
        jitscan.plan("float32", "xor")
    with pytest.raises(ValueError, match="simulated blocking"):
        jitscan.plan("int32", variant="lookback", simulate_blocking=8)
    with pytest.raises(TypeError, match="tuning knobs"):
        jitscan.plan("int32", spinlimit=3)


def test_a_segmented_prepared_scan_takes_its_segments_per_call(rng):
    x = random_input(rng, 5000, "int32")
    offs = np.array([0, 10, 10, 4000, 5000])
    scan = jitscan.plan("int32", segmented="offsets")
    assert_scan_equal(scan(x, offsets=offs), jitscan.segmented_cumsum(x, offsets=offs), x)
    with pytest.raises(ValueError, match="offsets="):
        scan(x)


def test_calls_from_several_threads_on_one_queue_stay_correct(rng):
    # threads share the queue's scratch buffer: each launch needs an epoch of its own
    from concurrent.futures import ThreadPoolExecutor

    x = random_input(rng, 1 << 16, "int32")
    want = np.cumsum(x, dtype=np.int32)

    def work(_: int) -> bool:
        return all(np.array_equal(jitscan.cumsum(x), want) for _ in range(25))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(4)))


def test_a_reduction_of_nothing_fills_the_out_array_it_is_given():
    out = np.array([7], np.int64)
    assert jitscan.scan(np.zeros(0, np.int64), kind="reduce", out=out) is out
    assert out[0] == 0


def test_array_likes_with_their_own_dtype_are_scanned_as_numpy_would_see_them():
    class Tensorish:  # a dtype NumPy cannot interpret, and __array__ (as a CPU tensor has)
        dtype = "torch.int32"
        shape = (4,)

        def __array__(self, dtype=None, copy=None):
            return np.arange(4, dtype=np.int32)

    np.testing.assert_array_equal(jitscan.cumsum(Tensorish()), [0, 1, 3, 6])
    memmap_like = np.arange(5, dtype=np.int32).view(np.recarray)  # an ndarray subclass
    np.testing.assert_array_equal(jitscan.cumsum(memmap_like), [0, 1, 3, 6, 10])


@pytest.mark.parametrize("kwargs", [{"device": None}, {"segmented": "flags"}, {"spinlimit": 3}])
def test_public_functions_refuse_keywords_that_are_not_knobs(kwargs):
    with pytest.raises(TypeError, match="tuning knobs"):
        jitscan.cumsum(np.arange(4, dtype=np.int32), **kwargs)
    with pytest.raises(TypeError, match="tuning knobs"):
        jitscan.segmented_reduce(np.arange(4, dtype=np.int32), offsets=[0, 4], **kwargs)


def test_a_new_thread_can_scan_device_arrays_made_elsewhere(backend, rng):
    # the launch path makes no runtime call of its own before launching: a thread that
    # has never touched the device must still have a context to launch in
    import threading

    b, q = _device(backend)
    x = random_input(rng, 1 << 15, "int32")
    dx, dy = b.to_device(x, q), b.empty((x.size,), np.dtype(np.int32), q)
    jitscan.cumsum(dx, out=dy)  # prepared and compiled here
    errors: list[BaseException] = []

    def work() -> None:
        try:
            jitscan.cumsum(dx, out=dy)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not errors, errors
    np.testing.assert_array_equal(b.to_host(dy), np.cumsum(x, dtype=np.int32))


def test_a_plain_prepared_scan_refuses_segments_on_every_path():
    p = jitscan.plan("int32")
    x = np.arange(1, 9, dtype=np.int32)
    for kw in (dict(offsets=[0, 3, 8]), dict(flags=np.ones(8, bool)), dict(row_len=4)):
        with pytest.raises(ValueError, match="need a segmented scan"):
            p(x, **kw)  # a contiguous NumPy array: the common call's path
        with pytest.raises(ValueError, match="need a segmented scan"):
            p(np.arange(16, dtype=np.int32)[::2], **kw)  # a view: the long way


def test_a_prepared_scan_refuses_what_scan_refuses():
    p = jitscan.plan("int32")
    for bad in (np.array(["1", "2"]), np.array([1 + 2j, 3])):
        with pytest.raises(TypeError, match="cannot scan an array of dtype"):
            p(bad)
    rows = jitscan.plan("int32", segmented="rows")
    for bad in (4.0, True):
        with pytest.raises(TypeError, match="row_len= takes an integer"):
            rows(np.arange(8, dtype=np.int32), row_len=bad)


def test_cumulative_functions_refuse_the_copy_variant():
    with pytest.raises(ValueError, match="variant 'memcpy' copies; it does not scan"):
        jitscan.cumsum(np.array([1, 2, 3]), variant="memcpy")
    jitscan.cumsum(np.arange(8))  # a warm call without out= does not take one that is no array
    with pytest.raises(TypeError, match="out= must be an array, got list"):
        jitscan.cumsum(np.arange(8), out=[0] * 8)


@pytest.mark.parametrize(
    "kw",
    [
        dict(kind="reduce", segmented="flags"),
        dict(kind="reduce", variant="memcpy"),
        dict(variant="memcpy", segmented="offsets"),
    ],
)
def test_source_refuses_what_plan_refuses(kw):
    with pytest.raises(ValueError) as plan_error:
        jitscan.plan("int32", **kw)
    with pytest.raises(ValueError, match=str(plan_error.value)):
        jitscan.source("int32", **kw)
