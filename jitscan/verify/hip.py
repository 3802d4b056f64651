"""Programs compiled as HIP for AMD targets with clang-19, without an AMD GPU.

Debian's clang-19 with ROCm's HIP headers (libamdhip64-dev) and device libraries
(rocm-device-libs) compiles the CUDA dialect's text for gfx90a, gfx942 and gfx1100.
Debian's device libraries stop at gfx940: :func:`device_libs` adds the one-constant
ISA-version libraries of gfx942 and gfx1100, built from LLVM IR, in a directory of the
caller's. :func:`compile_hip` compiles one program and returns clang's kernel-resource-usage
remarks (VGPRs, spills, scratch, occupancy) per kernel; :func:`header` precompiles HIP's
runtime header for one target, which takes 1.2 s of a compile's 1.6-2.8 (clang-19 on the
CI's machine) when many programs are compiled for it. tests/test_target_compile.py and
experiments/amd_shapes.py use both; nothing here runs a program.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

CLANG = shutil.which("clang-19")
HIP_HEADER = Path("/usr/include/hip/hip_runtime.h")
DEVICE_LIBS = Path("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode")
#: the ISA versions Debian's device libraries lack (the value of __oclc_ISA_version)
MISSING_ISA = {"942": 9402, "1100": 11000}
_REMARK = re.compile(
    r"remark: +(Function Name|VGPRs|VGPRs Spill|ScratchSize \[bytes/lane\]|Occupancy \[waves/SIMD\]): (\S+)"
)


def available() -> bool:
    """Whether clang-19, ROCm's HIP headers and its device libraries are installed."""
    return bool(CLANG) and HIP_HEADER.exists() and (DEVICE_LIBS / "ocml.bc").exists()


def device_libs(root: Path) -> Path:
    """``root`` made a directory of ROCm's device libraries with the ISA versions Debian's lack."""
    for lib in DEVICE_LIBS.glob("*.bc"):
        (root / lib.name).symlink_to(lib)
    for name, version in MISSING_ISA.items():
        ll = root / f"isa_{name}.ll"
        ll.write_text(
            'target triple = "amdgcn-amd-amdhsa"\n'
            "@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) "
            f"constant i32 {version}, align 4\n"
        )
        out = root / f"oclc_isa_version_{name}.bc"
        run = subprocess.run(
            [
                str(CLANG),
                "--target=amdgcn-amd-amdhsa",
                "-nogpulib",
                "-c",
                "-emit-llvm",
                str(ll),
                "-o",
                str(out),
            ],
            capture_output=True, text=True,
        )  # fmt: skip
        if run.returncode:
            raise RuntimeError(f"building {out.name}: {run.stderr}")
    return root


def _flags(arch: str, libs: Path) -> list[str]:
    """clang's options for a HIP device compile for ``arch``: a precompiled header must be
    made with the same ones as the programs that include it."""
    return [str(CLANG), "-x", "hip", f"--offload-arch={arch}", "--cuda-device-only", "-O3", "-std=c++17",
            "--rocm-path=/usr", f"--rocm-device-lib-path={libs}"]  # fmt: skip


def header(arch: str, libs: Path, work: Path) -> Path:
    """HIP's runtime header precompiled for ``arch`` in directory ``work``, for
    :func:`compile_hip`'s ``pch``."""
    (work / "hip.h").write_text("#include <hip/hip_runtime.h>\n")
    out = work / f"hip-{arch}.pch"
    with open(out, "wb") as f:  # clang writes a device-only PCH to stdout, whatever -o says
        run = subprocess.run(
            [*_flags(arch, libs), "-Xclang", "-emit-pch", "-fsyntax-only", str(work / "hip.h")],
            stdout=f, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
    if run.returncode:
        raise RuntimeError(f"precompiling HIP's header for {arch}: {run.stderr}")
    return out


def compile_hip(
    source: str, arch: str, libs: Path, work: Path, pch: Path | None = None
) -> tuple[int, str, dict[str, dict[str, str]]]:
    """Compile ``source`` for ``arch`` in directory ``work``: (exit status, the compiler's
    warnings and errors, each kernel's resource remarks by name). ``pch``: HIP's header as
    :func:`header` made it for ``arch``, in place of parsing it again."""
    src = work / "p.cu"
    src.write_text(source)
    include = ["-Xclang", "-include-pch", "-Xclang", str(pch)] if pch else ["-include", "hip/hip_runtime.h"]
    run = subprocess.run(
        [*_flags(arch, libs), "--no-gpu-bundle-output", *include, "-Rpass-analysis=kernel-resource-usage",
         "-c", str(src), "-o", str(work / "p.co")],
        capture_output=True, text=True,
    )  # fmt: skip
    kernels: dict[str, dict[str, str]] = {}
    name = ""
    for m in _REMARK.finditer(run.stderr):
        if m.group(1) == "Function Name":
            name = m.group(2)
            kernels[name] = {}
        else:
            kernels[name][m.group(1)] = m.group(2)
    # the remarks echo their source line: what counts is a warning or an error
    other = "\n".join(line for line in run.stderr.splitlines() if "warning:" in line or "error:" in line)
    return run.returncode, other, kernels
