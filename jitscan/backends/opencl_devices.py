"""Which OpenCL device jitscan takes by default, and the in-thread sibling of a CPU device.

Apart from the backend (opencl.py) so that device choice, which a test can drive with
fake platforms, reads on its own.
"""

from __future__ import annotations

import os
import re
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

#: a PoCL platform's version string names its release: "OpenCL 3.0 PoCL 3.1+debian  Linux, ..."
_POCL_RELEASE = re.compile(r"\bPoCL (\d+)\.(\d+)")


def pocl_release(platform: Any) -> tuple[int, int] | None:
    """The PoCL release ``(major, minor)`` that ``platform``'s version string names; None
    for another platform, or a version string that names none."""
    m = _POCL_RELEASE.search(platform.version)
    return None if m is None else (int(m.group(1)), int(m.group(2)))


def pick_device() -> Any:
    """A GPU if there is one, else the device with the most compute units (PoCL on a CPU
    machine: its threaded driver before its single-thread one, when both are there).

    Of CPU devices with equally many compute units, the first listed wins, except that a
    PoCL gives way to a newer PoCL (its release as the platform's version string names
    it): PyOpenCL's wheel bundles a PoCL whose LLVM is older than some processors (its
    PoCL 3.0 with LLVM 14 builds no kernel on an AMD Zen 5, "unknown target CPU"), and
    a system PoCL installed beside it (Debian's ``pocl-opencl-icd``) is listed before or
    after it as the ICD loader finds them. A device whose platform names no PoCL release
    keeps its place. The choice reads only what the platforms report: it builds nothing.

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
    pool = real or devices
    best = max(pool, key=lambda d: d.max_compute_units)  # the first of equals
    return cl.Context([_newest_pocl(best, pool)])


def _newest_pocl(best: Any, pool: list[Any]) -> Any:
    """``best``, or where it is a PoCL CPU device, the first CPU device of ``pool`` with as
    many compute units and the newest PoCL release newer than its own."""
    release = pocl_release(best.platform)
    if release is None or not best.type & cl.device_type.CPU:
        return best
    peers = [
        d
        for d in pool
        if d.type & cl.device_type.CPU
        and d.max_compute_units == best.max_compute_units
        and (pocl_release(d.platform) or release) > release
    ]
    return max(peers, key=lambda d: pocl_release(d.platform), default=best)  # the first of equals


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
