"""Tuple values: a tuple of arrays in, a tuple of arrays out, combined by a Python operator."""

from __future__ import annotations

import numpy as np
import pytest

import jitscan

pytest.importorskip("numba", reason="tuple values are combined by operators typed by Numba")


@jitscan.operator(identity=(1.0, 0.0))
def affine(x, y):  # h_t = a_t * h_{t-1} + b_t as pairs (a, b): not commutative
    return (x[0] * y[0], x[1] * y[0] + y[1])


@jitscan.operator(identity=(-np.inf, -1))
def argmax(x, y):  # running (max, first index of it)
    return y if y[0] > x[0] else x


@jitscan.operator(identity=(0.0, 0.0, 0.0))
def welford(x, y):  # (count, mean, M2), merged as Chan et al.
    n = x[0] + y[0]
    if n == 0:
        return x
    d = y[1] - x[1]
    return (n, x[1] + d * (y[0] / n), x[2] + y[2] + d * d * x[0] * y[0] / n)


def recurrence(a: np.ndarray, b: np.ndarray, h0: float = 0.0) -> np.ndarray:
    h, out = h0, np.empty(a.shape, np.float64)
    for i in range(a.size):
        h = float(a[i]) * h + float(b[i])
        out[i] = h
    return out


def first_argmax(x: np.ndarray) -> np.ndarray:
    best, at, out = -np.inf, -1, np.empty(x.size, np.int64)
    for i, v in enumerate(x):
        if v > best:
            best, at = v, i
        out[i] = at
    return out


def coefficients(rng: np.random.Generator, n: int, dtype: str = "float64") -> tuple[np.ndarray, np.ndarray]:
    return rng.uniform(0.5, 1.0, n).astype(dtype), rng.normal(size=n).astype(dtype)


@pytest.mark.parametrize("variant", ["fallback", "lookback", "rts"])
def test_a_linear_recurrence_is_a_scan_of_pairs(rng, variant):
    a, b = coefficients(rng, 30_000)
    A, H = jitscan.scan((a, b), op=affine, variant=variant)
    np.testing.assert_allclose(H, recurrence(a, b), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(A, np.cumprod(a), rtol=1e-9, atol=1e-300)


def test_only_the_fields_asked_for_are_returned(rng):
    a, b = coefficients(rng, 5_000, "float32")
    H = jitscan.scan((a, b), op=affine, output=1)
    assert isinstance(H, np.ndarray) and H.dtype == np.float32
    np.testing.assert_allclose(H, recurrence(a, b), rtol=1e-4, atol=1e-4)
    (H2,) = jitscan.scan((a, b), op=affine, output=(1,))
    np.testing.assert_array_equal(H, H2)


def test_exclusive_starts_from_the_identity_and_reduce_is_the_last_value(rng):
    a, b = coefficients(rng, 7_777)
    A, H = jitscan.scan((a, b), op=affine)
    Ae, He = jitscan.scan((a, b), op=affine, kind="exclusive")
    np.testing.assert_allclose(He, np.r_[0.0, H[:-1]], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Ae, np.r_[1.0, A[:-1]], rtol=1e-12, atol=1e-300)
    total = jitscan.reduce((a, b), op=affine)
    assert isinstance(total, tuple) and len(total) == 2
    np.testing.assert_allclose(total, (A[-1], H[-1]), rtol=1e-12)


def test_argmax_takes_the_index_as_a_virtual_input(backend, rng):
    x = rng.normal(size=20_001).astype(np.float32)
    v, i = jitscan.scan((x, jitscan.index), op=argmax, backend=backend)
    np.testing.assert_array_equal(v, np.maximum.accumulate(x))
    np.testing.assert_array_equal(i, first_argmax(x))
    assert i.dtype == np.int64
    best, at = jitscan.reduce((x, jitscan.index.astype("int32")), op=argmax, backend=backend)
    assert at == np.argmax(x) and at.dtype == np.int32 and best == x.max()


def test_mixed_field_types_are_kept(rng):
    x = rng.integers(-1000, 1000, 9_000).astype(np.int32)
    v, i = jitscan.scan((x.astype(np.float64), jitscan.index.astype(np.int32)), op=argmax)
    assert v.dtype == np.float64 and i.dtype == np.int32
    np.testing.assert_array_equal(i, first_argmax(x))


def test_welford_gives_mean_and_variance(rng):
    z = rng.normal(3.0, 2.0, 40_000)
    count, mean, m2 = jitscan.reduce((np.ones_like(z), z, np.zeros_like(z)), op=welford)
    assert count == z.size
    np.testing.assert_allclose(mean, z.mean(), rtol=1e-12)
    np.testing.assert_allclose(m2 / count, z.var(), rtol=1e-10)


@pytest.mark.parametrize("variant", ["fallback", "rts"])
def test_segmented_scans_restart_the_recurrence_at_each_segment(backend, rng, variant):
    a, b = coefficients(rng, 12_000)
    offsets = np.array([0, 1, 1, 4_000, 11_999, 12_000])
    H = jitscan.segmented_scan((a, b), offsets=offsets, op=affine, output=1, variant=variant, backend=backend)
    want = np.concatenate(
        [recurrence(a[s:e], b[s:e]) for s, e in zip(offsets[:-1], offsets[1:], strict=True)]
    )
    np.testing.assert_allclose(H, want, rtol=1e-9, atol=1e-9)
    flags = np.zeros(a.size, np.uint8)
    flags[offsets[:-1][offsets[:-1] < a.size]] = 1
    H_flags = jitscan.segmented_scan(
        (a, b), flags=flags, op=affine, output=1, variant=variant, backend=backend
    )
    np.testing.assert_allclose(H_flags, want, rtol=1e-9, atol=1e-9)


def test_segmented_reduce_gives_each_segments_argmax(rng):
    x = rng.normal(size=10_000)
    offsets = np.array([0, 10, 10, 5_000, 10_000])
    v, i = jitscan.segmented_reduce((x, jitscan.index), offsets=offsets, op=argmax)
    np.testing.assert_array_equal(
        i, [np.argmax(x[0:10]), -1, 10 + np.argmax(x[10:5000]), 5000 + np.argmax(x[5000:])]
    )
    assert v[1] == -np.inf


def test_scans_and_reductions_along_an_axis(rng):
    m = rng.normal(size=(64, 300)).astype(np.float32)
    v, i = jitscan.scan((m, jitscan.index), op=argmax, axis=1)
    np.testing.assert_array_equal(i, np.stack([first_argmax(r) for r in m]))
    best, at = jitscan.reduce((m, jitscan.index), op=argmax, axis=0)
    np.testing.assert_array_equal(at, np.argmax(m, axis=0))
    np.testing.assert_array_equal(best, m.max(axis=0))


@pytest.mark.parametrize("tile_state", ["packed", "split"])
def test_wide_values_post_and_read_in_both_tile_state_encodings(backend, rng, tile_state):
    z = rng.normal(size=50_000)
    count, mean, m2 = jitscan.scan(
        (np.ones_like(z), z, np.zeros_like(z)),
        op=welford,
        tile_state=tile_state,
        simulate_blocking=3,
        spin_limit=4,
        backend=backend,
    )
    np.testing.assert_allclose(mean, np.cumsum(z) / np.arange(1, z.size + 1), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(m2[-1] / count[-1], z.var(), rtol=1e-9)


def test_device_arrays_stay_on_the_device(backend, rng):
    from jitscan import backends

    b = backends.get(backend)
    queue = b.queue_of(None)
    a, c = coefficients(rng, 10_000, "float32")
    da, dc = b.to_device(a, queue), b.to_device(c, queue)
    A, H = jitscan.scan((da, dc), op=affine, backend=backend)
    assert b.owns(H) and b.owns(A)
    np.testing.assert_allclose(b.to_host(H), recurrence(a, c), rtol=1e-4, atol=1e-4)
    out = b.to_device(np.zeros(10_000, np.float32), queue)
    assert jitscan.scan((da, dc), op=affine, output=1, out=out, backend=backend) is out


def test_empty_input_gives_empty_results_and_the_identity():
    e = np.zeros(0)
    A, H = jitscan.scan((e, e), op=affine)
    assert A.shape == H.shape == (0,)
    assert jitscan.reduce((e, e), op=affine) == (1.0, 0.0)


def test_the_generated_source_holds_the_struct_and_the_field_arrays():
    b = jitscan.backends.get("opencl")
    if not b.available():  # (the source is the device's: its program's)
        pytest.skip(f"backend 'opencl' unavailable here: {b.unavailable_reason()}")
    p = jitscan.plan(("float32", "int64"), argmax, index_fields=(1,), outputs=(1,), backend="opencl")
    text = p.source()
    assert "typedef struct { float f0; long f1; } js_val;" in text
    assert "JS_GLOBAL const float* in0" in text and "JS_GLOBAL long* out1" in text
    assert "return y if y[0] > x[0] else x" in text


def test_refusals_name_what_is_wrong(rng):
    a, b = coefficients(rng, 10)
    with pytest.raises(TypeError, match="operator written in Python"):
        jitscan.scan((a, b), op="add")
    with pytest.raises(ValueError, match="combines values of 2 fields; 3 arrays"):
        jitscan.scan((a, b, b), op=affine)
    with pytest.raises(ValueError, match="differ in shape"):
        jitscan.scan((a, b[:5]), op=affine)
    with pytest.raises(TypeError, match="output= selects fields of a tuple value"):
        jitscan.scan(a, output=0)
    with pytest.raises(ValueError, match="output= names distinct fields"):
        jitscan.scan((a, b), op=affine, output=2)
    with pytest.raises(TypeError, match="combines tuples of 2, not values of float64"):
        jitscan.scan(a, op=affine)


def test_a_non_associative_tuple_operator_is_refused_before_it_runs(rng):
    @jitscan.operator(identity=(0.0, 0.0))
    def drift(x, y):
        return (x[0] + y[0], x[1] + y[1] + x[0] * y[1] * y[1])

    a, b = coefficients(rng, 1_000)
    with pytest.raises(ValueError, match=r"operator 'drift' is not associative on \(float64, float64\)"):
        jitscan.scan((a, b), op=drift)


def test_deterministic_tuple_scans_give_the_same_bits_whatever_the_timing(rng):
    a, b = coefficients(rng, 200_000, "float32")
    runs = [
        jitscan.scan((a, b), op=affine, output=1, deterministic=True, simulate_blocking=k, spin_limit=2)
        for k in (0, 3, 7)
        for _ in range(2)
    ]
    assert len({r.tobytes() for r in runs}) == 1
    np.testing.assert_allclose(runs[0], recurrence(a, b), rtol=1e-3, atol=1e-3)


def test_an_exclusive_segmented_scan_starts_each_segment_from_the_identity(rng):
    a, b = coefficients(rng, 1_000)
    H = jitscan.segmented_scan((a, b), offsets=[0, 5, 1_000], op=affine, kind="exclusive", output=1)
    want = np.concatenate([[0.0], recurrence(a[:4], b[:4]), [0.0], recurrence(a[5:999], b[5:999])])
    np.testing.assert_allclose(H, want, rtol=1e-12, atol=1e-12)
