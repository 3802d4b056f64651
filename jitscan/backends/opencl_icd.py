"""OpenCL's own entry points, where PyOpenCL's call costs more than the driver's: the
offsets alarm's read, and the compiled common call's launches (``entry_points``).

PyOpenCL makes an event object for every command it enqueues, and asking that event
whether it has run is a call into the driver too. The offsets alarm's copy of its flag
(``OpenCLBackend.alarm``) needs neither: the host only reads what the copy brings, and a
flag that has not arrived yet reads as not set. On NVIDIA's driver 580 (H200,
``experiments/ocl_raw_enqueue.py``) a read of 4 bytes into pinned memory cost 6.1-6.3 µs
through ``clEnqueueReadBuffer`` with no event, against 10.4-10.6 through
``pyopencl.enqueue_copy``, and the event's status is one more call on each later call.

The functions come from the ICD loader PyOpenCL itself loaded (its wheel ships one), or
the system's: a loader only dispatches through the table in each object, so any loader
reaches the driver that made the object.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

_lib: Any = None
_tried = False


def _loader() -> Any:
    """The ICD loader as ctypes sees it, or None where none loads."""
    global _lib, _tried
    if _tried:
        return _lib
    _tried = True
    candidates: list[str] = []
    try:
        import pyopencl._cl as native

        here = Path(native.__file__).parent
        candidates += [str(p) for p in sorted((here / ".libs").glob("libOpenCL*.so*"))]
    except (ImportError, AttributeError, TypeError):
        pass
    found = ctypes.util.find_library("OpenCL")
    if found:
        candidates.append(found)
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)
            read = lib.clEnqueueReadBuffer
        except (OSError, AttributeError):
            continue
        vp, u32, sz = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t
        read.argtypes = [vp, vp, u32, sz, sz, vp, u32, vp, vp]
        read.restype = ctypes.c_int32
        _lib = lib
        break
    return _lib


def entry_points() -> tuple[int, int] | None:
    """The addresses of ``clSetKernelArg`` and ``clEnqueueNDRangeKernel`` in the ICD loader
    (for the compiled common call, backends/_common_call.c), or None where none loads."""
    lib = _loader()
    if lib is None:
        return None
    try:
        found = [ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in _LAUNCH]
    except AttributeError:
        return None
    return (found[0], found[1]) if all(found) else None


#: the entry points a compiled launch calls
_LAUNCH = ("clSetKernelArg", "clEnqueueNDRangeKernel")


def reader(queue: Any, buf: Any, host: Any, nbytes: int) -> Callable[[], None] | None:
    """``copy()``: enqueue a read of ``nbytes`` of ``buf`` into the host memory at
    ``host`` (a NumPy array that outlives the reader: pinned memory, for the driver to
    write it as the queue runs), not waiting and asking no event; None where the ICD
    loader's entry point is not at hand (the caller takes PyOpenCL's). A failed enqueue
    raises ``RuntimeError`` with OpenCL's error code."""
    lib = _loader()
    if lib is None:
        return None
    read = lib.clEnqueueReadBuffer
    q, b, at = queue.int_ptr, buf.int_ptr, host.ctypes.data

    def copy() -> None:
        status = read(q, b, 0, 0, nbytes, at, 0, None, None)
        if status:
            raise RuntimeError(
                f"clEnqueueReadBuffer of the offsets alarm's flag failed: OpenCL error {status}"
            )

    # the same read as a compiled call makes it (_common_call.c): the entry point, the buffer
    copy.native = (ctypes.cast(read, ctypes.c_void_p).value, b)  # type: ignore[attr-defined]
    return copy
