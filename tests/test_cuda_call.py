"""The compiled common call on CUDA (jitscan/backends/_common_call.c), on any machine.

It launches a call exactly as the Python common call would have, or leaves the call to
it. Here arrays are stand-ins with CuPy's fields and the launch records what it was given,
so every rule runs without a GPU; tests/test_api.py and tests/test_reliability.py run the
real thing on one.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

from jitscan.backends.launch import (
    ARG_CARRY,
    ARG_CODE,
    ARG_CONST,
    ARG_DST,
    ARG_EPOCH,
    ARG_N,
    ARG_SCRATCH,
    ARG_SRC,
    Scratch,
)

_common_call = pytest.importorskip("jitscan.backends._common_call", reason="the extension is not built here")

#: the launch remembered: tiles of 512 items, a scratch of a 64-byte header and 16 bytes a tile
TILE, HEADER, PER_TILE, LIMIT, THREADS = 512, 64, 16, 1000, 256
KIND, STREAM_BIT, STREAM_FROM, ALIGN = 3, 1 << 8, 4096, 16
#: where a result the call makes lies
NEW = 0x700000
#: what the slots of the argument block hold: the chained scan's layout, as cupy.py's
#: compiled.arg_codes gives it (an array is its pointer and a constant offset)
CODES = bytes([ARG_SRC, ARG_CONST, ARG_DST, ARG_CONST, ARG_N, ARG_SCRATCH, ARG_CODE, ARG_EPOCH])


class _Memory:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class FakeArray:
    """What the compiled call reads of a cupy.ndarray; ``FakeArray((n,), dtype)`` is a new one
    (at ``NEW``), as the call makes a result, and runs the functions in ``on_new``."""

    on_new: list = []

    def __init__(self, ptr, size, dtype: str = "int32", contiguous: bool = True, ndim: int = 1):
        if isinstance(ptr, tuple):  # the constructor's (shape, dtype)
            ptr, (size,), dtype = NEW, ptr, size
            for hook in FakeArray.on_new:
                hook()
        self.data = _Memory(ptr)
        self.size = size
        self.dtype = np.dtype(dtype)
        self._c_contiguous = contiguous
        self.ndim = ndim
        self.nbytes = size * self.dtype.itemsize


_PROTOTYPE = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.c_void_p,
    *[ctypes.c_uint] * 7,
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.c_void_p,
)


class Rig:
    """A compiled call with a recording launch, a Python call behind it, and one launch remembered."""

    def __init__(self, one: bool = False, status: int = 0, scalar=None) -> None:
        self.slots = np.zeros(12, np.uint64)
        self.params = (ctypes.c_void_p * 12)(*(self.slots.ctypes.data + 8 * k for k in range(12)))
        self.launches: list[dict] = []
        self.slow_calls: list[tuple] = []
        self.status = status
        self.stream = object()
        self.current = self.stream
        self.lock = threading.RLock()
        self.scratch = Scratch()
        self.scratch.replace(0xABC000, HEADER + 64 * PER_TILE)

        def launch(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            words = [int(params[k] and ctypes.c_uint64.from_address(params[k]).value) for k in range(8)]
            self.launches.append(dict(function=function, groups=gx, threads=bx, stream=stream, args=words))
            return self.status

        self._launch = _PROTOTYPE(launch)  # kept alive as long as the rig
        address = ctypes.cast(self._launch, ctypes.c_void_p).value
        self.loads = {np.dtype(np.int32): "", np.dtype(np.int8): "int8"}

        def slow(x, out, carry):
            self.slow_calls.append((x, out, carry))
            return "python"

        self.call = _common_call.CommonCall(
            ndarray=FakeArray,
            dtype=np.dtype(np.int32),
            loads=self.loads,
            stream_of=lambda: self.current,
            slow=slow,
            osize=4,
            align=ALIGN,
            one=one,
            launch=address,
            scalar=scalar,
        )

    def remember(
        self,
        lo: int = 0,
        hi: int = 1 << 20,
        load: str | None = None,
        codes: bytes = CODES,
        carry_code: int = 0,
    ) -> None:
        load = self.loads[np.dtype(np.int32)] if load is None else load
        self.call.remember(
            (self.stream, lo, hi, load, self.lock.acquire, self.lock.release, self.scratch, TILE, HEADER)
            + (PER_TILE, LIMIT, KIND, KIND | STREAM_BIT, STREAM_FROM, codes, 0xF00)
            + (ctypes.addressof(self.params), self.slots.ctypes.data, 0x5EA, THREADS, carry_code, self.slots)
        )


def test_a_call_like_the_last_one_is_launched_with_the_kernels_arguments_and_the_next_epoch():
    rig = Rig()
    rig.remember()
    x, y = FakeArray(0x10000, 3000), FakeArray(0x20000, 3000)
    rig.scratch.epoch = 7
    assert rig.call(x, y, None) is y
    assert not rig.slow_calls and rig.scratch.epoch == 8
    (got,) = rig.launches
    assert (
        got["function"] == 0xF00
        and got["groups"] == 6
        and got["threads"] == THREADS
        and got["stream"] == 0x5EA
    )
    assert got["args"] == [0x10000, 0, 0x20000, 0, 3000, 0xABC000, KIND, 8]


def test_a_large_call_sets_the_streaming_bit_of_its_kind():
    rig = Rig()
    rig.remember()
    rig.call(FakeArray(0x10000, STREAM_FROM), FakeArray(0x90000, STREAM_FROM), None)
    assert rig.launches[0]["args"][6] == KIND | STREAM_BIT


def test_a_scan_without_out_makes_its_result_of_the_scans_dtype():
    rig = Rig()
    rig.remember()
    y = rig.call(FakeArray(0x10000, 3000, "int8"), None, None)
    assert rig.slow_calls  # an int8 input is another load: Python's
    rig.remember(load="int8")
    held: list[bool] = []  # made before the launch lock is taken, as Python's call does
    FakeArray.on_new.append(lambda: held.append(rig.lock._is_owned()))
    try:
        y = rig.call(FakeArray(0x10000, 3000, "int8"), None, None)
    finally:
        FakeArray.on_new.clear()
    assert held == [False]
    assert isinstance(y, FakeArray) and (y.size, y.dtype) == (3000, np.dtype(np.int32))
    assert rig.launches[-1]["args"][:5] == [0x10000, 0, NEW, 0, 3000]


def test_a_reduction_takes_one_element_out_and_leaves_a_call_without_out_to_python():
    rig = Rig(one=True)
    rig.remember()
    out = FakeArray(0x90000, 1)
    assert rig.call(FakeArray(0x10000, 1000), out, None) is out and len(rig.launches) == 1
    assert rig.call(FakeArray(0x10000, 1000), FakeArray(0x90000, 1000), None) == "python"
    assert rig.call(FakeArray(0x10000, 1000), None, None) == "python"  # its result is 0-d
    assert len(rig.launches) == 1


def test_a_reduction_without_out_makes_its_0d_result_through_the_backends_scalar():
    views = []

    def scalar(a):  # the backend's: a 0-d view of the one-element result
        views.append(a)
        return ("0-d", a)

    rig = Rig(one=True, scalar=scalar)
    rig.remember()
    got = rig.call(FakeArray(0x10000, 1000), None, None)
    (made,) = views
    assert got == ("0-d", made) and (made.size, made.dtype) == (1, np.dtype(np.int32))
    assert rig.launches[-1]["args"][:5] == [0x10000, 0, NEW, 0, 1000] and not rig.slow_calls
    with pytest.raises(ValueError, match="plain reduction's"):
        Rig(one=False, scalar=scalar)


#: a block with a carry's four words after the arrays, n, scratch, code and epoch
CARRIED = CODES + bytes([ARG_CARRY] * 4)
CARRY_CODE = 4 | 16  # the carry's bit and the bit of a carry in the launch's words


def test_a_carry_the_host_knows_goes_in_the_launchs_words_with_its_bits():
    rig = Rig()
    rig.remember(codes=CARRIED, carry_code=CARRY_CODE)
    x, y = FakeArray(0x10000, 3000), FakeArray(0x20000, 3000)
    assert rig.call(x, y, (7).to_bytes(4, "little") + (9).to_bytes(4, "little")) is y and not rig.slow_calls
    words = [int(v) for v in rig.slots[8:12]]
    assert rig.launches[0]["args"][6] == KIND | CARRY_CODE and words == [7 | 9 << 32, 0, 0, 0]
    assert rig.call(x, y, None) is y  # then none: the code without the carry's bits
    assert rig.launches[1]["args"][6] == KIND
    # past the words, on the device, or a launch that takes none there: Python's
    assert rig.call(x, y, bytes(33)) == "python"
    assert rig.call(x, y, FakeArray(0x30000, 1)) == "python"
    rig.remember(codes=CARRIED)
    assert rig.call(x, y, bytes(4)) == "python" and len(rig.launches) == 2


def test_before_anything_is_remembered_every_call_is_the_pythons():
    rig = Rig()
    x, y = FakeArray(0x10000, 100), FakeArray(0x20000, 100)
    assert rig.call(x, y, None) == "python" and rig.slow_calls == [(x, y, None)] and not rig.launches
    rig.remember()
    rig.call.remember(None)  # a launch it cannot make (another variant, say)
    assert rig.call(x, y, None) == "python" and not rig.launches


@pytest.mark.parametrize(
    "case",
    [
        "carry",
        "another stream",
        "below the class",
        "above the class",
        "another load",
        "a dtype the scan does not load",
        "x not contiguous",
        "x not aligned",
        "out of another dtype",
        "out not contiguous",
        "out not aligned",
        "out 2-D",
        "out of another size",
        "out overlapping x",
        "x of another type",
        "scratch too small",
        "epoch at its limit",
        "lock held by another thread",
        "launch failed",
    ],
)
def test_every_other_call_goes_to_python_having_launched_nothing(case):
    rig = Rig(status=201 if case == "launch failed" else 0)
    rig.remember(lo=1000, hi=5000)
    n, x, y, carry = 3000, FakeArray(0x10000, 3000), FakeArray(0x20000, 3000), None
    if case == "carry":
        carry = b"\0\0\0\0"
    elif case == "another stream":
        rig.current = object()
    elif case in ("below the class", "above the class"):
        n = 1000 if case == "below the class" else 5001
        x, y = FakeArray(0x10000, n), FakeArray(0x80000, n)
    elif case == "another load":
        x = FakeArray(0x10000, n, "int8")
    elif case == "a dtype the scan does not load":
        x = FakeArray(0x10000, n, "float64")
    elif case == "x not contiguous":
        x = FakeArray(0x10000, n, contiguous=False)
    elif case == "x not aligned":
        x = FakeArray(0x10004, n)
    elif case == "out of another dtype":
        y = FakeArray(0x20000, n, "float32")
    elif case == "out not contiguous":
        y = FakeArray(0x20000, n, contiguous=False)
    elif case == "out not aligned":
        y = FakeArray(0x20008, n)
    elif case == "out 2-D":
        y = FakeArray(0x20000, n, ndim=2)
    elif case == "out of another size":
        y = FakeArray(0x20000, n - 1)
    elif case == "out overlapping x":
        y = FakeArray(0x10000 + 4 * n - 16, n)
    elif case == "x of another type":
        x = np.zeros(n, np.int32)
    elif case == "scratch too small":
        rig.scratch.replace(0xABC000, HEADER + 5 * PER_TILE)
    elif case == "epoch at its limit":
        rig.scratch.epoch = LIMIT
    epoch = rig.scratch.epoch
    if case == "lock held by another thread":
        held, done = threading.Event(), threading.Event()

        def hold():
            with rig.lock:
                held.set()
                done.wait(5)

        t = threading.Thread(target=hold)
        t.start()
        held.wait(5)
        try:
            assert rig.call(x, y, carry) == "python"
        finally:
            done.set()
            t.join()
    else:
        assert rig.call(x, y, carry) == "python"
    assert rig.slow_calls == [(x, y, carry)]
    if case == "launch failed":  # tried once; its epoch is skipped, not reused
        assert len(rig.launches) == 1 and rig.scratch.epoch == epoch + 1
    else:
        assert not rig.launches and rig.scratch.epoch == epoch
    assert rig.lock.acquire(blocking=False)  # and the lock was let go
    rig.lock.release()


def test_the_call_takes_three_arguments_and_remember_checks_its_record():
    rig = Rig()
    with pytest.raises(TypeError):
        rig.call(FakeArray(0, 1), None)
    with pytest.raises(TypeError):
        rig.call.remember((1, 2))
    with pytest.raises(ValueError, match="size class"):
        rig.remember(lo=10, hi=10)


@pytest.mark.parametrize("which", ["x", "out"])
def test_an_array_whose_pointer_cannot_be_read_raises_having_launched_nothing(which):
    rig = Rig()
    rig.remember()
    x, y = FakeArray(0x10000, 3000), FakeArray(0x20000, 3000)
    (x if which == "x" else y).data.ptr = -16  # no address
    with pytest.raises(OverflowError):
        rig.call(x, y, None)
    assert not rig.launches and not rig.slow_calls and rig.scratch.epoch == 0
