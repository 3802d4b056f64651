"""Resource report of the OpenCL kernels on NVIDIA's driver, beside their CUDA builds.

Usage: python experiments/ocl_ptx.py [DTYPE] [OUTDIR]
NVIDIA's OpenCL returns PTX as the program binary. For memcpy, fallback and the
segmented fallback (uint8 flags) of one dtype this writes that PTX and the nvcc PTX of
the same kernel to OUTDIR, counts the global loads and stores by width, and prints
ptxas's register/spill report for both, so that the two builds of one source can be
compared instruction by instruction.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import tempfile

import jitscan
from jitscan import variants

#: a size of the largest size class (above 16 MiB of every dtype): the large-input programs
N = 1 << 28

_MEM = re.compile(r"\b((?:ld|st)\.global(?:\.[a-z0-9]+)*)")


def counts(ptx: str) -> dict[str, int]:
    """Global loads and stores, keyed by their full PTX opcode."""
    return dict(sorted(collections.Counter(_MEM.findall(ptx)).items()))


def ptxas(path: str) -> str:
    res = subprocess.run(
        ["ptxas", "-arch=sm_90", "-v", path, "-o", os.devnull], capture_output=True, text=True
    )
    lines = res.stderr.splitlines()
    return " | ".join(line.split("info    : ")[-1] for line in lines if "Used" in line or "spill" in line)


def main() -> None:
    dtype = sys.argv[1] if len(sys.argv) > 1 else "int32"
    out = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp()
    os.makedirs(out, exist_ok=True)
    for variant, segmented in (("memcpy", ""), ("fallback", ""), ("fallback", "flags")):
        scan = jitscan.plan(dtype, variant=variant, backend="opencl", segmented=segmented)
        bound = scan.bound(scan.backend.queue_for(None), N)  # as jitscan builds it (PTX with .minnctapersm)
        spec = bound.spec
        variant += f"_{segmented}" if segmented else ""
        ptx = bound.program.program.binaries[0].decode(errors="replace").replace("\0", "")  # NUL-terminated
        p_cl = os.path.join(out, f"{variant}_{dtype}_opencl.ptx")
        with open(p_cl, "w") as f:
            f.write(ptx)
        p_src = os.path.join(out, f"{variant}_{dtype}.cu")  # the same spec as CUDA text
        with open(p_src, "w") as f:
            f.write(variants.source(spec, "cuda"))
        p_cu = os.path.join(out, f"{variant}_{dtype}_cuda.ptx")
        subprocess.run(["nvcc", "-arch=sm_90", "--fmad=false", "-ptx", p_src, "-o", p_cu], check=True)
        with open(p_cu) as f:
            ptx_cu = f.read()
        shape = f"threads={spec.threads} vectors={spec.vectors} min_blocks={spec.min_blocks}"
        print(f"== {variant} {dtype} {shape}")
        print("  opencl:", counts(ptx), "|", ptxas(p_cl))
        print("  cuda:  ", counts(ptx_cu), "|", ptxas(p_cu))


if __name__ == "__main__":
    main()
