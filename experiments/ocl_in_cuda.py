"""Is the OpenCL gap in the code or in the OpenCL runtime? Run NVIDIA OpenCL's PTX under CUDA.

Usage: python experiments/ocl_in_cuda.py LOG2N THREADS VECTORS MIN_BLOCKS [once]
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

from jitscan import bench
from jitscan.bench import studies
from jitscan.variants.chained import KERNEL


def main() -> None:
    e, threads, vectors, mb = map(int, sys.argv[1:5])
    once = "once" in sys.argv[5:]
    n = 1 << e
    shape = dict(threads=threads, vectors=vectors, min_blocks=mb)
    t_cu = bench.Timer("cupy")
    t_cl = bench.Timer("opencl")
    p_cu = studies.plan_for(t_cu, "fallback", "int32", **shape)
    p_cl = studies.plan_for(t_cl, "fallback", "int32", **shape)
    bound_cu = studies.bound(p_cu, t_cu, n)  # both builds, as jitscan makes them
    bound_cl = studies.bound(p_cl, t_cl, n)
    # the program keys and the launch arguments (kind, spin limit, blocking) of both
    pairs = ((bound_cu.spec, bound_cl.spec), (p_cu.launch_args, p_cl.launch_args))
    diff = {f.name: (getattr(a, f.name), getattr(b, f.name)) for a, b in pairs for f in fields(a)}
    diff = {k: v for k, v in diff.items() if v[0] != v[1]}
    print(f"2^{e} fallback int32 {threads}x{vectors} mb={mb}; spec fields that differ (cuda, opencl): {diff}")

    ptx = bound_cl.program.program.binaries[0].decode(errors="replace").replace("\0", "")
    path = os.path.join(tempfile.mkdtemp(), "opencl.ptx")
    with open(path, "w") as f:
        f.write(ptx)

    q = t_cu.queue
    rng = np.random.default_rng(1)
    host = rng.integers(-1000, 1000, n, dtype=np.int32)
    x = cupy.asarray(host)
    y = cupy.empty_like(x)
    expect = cupy.cumsum(x, dtype=cupy.int32)
    cu_prog = bound_cu.program
    # CuPy programs keep (function, positions of 32-bit arguments) per entry point
    nvrtc_kernel, narrow = cu_prog.kernels[KERNEL]
    ocl_kernel = cupy.RawModule(path=path).get_function(KERNEL)
    res = subprocess.run(
        ["ptxas", "-arch=sm_90", "-v", path, "-o", os.devnull], capture_output=True, text=True
    )
    print("  ptxas on the OpenCL PTX:", " | ".join(x.strip() for x in res.stderr.splitlines() if "Used" in x))

    def run(i: int) -> None:
        p_cu.launch(x, y, n, check=False, queue=q)

    results = {}
    for name, kernel in (("NVRTC build, CuPy launch", nvrtc_kernel), ("OpenCL PTX, CuPy launch", ocl_kernel)):
        cu_prog.kernels[KERNEL] = (kernel, narrow)
        y.fill(0)
        run(0)
        ok = bool((y == expect).all())
        if once:
            print(f"  {name}: ran once, correct={ok}")
            continue
        t = t_cu.time(run, 20)[0]
        results[name] = n / t / 1e9
        print(f"  {name}: {n / t / 1e9:.1f} Ge/s correct={ok} regs={kernel.attributes['num_regs']}")
    cu_prog.kernels[KERNEL] = (nvrtc_kernel, narrow)
    if once:
        return
    bo, qo = t_cl.backend, t_cl.queue
    xo = bo.to_device(host, qo)
    yo = bo.empty((n,), np.int32, qo)
    run_cl = studies.launcher(p_cl, t_cl, xo, yo, n)
    t = t_cl.time(run_cl, 20)[0]
    ok = bool(np.array_equal(bo.to_host(yo), cupy.asnumpy(expect)))
    print(f"  OpenCL build, PyOpenCL launch: {n / t / 1e9:.1f} Ge/s correct={ok}")
    # host clock over back-to-back launches: rules out an artifact of either event timer
    reps = 50
    for name, launch, sync in (
        ("CuPy", run, cupy.cuda.Device().synchronize),
        ("PyOpenCL", run_cl, qo.finish),
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
