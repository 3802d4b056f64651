"""Every variant x kind x dtype x op against NumPy, at sizes around tile boundaries."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import (
    DTYPES,
    FFILL,
    INT_DTYPES,
    assert_scan_equal,
    device_info,
    geometries,
    op_dtype_pairs,
    poison,
    random_input,
    reference,
    tile_of,
    tile_size,
)

import jitscan
from jitscan import backends
from jitscan.plan import tuning

SCAN_VARIANTS = ("fallback", "lookback", "rts")


def run_on_device(backend: str, x: np.ndarray, op: object, kind: str, variant: str, **knobs) -> np.ndarray:
    """Scan device-resident x into a poisoned device output; return the result on the host."""
    b = backends.get(backend)
    q = b.queue_of(None)
    xd = b.to_device(x, q)
    if kind == "reduce":
        return b.to_host(jitscan.scan(xd, op, kind=kind, variant=variant, **knobs))
    out = b.to_device(poison(x.size, x.dtype.name), q)
    result = jitscan.scan(xd, op, kind=kind, variant=variant, out=out, **knobs)
    assert result is out
    return b.to_host(out)


def boundary_cases(backend: str, dtype: str, op: object = "add") -> list[tuple[int, dict]]:
    """(n, tile shape) around the tile boundaries of every default tile shape of ``op``."""
    cases = []
    for geo in geometries(backend, dtype, op):
        tile = tile_of(geo)
        cases += [(n, geo) for n in (1, 2, tile - 1, tile, tile + 1, 5 * tile + 3)]
    return cases


@pytest.mark.parametrize("variant", SCAN_VARIANTS)
@pytest.mark.parametrize("kind", jitscan.KINDS)
@pytest.mark.parametrize(("op", "dtype"), op_dtype_pairs())
def test_every_variant_kind_dtype_and_op_matches_numpy(backend, rng, variant, kind, op, dtype):
    for n, geo in boundary_cases(backend, dtype, op):
        x = random_input(rng, n, dtype, op)
        got = run_on_device(backend, x, op, kind, variant, **geo)
        assert_scan_equal(got, reference(x, op, kind), x, op)


@pytest.mark.parametrize("variant", SCAN_VARIANTS)
@pytest.mark.parametrize("kind", jitscan.KINDS)
@pytest.mark.parametrize(
    ("dtype", "op"), [("int32", "add"), ("float32", "max"), ("uint32", FFILL), ("float64", "add")]
)
def test_one_thread_tiles_of_64_byte_vectors_scan_every_lane(backend, rng, variant, kind, dtype, op):
    # 16 lanes of 4 bytes (8 of 8), in lanes or not (rts, float max, a user's operator);
    # OpenCL only, where one-thread tiles may hold vectors wider than 16 bytes
    if device_info(backend).is_gpu:
        pytest.skip("vectors wider than 16 bytes are for a CPU's one-thread tiles")
    width = 64 // np.dtype(dtype).itemsize
    for n in (5, width * 3 + 1, 5000):
        x = random_input(rng, n, dtype, op)
        got = run_on_device(backend, x, op, kind, variant, threads=1, vectors=2, vector_width=width)
        assert_scan_equal(got, reference(x, op, kind), x, op)


@pytest.mark.parametrize("variant", SCAN_VARIANTS)
@pytest.mark.parametrize("kind", jitscan.KINDS)
@pytest.mark.parametrize("dtype", ["int32", "uint64", "float32", "float64"])
def test_non_commutative_user_monoid_comes_out_in_order(backend, rng, variant, kind, dtype):
    for n, geo in boundary_cases(backend, dtype, FFILL):
        x = random_input(rng, n, dtype, FFILL)
        got = run_on_device(backend, x, FFILL, kind, variant, **geo)
        assert_scan_equal(got, reference(x, FFILL, kind), x, FFILL)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_read_across_in_shared_memory_scan_as_rows_scanned_by_shuffles(backend, rng, monkeypatch, dtype):
    # tuning.rows_in_smem takes them for 64-bit integers of one size class; here every
    # default tile shape takes them, and a workgroup of one subgroup, at its edges, with
    # every kind, an order that matters, built-in integer ops (whose subgroup scans step
    # in PTX on NVIDIA), and tiles scanned again by the workgroups that fall back on them
    if not device_info(backend).shuffle_width:
        pytest.skip("rows cross a tile's subgroups in shared memory only on devices with shuffles")
    b = backends.get(backend)
    q = b.queue_of(None)
    monkeypatch.setattr(tuning, "rows_in_smem", lambda spec, nbytes: True)
    one = {"threads": 32, "vectors": 8, "lookback_width": 32}
    shapes = boundary_cases(backend, dtype, FFILL) + [(n, one) for n in (255, 256, 4099)]
    ops = [FFILL] + (["add", "max"] if dtype in INT_DTYPES else [])
    blocked = {"simulate_blocking": 3, "spin_limit": 2}
    runs = (("fallback", blocked), ("fallback", {"deterministic": True, **blocked}), ("rts", {}))
    for n, geo in shapes:
        for op in ops:
            x = random_input(rng, n, dtype, op)
            for variant, knobs in runs:
                for kind in jitscan.KINDS:
                    scan = jitscan.plan(dtype, op, kind=kind, variant=variant, backend=backend, **geo | knobs)
                    assert scan.spec(device_info(backend), scan.size_class(n)).rows_in_smem
                    got = b.to_host(scan(b.to_device(x, q)))
                    assert_scan_equal(got, reference(x, op, kind), x, op)


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
@pytest.mark.parametrize("op", ["add", "mul", "min", "xor"])
def test_64_bit_integers_of_half_a_mib_to_16_mib_scan_right_as_they_run_by_default(backend, rng, dtype, op):
    # the class where they read their rows across, with the PTX step on NVIDIA: both ends
    for n in ((1 << 16) + 3, (1 << 21) - 5):
        x = random_input(rng, n, dtype, op)
        for kind in jitscan.KINDS:
            scan = jitscan.plan(dtype, op, kind=kind, backend=backend)
            on = scan.spec(device_info(backend), scan.size_class(n)).rows_in_smem
            assert on == bool(device_info(backend).shuffle_width)
            assert_scan_equal(run_on_device(backend, x, op, kind, "fallback"), reference(x, op, kind), x, op)


@pytest.mark.parametrize("variant", SCAN_VARIANTS)
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint64", "float32", "float64"])
def test_a_few_million_elements(backend, rng, variant, dtype):
    n = 3_000_017
    x = random_input(rng, n, dtype)
    for kind in jitscan.KINDS:
        got = run_on_device(backend, x, "add", kind, variant)
        assert_scan_equal(got, reference(x, "add", kind), x)


@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_memcpy_copies_every_element(backend, rng, dtype):
    for n, geo in boundary_cases(backend, dtype) + [(1_000_003, {})]:
        x = random_input(rng, n, dtype)
        b = backends.get(backend)
        q = b.queue_of(None)
        out = b.to_device(poison(n, dtype), q)
        jitscan.memcpy(b.to_device(x, q), out=out, **geo)
        np.testing.assert_array_equal(b.to_host(out), x)


def _in_order(x: np.ndarray, op: str) -> np.ndarray:
    """The scan of ``x`` one element after the other, with the built-in rule: the earlier
    value is kept only when it is strictly smaller (larger) or a NaN."""
    out = np.empty_like(x)
    acc = x[0]
    for i, v in enumerate(x):
        if i:
            keep = (acc < v if op == "min" else acc > v) or np.isnan(acc)
            acc = acc if keep else v
        out[i] = acc
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["min", "max"])
def test_float_min_and_max_keep_signed_zeros_and_the_first_nan_across_tiles(backend, dtype, op):
    # min(+0.0, -0.0) is -0.0 but min(-0.0, +0.0) is +0.0, and the first NaN wins: a tile
    # whose total is combined out of order would hand its successor the other zero or NaN
    tile = tile_size(backend, dtype)
    one = 1.0 if op == "min" else -1.0
    x = np.zeros(2 * tile, dtype)
    x[15:tile:16] = one
    x[tile - 2] = -0.0
    x[tile:] = one
    y = jitscan.scan(x, op, backend=backend)
    bits = f"u{x.itemsize}"
    np.testing.assert_array_equal(y.view(bits), _in_order(x, op).view(bits))
    w = np.full(2 * tile, one, dtype)
    w[1], w[4] = -np.nan, np.nan
    y = jitscan.scan(w, op, backend=backend)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(_in_order(w, op)))
