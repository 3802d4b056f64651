"""Warm calls on OpenCL through the compiled call (``_common_call.c`` of OpenCL's API).

A call like the last one that Python's call launched (the same array type, dtype, queue
and size class, arrays the kernels take as they are) is launched by the compiled call: no
Python launch runs, and the result is what Python's call gives; behind a launch by a
user's offsets it copies the alarm's flag back as Python's does, so that bad offsets
raise at the next call. Every other call is Python's.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import jitscan
from jitscan.backends import compiled, opencl_icd
from jitscan.backends import opencl as opencl_backend
from jitscan.backends.opencl import OpenCLBackend
from jitscan.bench.operators import affine
from jitscan.plan.forms import FormCalls

cl = pytest.importorskip("pyopencl")
cla = pytest.importorskip("pyopencl.array")


@pytest.fixture
def python_calls(monkeypatch):
    """Counts of the Python calls that a compiled call leaves to Python: the plain one's
    check (Backend.operands) and the other forms' call (FormCalls._form_python)."""
    b = jitscan.backends.get("opencl")
    if not b.available():
        pytest.skip(f"backend 'opencl' unavailable here: {b.unavailable_reason()}")
    if compiled.CommonCall is None or opencl_icd.entry_points() is None:
        pytest.skip("the compiled call is not built here, or no ICD loader exports clSetKernelArg")
    counts = {"plain": 0, "form": 0}
    operands, form = OpenCLBackend.operands, FormCalls._form_python

    def counted_operands(self, *args):
        counts["plain"] += 1
        return operands(self, *args)

    def counted_form(self, *args):
        counts["form"] += 1
        return form(self, *args)

    monkeypatch.setattr(OpenCLBackend, "operands", counted_operands)
    monkeypatch.setattr(FormCalls, "_form_python", counted_form)
    jitscan.api.cache.clear()  # scans made from here on call the counting functions
    yield counts
    jitscan.api.cache.clear()


def _queue():
    return jitscan.backends.get("opencl").default_queue()


def _warm(counts, call, check, calls=4):
    """The first call is Python's; the next ``calls`` are the compiled call's, each checked."""
    check(call())
    before = dict(counts)
    for _ in range(calls):
        check(call())
    assert counts == before, "a warm call went through Python"


def test_the_plain_scan_with_and_without_out(python_calls, rng):
    q = _queue()
    x = rng.integers(-9, 9, 5000).astype(np.int32)
    dx, out = cla.to_device(q, x), cla.empty(q, (5000,), np.int32)
    want = np.cumsum(x, dtype=np.int32)

    def check(y):
        np.testing.assert_array_equal(y.get(), want)

    _warm(python_calls, lambda: jitscan.cumsum(dx, out=out), check)
    _warm(python_calls, lambda: jitscan.cumsum(dx), check)


def test_a_reduction_gives_its_0d_result_as_pythons_call_does(python_calls, rng):
    q = _queue()
    x = rng.integers(-9, 9, 5000).astype(np.int32)
    dx = cla.to_device(q, x)

    def check(y):
        assert type(y) is cla.Array and y.shape == ()
        assert int(y.get()) == int(x.sum(dtype=np.int32))

    _warm(python_calls, lambda: jitscan.reduce(dx, dtype=np.int32), check)


def test_views_at_an_offset_are_read_and_written_there(python_calls, rng):
    # an aligned view starts 4 int32 elements into its buffer: the kernel's offset argument
    q = _queue()
    x = rng.integers(-9, 9, 6000).astype(np.int32)
    dx, out = cla.to_device(q, x), cla.zeros(q, (6000,), np.int32)
    want = np.cumsum(x[4:4004], dtype=np.int32)

    def check(y):
        np.testing.assert_array_equal(y.get(), want)

    _warm(python_calls, lambda: jitscan.cumsum(dx[4:4004], out=out[8:4008]), check)
    np.testing.assert_array_equal(out.get()[:8], 0)  # nothing written before the view
    np.testing.assert_array_equal(out.get()[4008:], 0)
    # another offset, the same size class: the compiled call sets the arguments that changed
    before = dict(python_calls)
    y = jitscan.cumsum(dx[12:4012], out=out[:4000])
    np.testing.assert_array_equal(y.get(), np.cumsum(x[12:4012], dtype=np.int32))
    assert python_calls == before


def test_a_carry_the_host_knows(python_calls, rng):
    q = _queue()
    x = rng.integers(-9, 9, 3000).astype(np.int32)
    dx, out = cla.to_device(q, x), cla.empty(q, (3000,), np.int32)
    for start in (5, -7):
        _warm(
            python_calls,
            lambda start=start: jitscan.scan(dx, initial=start, out=out),
            lambda y, start=start: np.testing.assert_array_equal(
                y.get(), start + np.cumsum(x, dtype=np.int32)
            ),
        )
    # the same arrays without a carry: the kind code and carry words change back
    y = jitscan.cumsum(dx, out=out)
    np.testing.assert_array_equal(y.get(), np.cumsum(x, dtype=np.int32))


def test_tuple_values(python_calls, rng):
    q = _queue()
    a, b = rng.random(4000).astype(np.float32), rng.random(4000).astype(np.float32)
    da, db = cla.to_device(q, a), cla.to_device(q, b)
    h = cla.empty(q, (4000,), np.float32)
    want = jitscan.scan((a, b), op=affine, output=1)

    def check(y):
        np.testing.assert_allclose(y.get(), want, rtol=1e-6)

    _warm(python_calls, lambda: jitscan.scan((da, db), op=affine, output=1, out=h), check)
    _warm(python_calls, lambda: jitscan.scan((da, db), op=affine, output=1), check)


def test_segmented_by_flags(python_calls, rng):
    q = _queue()
    n = 5000
    x = rng.integers(-9, 9, n).astype(np.int32)
    flags = (rng.random(n) < 0.02).astype(np.uint8)
    dx, df, out = cla.to_device(q, x), cla.to_device(q, flags), cla.empty(q, (n,), np.int32)
    want = jitscan.segmented_cumsum(x, flags=flags)

    def check(y):
        np.testing.assert_array_equal(y.get(), want)

    _warm(python_calls, lambda: jitscan.segmented_cumsum(dx, flags=df, out=out), check)
    # other flags, the same arrays' shapes: the compiled call reads the new flags
    flags2 = (rng.random(n) < 0.2).astype(np.uint8)
    df2 = cla.to_device(q, flags2)
    np.testing.assert_array_equal(jitscan.segmented_cumsum(dx, flags=df2, out=out).get(),
                                  jitscan.segmented_cumsum(x, flags=flags2))  # fmt: skip


def test_axis_scans_of_rows(python_calls, rng):
    q = _queue()
    x = rng.integers(-9, 9, (64, 100)).astype(np.int32)
    dx, out = cla.to_device(q, x), cla.empty(q, (64, 100), np.int32)
    want = np.cumsum(x, axis=1, dtype=np.int32)

    def check(y):
        np.testing.assert_array_equal(y.get(), want)

    _warm(python_calls, lambda: jitscan.cumsum(dx, axis=1, out=out), check)
    _warm(python_calls, lambda: jitscan.cumsum(dx, axis=1), check)


def _offsets(rng, n, count):
    return np.r_[0, np.sort(rng.choice(np.arange(1, n), count, replace=False)), n].astype(np.int64)


@pytest.fixture(params=["in place", "copied"])
def alarm_queue(request, monkeypatch):
    """A new queue, its alarm's flag seen by the host in place (a CPU device's), or copied
    back by the driver's read behind each launch, as on a GPU (where the copy is the
    compiled call's too)."""
    if request.param == "copied":
        if opencl_icd.reader is None:
            pytest.skip("no ICD loader's read here")
        monkeypatch.setattr(OpenCLBackend, "_writes_in_place", lambda self, queue: False)
    # a copy behind every launch where there is one (the interval between copies has a test
    # of its own): a GPU's flag is copied, whichever way this test asks
    monkeypatch.setattr(opencl_backend, "ALARM_COPY_EVERY", 0.0)
    q = _queue()
    return cl.CommandQueue(q.context, q.device)  # an alarm of its own, made as patched


def _warm_reduction(python_calls, rng, q, n=4000):
    """A reduction by a user's offsets on ``q``, warm and checked: (values, offsets, their
    device arrays, the reduction NumPy's call gives)."""
    x = rng.integers(-9, 9, n).astype(np.int32)
    off = _offsets(rng, n, 80)
    dx, do = cla.to_device(q, x), cla.to_device(q, off)
    want = jitscan.segmented_reduce(x, offsets=off)
    _warm(python_calls, lambda: jitscan.segmented_reduce(dx, offsets=do),
          lambda r: np.testing.assert_array_equal(r.get(), want))  # fmt: skip
    return x, off, dx, do, want


def test_segmented_reductions_by_offsets(python_calls, rng, alarm_queue):
    _warm_reduction(python_calls, rng, alarm_queue)


def test_bad_offsets_of_a_compiled_call_raise_at_the_next_call(python_calls, rng, alarm_queue):
    q = alarm_queue
    x, good, dx, do, want = _warm_reduction(python_calls, rng, q)
    n = x.size
    bad = good.copy()
    bad[40] = n + 5  # past the end: the pre-pass's check raises the queue's alarm
    before = dict(python_calls)
    jitscan.segmented_reduce(dx, offsets=cla.to_device(q, bad))  # launched by the compiled call
    assert python_calls == before
    q.finish()  # the flag has come back to the host
    with pytest.raises(ValueError, match="device offsets of an earlier call on this queue were bad"):
        jitscan.segmented_reduce(dx, offsets=do)
    # the alarm cleared: good offsets work again
    np.testing.assert_array_equal(jitscan.segmented_reduce(dx, offsets=do).get(), want)


def test_the_alarms_copy_runs_once_an_interval_and_bad_offsets_still_raise(python_calls, rng, monkeypatch):
    # On a GPU's driver the flag's copy costs about a launch's host time, so a loop of calls
    # by offsets copies it at most once an interval: a bad call just after a copy is not
    # seen at the next call, but the copy of a later call brings it, and the call after
    # that one raises. The compiled call and Python's keep the same interval.
    if opencl_icd.reader is None:
        pytest.skip("no ICD loader's read here")
    monkeypatch.setattr(OpenCLBackend, "_writes_in_place", lambda self, queue: False)
    every = 0.2
    monkeypatch.setattr(opencl_backend, "ALARM_COPY_EVERY", every)
    q = cl.CommandQueue(_queue().context, _queue().device)
    x, good, dx, do, want = _warm_reduction(python_calls, rng, q)  # the first call copied
    bad = good.copy()
    bad[40] = x.size + 5
    before = dict(python_calls)
    jitscan.segmented_reduce(dx, offsets=cla.to_device(q, bad))  # within the interval: no copy
    q.finish()
    np.testing.assert_array_equal(jitscan.segmented_reduce(dx, offsets=do).get(), want)
    assert python_calls == before, "a warm call went through Python"
    time.sleep(every)
    jitscan.segmented_reduce(dx, offsets=do)  # its copy is due: it brings the flag
    q.finish()
    with pytest.raises(ValueError, match="device offsets of an earlier call on this queue were bad"):
        jitscan.segmented_reduce(dx, offsets=do)
    # cleared: the next bad call copies at once, and the call after it raises
    jitscan.segmented_reduce(dx, offsets=cla.to_device(q, bad))
    q.finish()
    with pytest.raises(ValueError, match="earlier call on this queue were bad"):
        jitscan.segmented_reduce(dx, offsets=do)


def test_a_reduction_over_the_last_axis_by_its_own_offsets(python_calls, rng):
    q = _queue()
    x = rng.integers(-9, 9, (64, 100)).astype(np.int32)
    dx = cla.to_device(q, x)
    _warm(
        python_calls,
        lambda: jitscan.reduce(dx, axis=1),
        lambda r: np.testing.assert_array_equal(r.get(), x.sum(1)),
    )
    out = cla.empty(q, 64, np.int32)  # out= of the result's dtype: written by the kernels

    def check(r):
        assert r is out
        np.testing.assert_array_equal(out.get(), x.sum(1))

    _warm(python_calls, lambda: jitscan.reduce(dx, axis=1, out=out), check)


def test_a_segmented_reduction_writes_its_out(python_calls, rng):
    q = _queue()
    x, off = rng.integers(-9, 9, 4000).astype(np.int32), _offsets(rng, 4000, 80)
    dx, do, out = cla.to_device(q, x), cla.to_device(q, off), cla.empty(q, off.size - 1, np.int32)
    want = jitscan.segmented_reduce(x, offsets=off)

    def check(r):
        assert r is out
        np.testing.assert_array_equal(out.get(), want)

    _warm(python_calls, lambda: jitscan.segmented_reduce(dx, offsets=do, out=out), check)


def test_scans_by_offsets(rng, python_calls):
    # on a GPU the compiled call's; beside one-thread tiles (a CPU), whose check of the
    # offsets is a launch of its own, Python's: either way, the segments' scan
    q = _queue()
    n = 3000
    x = rng.integers(-9, 9, n).astype(np.int32)
    off = _offsets(rng, n, 60)
    dx, do, out = cla.to_device(q, x), cla.to_device(q, off), cla.empty(q, (n,), np.int32)
    for _ in range(3):
        y = jitscan.segmented_cumsum(dx, offsets=do, out=out)
        np.testing.assert_array_equal(y.get(), jitscan.segmented_cumsum(x, offsets=off))


@pytest.mark.parametrize("case", ["overlapping out", "another queue", "another size class", "a strided view"])
def test_other_calls_go_to_python_and_give_its_result(python_calls, rng, case):
    q = _queue()
    x = rng.integers(-9, 9, 8000).astype(np.int32)
    dx, out = cla.to_device(q, x), cla.empty(q, (8000,), np.int32)
    jitscan.cumsum(dx[:4000], out=out[:4000])  # remembered: 4000 elements on q
    before = python_calls["plain"]
    if case == "overlapping out":
        y = jitscan.cumsum(dx[:4000], out=dx[:4000])  # in place: the general path's
        want = np.cumsum(x[:4000], dtype=np.int32)
    elif case == "another queue":
        q2 = cl.CommandQueue(q.context, q.device)
        d2 = cla.to_device(q2, x[:4000])
        y = jitscan.cumsum(d2, out=cla.empty(q2, (4000,), np.int32))
        want = np.cumsum(x[:4000], dtype=np.int32)
    elif case == "another size class":  # past the first class on any device (2^17 on PoCL)
        big = rng.integers(-9, 9, 1 << 18).astype(np.int32)
        y = jitscan.cumsum(cla.to_device(q, big), out=cla.empty(q, big.shape, np.int32))
        want = np.cumsum(big, dtype=np.int32)
    else:
        y = jitscan.cumsum(dx[::2], out=out[:4000])
        want = np.cumsum(x[::2], dtype=np.int32)
    np.testing.assert_array_equal(y.get(), want)
    assert python_calls["plain"] > before


_SET_ARG = None  # the counting clSetKernelArg, kept for the process (calls made later reach it)


def test_a_warm_call_sets_every_memory_object_again_and_only_changed_scalars(python_calls, monkeypatch):
    # A buffer released and another made at its handle's address is another object with the
    # same handle: a driver that resolved the first one's memory when it was set (Oclgrind)
    # would read freed memory. So a warm call sets its memory objects on every launch, and
    # skips only scalars that kept their value.
    import ctypes

    global _SET_ARG
    set_arg, enqueue = opencl_icd.entry_points()
    vp = ctypes.c_void_p
    proto = ctypes.CFUNCTYPE(ctypes.c_int32, vp, ctypes.c_uint32, ctypes.c_size_t, vp)
    real, seen = proto(set_arg), []

    def counting(kernel, index, size, value):
        seen.append((index, size))
        return real(kernel, index, size, value)

    _SET_ARG = proto(counting)
    address = ctypes.cast(_SET_ARG, vp).value
    monkeypatch.setattr(opencl_icd, "entry_points", lambda: (address, enqueue))
    jitscan.api.cache.clear()  # compiled calls made from here on set through it
    q = _queue()
    h = np.arange(1000, dtype=np.int32)
    x, y = cla.to_device(q, h), cla.empty(q, h.size, np.int32)
    jitscan.cumsum(x, out=y)  # Python's, then the compiled call's from the next one
    jitscan.cumsum(x, out=y)
    first = list(seen)
    seen.clear()
    jitscan.cumsum(x, out=y)  # the same arrays, size and epoch rule: buffers only
    assert np.array_equal(y.get(), np.cumsum(h, dtype=np.int32))
    # unchanged scalars (n, the code, the constants) skipped; the input, the output and the
    # scratch set again (8-byte handles), beside the epoch (4 bytes), which moved on
    assert first and len(seen) < len(first)
    assert len([i for i, size in seen if size == ctypes.sizeof(ctypes.c_void_p)]) >= 3
    x2 = cla.to_device(q, h[::-1].copy())
    jitscan.cumsum(x2, out=y)
    assert np.array_equal(y.get(), np.cumsum(h[::-1], dtype=np.int32))


@pytest.fixture
def transform_calls(python_calls, monkeypatch):
    """Counts of the transforms' calls left to Python (TransformScan._python), in scans made
    from here on (the fixture before emptied the caches)."""
    from jitscan.plan.transformed import TransformScan

    counts = {"transform": 0}
    python = TransformScan._python

    def counted(self, *args):
        counts["transform"] += 1
        return python(self, *args)

    monkeypatch.setattr(TransformScan, "_python", counted)
    return counts


def test_compaction_of_a_fixed_size_launches_through_the_compiled_call(transform_calls, rng):
    q = _queue()
    x = rng.integers(-50, 50, 3000).astype(np.int32)
    dx = cla.to_device(q, x)

    def check(got):
        y, count = got
        kept = x[x > 0]
        np.testing.assert_array_equal(y.get(), np.concatenate([kept, [-1] * (2000 - kept.size)])[:2000])
        assert int(count.get()) == kept.size

    dc = cla.to_device(q, x > 0)
    extract = lambda: jitscan.extract(dc, dx, size=2000, fill_value=-1, return_count=True)  # noqa: E731
    _warm(transform_calls, extract, check)
    # other arrays of the same dtypes and size class: the same launch, their buffers set
    x = rng.integers(-50, 50, 2500).astype(np.int32)
    dx, dc = cla.to_device(q, x), cla.to_device(q, x > 0)
    before = dict(transform_calls)
    check(jitscan.extract(dc, dx, size=2000, fill_value=-1, return_count=True))
    assert transform_calls == before


def test_runs_and_partitions_launch_each_of_their_passes_through_the_compiled_call(transform_calls, rng):
    q = _queue()
    x = np.repeat(rng.integers(0, 9, 600), rng.integers(1, 6, 600)).astype(np.int32)[:1500]
    dx = cla.to_device(q, x)
    starts = np.flatnonzero(np.r_[True, x[1:] != x[:-1]])
    runs, counts = x[starts], np.diff(np.r_[starts, x.size])

    def check_runs(got):
        u, c = got
        np.testing.assert_array_equal(u.get()[: runs.size], runs)
        np.testing.assert_array_equal(c.get()[: runs.size], counts)

    runs_of = lambda: jitscan.unique_consecutive(dx, return_counts=True, size=x.size)  # noqa: E731
    _warm(transform_calls, runs_of, check_runs)

    def check_partition(got):
        y, count = got
        k = int(np.count_nonzero(x > 4))
        assert int(count.get()) == k
        np.testing.assert_array_equal(y.get(), np.concatenate([x[x > 4], x[x <= 4]]))

    _warm(transform_calls, lambda: jitscan.stable_partition(dx, "x > 4"), check_partition)


def test_a_transform_call_of_another_queue_or_size_class_is_pythons(transform_calls, rng):
    q = _queue()
    x = rng.integers(-50, 50, 3000).astype(np.int32)
    jitscan.extract(cla.to_device(q, x > 0), cla.to_device(q, x), size=100)
    q2 = cl.CommandQueue(q.context, q.device)
    for queue, h in ((q2, x), (q, rng.integers(-50, 50, 1 << 18).astype(np.int32))):
        before = transform_calls["transform"]
        y = jitscan.extract(cla.to_device(queue, h > 0), cla.to_device(queue, h), size=100)
        np.testing.assert_array_equal(y.get(), h[h > 0][:100])
        assert transform_calls["transform"] > before
