"""Which tile shapes compile without spills for AMD's targets, and at what occupancy?

Usage: python experiments/amd_shapes.py ARCH[,ARCH...] [DTYPE,...]

Renders the fallback scan (flat, by flags, by offsets; the large-input size class) for
each target of ``backends.targets`` at several shapes, with no blocks-per-CU bound,
compiles it with clang-19 as HIP (ROCm's headers and device libraries, as
tests/test_target_compile.py builds them) and prints clang's kernel-resource-usage
remarks for js_chained: VGPRs, spilled VGPRs, scratch bytes a lane, waves a SIMD. No AMD
GPU is needed, and none was: what the shapes run at is not measured here.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from jitscan import variants
from jitscan.backends import targets
from jitscan.dtypes import lookup
from jitscan.operators import resolve
from jitscan.plan import tuning

LIBS = Path("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode")
ISA = {"942": 9402, "1100": 11000}  # Debian's device libraries stop at gfx940
SHAPES = ((256, 4), (256, 8), (128, 8), (128, 16))
REMARK = re.compile(
    r"remark: +(VGPRs|VGPRs Spill|ScratchSize \[bytes/lane\]|Occupancy \[waves/SIMD\]): (\S+)"
)


def device_libs(root: Path) -> Path:
    for lib in LIBS.glob("*.bc"):
        (root / lib.name).symlink_to(lib)
    for name, version in ISA.items():
        ll = root / f"isa_{name}.ll"
        ll.write_text(
            'target triple = "amdgcn-amd-amdhsa"\n@__oclc_ISA_version = linkonce_odr protected '
            f"local_unnamed_addr addrspace(4) constant i32 {version}, align 4\n"
        )
        subprocess.run(
            ["clang-19", "--target=amdgcn-amd-amdhsa", "-nogpulib", "-c", "-emit-llvm", str(ll), "-o",
             str(root / f"oclc_isa_version_{name}.bc")],
            check=True,
        )  # fmt: skip
    return root


def use(source: str, arch: str, libs: Path, work: Path) -> dict[str, str]:
    (work / "p.cu").write_text(source)
    run = subprocess.run(
        ["clang-19", "-x", "hip", f"--offload-arch={arch}", "--cuda-device-only", "--no-gpu-bundle-output",
         "-O3", "-std=c++17", "--rocm-path=/usr", f"--rocm-device-lib-path={libs}", "-include",
         "hip/hip_runtime.h", "-Rpass-analysis=kernel-resource-usage", "-c", str(work / "p.cu"), "-o",
         str(work / "p.co")],
        capture_output=True, text=True,
    )  # fmt: skip
    kernel = run.stderr.split("Function Name: js_chained", 1)[-1]
    return {m.group(1): m.group(2) for m in REMARK.finditer(kernel.split("Function Name:", 1)[0])}


def main() -> None:
    arches = sys.argv[1].split(",") if len(sys.argv) > 1 else ["gfx90a", "gfx942", "gfx1100"]
    dtypes = sys.argv[2].split(",") if len(sys.argv) > 2 else ["int32", "float64"]
    print("| target | dtype | form | threads x vectors | VGPRs | spilled | scratch B/lane | waves/SIMD |")
    print("|---|---|---|---|---|---|---|---|")
    add = resolve("add")
    with tempfile.TemporaryDirectory() as d:
        libs = device_libs(Path(d))
        for arch in arches:
            info = targets.target(arch)
            for dt in dtypes:
                for seg in ("", "flags", "offsets"):
                    for threads, vectors in SHAPES:
                        shape = {"threads": threads, "vectors": vectors, "min_blocks": 0}
                        spec = tuning.spec_for(
                            info,
                            variant="fallback",
                            kind="inclusive",
                            dtype=lookup(dt),
                            monoid=add,
                            segmented=seg,
                            **shape,
                        )
                        with tempfile.TemporaryDirectory() as w:
                            got = use(variants.get("fallback").source(spec, "cuda"), arch, libs, Path(w))
                        cells = [
                            got.get(k, "?") for k in ("VGPRs", "VGPRs Spill", "ScratchSize [bytes/lane]")
                        ]
                        waves = got.get("Occupancy [waves/SIMD]", "?")
                        row = [arch, dt, seg or "flat", f"{threads} x {vectors}", *cells, waves]
                        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
