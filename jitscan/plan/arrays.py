"""Arrays in and out of a scan: backend choice, inputs on the device, results back.

Device arrays of a backend (CuPy, PyOpenCL) stay on their device and the result is an
array of the same kind; anything NumPy accepts is copied to the device and the result
comes back as NumPy. Segment descriptions (head flags, CSR offsets) are checked and
put where the kernels read them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import backends
from ..backends.base import Backend, address
from ..dtypes import VECTOR_BYTES, DType, lookup


def pick_backend(x: object, backend: str | None) -> tuple[Backend, bool]:
    """The backend to scan ``x`` with, and whether ``x`` is already its device array."""
    owner = backends.for_array(x)
    if backend is not None:
        b = backends.get(backend)
        if owner is not None and owner is not b:
            raise ValueError(f"a {owner.name} array cannot be scanned with backend={backend!r}")
        if not b.available():
            backends.require(backend)
        return b, owner is not None
    if owner is not None:
        return owner, True
    return backends.default(), False


def result_dtype(src: np.dtype, dtype: object) -> DType:
    """The scan's dtype: ``dtype`` if given (from any real or integer input), else the input's."""
    if dtype is None:
        return lookup(src)
    if src.kind not in "biuf":
        raise TypeError(f"cannot scan an array of dtype {src}")
    return lookup(dtype)


@dataclass
class Input:
    """An input as the kernels take it."""

    backend: Backend
    queue: Any
    on_device: bool
    data: Any  # contiguous, aligned 1-D device array of the scan's dtype; None when empty on the host
    n: int
    dtype: DType
    #: host input the device reads in place (Backend.shared), else None: kept alive with the scan
    host: np.ndarray | None = None
    #: the dtype of ``data`` where the kernels convert it as they load, else ""
    loads: str = ""


def to_input(
    x: object,
    b: Backend,
    on_device: bool,
    dtype: DType,
    queue: Any = None,
    loads: Mapping[Any, str] | None = None,
) -> Input:
    """Put ``x`` on the device as a contiguous, aligned, flat array of ``dtype``.

    An input whose dtype is in ``loads`` keeps it: the kernels convert it as they load
    (``Input.loads`` names it). Others are converted here, on the device for device arrays.
    """
    if not on_device:
        x = np.asarray(x)
    n = math.prod(x.shape)  # type: ignore[attr-defined]  # a 0-d input is one element, as in NumPy
    if queue is None:
        queue = b.queue_of(x if on_device else None)
    t = np.dtype(x.dtype)  # type: ignore[attr-defined]
    if t.kind not in "biuf":  # NumPy would parse strings and drop imaginary parts
        raise TypeError(f"cannot scan an array of dtype {t}")
    kept = loads.get(t, "") if loads and t != dtype.numpy else ""
    if on_device:
        data = b.contiguous(x)
        if t != dtype.numpy and not kept:
            data = astype(data, dtype.numpy)
        data = data.reshape(n)
    else:
        host = np.ascontiguousarray(np.ravel(x), dtype=t if kept else dtype.numpy)
        if kept == "bool":
            host = host.view(np.uint8)  # bytes, as the kernels read a bool
        data = b.shared(host, queue, False) if n else None
        if data is not None:
            return Input(b, queue, on_device, data, n, dtype, host, kept)
        data = b.to_device(host, queue) if n else None
    return Input(b, queue, on_device, data, n, dtype, None, kept)


def astype(arr: Any, dtype: np.dtype) -> Any:
    """``arr`` converted to ``dtype`` where it lives (NumPy scalars and arrays too)."""
    if isinstance(arr, (np.ndarray, np.generic)):
        return arr.astype(dtype)
    b = backends.for_array(arr)
    return arr.astype(dtype) if b is None else b.astype(arr, dtype)


def check_out_kind(out: Any, backend: Backend | None) -> None:
    """TypeError unless ``out`` is an array of the input's kind: of ``backend`` for its
    device input, a NumPy array for host input (``backend`` None)."""
    if backend is not None:
        if not backend.owns(out):
            raise TypeError(f"out= must be a {backend.name} array for {backend.name} input")
    elif not isinstance(out, np.ndarray):
        raise TypeError("out= must be a numpy.ndarray for NumPy input")


def check_out(out: Any, backend: Backend, on_device: bool, dtype: DType, shape: tuple[int, ...]) -> None:
    """Raise unless ``out`` can take a result of ``shape`` and ``dtype`` for this input's side."""
    if out is None:
        return
    check_out_kind(out, backend if on_device else None)
    if tuple(out.shape) != shape:
        raise ValueError(f"out= has shape {tuple(out.shape)}, expected {shape}")
    if np.dtype(out.dtype) != dtype.numpy:
        raise ValueError(f"out= has dtype {np.dtype(out.dtype)}, expected {dtype.name}")
    if on_device and not out.flags.c_contiguous:
        raise ValueError("out= must be C-contiguous")


#: alignment of the host results jitscan allocates for a device to write in place: the
#: device's base address alignment (128 bytes on x86-64), below which an OpenCL runtime
#: may keep a copy of its own (PoCL 3 does not). An ``out=`` needs only the kernels'
#: VECTOR_BYTES: Backend.settle makes the result visible either way
HOST_ALIGN = 128


def host_result(inp: Input, length: int, out: np.ndarray | None) -> tuple[np.ndarray, Any, bool] | None:
    """Where the result of a host input the device reads in place goes: the host array,
    the device's view of it, and whether that array is ``out``; None where the device
    cannot write host memory.

    ``out`` itself when the device can write it in place (contiguous, aligned, not over
    the input: a fallback may re-read a tile after its owner wrote it), else a new array
    aligned to HOST_ALIGN.
    """
    dt = inp.dtype.numpy
    into_out = (
        out is not None
        and out.flags.c_contiguous
        and address(out) % VECTOR_BYTES == 0
        and not np.may_share_memory(out, inp.host)
    )
    if into_out:
        host = out
    else:
        raw = np.empty(length * dt.itemsize + HOST_ALIGN, np.uint8)
        start = -address(raw) % HOST_ALIGN
        host = raw[start : start + length * dt.itemsize].view(dt)
    dev = inp.backend.shared(host, inp.queue, True)
    return None if dev is None else (host, dev, into_out)


def empty_result(inp: Input, out: Any) -> Any:
    """The result of a scan of nothing (``out`` itself when given)."""
    if out is not None:
        return out
    if inp.on_device:
        return inp.backend.empty((0,), inp.dtype.numpy, inp.queue)
    return np.empty(0, inp.dtype.numpy)


def identity_result(inp: Input, value: np.generic, length: int | None, out: Any = None) -> Any:
    """``length`` copies of ``value`` (a 0-d result for None), on the input's side, or in ``out``."""
    if out is not None:
        if isinstance(out, np.ndarray):
            out.fill(value)
        else:
            inp.backend.fill(out, value)
        return out
    host = np.array(value) if length is None else np.full(length, value, inp.dtype.numpy)
    if inp.on_device:
        return inp.backend.to_device(host, inp.queue)
    return host[()] if length is None else host


# -- segments ---------------------------------------------------------------------------


def to_host(x: Any) -> np.ndarray:
    """Any array as NumPy (device arrays are copied back)."""
    if isinstance(x, np.ndarray):
        return x
    b = backends.for_array(x)
    return b.to_host(b.contiguous(x)) if b is not None else np.asarray(x)


def sample_runs(n: int, k: int = 96) -> list[tuple[int, int]]:
    """Where an operator's check samples ``n`` values: runs of ``k`` at the start, middle and end."""
    if n <= 3 * k:
        return [(0, n)]
    return [(a, a + k) for a in (0, (n - k) // 2, n - k)]


def sample(x: Any, runs: list[tuple[int, int]]) -> np.ndarray:
    """The values of ``x`` (flattened) in ``runs``, on the host.

    What an operator's check (``Operator.verify``) runs on; a device array's runs are
    copied back, not the array.
    """
    if isinstance(x, np.ndarray) or not hasattr(x, "reshape"):
        flat = np.asarray(x).reshape(-1)
    else:
        b = backends.for_array(x)
        flat = b.contiguous(x).reshape(-1) if b is not None else np.asarray(x).reshape(-1)
    return np.concatenate([to_host(flat[a:b]) for a, b in runs])


def check_initial(initial: Any, dtype: np.dtype) -> bool:
    """Refuse an ``initial=`` that is not one real number (or one not in an integer ``dtype``'s
    range); return whether it is a device array (whose value is not read here)."""
    if backends.for_array(initial) is None:
        initial_value(initial, dtype)
        return False
    if initial.size != 1 or initial.dtype.kind not in "biuf":
        raise TypeError(
            f"initial= as a device array takes one real element, got shape {initial.shape} of {initial.dtype}"
        )
    if not np.can_cast(initial.dtype, dtype, "same_kind"):
        # its value is not read here: refuse what NumPy's ufuncs would refuse (a float into
        # an integer scan); a wider integer wraps, as it does in NumPy's same_kind casts
        raise TypeError(f"initial= as a {initial.dtype} device array cannot carry into a {dtype} scan")
    return True


def initial_value(initial: Any, dtype: np.dtype) -> Any:
    """``initial=`` as a scalar of ``dtype``: one real number (or a one-element host array of
    one), an integer in range for integers.

    A one-element device array stays on its device, of ``dtype`` (cast there if it is
    not; its value is read by the scan there, unchecked), so that one scan can start from
    another's last element without the host waiting for it.
    """
    if backends.for_array(initial) is not None:
        check_initial(initial, dtype)
        return initial if initial.dtype == dtype else astype(initial.reshape(1), dtype)
    value = np.asarray(initial)
    if type(initial) is int and value.dtype == object:  # beyond 64 bits: the range check below
        value = np.asarray(float(initial))
    if value.size != 1 or value.dtype.kind not in "biuf":
        raise TypeError(f"initial must be one real number, got {initial!r}")
    value = value.reshape(())  # a one-element host array, as a device array may be
    if dtype.kind in "iu":
        if value.dtype.kind == "f" and not (np.isfinite(value) and value == np.floor(value)):
            raise ValueError(f"initial={initial!r} is not an integer; scans of {dtype.name} take integers")
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise ValueError(f"initial={initial!r} is out of {dtype.name}'s range")
    return value.astype(dtype)[()]


def check_offsets(offsets: Any, n: int) -> np.ndarray:
    """Validate CSR offsets for ``n`` values; return them as int64 on the host.

    Raises
    ------
    ValueError
        Naming the problem and the first bad index.
    """
    off = to_host(offsets)
    if off.ndim != 1 or off.size == 0:
        raise ValueError(f"offsets must be a non-empty 1-D array (nseg + 1 entries), got shape {off.shape}")
    if off.dtype.kind not in "iu":
        raise ValueError(f"offsets must have an integer dtype, got {off.dtype}")
    if off.dtype == np.uint64 and off.size and off.max() > np.iinfo(np.int64).max:
        i = int(np.flatnonzero(off > np.iinfo(np.int64).max)[0])
        raise ValueError(f"offsets must fit int64: offsets[{i}] == {off[i]}")
    off = off.astype(np.int64)
    if off[0] != 0:
        raise ValueError(f"offsets must start at 0: offsets[0] == {off[0]}")
    if off[-1] != n:
        raise ValueError(f"offsets must end at n == {n}: offsets[{off.size - 1}] == {off[-1]}")
    if (off[1:] < off[:-1]).any():  # one pass where they are fine; the first drop found after
        i = int(np.flatnonzero(off[1:] < off[:-1])[0]) + 1
        raise ValueError(
            f"offsets must be non-decreasing: offsets[{i}] == {off[i]} < offsets[{i - 1}] == {off[i - 1]}"
        )
    return off


def heads_from_flags(flags: Any, inp: Input) -> Any:
    """Head flags as the contiguous uint8 device array the kernels read (None when empty).

    Flags of any shape with one entry per value are read in C order, as the values are.
    """
    b, n = inp.backend, inp.n
    if inp.on_device and b.owns(flags):
        if flags.size != n:
            shape = tuple(flags.shape)
            raise ValueError(f"flags has {flags.size} entries (shape {shape}); the values have {n}")
        if np.dtype(flags.dtype).kind not in "biu":
            raise ValueError(f"flags must be bool or integer, got {flags.dtype}")
        if np.dtype(flags.dtype).itemsize == 1:  # the kernels test each byte against 0
            return b.contiguous(flags).reshape(n)
        return b.contiguous((flags != 0).astype(np.uint8)).reshape(n)
    host = np.asarray(to_host(flags))
    if not host.size and type(flags) in (list, tuple):  # [] reads as float64 to NumPy
        host = host.astype(bool)
    if host.size != n:
        raise ValueError(f"flags has {host.size} entries (shape {host.shape}); the values have {n}")
    host = host.reshape(n)
    if host.dtype.kind not in "biu":
        raise ValueError(f"flags must be bool or integer, got {host.dtype}")
    if host.dtype.itemsize == 1 and host.flags.c_contiguous:
        heads = host.view(np.uint8)
    else:
        heads = np.ascontiguousarray(host != 0, dtype=np.uint8)
    if not n:
        return None
    # a CPU device reads the host's bytes in place, where the call waits for the scan
    # (host input); a call on device arrays returns first, and the bytes may be gone
    shared = b.shared(heads, inp.queue, False) if inp.host is not None else None
    return shared if shared is not None else b.to_device(heads, inp.queue)


def heads_from_keys(keys: Any, inp: Input, dtype: str) -> Any:
    """Keys (one per value, of ``dtype``) as the contiguous array at the start of its buffer
    that the kernels read in place of flags (None when empty)."""
    b, n = inp.backend, inp.n
    if inp.on_device and b.owns(keys):
        if keys.size != n:
            raise ValueError(f"{keys.size} keys for {n} values")
        if np.dtype(keys.dtype).name != dtype:
            raise TypeError(f"the keys are {keys.dtype}, not {dtype}")
        if b.whole(keys) and b.aligned(keys):
            return keys.reshape(n)
        out = b.empty((n,), np.dtype(dtype), inp.queue)
        b.copy(out, b.contiguous(keys).reshape(n))
        return out
    host = np.ascontiguousarray(np.asarray(to_host(keys)), dtype=np.dtype(dtype)).reshape(-1)
    if host.size != n:
        raise ValueError(f"{host.size} keys for {n} values")
    if not n:
        return None
    shared = b.shared(host, inp.queue, False) if inp.host is not None else None
    return shared if shared is not None else b.to_device(host, inp.queue)


def device_offsets(offsets: Any, inp: Input) -> tuple[Any, bool]:
    """Offsets as a contiguous uint64 device array at the start of its buffer.

    Returns ``(array, checked)``: offsets that came from the host were checked there;
    offsets already on the device still need the device check (``checked`` False).
    A negative int64 offset read in place as uint64 reads huge, and that check then
    fails it (nothing after it can come back down to n).
    """
    b = inp.backend
    if inp.n and inp.on_device and b.owns(offsets):
        shape = tuple(offsets.shape)
        if len(shape) == 1 and shape[0] > 0 and np.dtype(offsets.dtype).kind in "iu":
            dev = b.contiguous(offsets)
            if dev.dtype.itemsize == 8 and not b.buffer(dev)[1]:
                dev = dev.view(np.uint64)  # in place: no copy of nseg + 1 words per call
            else:
                dev = dev.astype(np.uint64)  # a new array, at the start of its buffer
            return dev, False
        check_offsets(offsets, inp.n)  # raises, naming the problem
    off = check_offsets(offsets, inp.n)
    if not inp.n:
        return np.zeros(off.size, np.uint64), True
    # a CPU device reads them in place where the call waits for the scan (host input),
    # as it does the values; checked non-negative, int64 words read the same as uint64
    shared = b.shared(off.view(np.uint64), inp.queue, False) if inp.host is not None else None
    return (shared if shared is not None else b.to_device(off.view(np.uint64), inp.queue)), True
