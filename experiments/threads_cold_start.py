"""Do fresh processes whose threads all start scanning at once survive, and get right results?

Usage: python experiments/threads_cold_start.py [--backend opencl] [--mode threads|serial|warm]
       [--procs 8] [--waves 10] [--seconds 2] [--variant fallback|lookback|rts]
       [--pyopencl-only immediate|deferred|none [--alloc-lock]] [--timeout 90]

Each wave starts ``--procs`` new processes at the same moment; each runs the eight cases of
``tests/test_reliability.py -k own_scans`` (its own dtype, op and variant per case) for
``--seconds`` in eight threads (``threads``), in one thread (``serial``), or in eight threads
after one call of each case in the main thread (``warm``: every program built before the
threads start). ``--variant`` gives every case that variant (the dtypes and ops stay).
``--pyopencl-only`` runs no jitscan: eight threads copy in, launch a one-line kernel and copy
out on one queue, 300 times each, the results from a PyOpenCL ``MemoryPool`` over its
``ImmediateAllocator`` or ``DeferredAllocator`` (``--alloc-lock``: each allocation under one
lock), or from no pool.
A process that dies prints its Python stacks (faulthandler); with
``LD_PRELOAD`` of a handler that prints native frames, where it died.
Prints one row per wave and the totals: clean exits, segfaults, processes killed at
``--timeout`` seconds, other exits, and clean exits that saw a wrong result or an error.
"""

from __future__ import annotations

import argparse
import faulthandler
import subprocess
import sys
import threading
import time
from typing import Any

import numpy as np

CASES = [
    ("int32", "add", "fallback"),
    ("int64", "max", "lookback"),
    ("float32", "add", "rts"),
    ("float64", "min", "fallback"),
    ("uint32", "add", "lookback"),
    ("uint64", "max", "rts"),
    ("int32", "xor", "rts"),
    ("int64", "add", "fallback"),
]
UFUNC = {"add": np.add, "max": np.maximum, "min": np.minimum, "xor": np.bitwise_xor}


def in_threads(run: Any, count: int, *args: Any) -> None:
    """``run(k, *args)`` in ``count`` threads at once (k = 0 ..), until every one returns."""
    threads = [threading.Thread(target=run, args=(k, *args)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def worker(backend: str, mode: str, seconds: float, variant: str | None) -> None:
    """One process: the cases until ``seconds`` have passed; prints 'rounds R wrong W errors E'."""
    import jitscan

    cases = [(dt, op, variant or v) for dt, op, v in CASES]
    faulthandler.enable()
    rng = np.random.default_rng(7)
    xs = [rng.integers(0, 100, 40_000 + 1_000 * k).astype(dt) for k, (dt, _, _) in enumerate(cases)]
    wrong: list[tuple] = []
    errors: list[str] = []

    def run(k: int, calls: int) -> None:
        _, op, var = cases[k]
        want = UFUNC[op].accumulate(xs[k])
        for _ in range(calls):
            try:
                got = jitscan.scan(xs[k], op=op, variant=var, backend=backend)
            except Exception as exc:  # noqa: BLE001 - counted and shown
                errors.append(f"{cases[k]}: {exc!r}"[:200])
                continue
            if not np.array_equal(got, want):
                bad = np.flatnonzero(got != want)
                wrong.append((cases[k], bad.size, int(bad[0])))

    if mode == "warm":
        for k in range(len(cases)):
            run(k, 1)
    sys.setswitchinterval(1e-5)
    t0, rounds = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        if mode == "serial":
            for k in range(len(cases)):
                run(k, 30)
        else:
            in_threads(run, len(cases), 30)
        rounds += 1
    print(f"rounds {rounds} wrong {len(wrong)} errors {len(errors)}")
    for w in wrong[:5]:
        print("  wrong", w)
    for e in errors[:5]:
        print("  error", e)


def pyopencl_only(allocator: str, alloc_lock: bool) -> None:
    """One process of the PyOpenCL-only reproduction; prints 'rounds 1 wrong W errors 0'."""
    import warnings

    import pyopencl as cl
    import pyopencl.array as cla
    import pyopencl.tools as cl_tools

    faulthandler.enable()
    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    gpus = [d for d in devices if d.type & cl.device_type.GPU and "Oclgrind" not in d.platform.name]
    cpus = [d for d in devices if "Portable" in d.platform.name]
    ctx = cl.Context((gpus or cpus)[:1])
    queue = cl.CommandQueue(ctx)
    pool = None
    if allocator != "none":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the deferred one's warning
            alloc = (
                cl_tools.ImmediateAllocator(queue)
                if allocator == "immediate"
                else cl_tools.DeferredAllocator(ctx)
            )
            pool = cl_tools.MemoryPool(alloc)
        if alloc_lock:
            lock, pooled = threading.Lock(), pool

            def pool(nbytes: int) -> Any:
                with lock:
                    return pooled(nbytes)

    src = """__kernel void inc(__global const int* a, __global int* b) {
        size_t g = get_global_id(0);
        b[g] = a[g] + 1; }"""
    prg = cl.Program(ctx, src).build()
    wrong: list[int] = []

    def run(k: int) -> None:
        x = np.arange(40_000 + 1_000 * k, dtype=np.int32)
        kernel = cl.Kernel(prg, "inc")  # a kernel object per thread: its arguments are its own
        for _ in range(300):
            a = cla.to_device(queue, x)
            b = cla.empty(queue, x.shape, x.dtype, allocator=pool)
            kernel(queue, (x.size,), None, a.data, b.data)
            if not np.array_equal(b.get(), x + 1):
                wrong.append(k)

    sys.setswitchinterval(1e-5)
    in_threads(run, 8)
    print(f"rounds 1 wrong {len(wrong)} errors 0")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="opencl")
    ap.add_argument("--mode", choices=("threads", "serial", "warm"), default="threads")
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--waves", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--timeout", type=float, default=90.0)
    ap.add_argument("--variant", choices=("fallback", "lookback", "rts"))
    ap.add_argument("--pyopencl-only", choices=("immediate", "deferred", "none"))
    ap.add_argument("--alloc-lock", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        if args.pyopencl_only:
            pyopencl_only(args.pyopencl_only, args.alloc_lock)
        else:
            worker(args.backend, args.mode, args.seconds, args.variant)
        return
    cmd = [sys.executable, __file__, "--worker", "--backend", args.backend, "--mode", args.mode]
    cmd += ["--seconds", str(args.seconds)] + (["--variant", args.variant] if args.variant else [])
    cmd += ["--pyopencl-only", args.pyopencl_only] if args.pyopencl_only else []
    cmd += ["--alloc-lock"] if args.alloc_lock else []
    totals = {"clean": 0, "segfault": 0, "timeout": 0, "other": 0, "wrong": 0}
    for wave in range(1, args.waves + 1):
        procs = [
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for _ in range(args.procs)
        ]
        codes = []
        for p in procs:
            try:
                out, _ = p.communicate(timeout=args.timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
                codes.append("timeout")
                totals["timeout"] += 1
                continue
            if p.returncode == 0:
                codes.append("ok")
                totals["clean"] += 1
                if " wrong 0 errors 0" not in out:
                    totals["wrong"] += 1
                    print(out, file=sys.stderr)
            else:
                kind = "segfault" if p.returncode in (-11, -7) else "other"
                codes.append(f"{kind}({p.returncode})")
                totals[kind] += 1
                print(f"--- wave {wave}: exit {p.returncode}\n{out[-6000:]}", file=sys.stderr)
        print(f"wave {wave}: {' '.join(codes)}", flush=True)
    what = (
        f"PyOpenCL only, {args.pyopencl_only} pool{', locked' if args.alloc_lock else ''}"
        if args.pyopencl_only
        else f"{args.backend}, {args.mode}"
    )
    cases = "" if args.pyopencl_only else f", {args.variant or 'mixed'}"
    env = f"{what}{cases}, {args.procs} processes x {args.waves} waves"
    print(f"{env}: " + ", ".join(f"{k} {v}" for k, v in totals.items()))


if __name__ == "__main__":
    main()
