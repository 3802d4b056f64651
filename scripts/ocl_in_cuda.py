"""Is the OpenCL gap in the code or in the OpenCL runtime? Run NVIDIA OpenCL's PTX under CUDA.

Usage: python scripts/ocl_in_cuda.py LOG2N THREADS VECTORS MIN_BLOCKS [once]
Builds the fallback int32 scan for one tile shape with NVIDIA's OpenCL (which returns
PTX) and with NVRTC, then times, with jitscan.bench's device timer:
  - the NVRTC build launched by CuPy,
  - the OpenCL compiler's PTX loaded into CuPy and launched the same way,
  - the OpenCL build launched by PyOpenCL.
If the OpenCL PTX is as fast under CUDA as the NVRTC build, the code is not the cause.
With ``once`` each CUDA-launched build runs once (for ncu, kernel name js_chained).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import fields

import cupy
import numpy as np

from jitscan import bench, execute, tuning
from jitscan.dtypes import lookup
from jitscan.monoid import resolve


def main() -> None:
    e, threads, vectors, mb = map(int, sys.argv[1:5])
    once = "once" in sys.argv[5:]
    n = 1 << e
    base = dict(kind="inclusive", dtype=lookup("int32"), monoid=resolve("add"), n=n)
    shape = dict(threads=threads, vectors=vectors, min_blocks=mb)
    t_cu = bench.Timer("cupy")
    t_cl = bench.Timer("opencl")
    s_cu = tuning.spec_for(t_cu.info, variant="fallback", **base, **shape)
    s_cl = tuning.spec_for(t_cl.info, variant="fallback", **base, **shape)
    diff = {f.name: (getattr(s_cu, f.name), getattr(s_cl, f.name)) for f in fields(s_cu)}
    diff = {k: v for k, v in diff.items() if v[0] != v[1]}
    print(f"2^{e} fallback int32 {threads}x{vectors} mb={mb}; spec fields that differ (cuda, opencl): {diff}")

    q_cl = t_cl.queue
    prog = t_cl.backend.program(s_cl, q_cl).program  # as jitscan builds it
    ptx = prog.binaries[0].decode(errors="replace").replace("\0", "")
    path = os.path.join(tempfile.mkdtemp(), "opencl.ptx")
    with open(path, "w") as f:
        f.write(ptx)

    b, q = t_cu.backend, t_cu.queue
    rng = np.random.default_rng(1)
    host = rng.integers(-1000, 1000, n, dtype=np.int32)
    x = cupy.asarray(host)
    y = cupy.empty_like(x)
    expect = cupy.cumsum(x, dtype=cupy.int32)
    cu_prog = b.program(s_cu, q)
    nvrtc_kernel = cu_prog.kernels["js_chained"]
    ocl_kernel = cupy.RawModule(path=path).get_function("js_chained")
    res = subprocess.run(
        ["ptxas", "-arch=sm_90", "-v", path, "-o", os.devnull], capture_output=True, text=True
    )
    print("  ptxas on the OpenCL PTX:", " | ".join(x.strip() for x in res.stderr.splitlines() if "Used" in x))

    def run(i: int) -> None:
        execute.run(b, q, s_cu, x, y, n, check=False)

    results = {}
    for name, kernel in (("NVRTC build, CuPy launch", nvrtc_kernel), ("OpenCL PTX, CuPy launch", ocl_kernel)):
        cu_prog.kernels["js_chained"] = kernel
        y.fill(0)
        run(0)
        ok = bool((y == expect).all())
        if once:
            print(f"  {name}: ran once, correct={ok}")
            continue
        t = t_cu.time(run, 20)[0]
        results[name] = n / t / 1e9
        print(f"  {name}: {n / t / 1e9:.1f} Ge/s correct={ok} regs={kernel.attributes['num_regs']}")
    cu_prog.kernels["js_chained"] = nvrtc_kernel
    if once:
        return
    bo, qo = t_cl.backend, t_cl.queue
    xo = bo.to_device(host, qo)
    yo = bo.empty((n,), np.int32, qo)
    t = t_cl.time(lambda i: execute.run(bo, qo, s_cl, xo, yo, n, check=False), 20)[0]
    ok = bool(np.array_equal(bo.to_host(yo), cupy.asnumpy(expect)))
    print(f"  OpenCL build, PyOpenCL launch: {n / t / 1e9:.1f} Ge/s correct={ok}")
    # host clock over back-to-back launches: rules out an artifact of either event timer
    reps = 50
    for name, launch, sync in (
        ("CuPy", run, cupy.cuda.Device().synchronize),
        ("PyOpenCL", lambda i: execute.run(bo, qo, s_cl, xo, yo, n, check=False), qo.finish),
    ):
        launch(0)
        sync()
        t0 = time.perf_counter()
        for i in range(reps):
            launch(i)
        sync()
        rate = n * reps / (time.perf_counter() - t0) / 1e9
        print(f"  host clock, {reps} launches through {name}: {rate:.1f} Ge/s")


if __name__ == "__main__":
    main()
