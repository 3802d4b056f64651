"""Which OpenCL device jitscan takes by default, and the in-thread sibling of a CPU device.

Apart from the backend (opencl.py) so that device choice, which a test can drive with
fake platforms, reads on its own.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from ..errors import BackendUnavailableError

try:
    import pyopencl as cl
except ImportError:  # the backend says why it is unavailable (opencl.py)
    cl = None


#: platforms that simulate a device for checking kernels, never the default: Oclgrind
#: reports itself as every device type at once (a GPU among them)
SIMULATORS = ("Oclgrind",)


def pick_device() -> Any:
    """A GPU if there is one, else the device with the most compute units (PoCL on a CPU
    machine: its threaded driver before its single-thread one, when both are there).

    A simulator (Oclgrind) is taken only when it is the only device, with a warning: it
    runs kernels thousands of times slower than a device, and a setting that hides every
    other device (``POCL_DEVICES`` set but empty, say) would otherwise go unnoticed.
    PYOPENCL_CTX, if set, chooses as it does for PyOpenCL itself.
    """
    if os.environ.get("PYOPENCL_CTX"):
        return cl.create_some_context(interactive=False)
    platforms = cl.get_platforms()
    devices = [d for p in platforms for d in p.get_devices()]
    if not devices:
        raise BackendUnavailableError("no OpenCL device found")
    real = [d for d in devices if not d.platform.name.strip().startswith(SIMULATORS)]
    gpus = [d for d in real if d.type & cl.device_type.GPU]
    if gpus:
        return cl.Context([gpus[0]])
    if not real:
        named = os.environ.get("POCL_DEVICES")
        hint = "" if named is None else f" (POCL_DEVICES={named!r}: PoCL lists only the drivers it names)"
        warnings.warn(
            f"jitscan: the only OpenCL device is the simulator {devices[0].platform.name.strip()!r}, which "
            f"runs kernels thousands of times slower than a device{hint}",
            stacklevel=2,
        )
    return cl.Context([max(real or devices, key=lambda d: d.max_compute_units)])  # the first of equals


def in_thread_sibling(device: Any) -> Any:
    """A CPU device of ``device``'s platform with one compute unit, where ``device`` is a
    CPU device with several; else None.

    PoCL lists its single-thread driver (``basic``, later ``cpu-minimal``) beside the
    threaded one when ``POCL_DEVICES`` names both: it runs a kernel in the thread that
    waits for it, without handing the command to worker threads.
    """
    if not device.type & cl.device_type.CPU or device.max_compute_units < 2:
        return None
    others = (d for d in device.platform.get_devices() if d.int_ptr != device.int_ptr)
    return next((d for d in others if d.type & cl.device_type.CPU and d.max_compute_units == 1), None)
