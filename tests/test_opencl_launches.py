"""How an OpenCL launcher sets its kernel's arguments: all of them once, then what a call changes.

A kernel keeps its arguments from one enqueue to the next. The chained scan's launcher sets
every argument through PyOpenCL's invoker on its first call and whenever anything but the
arrays and the epoch changes; other calls set the arrays and the epoch and enqueue. A
form's launcher (segmented scans, tuple values, a pre-pass) sets every argument on its
first call, then the arrays and the scalars that changed. These are the Python launchers'
rules: warm calls otherwise go through the compiled call, which has kernel objects of its
own (tests/test_opencl_compiled.py), so the fixtures here leave it out.
"""

from __future__ import annotations

import numpy as np
import pytest

import jitscan
from jitscan import backends
from jitscan.backends import compiled, opencl_programs

cl = pytest.importorskip("pyopencl")
cla = pytest.importorskip("pyopencl.array")


def _queue():
    b = backends.get("opencl")
    if not b.available():
        pytest.skip(f"backend 'opencl' unavailable here: {b.unavailable_reason()}")
    return b.queue_of(None)


class CountingKernel(cl.Kernel):
    """A kernel that counts the calls through PyOpenCL's invoker (which set every argument),
    and the scalars each of its later calls set."""

    full_calls = 0
    scalars_set: list[int] = []

    def __call__(self, *args, **kwargs):
        CountingKernel.full_calls += 1
        return super().__call__(*args, **kwargs)

    def _set_arg_buf_pack_multi(self, row):
        CountingKernel.scalars_set.append(len(row) // 3)  # (index, type, value) each
        return super()._set_arg_buf_pack_multi(row)


class InvokerOnly:
    """A kernel without PyOpenCL's private setters: only its invoker is there to call."""

    full_calls = 0

    def __init__(self, kernel) -> None:
        self._kernel = kernel

    def __call__(self, *args, **kwargs):
        InvokerOnly.full_calls += 1
        return self._kernel(*args, **kwargs)


@pytest.fixture
def counted(monkeypatch):
    def kernel(self, entry):
        k = CountingKernel(self.program, entry)
        k.set_scalar_arg_dtypes(self._signatures[entry])
        return k

    monkeypatch.setattr(opencl_programs.CLProgram, "_kernel", kernel)
    monkeypatch.setattr(compiled, "CommonCall", None)  # the Python launchers alone
    CountingKernel.full_calls = 0
    CountingKernel.scalars_set = []
    return CountingKernel


@pytest.fixture
def invoker_only(monkeypatch):
    real = opencl_programs.CLProgram._kernel

    def kernel(self, entry):
        return InvokerOnly(real(self, entry))

    monkeypatch.setattr(opencl_programs.CLProgram, "_kernel", kernel)
    monkeypatch.setattr(compiled, "CommonCall", None)
    InvokerOnly.full_calls = 0
    return InvokerOnly


def _calls(queue, scan, rng):
    """Calls that change, one at a time, each argument of the chained kernel; each checked."""
    x = rng.integers(-9, 9, 6000).astype(np.int32)
    dx = cla.to_device(queue, x)
    out = cla.empty_like(dx)
    made = 0
    for n, at in [(4000, 0), (4000, 0), (4000, 4), (3000, 4), (3000, 4), (4000, 0)]:
        for given_out in (True, False):
            view = dx[at : at + n]  # an aligned view: another offset into the same buffer
            y = scan(view, out=out[:n]) if given_out else scan(view)
            np.testing.assert_array_equal(y.get(), np.cumsum(x[at : at + n], dtype=np.int32))
            made += 1
    y = scan(dx[:4000], initial=5)  # a carry changes the kind code
    np.testing.assert_array_equal(y.get(), 5 + np.cumsum(x[:4000], dtype=np.int32))
    return made + 1


def test_a_launcher_sets_every_argument_once_then_only_the_arrays_and_the_epoch(counted, rng):
    queue = _queue()
    scan = jitscan.plan("int32", backend="opencl")
    dx = cla.to_device(queue, rng.integers(-9, 9, 4000).astype(np.int32))
    out = cla.empty_like(dx)
    for _ in range(5):
        scan(dx, out=out)
        scan(dx)  # another result array: only an array changed
    np.testing.assert_array_equal(out.get(), np.cumsum(dx.get(), dtype=np.int32))
    assert counted.full_calls == 1


def test_calls_that_change_any_argument_set_them_all_again(counted, rng):
    queue = _queue()
    calls = _calls(queue, jitscan.plan("int32", backend="opencl"), rng)
    # the first call, each change of offset or size (three), and the carry; not the other eight
    assert (counted.full_calls, calls) == (5, 13)


def test_without_pyopencls_private_setters_every_call_sets_every_argument(invoker_only, rng):
    queue = _queue()
    calls = _calls(queue, jitscan.plan("int32", backend="opencl"), rng)
    assert invoker_only.full_calls == calls


def _segmented_calls(queue, rng, scan, mode):
    """Calls by flags or offsets that change the arrays, the length and the segments; each checked."""
    x = rng.integers(-9, 9, 6000).astype(np.int32)
    dx = cla.to_device(queue, x)
    out = cla.empty_like(dx)
    made = 0
    for n in (4000, 4000, 3000, 5000, 3000):
        heads = np.sort(rng.choice(np.arange(1, n), 40, replace=False))
        offsets = np.r_[0, heads, n].astype(np.int64)
        flags = np.zeros(n, np.uint8)
        flags[offsets[:-1]] = 1
        seg = (
            {"flags": cla.to_device(queue, flags)}
            if mode == "flags"
            else {"offsets": cla.to_device(queue, offsets)}
        )
        for given_out in (True, False):
            y = scan(dx[:n], out=out[:n], **seg) if given_out else scan(dx[:n], **seg)
            want = np.concatenate(
                [np.cumsum(x[a:b], dtype=np.int32) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
            )
            np.testing.assert_array_equal(y.get(), want)
            made += 1
    return made


@pytest.mark.parametrize("mode", ["flags", "offsets"])
def test_a_form_launcher_sets_every_argument_once_then_what_a_call_changes(counted, rng, mode):
    # lengths and segments change from call to call: the scalars that changed are set
    # again, or the answers would be of an earlier call's; each kernel object (the scan's,
    # a pre-pass's) goes through PyOpenCL's invoker on its first call only
    queue = _queue()
    scan = jitscan.plan("int32", segmented=mode, backend="opencl")  # launchers of its own
    _segmented_calls(queue, rng, scan, mode)
    kernels = counted.full_calls
    assert kernels >= 1
    _segmented_calls(queue, rng, scan, mode)
    assert counted.full_calls == kernels


def test_without_pyopencls_private_setters_a_form_launcher_sets_every_argument(invoker_only, rng):
    queue = _queue()
    scan = jitscan.plan("int32", segmented="offsets", backend="opencl")
    _segmented_calls(queue, rng, scan, "offsets")
    first = invoker_only.full_calls
    calls = _segmented_calls(queue, rng, scan, "offsets")
    assert invoker_only.full_calls - first >= calls


@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 0, 2), (4, 5), (2, 3, 7)])
@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.uint8])
def test_a_result_array_is_the_array_pyopencl_would_make(shape, dtype):
    # results are made by PyOpenCL's fast constructor (its checked one costs several launches)
    queue = _queue()
    b = backends.get("opencl")
    got = b.empty(shape, np.dtype(dtype), queue)
    want = cla.empty(queue, shape, dtype)
    for attr in ("shape", "dtype", "strides", "size", "nbytes", "offset", "queue", "context"):
        assert getattr(got, attr) == getattr(want, attr), attr
    assert got.flags.c_contiguous and got.flags.forc
    assert (got.base_data is None) == (want.base_data is None)
    if got.size:
        got.fill(3)
        np.testing.assert_array_equal(got.get(), np.full(shape, 3, dtype))


def test_calls_from_a_carry_set_their_arguments_once_then_what_changed(counted, rng):
    # a carry's words are a launch's last arguments: calls with one go through a kernel
    # object of their own, which sets what changed (the words, the epoch); the plain
    # calls around them keep theirs
    queue = _queue()
    scan = jitscan.plan("int32", backend="opencl")
    x = rng.integers(-9, 9, 4000).astype(np.int32)
    dx = cla.to_device(queue, x)
    out = cla.empty_like(dx)
    scan(dx, out=out)
    for initial in (5, -3, 7, 7, 0):
        y = scan(dx, initial=initial)
        np.testing.assert_array_equal(y.get(), initial + np.cumsum(x, dtype=np.int32))
        scan(dx, out=out)
        np.testing.assert_array_equal(out.get(), np.cumsum(x, dtype=np.int32))
    assert counted.full_calls == 2  # the plain kernel's first call, the carried one's first


@pytest.mark.parametrize("form", ["initial", "flags", "offsets"])
def test_a_loop_of_like_calls_sets_one_scalar_a_call_the_epoch(counted, rng, form):
    # in a loop only the epoch changes: it is set alone (each scalar set costs a driver
    # call), the others stay as the call before set them; a call that changes another
    # scalar (the length) sets them all again
    queue = _queue()
    scan = jitscan.plan("int32", segmented="" if form == "initial" else form, backend="opencl")
    x = rng.integers(-9, 9, 4000).astype(np.int32)
    dx, out = cla.to_device(queue, x), cla.empty(queue, 4000, np.int32)

    def call(n):
        offsets = np.array([0, 7, n // 3, n - 9, n], np.int64)
        if form == "initial":
            return scan(dx[:n], out=out[:n], initial=3), 3 + np.cumsum(x[:n], dtype=np.int32)
        flags = np.zeros(n, np.uint8)
        flags[offsets[:-1]] = 1
        seg = {"flags": flags} if form == "flags" else {"offsets": offsets}
        want = np.concatenate(
            [np.cumsum(x[a:b], dtype=np.int32) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
        )
        return scan(dx[:n], out=out[:n], **{k: cla.to_device(queue, v) for k, v in seg.items()}), want

    for n in (4000, 4000, 4000, 3000, 3000):  # the call after a change finds what alone changes
        counted.scalars_set = []
        y, want = call(n)
        np.testing.assert_array_equal(y.get(), want)
    for _ in range(4):
        counted.scalars_set = []
        y, want = call(3000)
        np.testing.assert_array_equal(y.get(), want)
        assert counted.scalars_set and max(counted.scalars_set) == 1, counted.scalars_set
    counted.scalars_set = []
    y, want = call(2000)
    np.testing.assert_array_equal(y.get(), want)
    assert max(counted.scalars_set) > 1  # another length: every scalar again


def test_reductions_by_offsets_jitscan_made_watch_no_alarm_but_one_by_a_users_offsets_does(monkeypatch, rng):
    """The offsets of an axis's lanes and of reduce_by_key's runs are jitscan's own (right by
    construction): on an OpenCL GPU the alarm's copy back would cost as much as the launch.
    A user's device offsets are checked on the device, and the host watches the alarm after
    each call. (Python's calls: the compiled call copies the flag back itself, as
    tests/test_opencl_compiled.py checks.)"""
    from jitscan.backends import launch

    q = _queue()
    monkeypatch.setattr(compiled, "CommonCall", None)
    jitscan.api.cache.clear()  # scans made from here on have no compiled call
    watched = []
    real = launch.Alarm.watch
    monkeypatch.setattr(launch.Alarm, "watch", lambda self: (watched.append(1), real(self))[1])
    x2 = rng.integers(-9, 9, (8, 300)).astype(np.int32)
    d2 = cla.to_device(q, x2)
    for _ in range(3):
        np.testing.assert_array_equal(jitscan.reduce(d2, axis=1).get(), x2.sum(axis=1))
    assert watched == []
    keys = np.repeat(np.arange(8, dtype=np.int32), 300)  # the runs' starts are jitscan's too
    for size in (None, 5):
        u, t = jitscan.reduce_by_key(cla.to_device(q, keys), d2.reshape(-1), size=size)
        np.testing.assert_array_equal(t.get(), x2.sum(axis=1)[:size])
    assert watched == []
    off = cla.to_device(q, np.arange(0, 2401, 300, dtype=np.int64))
    for k in range(1, 4):
        got = jitscan.segmented_reduce(d2.reshape(-1), offsets=off).get()
        np.testing.assert_array_equal(got, x2.sum(axis=1))
        assert len(watched) == k
