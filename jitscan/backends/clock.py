"""The device clocks look-back's watchdog reads, and how fast each ticks.

A watchdog that counts spins alone is not bounded in time: a spin lasts tens of
nanoseconds on an idle GPU, microseconds on a CPU device whose workgroup loops over its
work-items, and a whole time slice when the OS preempts the thread being waited on. So
where a kernel can read a clock, the watchdog also stops a wait that has lasted
``spin_timeout`` seconds. The clocks:

``globaltimer``
    NVIDIA's PTX ``%globaltimer``, nanoseconds, the same on every SM: CUDA, and NVIDIA's
    OpenCL where it takes inline PTX.
``tsc``
    The time-stamp counter of an x86-64 host whose counter is invariant (``constant_tsc``
    and ``nonstop_tsc``): read by PoCL's kernels, which run on the host's own cores. Its
    rate is measured once per process against :func:`time.perf_counter`.
``wall_clock64``
    HIP's constant-rate counter on AMD GPUs, at the rate ROCm documents for its
    Instinct and RDNA parts, 100 MHz (``hipDeviceAttributeWallClockRate``). A device whose
    counter ran at another rate would bound a wait by a proportionally other time.

Other devices have no clock jitscan can read (OpenCL C has none); there only the spin
limit bounds a wait.
"""

from __future__ import annotations

import platform
import time
from functools import cache

GLOBALTIMER_HZ = 1e9
WALL_CLOCK_HZ = 1e8


@cache
def host_tsc() -> bool:
    """Whether the host's time-stamp counter ticks at one rate on every core, asleep or not."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "constant_tsc" in flags and "nonstop_tsc" in flags


@cache
def _tsc_reader():  # noqa: ANN202 - a Numba dispatcher
    from llvmlite import ir
    from numba import njit, types
    from numba.extending import intrinsic

    @intrinsic
    def readcyclecounter(typingctx):  # noqa: ANN001, ANN202, ARG001 - Numba's intrinsic protocol
        def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202, ARG001
            fn = builder.module.declare_intrinsic(
                "llvm.readcyclecounter", fnty=ir.FunctionType(ir.IntType(64), [])
            )
            return builder.call(fn, [])

        return types.uint64(), codegen

    @njit(cache=True)
    def tsc() -> int:
        # the instruction PoCL's kernels run for __builtin_readcyclecounter (RDTSC)
        return readcyclecounter()

    return tsc


@cache
def ticks_per_second(clock: str) -> float:
    """How many ticks of ``clock`` make a second."""
    if clock == "globaltimer":
        return GLOBALTIMER_HZ
    if clock == "wall_clock64":
        return WALL_CLOCK_HZ
    if clock == "tsc":
        tsc = _tsc_reader()
        tsc()  # compiled before the clock starts
        c0, t0 = tsc(), time.perf_counter()
        time.sleep(0.02)
        c1, t1 = tsc(), time.perf_counter()
        return (c1 - c0) / (t1 - t0)
    raise ValueError(f"no clock named {clock!r}")


def wait_units(clock: str, seconds: float) -> int:
    """``seconds`` in the watchdog's units of 1,024 ticks of ``clock`` (at least 1, at most 2**32 - 1)."""
    units = int(seconds * ticks_per_second(clock) / 1024) + 1
    return min(units, (1 << 32) - 1)
