"""Resource report of the OpenCL kernels on NVIDIA's driver, beside their CUDA builds.

Usage: python scripts/ocl_ptx.py [DTYPE] [OUTDIR]
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

from jitscan import backends, tuning
from jitscan.dtypes import lookup
from jitscan.kernels import render
from jitscan.monoid import resolve

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
    b = backends.require("opencl")
    q = b.queue_of(None)
    info = b.device_info(q)
    base = dict(kind="inclusive", dtype=lookup(dtype), monoid=resolve("add"))
    for variant, segmented in (("memcpy", ""), ("fallback", ""), ("fallback", "flags")):
        spec = tuning.spec_for(info, variant=variant, segmented=segmented, **base)
        variant += f"_{segmented}" if segmented else ""
        prog = b.program(spec, q).program  # as jitscan builds it (PTX with .minnctapersm)
        ptx = prog.binaries[0].decode(errors="replace").replace("\0", "")  # NUL-terminated
        p_cl = os.path.join(out, f"{variant}_{dtype}_opencl.ptx")
        with open(p_cl, "w") as f:
            f.write(ptx)
        p_src = os.path.join(out, f"{variant}_{dtype}.cu")  # the same spec as CUDA text
        with open(p_src, "w") as f:
            f.write(render(spec.program_spec(), "cuda"))
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
