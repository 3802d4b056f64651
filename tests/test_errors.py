"""Bad input gets a clear error, never a wrong answer or a hang."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import FFILL, device_info

import jitscan

X = np.arange(100, dtype=np.int32)


@pytest.mark.parametrize("dtype", [object, "U2", "datetime64[s]"])
def test_unsupported_dtype_names_the_supported_ones(dtype):
    with pytest.raises(TypeError, match="it takes int32, uint32, int64, uint64, float32, float64, bool"):
        jitscan.cumsum(np.ones(10, dtype=dtype))


def test_a_prepared_scan_is_made_for_a_scanned_dtype_only():
    with pytest.raises(TypeError, match="supported dtypes: int32"):
        jitscan.plan("int8")


@pytest.mark.parametrize(
    ("kwargs", "listing"),
    [
        ({"op": "sub"}, "add, mul, min, max, and, or, xor"),
        ({"variant": "cub"}, "fallback, lookback, rts, memcpy"),
        ({"kind": "prefix"}, "inclusive, exclusive, reduce"),
        ({"backend": "metal"}, "opencl"),
        ({"tile_state": "compressed"}, "packed, split"),
    ],
)
def test_unknown_choices_list_the_valid_ones(kwargs, listing):
    with pytest.raises(ValueError, match=listing):
        jitscan.scan(X, **kwargs)


def test_unknown_knob_is_a_type_error():
    with pytest.raises(TypeError, match="tuning knobs"):
        jitscan.cumsum(X, spinlimit=3)


def test_out_of_the_wrong_shape_or_dtype():
    with pytest.raises(ValueError, match="shape"):
        jitscan.cumsum(X, out=np.empty(99, np.int32))
    with pytest.raises(TypeError, match="same_kind"):
        jitscan.cumsum(X.astype(np.float32), out=np.empty(100, np.int64))
    with pytest.raises(ValueError, match="shape"):
        jitscan.cumsum(X.reshape(10, 10), out=np.empty((10, 10), np.int32))


def test_bitwise_ops_refuse_floats():
    with pytest.raises(TypeError, match="integer dtypes only"):
        jitscan.scan(X.astype(np.float32), "xor")


def test_user_monoid_that_does_not_compile_shows_the_compiler_message():
    bad = jitscan.Monoid("bad", combine="a << 1.5", identity=0)  # grammatical, but no C compiles it
    with pytest.raises(jitscan.CompileError, match=r"(?s)op 'bad'.*a << 1\.5"):
        jitscan.scan(X, op=bad)


def test_user_monoid_that_does_not_parse_is_refused_when_made_naming_what_is_missing():
    with pytest.raises(ValueError, match=r"needs '\)' where it has the end, at 6 of 'a \+ \(b'"):
        jitscan.Monoid("bad", combine="a + (b", identity=0)


@pytest.mark.parametrize(
    "combine, culprit",
    [
        ("a + c", "the name 'c'"),
        ("foo(a, b)", "the name 'foo'"),
        ("a + b); } __kernel void evil() { (0", r"may not hold a statement \(';'\)"),
        ("a\n#define JS_BARRIER()", "may not hold '#'"),
        ('a + *(int*)"x"', "may not hold '\"'"),
        ("a[1] + b", r"may not hold an index \('\['\)"),
        ("a /* */ + b", "may not hold a comment"),
        ("a + b" * 500, "over 2000"),
    ],
)
def test_a_monoid_combine_is_an_expression_over_a_and_b_or_refused_naming_the_token(combine, culprit):
    with pytest.raises(ValueError, match=culprit):
        jitscan.Monoid("m", combine=combine, identity=0)


@pytest.mark.parametrize("identity", [1.5, float("nan"), float("inf")])
def test_an_integer_scan_refuses_an_identity_that_is_not_an_integer(identity):
    m = jitscan.Monoid("m", combine="a * b", identity=identity)
    with pytest.raises(ValueError, match="is not an integer, for int32"):
        jitscan.scan(X, op=m)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": "two words", "combine": "a+b"},
        {"name": "ok", "combine": ""},
        {"name": "ok", "combine": "a+b", "identity": "zero"},
    ],
)
def test_malformed_monoids(kwargs):
    with pytest.raises((ValueError, TypeError)):
        jitscan.Monoid(**kwargs)


def test_identity_that_does_not_fit_the_dtype():
    m = jitscan.Monoid("big", combine="a + b", identity=2**40)
    with pytest.raises(ValueError, match="does not fit"):
        jitscan.scan(X, op=m)


def test_simulated_blocking_only_for_chained_variants():
    with pytest.raises(ValueError, match="simulated blocking"):
        jitscan.cumsum(X, variant="rts", simulate_blocking=4)


def test_device_array_with_a_foreign_backend():
    with pytest.raises(ValueError):
        jitscan.cumsum(X, backend="nonexistent")


def test_offsets_tile_too_large_for_local_memory():
    # segments by offsets stage the tile's results in local memory: on a GPU stand-in (on a
    # CPU device a tile of so many threads is refused sooner, for its worker's stack)
    with pytest.raises(ValueError, match="local memory"):
        jitscan.source("int64", backend="cupy", segmented="offsets", kind="reduce", threads=1024, vectors=32)


def test_a_cpu_workgroup_of_several_threads_is_refused_a_tile_its_worker_cannot_hold():
    if device_info("opencl").is_gpu:
        pytest.skip("a CPU device's limit")
    with pytest.raises(ValueError, match=r"workgroup of 256 threads takes at most \d+ items of int64"):
        jitscan.segmented_reduce(
            X.astype(np.int64), offsets=[0, 50, 100], threads=256, vectors=32, backend="opencl"
        )


def test_vectors_wider_than_16_bytes():
    # the kernels move whole vectors, and arrays are only guaranteed 16-byte alignment; a
    # one-thread tile (a CPU's) may hold vectors of up to 64 bytes, which OpenCL moves
    # unaligned, and none is wider than 16 items
    with pytest.raises(ValueError, match="at most 16"):
        jitscan.cumsum(X, vector_width=8, threads=32)
    with pytest.raises(ValueError, match="at most 16"):
        jitscan.cumsum(X, vector_width=32, threads=1)


@pytest.mark.parametrize(
    "knob, value, message",
    [
        ("threads", 64.0, "threads must be an integer, got 64.0"),
        ("threads", "64", "threads must be an integer, got '64'"),
        ("threads", True, "threads must be an integer, got True"),
        ("vectors", -4, "vectors must not be negative"),
        ("spin_limit", 1.5, "spin_limit must be an integer"),
        ("spin_limit", "8", "spin_limit must be an integer"),
        ("spin_limit", 2**32, r"spin_limit must be between 0 and 2\*\*32 - 1"),
        ("simulate_blocking", 2.5, "simulate_blocking must be an integer"),
        ("spin_timeout", "1", "spin_timeout must be a number of seconds, got '1'"),
        ("spin_timeout", 0, "spin_timeout must be more than 0 and at most 600 seconds, got 0"),
        ("spin_timeout", 1e4, "spin_timeout must be more than 0 and at most 600 seconds"),
        ("tile_state", 1, "tile_state must be a str"),
    ],
)
def test_knobs_of_the_wrong_type_are_refused_naming_the_knob(knob, value, message):
    with pytest.raises((TypeError, ValueError), match=message):
        jitscan.scan(X, **{knob: value})


def test_flags_of_any_shape_with_one_entry_per_value_are_read_in_c_order():
    flags = np.zeros((2, X.size // 2), np.uint8)
    flags[1, 0] = 1
    got = jitscan.segmented_scan(X, flags=flags)
    half = X.size // 2
    np.testing.assert_array_equal(got, np.r_[np.cumsum(X[:half]), np.cumsum(X[half:])])
    with pytest.raises(ValueError, match=r"flags has 3 entries \(shape \(3,\)\); the values have"):
        jitscan.segmented_scan(X, flags=np.zeros(3, np.uint8))


def test_a_tile_beyond_the_devices_local_memory_or_registers_is_refused_before_it_is_compiled(backend):
    # a CPU scans rows in local memory; a GPU keeps a thread's items in registers, where
    # 4096 unrolled vectors would take its compiler minutes and then spill
    info = device_info(backend)
    # (a CPU's workgroup of several threads meets its items-a-thread limit first)
    limit = "registers" if info.is_gpu and info.thread_registers else "(local memory|items of int32 a thread)"
    if info.is_gpu and not info.thread_registers:
        pytest.skip(f"{info.name} does not say how many registers a thread has")
    with pytest.raises(ValueError, match=f"{limit}.*use fewer"):
        jitscan.scan(X, threads=256, vectors=4096, backend=backend)


def test_a_cpu_workgroup_of_several_threads_gets_rows_it_can_run_and_longer_ones_are_refused():
    info = device_info("opencl")
    if info.is_gpu:
        pytest.skip("a CPU device's limit")
    # the CPU's default rows are for one-thread workgroups: with threads=4 they shrink
    y = jitscan.scan(np.arange(100_000, dtype=np.int32), threads=4)
    np.testing.assert_array_equal(y, np.cumsum(np.arange(100_000, dtype=np.int32), dtype=np.int32))
    with pytest.raises(ValueError, match="at most 256 items of int32 a thread"):
        jitscan.scan(X, threads=2, vectors=256, backend="opencl")
    # the limit is in bytes (1 KiB a thread: PoCL's compiler), and the whole tile within the
    # worker thread's stack
    with pytest.raises(ValueError, match="at most 128 items of int64 a thread"):
        jitscan.scan(X.astype(np.int64), threads=2, vectors=128, backend="opencl")
    with pytest.raises(ValueError, match="workgroup of 1024 threads takes at most 32 items of int32"):
        jitscan.scan(X, threads=1024, vectors=64, backend="opencl")


def test_an_empty_list_of_flags_is_no_flags_and_float_flags_are_refused():
    assert jitscan.segmented_cumsum(np.empty(0, np.int32), flags=[]).size == 0
    with pytest.raises(ValueError, match="flags must be bool or integer, got float64"):
        jitscan.segmented_cumsum(np.empty(0, np.int32), flags=np.array([]))


def _refuse_buffers(monkeypatch, b) -> None:
    """Every buffer the OpenCL backend makes fails as clCreateBuffer fails past the device's limit."""
    import pyopencl as cl

    def refuse(*args, **kwargs):
        record = cl._cl._ErrorRecord("create_buffer failed: INVALID_BUFFER_SIZE", -61, "create_buffer")
        raise cl.LogicError(record)

    for name in ("host_operands", "empty", "shared"):
        monkeypatch.setattr(type(b), name, refuse)


@pytest.mark.parametrize(
    "call",
    [
        lambda x: jitscan.cumsum(x, dtype=np.int8, backend="opencl"),
        lambda x: jitscan.scan(x.astype(np.int32), kind="exclusive", backend="opencl"),
        lambda x: jitscan.segmented_cumsum(x.astype(np.int32), flags=x.cumsum() % 3 == 0, backend="opencl"),
    ],
)
def test_a_buffer_the_device_cannot_allocate_is_a_device_memory_error_naming_sizes_and_a_way(
    monkeypatch, call
):
    b = jitscan.backends.get("opencl")
    if not b.available():
        pytest.skip(f"OpenCL unavailable: {b.unavailable_reason()}")
    _refuse_buffers(monkeypatch, b)
    with pytest.raises(jitscan.DeviceMemoryError) as info:
        call(np.ones(1000, np.int8))
    said = str(info.value)
    assert "of 1,000 elements of int32 needs buffers of 4,000 bytes" in said, said
    assert (
        "allocates at most" in said and "dask.array.from_array(x, chunks=" in said and "initial=" in said
    ), said
    assert isinstance(info.value, MemoryError) and "INVALID_BUFFER_SIZE" in str(info.value.__cause__)


@pytest.mark.skipif(
    os.environ.get("JITSCAN_HUGE") != "1", reason="takes about 13 GB of memory: JITSCAN_HUGE=1"
)
def test_an_input_over_the_devices_largest_buffer_is_scanned_in_pieces_as_numpy_does():
    # CuPy's test_cumprod_huge_array: 2^31 + 1024 int8, 8 GiB as int32, past PoCL's 2 GiB buffers
    y = jitscan.cumprod(np.ones(2**31 + 1024, np.int8), dtype="b", backend="opencl")
    assert y.dtype == np.int8 and y.size == 2**31 + 1024 and bool((y == 1).all())
    del y
    x = np.broadcast_to(np.int8(1), (2**31 + 5,))
    np.testing.assert_array_equal(jitscan.cumsum(x, dtype=np.int8), np.cumsum(x, dtype=np.int8))


#: a largest buffer of 4 KiB, so that pieces come at small sizes
_SMALL_BUFFERS = 4096
_MIN = np.iinfo(np.int32).min


@pytest.mark.parametrize(
    "call, want",
    [
        (lambda x: jitscan.cumsum(x, dtype=np.int32), lambda x: np.cumsum(x, dtype=np.int32)),
        (
            lambda x: jitscan.cumsum(x.astype(np.int8), dtype=np.int8),
            lambda x: np.cumsum(x.astype(np.int8), dtype=np.int8),
        ),
        (lambda x: jitscan.scan(x, kind="exclusive", initial=5), lambda x: np.r_[5, 5 + np.cumsum(x)[:-1]]),
        (lambda x: jitscan.scan(x, initial=100, variant="lookback"), lambda x: 100 + np.cumsum(x)),
        (lambda x: jitscan.reduce(x, initial=7), lambda x: 7 + x.sum()),
        (
            lambda x: jitscan.scan(x, "max", kind="exclusive"),
            lambda x: np.r_[_MIN, np.maximum.accumulate(x)[:-1]],
        ),
        (lambda x: jitscan.scan(x, FFILL), lambda x: _ffill(x)),
    ],
)
def test_a_host_input_past_the_largest_buffer_is_scanned_in_pieces_each_from_the_last(
    monkeypatch, call, want
):
    b = jitscan.backends.get("opencl")
    if not b.available() or jitscan.backends.default() is not b:
        pytest.skip("the default backend is not OpenCL")
    from jitscan.api import cache
    from jitscan.plan import prepared

    pieces = []
    real = prepared.PreparedScan._in_pieces
    monkeypatch.setattr(type(b), "largest_buffer", lambda self, queue: _SMALL_BUFFERS)
    monkeypatch.setattr(
        prepared.PreparedScan, "_in_pieces", lambda self, *a: pieces.append(1) or real(self, *a)
    )
    x = np.random.default_rng(4).integers(-9, 10, 10_007).astype(np.int32)
    x[::97] = 0
    cache.clear()  # prepared scans read the limit when they are made
    try:
        got = call(x)
    finally:
        monkeypatch.undo()
        cache.clear()
    assert pieces, "no pieces"
    np.testing.assert_array_equal(got, want(x))


def _ffill(x: np.ndarray) -> np.ndarray:
    at = np.maximum.accumulate(np.where(x != 0, np.arange(x.size), 0))
    return np.where(x[at] != 0, x[at], 0)


@pytest.mark.gpu
@pytest.mark.parametrize("call", ["scan", "segmented"])
def test_a_result_larger_than_the_gpus_free_memory_is_a_device_memory_error(call):
    b = jitscan.backends.get("cupy")
    if not b.available():
        pytest.skip(f"needs a CUDA GPU: {b.unavailable_reason()}")
    import gc

    import cupy

    gc.collect()  # an earlier case's traceback may hold its array
    cupy.get_default_memory_pool().free_all_blocks()  # what the pool keeps is free too
    free, total = cupy.cuda.runtime.memGetInfo()
    n = total // 7  # int32 values that fit; their int64 scan (8 n bytes) cannot
    if 4 * n + (1 << 30) > free:
        pytest.skip(f"needs {4 * n / 2**30:.0f} GiB of free GPU memory, {free / 2**30:.0f} GiB free")
    x = cupy.zeros(n, cupy.int32)
    try:
        with pytest.raises(jitscan.DeviceMemoryError, match=r"bytes free"):
            if call == "scan":
                jitscan.scan(x, dtype=cupy.int64)
            else:
                jitscan.segmented_scan(x, flags=x, dtype=cupy.int64)
    finally:
        del x
        cupy.get_default_memory_pool().free_all_blocks()


def test_a_segmented_scan_refuses_vectors_of_more_than_16_items_of_any_value():
    pair = jitscan.operator(lambda x, y: (x[0] + y[0], x[1] + y[1]), identity=(0, 0.0))
    v = np.arange(100, dtype=np.int32)
    with pytest.raises(ValueError, match="vectors hold at most 16 items, not vector_width=32"):
        jitscan.segmented_scan((v, v.astype(np.float64)), offsets=[0, 50, 100], op=pair, vector_width=32)


def test_a_segmented_item_on_a_cpu_workgroup_counts_its_head_and_a_tuple_its_padded_struct():
    if device_info("opencl").is_gpu:
        pytest.skip("a CPU device's limit")
    v = np.arange(100, dtype=np.int64)
    # 128 int64 a thread ran flat and killed PoCL by offsets: 16 bytes an item there
    with pytest.raises(ValueError, match="at most 64 items of int64 a thread"):
        jitscan.segmented_scan(v, offsets=[0, 50, 100], threads=2, vectors=64, backend="opencl")
    np.testing.assert_array_equal(  # the default shrinks to fit, in a power of two of vectors
        jitscan.segmented_scan(v, offsets=[0, 50, 100], threads=2, backend="opencl"),
        np.r_[np.cumsum(v[:50]), np.cumsum(v[50:])],
    )
