"""Compaction, partition, unique runs and the by-key functions, against NumPy.

Each is one scan whose elements scan as an expression of their arrays and write through
rules (kernels/transform.py). The cases: empty, one element, all kept, none kept, ragged
sizes around the tile, one run, all distinct, NaN keys; host and device arrays; tiles that
never post (simulated blocking) and PoCL's unfair scheduler.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import tile_size

import jitscan
from jitscan import backends


def sizes(backend: str) -> list[int]:
    t = tile_size(backend, "int32")
    return [0, 1, 2, t - 1, t, t + 1, 3 * t + 7, 20 * t + 3]


def on(backend: str, x: np.ndarray, device: bool):
    """``x`` as the call gets it: a device array of ``backend``, or NumPy."""
    if not device:
        return x
    b = backends.get(backend)
    return b.to_device(x, b.queue_of(None))


def host(y):
    return y if isinstance(y, (np.ndarray, np.generic)) else backends.for_array(y).to_host(y)


def runs_reference(k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, inverse, counts) of the runs of ``k``, a run ending where ``k[i] != k[i - 1]``."""
    if k.size == 0:
        return k[:0], np.zeros(0, np.int64), np.zeros(0, np.int64)
    head = np.r_[True, k[1:] != k[:-1]]
    starts = np.flatnonzero(head)
    counts = np.diff(np.r_[starts, k.size])
    return k[starts], np.cumsum(head) - 1, counts


@pytest.mark.parametrize("device", [False, True], ids=["numpy", "device"])
def test_extract_keeps_what_numpy_keeps_at_every_size(backend, rng, device):
    for n in sizes(backend):
        x = rng.integers(-100, 100, n).astype(np.int32)
        for keep in (rng.random(n) < 0.5, np.ones(n, bool), np.zeros(n, bool)):
            got = jitscan.extract(on(backend, keep, device), on(backend, x, device), backend=backend)
            np.testing.assert_array_equal(host(got), np.extract(keep, x), err_msg=f"n={n}")


@pytest.mark.parametrize("shape", [{}, {"vectors": 1}], ids=["device's tile", "one vector a thread"])
def test_views_at_any_offset_read_their_own_elements(backend, rng, shape):
    # an array's vector loads need the vector whole inside it and its pointer aligned: a
    # view starting at an odd element, or ending inside a vector, reads element by element
    n = 3 * tile_size(backend, "int32") + 5
    x = rng.integers(-100, 100, n).astype(np.int32)
    keep = rng.random(n) < 0.5
    keys = np.repeat(rng.integers(0, 3, n), 2)[:n].astype(np.int64)
    dx, dkeep, dkeys = (on(backend, a, True) for a in (x, keep, keys))
    for lo, hi in ((1, n), (3, n - 1), (5, n - 6), (0, n - 3)):
        got = jitscan.extract(dkeep[lo:hi], dx[lo:hi], backend=backend, **shape)
        np.testing.assert_array_equal(host(got), x[lo:hi][keep[lo:hi]], err_msg=f"{lo}:{hi}")
        runs = jitscan.unique_consecutive(dkeys[lo:hi], return_counts=True, backend=backend, **shape)
        values, counts = runs
        want, _, want_counts = runs_reference(keys[lo:hi])
        np.testing.assert_array_equal(host(values), want)
        np.testing.assert_array_equal(host(counts), want_counts)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "int64", "float32", "float64", "bool"])
def test_extract_takes_values_and_conditions_of_every_array_dtype(backend, rng, dtype):
    n = 5000
    x = (rng.random(n) * 200 - 100).astype(dtype)
    cond = rng.integers(0, 3, n).astype(np.float32)
    cond[::7] = np.nan  # NaN is nonzero: kept, as by NumPy
    np.testing.assert_array_equal(jitscan.extract(cond, x, backend=backend), np.extract(cond, x))


def test_a_condition_shorter_or_longer_than_the_values_is_taken_as_numpy_takes_it(backend):
    x = np.arange(10, dtype=np.int32)
    np.testing.assert_array_equal(jitscan.extract([1, 0, 1], x, backend=backend), [0, 2])
    np.testing.assert_array_equal(jitscan.extract([1, 0, 1, 0, 0, 0], x[:3], backend=backend), [0, 2])
    with pytest.raises(IndexError, match="index 4 is out of bounds"):
        jitscan.extract([1, 0, 1, 0, 1], x[:3], backend=backend)


@pytest.mark.parametrize("device", [False, True], ids=["numpy", "device"])
def test_size_gives_exactly_that_many_padded_or_cut_without_waiting(backend, rng, device):
    n = 3 * tile_size(backend, "int32") + 5
    x = rng.integers(0, 100, n).astype(np.int32)
    keep = rng.random(n) < 0.3
    ref = np.extract(keep, x)
    # up to n the elements not kept write the padding (from the end back); past n it is filled
    for size in (0, 1, ref.size - 1, ref.size, ref.size + 9, n - 1, n, n + 7):
        got, count = jitscan.extract(
            on(backend, keep, device), on(backend, x, device), size=size, fill_value=-5, return_count=True,
            backend=backend,
        )  # fmt: skip
        want = np.r_[ref, np.full(max(0, size - ref.size), -5, np.int32)][:size]
        np.testing.assert_array_equal(host(got), want)
        assert int(host(count)) == ref.size
        assert (np.ndim(count) == 0) and (device or isinstance(count, np.integer))
    # the padding's value is data, not the program's: NaN and another value, one after the other
    f = rng.random(n).astype(np.float32)
    for fill in (np.nan, 2.5):
        got = jitscan.extract(
            on(backend, keep, device), on(backend, f, device), size=n, fill_value=fill, backend=backend
        )
        np.testing.assert_array_equal(host(got), np.r_[f[keep], np.full(n - keep.sum(), fill, np.float32)])


def _long_way(backend, monkeypatch, module) -> list:
    """A list that grows by one on each call ``module`` makes the long way (its operands'
    checks), for tests of its warm calls on ``backend``'s device arrays."""
    b = backends.get(backend)
    if not b.available():
        pytest.skip(f"backend {backend!r} unavailable here: {b.unavailable_reason()}")
    calls: list = []
    real = module.operands
    monkeypatch.setattr(module, "operands", lambda *a: calls.append(1) or real(*a))
    return calls


def test_a_call_like_one_seen_before_skips_the_checks_and_takes_any_other_the_long_way(
    backend, rng, monkeypatch
):
    # a no-stall extract of device arrays like a call before launches at once; a call that
    # differs in anything the first one's checks saw (length past size, a view that is not
    # contiguous, a 2-D input, another fill's sign) takes the long way and its checks
    from jitscan.api import selection

    long_way = _long_way(backend, monkeypatch, selection)
    n = 2 * tile_size(backend, "int32") + 3
    x = rng.random(n).astype(np.float32) - 0.5
    keep = rng.random(n) < 0.4
    dx, dk = on(backend, x, True), on(backend, keep, True)

    def check(got, c, v, size, fill):
        ref = np.extract(c, v)
        want = np.r_[ref, np.full(max(0, size - ref.size), fill, np.float32)][:size]
        np.testing.assert_array_equal(host(got[0]), want)
        np.testing.assert_array_equal(np.signbit(host(got[0])), np.signbit(want))
        assert int(host(got[1])) == ref.size

    for _ in range(3):  # the first call the long way, the next two warm
        check(jitscan.extract(dk, dx, size=40, fill_value=0.0, return_count=True), keep, x, 40, 0.0)
    assert len(long_way) == 1
    check(jitscan.extract(dk, dx, size=40, fill_value=-0.0, return_count=True), keep, x, 40, -0.0)
    assert len(long_way) == 2  # another fill's bits: another call
    check(
        jitscan.extract(dk[:30], dx[:30], size=40, fill_value=0.0, return_count=True),
        keep[:30],
        x[:30],
        40,
        0.0,
    )
    check(
        jitscan.extract(dk[::2], dx[::2], size=40, fill_value=0.0, return_count=True),
        keep[::2],
        x[::2],
        40,
        0.0,
    )
    k2, x2 = keep[: 2 * (n // 2)].reshape(2, -1), x[: 2 * (n // 2)].reshape(2, -1)
    got = jitscan.extract(
        on(backend, k2, True), on(backend, x2, True), size=40, fill_value=0.0, return_count=True
    )
    check(got, k2, x2, 40, 0.0)
    assert len(long_way) == 5
    with pytest.raises(IndexError):  # a longer condition that keeps past arr: the checks say so
        jitscan.extract(
            on(backend, np.ones(n + 1, bool), True), dx, size=40, fill_value=0.0, return_count=True
        )


def test_unique_runs_of_size_like_a_call_seen_before_are_the_same_runs(backend, rng, monkeypatch):
    # the warm call of unique_consecutive(size=) of device keys: values, inverse and counts as
    # the long way gives them, call after call, and every other call the long way
    from jitscan.api import runs

    long_way = _long_way(backend, monkeypatch, runs)
    n = 2 * tile_size(backend, "int32") + 3
    k = np.repeat(rng.integers(0, 3, n), rng.integers(1, 5, n))[:n].astype(np.int32)
    values, inverse, counts = runs_reference(k)
    for size in (5, 5, 5, values.size + 4, values.size + 4, n + 1):
        u, inv, c = jitscan.unique_consecutive(
            on(backend, k, True), return_inverse=True, return_counts=True, size=size, fill_value=-1
        )
        pad = max(0, size - values.size)
        np.testing.assert_array_equal(host(u), np.r_[values, np.full(pad, -1)][:size])
        np.testing.assert_array_equal(host(inv), inverse)
        np.testing.assert_array_equal(host(c), np.r_[counts, np.zeros(pad, np.int64)][:size])
    assert len(long_way) == 3  # each size's first call (past n: filled first, never warm)


def test_a_partition_like_one_seen_before_gives_the_long_ways_parts(backend, rng, monkeypatch):
    # the warm call of a two-way stable_partition of a device array: both parts and the count
    # call after call; another length, a view, a 2-D array, an empty one and another
    # predicate the long way
    from jitscan.api import partition

    long_way = _long_way(backend, monkeypatch, partition)
    n = 2 * tile_size(backend, "int32") + 5
    x = rng.integers(-50, 50, n).astype(np.int32)

    def check(got, v):
        v = v.reshape(-1)
        kept = v[v % 3 == 0]
        np.testing.assert_array_equal(host(got[0]), np.r_[kept, v[v % 3 != 0]])
        assert int(host(got[1])) == kept.size

    dx = on(backend, x, True)
    for _ in range(3):
        check(jitscan.stable_partition(dx, "x % 3 == 0"), x)
    assert len(long_way) == 1
    check(jitscan.stable_partition(dx[:7], "x % 3 == 0"), x[:7])  # another length: warm too
    assert len(long_way) == 1
    check(jitscan.stable_partition(dx[::2], "x % 3 == 0"), x[::2])  # a view of steps: gathered
    x2 = x[: 2 * (n // 2)].reshape(2, -1)
    check(jitscan.stable_partition(on(backend, x2, True), "x % 3 == 0"), x2)  # flattened
    got = jitscan.stable_partition(on(backend, x[:0], True), "x % 3 == 0")
    assert host(got[0]).size == 0 and int(host(got[1])) == 0
    assert len(long_way) == 4
    y, k = jitscan.stable_partition(dx, "x < 0")
    np.testing.assert_array_equal(host(y), np.r_[x[x < 0], x[x >= 0]])
    assert int(host(k)) == (x < 0).sum() and len(long_way) == 5


def test_a_reduction_by_key_like_one_seen_before_gives_the_long_ways_runs(backend, rng, monkeypatch):
    # the warm call of reduce_by_key(size=) of device keys and values: the runs' keys, padded,
    # and their totals, call after call; other calls (a length under size, keys and values
    # of different lengths, another op) the long way and its checks
    from jitscan.api import runs

    long_way = _long_way(backend, monkeypatch, runs)
    n = 2 * tile_size(backend, "int32") + 3
    k = np.repeat(rng.integers(0, 3, n), rng.integers(1, 5, n))[:n].astype(np.int32)
    v = rng.integers(-9, 9, n).astype(np.int32)
    values, _, counts = runs_reference(k)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    sums = np.add.reduceat(v, starts)
    dk, dv = on(backend, k, True), on(backend, v, True)
    for size in (5, 5, 5, values.size + 4, values.size + 4):
        u, t = jitscan.reduce_by_key(dk, dv, size=size, fill_value=-1)
        pad = max(0, size - values.size)
        np.testing.assert_array_equal(host(u), np.r_[values, np.full(pad, -1)][:size])
        np.testing.assert_array_equal(host(t), np.r_[sums, np.zeros(pad, np.int32)][:size])
    assert len(long_way) == 2  # each size's first call
    u, t = jitscan.reduce_by_key(dk[:3], dv[:3], size=5, fill_value=-1)  # fewer keys than size
    assert host(u).size == 5 and len(long_way) == 3
    with pytest.raises(ValueError, match="keys for"):
        jitscan.reduce_by_key(dk, dv[:-1], size=5, fill_value=-1)
    u, t = jitscan.reduce_by_key(dk, dv, "max", size=5, fill_value=-1)
    np.testing.assert_array_equal(host(t), np.maximum.reduceat(v, starts)[:5])
    assert len(long_way) == 5


def test_compress_and_flatnonzero_and_nonzero_are_numpys(backend, rng):
    a = rng.integers(0, 3, (7, 11, 5)) * (rng.random((7, 11, 5)) < 0.4)
    np.testing.assert_array_equal(jitscan.flatnonzero(a, backend=backend), np.flatnonzero(a))
    for got, want in zip(jitscan.nonzero(a, backend=backend), np.nonzero(a), strict=True):
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
    (only,) = jitscan.nonzero(a[0, 0], backend=backend)
    np.testing.assert_array_equal(only, np.nonzero(a[0, 0])[0])
    padded = jitscan.nonzero(a[:2], size=40, fill_value=-1, backend=backend)
    for got, want in zip(padded, np.nonzero(a[:2]), strict=True):
        np.testing.assert_array_equal(got, np.r_[want, np.full(max(0, 40 - want.size), -1)][:40])
    cond = rng.random(a.size) < 0.5
    np.testing.assert_array_equal(jitscan.compress(cond, a, backend=backend), np.compress(cond, a))
    np.testing.assert_array_equal(jitscan.compress(cond[:9], a.ravel()[:20], axis=0, backend=backend),
                                  np.compress(cond[:9], a.ravel()[:20], axis=0))  # fmt: skip
    with pytest.raises(ValueError, match="0d arrays"):
        jitscan.nonzero(np.int32(3), backend=backend)
    for axis in (0, 1, 2, -1):
        c = rng.random(a.shape[axis] - 1) < 0.5  # shorter than the axis: its first slices
        np.testing.assert_array_equal(jitscan.compress(c, a, axis=axis, backend=backend),
                                      np.compress(c, a, axis=axis))  # fmt: skip
    dev = on(backend, a, True)
    np.testing.assert_array_equal(host(jitscan.compress([0, 1, 1], dev, axis=2, backend=backend)),
                                  np.compress([0, 1, 1], a, axis=2))  # fmt: skip
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 7"):
        jitscan.compress(np.r_[np.zeros(7), 1], a, axis=0, backend=backend)
    with pytest.raises(ValueError, match="out of bounds for 3 dimensions"):
        jitscan.compress(cond[:7], a, axis=3, backend=backend)


def test_copy_if_keeps_where_the_predicate_holds(backend, rng):
    x = rng.normal(size=10_000).astype(np.float32)
    x[::13] = np.nan
    np.testing.assert_array_equal(jitscan.copy_if(x, "x > 0.5", backend=backend), x[x > 0.5])
    np.testing.assert_array_equal(jitscan.copy_if(x, "x == x", backend=backend), x[~np.isnan(x)])
    i = np.arange(x.size)
    np.testing.assert_array_equal(jitscan.copy_if(x, "i % 3 == 0 && x < 0", backend=backend),
                                  x[(i % 3 == 0) & (x < 0)])  # fmt: skip


def test_a_predicate_that_is_not_one_is_refused_by_name(backend):
    x = np.arange(10, dtype=np.int32)
    with pytest.raises(ValueError, match="predicate.*uses the name 'y'"):
        jitscan.copy_if(x, "y > 0", backend=backend)
    with pytest.raises(ValueError, match="predicate may not hold an assignment"):
        jitscan.copy_if(x, "x = 1", backend=backend)
    with pytest.raises(TypeError, match="C expression over x"):
        jitscan.copy_if(x, 3, backend=backend)
    with pytest.raises(TypeError, match="returns float64 on int32, not a bool"):
        jitscan.copy_if(x, lambda v: v * 1.5, backend=backend)
    with pytest.raises(TypeError, match="returns UniTuple"):
        jitscan.copy_if(x, lambda v: (v, v), backend=backend)
    with pytest.raises(TypeError, match="not a Python function of x"):
        jitscan.copy_if(x, lambda a, b: a, backend=backend)


def test_a_python_predicate_is_typed_for_the_arrays_dtype_and_runs_in_the_kernel(backend, rng):
    def odd_and_large(v):
        if v > 10:
            return int(v) % 2 == 1
        return False

    for dtype in ("int32", "uint8", "float64"):
        x = rng.integers(0, 40, 5000).astype(dtype)
        keep = np.array([odd_and_large(v) for v in x])
        np.testing.assert_array_equal(jitscan.copy_if(x, odd_and_large, backend=backend), x[keep])
        y, k = jitscan.stable_partition(x, lambda v: v < 7, backend=backend)
        np.testing.assert_array_equal(y, np.r_[x[x < 7], x[x >= 7]])
        assert k == (x < 7).sum()


@pytest.mark.parametrize("device", [False, True], ids=["numpy", "device"])
def test_stable_partition_puts_the_kept_first_and_keeps_both_orders(backend, rng, device):
    for n in sizes(backend):
        x = rng.integers(-50, 50, n).astype(np.int64)
        y, k = jitscan.stable_partition(on(backend, x, device), "x % 3 == 0", backend=backend)
        keep = x % 3 == 0
        np.testing.assert_array_equal(host(y), np.r_[x[keep], x[~keep]], err_msg=f"n={n}")
        assert int(host(k)) == keep.sum()


@pytest.mark.parametrize("device", [False, True], ids=["numpy", "device"])
def test_a_three_way_partition_keeps_all_three_orders(backend, rng, device):
    for n in sizes(backend):
        x = rng.integers(-5, 6, n).astype(np.float32)
        y, counts = jitscan.stable_partition(
            on(backend, x, device), "x > 2", lambda v: v < 0, backend=backend
        )
        first, second = x > 2, (x <= 2) & (x < 0)
        rest = ~first & ~second
        np.testing.assert_array_equal(host(y), np.r_[x[first], x[second], x[rest]], err_msg=f"n={n}")
        np.testing.assert_array_equal(host(counts), [first.sum(), second.sum()])


@pytest.mark.parametrize("device", [False, True], ids=["numpy", "device"])
def test_unique_consecutive_gives_the_runs_their_counts_and_inverse(backend, rng, device):
    for n in sizes(backend):
        for k in (
            rng.integers(0, 3, n).astype(np.int32),  # short runs
            np.repeat(rng.integers(0, 9, n // 50 + 1), 50)[:n].astype(np.int32),  # long runs
            np.full(n, 7, np.int32),  # one run
            np.arange(n, dtype=np.int32),  # all distinct
        ):
            values, inverse, counts = jitscan.unique_consecutive(
                on(backend, k, device), return_inverse=True, return_counts=True, backend=backend
            )
            want = runs_reference(k)
            for got, ref in zip((values, inverse, counts), want, strict=True):
                np.testing.assert_array_equal(host(got), ref, err_msg=f"n={n}")
    plain = jitscan.unique_consecutive(np.array([2, 2, 1]), backend=backend)
    np.testing.assert_array_equal(plain, [2, 1])


def test_each_nan_key_is_a_run_of_its_own_and_signed_zeros_are_one(backend):
    k = np.array([1.0, np.nan, np.nan, 2.0, -0.0, 0.0, 0.0, np.nan], np.float64)
    values, counts = jitscan.unique_consecutive(k, return_counts=True, backend=backend)
    np.testing.assert_array_equal(values, [1.0, np.nan, np.nan, 2.0, -0.0, np.nan])
    np.testing.assert_array_equal(counts, [1, 1, 1, 1, 3, 1])
    keys, totals = jitscan.reduce_by_key(k, np.ones(k.size, np.int32), backend=backend)
    np.testing.assert_array_equal(totals, [1, 1, 1, 1, 3, 1])


def test_unique_consecutive_of_size_pads_values_and_counts(backend):
    k = np.array([4, 4, 5, 6, 6, 6], np.int32)
    v, c = jitscan.unique_consecutive(k, return_counts=True, size=5, fill_value=-1, backend=backend)
    np.testing.assert_array_equal(v, [4, 5, 6, -1, -1])
    np.testing.assert_array_equal(c, [2, 1, 3, 0, 0])
    v, c = jitscan.unique_consecutive(k, return_counts=True, size=2, backend=backend)
    np.testing.assert_array_equal(v, [4, 5])
    np.testing.assert_array_equal(c, [2, 1])


@pytest.mark.parametrize("device", [False, True], ids=["numpy", "device"])
def test_runs_of_size_across_tiles_are_padded_or_cut_at_every_count(backend, rng, device):
    # up to n the elements that start no run write the padding (keys from the end back,
    # starts past the runs); past n it is filled first: every size about the number of runs
    n = 3 * tile_size(backend, "int32") + 5
    a = np.repeat(rng.integers(0, 3, n), rng.integers(1, 6, n))[:n].astype(np.int32)
    b = np.repeat(rng.random(n).astype(np.float32), rng.integers(1, 4, n))[:n]
    vals = rng.integers(-50, 50, n).astype(np.int32)
    want_a, _, counts = runs_reference(a)
    _, _, pair_counts = runs_reference(a.astype(np.float64) * 10 + b)
    r = want_a.size
    for size in (0, 1, r - 2, r - 1, r, r + 1, r + 9, n - 1, n, n + 4):
        u, c = jitscan.unique_consecutive(
            on(backend, a, device), return_counts=True, size=size, fill_value=-7, backend=backend
        )
        pad = max(0, size - r)
        np.testing.assert_array_equal(host(u), np.r_[want_a, np.full(pad, -7)][:size], err_msg=f"size={size}")
        np.testing.assert_array_equal(
            host(c), np.r_[counts, np.zeros(pad, np.int64)][:size], err_msg=f"size={size}"
        )
        (ka, kb), tot = jitscan.reduce_by_key(
            (on(backend, a, device), on(backend, b, device)), on(backend, vals, device), size=size,
            fill_value=3, backend=backend,
        )  # fmt: skip
        starts = np.r_[0, np.cumsum(pair_counts)[:-1]]
        pad = max(0, size - pair_counts.size)
        np.testing.assert_array_equal(host(ka), np.r_[a[starts], np.full(pad, 3)][:size])
        np.testing.assert_array_equal(host(kb), np.r_[b[starts], np.full(pad, 3.0)][:size])
        sums = np.add.reduceat(vals, starts)
        np.testing.assert_array_equal(host(tot), np.r_[sums, np.zeros(pad, np.int32)][:size])
        # a NaN padding of float keys is data too
        u = jitscan.unique_consecutive(on(backend, b, device), size=size, fill_value=np.nan, backend=backend)
        want_b = runs_reference(b)[0]
        np.testing.assert_array_equal(
            host(u), np.r_[want_b, np.full(max(0, size - want_b.size), np.nan)][:size]
        )


@pytest.mark.parametrize("op", ["add", "max", "min"])
def test_reduce_by_key_combines_each_run(backend, rng, op):
    ufunc = {"add": np.add, "max": np.maximum, "min": np.minimum}[op]
    for n in sizes(backend)[1:]:
        keys = np.repeat(rng.integers(0, 4, n), rng.integers(1, 20, n))[:n].astype(np.int64)
        vals = rng.integers(-1000, 1000, n).astype(np.int32)
        got_keys, got = jitscan.reduce_by_key(keys, vals, op=op, backend=backend)
        want_keys, _, counts = runs_reference(keys)
        starts = np.r_[0, np.cumsum(counts)[:-1]]
        np.testing.assert_array_equal(got_keys, want_keys)
        np.testing.assert_array_equal(got, ufunc.reduceat(vals, starts), err_msg=f"n={n}")


def test_keys_of_several_fields_end_a_run_where_any_differs(backend, rng):
    a = rng.integers(0, 2, 3000).astype(np.int32)
    b = rng.integers(0, 2, 3000).astype(np.float32)
    vals = np.ones(3000, np.int64)
    (ka, kb), totals = jitscan.reduce_by_key((a, b), vals, backend=backend)
    pair = a.astype(np.float64) * 10 + b
    want, _, counts = runs_reference(pair)
    np.testing.assert_array_equal(ka * 10.0 + kb, want)
    np.testing.assert_array_equal(totals, counts)


def test_tuple_values_by_key_take_a_python_operator_and_the_index(backend, rng):
    from jitscan.bench.operators import argmax

    keys = np.repeat(rng.integers(0, 3, 2000), rng.integers(1, 9, 2000))[:2000].astype(np.int32)
    a = rng.random(2000).astype(np.float32)
    got_keys, (best, where) = jitscan.reduce_by_key(keys, (a, jitscan.index), op=argmax, backend=backend)
    want_keys, _, counts = runs_reference(keys)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    np.testing.assert_array_equal(got_keys, want_keys)
    np.testing.assert_array_equal(best, np.maximum.reduceat(a, starts))
    np.testing.assert_array_equal(a[where], best)
    _, running = jitscan.scan_by_key(keys, (a, jitscan.index), op=argmax, backend=backend)
    assert (running >= np.repeat(starts, counts)).all()  # never reaches back past its run


def test_reduce_by_key_of_size_pads_keys_and_gives_the_identity(backend):
    keys = np.array([1, 1, 2, 3, 3], np.int32)
    k, t = jitscan.reduce_by_key(keys, np.arange(5, dtype=np.int32), size=5, fill_value=-9, backend=backend)
    np.testing.assert_array_equal(k, [1, 2, 3, -9, -9])
    np.testing.assert_array_equal(t, [1, 2, 7, 0, 0])
    k, t = jitscan.reduce_by_key(keys, np.arange(5, dtype=np.int32), size=2, backend=backend)
    np.testing.assert_array_equal(k, [1, 2])
    np.testing.assert_array_equal(t, [1, 2])


@pytest.mark.parametrize("kind", ["inclusive", "exclusive"])
def test_scan_by_key_scans_each_run_on_its_own(backend, rng, kind):
    for n in sizes(backend):
        keys = np.repeat(rng.integers(0, 3, n), rng.integers(1, 30, n))[:n].astype(np.int32)
        vals = rng.integers(-9, 9, n).astype(np.int32)
        got = jitscan.scan_by_key(keys, vals, kind=kind, backend=backend)
        _, _, counts = runs_reference(keys)
        offsets = np.r_[0, np.cumsum(counts)]
        want = jitscan.segmented_scan(vals, offsets=offsets, kind=kind, backend=backend)
        np.testing.assert_array_equal(got, want, err_msg=f"n={n}")


@pytest.mark.parametrize("device", [False, True], ids=["numpy", "device"])
def test_scan_by_key_finds_the_heads_in_the_kernel_for_keys_of_every_dtype(backend, rng, device):
    n = 7 * tile_size(backend, "int32") + 5
    for kd in ("int64", "uint8", "float32", "float64"):
        keys = np.repeat(rng.integers(0, 3, n), rng.integers(1, 9, n))[:n].astype(kd)
        if keys.dtype.kind == "f":
            keys[::17] = np.nan  # each NaN a run of its own
        vals = rng.integers(-9, 9, n).astype(np.int32)
        got = jitscan.scan_by_key(
            on(backend, keys, device), on(backend, vals, device), op="max", backend=backend
        )
        _, _, counts = runs_reference(keys)
        want = jitscan.segmented_scan(vals, offsets=np.r_[0, np.cumsum(counts)], op="max", backend=backend)
        np.testing.assert_array_equal(host(got), want, err_msg=kd)
    blocked = jitscan.scan_by_key(keys, vals, backend=backend, simulate_blocking=3)
    want = jitscan.segmented_scan(vals, offsets=np.r_[0, np.cumsum(counts)], backend=backend)
    np.testing.assert_array_equal(blocked, want)


def test_mismatched_or_unsupported_inputs_get_a_clear_error(backend):
    x = np.arange(10, dtype=np.int32)
    with pytest.raises(ValueError, match="9 keys for 10 values"):
        jitscan.reduce_by_key(x[:9], x, backend=backend)
    with pytest.raises(ValueError, match="key arrays differ in size"):
        jitscan.reduce_by_key((x, x[:9]), x, backend=backend)
    with pytest.raises(TypeError, match="complex128 is not supported"):
        jitscan.extract(x > 3, x.astype(complex), backend=backend)
    with pytest.raises(ValueError, match="size must be an integer"):
        jitscan.extract(x > 3, x, size=-1, backend=backend)
    with pytest.raises(TypeError, match="unknown keyword"):
        jitscan.unique_consecutive(x, backend=backend, tile=3)
    dev = on(backend, x, True)
    with pytest.raises(TypeError, match="both be device arrays or both host arrays"):
        jitscan.extract(x > 3, dev, backend=backend)


def test_tiles_that_never_post_change_no_result(backend, rng):
    n = 40 * tile_size(backend, "int32") + 11
    x = rng.integers(0, 4, n).astype(np.int32)
    for every in (2, 3, 17):
        np.testing.assert_array_equal(
            jitscan.extract(x > 1, x, backend=backend, simulate_blocking=every), np.extract(x > 1, x)
        )
        v, c = jitscan.unique_consecutive(x, return_counts=True, backend=backend, simulate_blocking=every)
        want = runs_reference(x)
        np.testing.assert_array_equal(v, want[0])
        np.testing.assert_array_equal(c, want[2])


def test_one_pass_tiles_of_a_device_that_runs_one_tile_at_a_time_change_no_result(backend, rng, monkeypatch):
    # A device of one compute unit runs its tiles in turn (ScanSpec.serial): a transform's
    # tile whose predecessor has posted scans, and runs its rules, in one pass. Made so on
    # the CPU device here (whose tiles then take one pass only where the one before is done)
    b = backends.get(backend)
    if b.device_info(b.queue_for(None)).is_gpu:
        pytest.skip("one-pass tiles are one-thread tiles: CPU devices'")
    from dataclasses import replace

    from jitscan.plan import transformed

    made = transformed.tuning.spec_for
    specs = []

    def serial(*args, **kwargs):
        specs.append(replace(made(*args, **kwargs), serial=True))
        return specs[-1]

    monkeypatch.setattr(transformed.tuning, "spec_for", serial)
    jitscan.api.cache.clear()
    n = 40 * tile_size(backend, "int32") + 11
    x = np.repeat(rng.integers(0, 4, n), rng.integers(1, 5, n))[:n].astype(np.int32)
    for every in (None, 3):
        knobs = {"simulate_blocking": every} if every else {}
        kept = jitscan.extract(x > 1, x, backend=backend, **knobs)
        np.testing.assert_array_equal(kept, np.extract(x > 1, x))
        v, inverse, c = jitscan.unique_consecutive(
            x, return_inverse=True, return_counts=True, backend=backend, **knobs
        )
        want = runs_reference(x)
        for got, w in zip((v, inverse, c), want, strict=True):
            np.testing.assert_array_equal(got, w)
        y, count = jitscan.stable_partition(x, "x > 1", backend=backend, **knobs)
        np.testing.assert_array_equal(y, np.r_[x[x > 1], x[x <= 1]])
        assert int(count) == np.count_nonzero(x > 1)
    assert specs and all(s.one_pass_tiles for s in specs)
    jitscan.api.cache.clear()


def test_scan_kernel_runs_a_users_own_transform_and_bounds_its_writes(backend):
    keep = jitscan.ScanKernel(
        reads=[("x", "int32")],
        item="x > 0",
        writes=[("y", "int32"), ("count", "int64")],
        rules=[
            jitscan.Write("y", at="v", value="x", when="x > 0"),
            jitscan.Write("count", at="0", value="v + (x > 0)", when="i == n - 1"),
        ],
        kind="exclusive",
    )
    x = np.array([3, -1, 4, -1, 5], np.int32)
    y, count = np.zeros(5, np.int32), np.zeros(1, np.int64)
    keep(x=x, y=y, count=count, backend=backend)
    np.testing.assert_array_equal(y[: count[0]], [3, 4, 5])
    # places outside an array write nothing, reads outside give 0
    wild = jitscan.ScanKernel(
        reads=[("x", "int32")], item="1", writes=[("y", "int32")],
        rules=[jitscan.Write("y", at="v * 1000 + 4", value="x[i - 1]"),
               jitscan.Write("y", at="-v", value="7")],
    )  # fmt: skip
    y = np.full(4, -1, np.int32)
    wild(x=np.arange(1, 4, dtype=np.int32), y=y, backend=backend)
    np.testing.assert_array_equal(y, [-1, -1, -1, -1])
    near = jitscan.ScanKernel(
        reads=[("x", "int32")], item="1", writes=[("y", "int32")],
        rules=[jitscan.Write("y", at="i", value="x[i - 1] + x[i + 1]")],
    )  # fmt: skip
    y = np.zeros(3, np.int32)
    near(x=np.array([1, 2, 3], np.int32), y=y, backend=backend)
    np.testing.assert_array_equal(y, [2, 4, 2])
    # an index whose arithmetic overflows (undefined in C) is still checked as computed
    base = on(backend, np.arange(100, 164, dtype=np.int32), True)
    b = backends.get(backend)
    inner = base[16:24]
    assert host(jitscan.copy_if(inner, "x[(i + 1) * 4611686018427387904 * 2 - 1] == 115")).size == 0
    overflow = jitscan.ScanKernel(
        reads=[("x", "int32")], item="1", writes=[("y", "int32")],
        rules=[jitscan.Write("y", at="(i + 1) * 4611686018427387904 * 2 - 1", value="7"),
               jitscan.Write("y", at="x[1e19] + 1e19", value="9")],
    )  # fmt: skip
    around = b.to_device(np.zeros(32, np.int32), b.queue_of(None))
    overflow(x=inner, y=around[16:24])
    np.testing.assert_array_equal(host(around), np.zeros(32, np.int32))
    # a rule at the element's own place, into an array shorter than the input, writes its
    # part of it alone (its bounds checked without the opaque copy of other places)
    dense = jitscan.ScanKernel(
        reads=[("x", "int32")], item="1", writes=[("y", "int32")],
        rules=[jitscan.Write("y", at=" i ", value="x")],
    )  # fmt: skip
    long = on(backend, np.arange(1, 4001, dtype=np.int32), True)
    around = b.to_device(np.zeros(3000, np.int32), b.queue_of(None))
    dense(x=long, y=around[1000:2000])
    want = np.zeros(3000, np.int32)
    want[1000:2000] = np.arange(1, 1001)
    np.testing.assert_array_equal(host(around), want)
    with pytest.raises(TypeError, match="missing count"):
        keep(x=x, y=y, backend=backend)
    with pytest.raises(TypeError, match="'y' is int64, not int32"):
        keep(x=x, y=np.zeros(5, np.int64), count=count, backend=backend)
    with pytest.raises(ValueError, match="rule 0 writes 'z'"):
        jitscan.ScanKernel(reads=[("x", "int32")], item="x", writes=[("y", "int32")],
                           rules=[jitscan.Write("z", "i", "x")])  # fmt: skip
    for name in ("n", "item"):  # a rule's names: i, n, v and the element's item
        with pytest.raises(ValueError, match=f"array name '{name}' is taken"):
            jitscan.ScanKernel(reads=[(name, "int32")], item="1", writes=[("y", "int32")],
                               rules=[jitscan.Write("y", "i", "1")])  # fmt: skip


def _is_pocl() -> bool:
    b = backends.get("opencl")
    return b.available() and "Portable Computing Language" in b.device_info(b.queue_of(None)).name


@pytest.mark.skipif(
    not _is_pocl(), reason="needs PoCL: oversubscribed worker threads give an unfair scheduler"
)
def test_compaction_and_runs_are_right_under_an_unfair_scheduler():
    # more PoCL worker threads than cores: the OS preempts threads whose tiles others wait on
    code = textwrap.dedent(
        """
        import numpy as np, jitscan
        rng = np.random.default_rng()
        x = rng.integers(0, 3, 1 << 21).astype(np.int32)
        assert np.array_equal(jitscan.extract(x > 0, x), x[x > 0])
        v, c = jitscan.unique_consecutive(x, return_counts=True)
        head = np.r_[True, x[1:] != x[:-1]]
        assert np.array_equal(v, x[head]) and np.array_equal(c, np.diff(np.r_[np.flatnonzero(head), x.size]))
        """
    )
    env = {**os.environ, "POCL_MAX_PTHREAD_COUNT": "8", "JITSCAN_BACKEND": "opencl"}
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr


def test_dask_arrays_are_compacted_and_run_lazily_chunk_by_chunk(backend, rng, monkeypatch):
    da = pytest.importorskip("dask.array")
    n = 5000
    x = rng.integers(-4, 5, n).astype(np.int32)
    keys = np.repeat(rng.integers(0, 3, n), rng.integers(1, 40, n))[:n].astype(np.int64)
    dx, dk = da.from_array(x, chunks=777), da.from_array(keys, chunks=640)
    monkeypatch.setenv("JITSCAN_BACKEND", backend)  # the chunks are NumPy: the default backend's
    got = jitscan.extract(dx % 2 == 0, dx)
    assert np.isnan(got.shape[0])  # lazy, of unknown size, as Dask's own x[mask]
    np.testing.assert_array_equal(got.compute(), x[x % 2 == 0])
    np.testing.assert_array_equal(jitscan.flatnonzero(dx).compute(), np.flatnonzero(x))
    for g, w in zip(
        jitscan.nonzero(dx.reshape(50, 100).rechunk((7, 30))), np.nonzero(x.reshape(50, 100)), strict=True
    ):
        np.testing.assert_array_equal(g.compute(), w)
    np.testing.assert_array_equal(jitscan.copy_if(dx, "x > 1").compute(), x[x > 1])
    y, k = jitscan.stable_partition(dx, lambda v: v < 0)
    np.testing.assert_array_equal(y.compute(), np.r_[x[x < 0], x[x >= 0]])
    assert int(k.compute()) == (x < 0).sum()
    v, inv, c = jitscan.unique_consecutive(dk, return_inverse=True, return_counts=True)
    for g, w in zip((v, inv, c), runs_reference(keys), strict=True):  # runs cross the chunks
        np.testing.assert_array_equal(g.compute(), w)
    got_keys, totals = jitscan.reduce_by_key(dk, dx, op="min")
    want_keys, want = jitscan.reduce_by_key(keys, x, op="min")
    np.testing.assert_array_equal(got_keys.compute(), want_keys)
    np.testing.assert_array_equal(totals.compute(), want)
    np.testing.assert_array_equal(jitscan.scan_by_key(dk, dx).compute(), jitscan.scan_by_key(keys, x))
    with pytest.raises(TypeError, match="unknown size"):
        jitscan.extract(dx > 0, dx, size=3)


def test_what_a_review_found_stays_fixed(backend, monkeypatch):
    x = np.arange(1, 9, dtype=np.int32)

    # a predicate's __name__ is text of anyone's: it reaches no kernel as it is
    def p(v):
        return v > 3

    p.__name__ = "p */\n#error injected\n/*"
    np.testing.assert_array_equal(jitscan.copy_if(x, p, backend=backend), x[x > 3])
    # a predicate reading a global or a captured value is typed again when that changes
    global _LIMIT
    for _LIMIT in (2, 6):
        above = lambda v: v > _LIMIT  # noqa: E731, B023 - a global, read when typed
        np.testing.assert_array_equal(jitscan.copy_if(x, above, backend=backend), x[x > _LIMIT])
    for t in (1, 5):
        above = (lambda t: lambda v: v > t)(t)  # noqa: B023 - a closure of t
        np.testing.assert_array_equal(jitscan.copy_if(x, above, backend=backend), x[x > t])
    # keys: a list is one array, a tuple a key's fields; none of them, with size=0, gives empty results
    k, tot = jitscan.reduce_by_key([1, 1, 2], np.array([1, 2, 3], np.int32), backend=backend)
    np.testing.assert_array_equal(k, [1, 2])
    np.testing.assert_array_equal(tot, [3, 3])
    (ka, kb), tot = jitscan.reduce_by_key((x, x), x, size=0, backend=backend)
    assert ka.size == kb.size == tot.size == 0
    # array names that C or its macros keep are refused when the kernel is described
    for name in ("sizeof", "kernel", "in", "M_PI", "__global", "_x"):
        with pytest.raises(ValueError, match="is taken"):
            jitscan.ScanKernel(reads=[(name, "int32")], item="1", writes=[("y", "int32")],
                               rules=[jitscan.Write("y", "i", "1")])  # fmt: skip
    with pytest.raises(TypeError, match="'y' is written, so it is an array, not a list"):
        summed = jitscan.ScanKernel(reads=[("x", "int32")], item="x", writes=[("y", "int32")],
                                    rules=[jitscan.Write("y", "i", "v")])  # fmt: skip
        summed(x=[1, 2], y=[0, 0], backend=backend)
    da = pytest.importorskip("dask.array")
    monkeypatch.setenv("JITSCAN_BACKEND", backend)
    # one run over many chunks
    v, c = jitscan.unique_consecutive(da.from_array(np.ones(7, int), chunks=2), return_counts=True)
    np.testing.assert_array_equal(c.compute(), [7])
    keys, tot = jitscan.reduce_by_key(
        da.from_array(np.r_[np.ones(5, int), 2], chunks=2), da.from_array(x[:6], chunks=2)
    )
    np.testing.assert_array_equal(tot.compute(), [15, 6])
    # a Dask chunk's i and n are its own: a predicate reading them is refused
    with pytest.raises(ValueError, match="reads i, n or another element"):
        jitscan.copy_if(da.from_array(x, chunks=3), "i == 0")


_LIMIT = 0
