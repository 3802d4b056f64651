"""Descriptions of the GPUs jitscan renders programs for without one at hand.

``jitscan.source(..., device="gfx942")`` renders the program that device would build,
with its subgroup width, local memory, clock and defaults; CI compiles those programs for
each target (tests/test_target_compile.py). The figures are the vendors' published ones:

- AMD (ROCm's HIP): gfx90a (MI200) and gfx942 (MI300) run 64-lane wavefronts, gfx1100
  (RDNA3, Radeon RX 7900) 32-lane ones, which is what HIP compiles them for by default; a
  workgroup declares at most 64 KiB of LDS; kernels read ``wall_clock64()``, whose rate
  ROCm documents as 100 MHz (hipDeviceAttributeWallClockRate).
- NVIDIA (CUDA): sm_80 (A100), sm_90 (H100, H200), sm_100 (B200): 32-lane warps, 48 KiB
  of static shared memory a block, the PTX ``%globaltimer``.
"""

from __future__ import annotations

from .base import DeviceInfo

#: the AMD targets: (wavefront lanes, compute units, what it is)
_AMD = {
    "gfx90a": (64, 110, "AMD Instinct MI200 (CDNA2)"),
    "gfx942": (64, 304, "AMD Instinct MI300 (CDNA3)"),
    "gfx1100": (32, 96, "AMD Radeon RX 7900 (RDNA3)"),
}
#: the NVIDIA targets: (multiprocessors, what it is)
_NVIDIA = {
    "sm_80": (108, "NVIDIA A100 (Ampere)"),
    "sm_90": (132, "NVIDIA H100 / H200 (Hopper)"),
    "sm_100": (148, "NVIDIA B200 (Blackwell)"),
}
#: every target described here
NAMES = (*_AMD, *_NVIDIA)


def target(name: str) -> DeviceInfo:
    """The description of target ``name`` (one of :data:`NAMES`), as CUDA or HIP builds for it.

    Raises
    ------
    ValueError
        For a target not described here, naming those that are.
    """
    if name in _AMD:
        lanes, units, what = _AMD[name]
        return DeviceInfo(
            name=f"{what}, {name}",
            backend="cupy",
            is_gpu=True,
            shuffle_width=lanes,
            max_threads=1024,
            int64_atomics=True,
            fp64=True,
            local_memory=64 * 1024,
            clock="wall_clock64",
            # 512 VGPRs a lane of a SIMD on CDNA (256 of them architected), 1536 on RDNA3 in
            # wave32: a thread (a lane) addresses at most 256 (its ISA's VGPR field)
            thread_registers=256,
            compute_units=units,
            arch=name,
        )
    if name in _NVIDIA:
        units, what = _NVIDIA[name]
        return DeviceInfo(
            name=f"{what}, {name}",
            backend="cupy",
            is_gpu=True,
            shuffle_width=32,
            max_threads=1024,
            int64_atomics=True,
            fp64=True,
            local_memory=48 * 1024,
            clock="globaltimer",
            registers=64 * 1024,
            thread_registers=255,
            compute_units=units,
            arch=name,
        )
    raise ValueError(f"no description of target {name!r}; targets: {', '.join(NAMES)}")
