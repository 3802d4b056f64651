"""Deterministic float scans against the ordinary ones and CUB, timed in turns on a CUDA GPU.

Usage: python experiments/deterministic.py [segmented|flat] [DTYPE,...] [LOG2N ...]
(default: float32,float64 at 16 18 20 22 24 26 28; ``segmented``: only the segmented rows,
at the sizes given, default 20 24 28, where a size may also be given in MiB, as ``9M``;
``flat``: only the flat scans and reductions)

At each size, after checking that every deterministic contender gives one bit pattern
over 10 runs under simulated blocking (1 in 8 tiles), times in alternating rounds
(jitscan.bench.studies.interleaved): fallback and look-back with and without
``deterministic=True``, and CUB's inclusive scan; then the reductions, beside CUB's
reduction (``cuda.compute`` 1.2.1 reduces run-to-run deterministically by default and
offers no deterministic scan). Prints G elements/s and det / plain per variant. Then
segmented scans by head flags (fallback, mean segment lengths 1000, 10^5 and 10^7), and the
host time of ``jitscan.cumsum(x, out=y)`` with and without the option (2,000 calls back
to back, in turns).
"""

from __future__ import annotations

import hashlib
import sys
import time

import cupy
import numpy as np

import jitscan
from jitscan import bench
from jitscan.bench import studies
from jitscan.variants import Segments


def one_pattern(scan: jitscan.PreparedScan, x: cupy.ndarray, times: int = 10) -> bool:
    seen = {hashlib.sha1(cupy.asnumpy(scan(x)).tobytes()).hexdigest() for _ in range(times)}
    return len(seen) == 1


def scans(timer: bench.Timer, dtype: str, e: int, kind: str, rng: np.random.Generator) -> str:
    n = 1 << e
    ins = [cupy.asarray(rng.standard_normal(n).astype(dtype)) for _ in range(2)]
    out = cupy.empty(1 if kind == "reduce" else n, dtype)
    fns = {}
    for variant in ("fallback", "lookback"):
        for det in (False, True):
            if det and variant == "fallback":
                knobs = dict(kind=kind, deterministic=True, simulate_blocking=8, spin_limit=2)
                blocked = studies.plan_for(timer, variant, dtype, **knobs)
                assert one_pattern(blocked, ins[0]), (
                    f"{variant} {dtype} 2^{e} is not deterministic when blocked"
                )
            scan = studies.plan_for(timer, variant, dtype, kind=kind, deterministic=det)
            if det:
                assert one_pattern(scan, ins[0]), f"{variant} {dtype} 2^{e} is not deterministic"
            fns[f"{variant}{' det' if det else ''}"] = studies.launcher(scan, timer, ins, out, n)
    fns["CUB"] = studies.cub_launcher(kind, ins, out, n)
    t = studies.interleaved(timer, fns, 6, 10)
    cells = " | ".join(f"{k} {n / s / 1e9:.1f}" for k, s in t.items())
    ratios = " ".join(f"{v} det/plain {t[v] / t[v + ' det']:.3f}" for v in ("fallback", "lookback"))
    return f"{kind} {dtype} 2^{e}: {cells} || {ratios} | det/CUB {t['CUB'] / t['fallback det']:.3f}"


def segmented(timer: bench.Timer, dtype: str, size: str, mean: int, rng: np.random.Generator) -> str:
    mib = size.endswith("M")
    n = int(float(size[:-1]) * (1 << 20)) // np.dtype(dtype).itemsize if mib else 1 << int(size)
    x = cupy.asarray(rng.standard_normal(n).astype(dtype))
    y = cupy.empty(n, dtype)
    heads = cupy.asarray(studies.heads_from_offsets(studies.random_offsets(rng, n, mean), n))
    fns = {}
    for det in (False, True):
        scan = studies.plan_for(timer, "fallback", dtype, "flags", deterministic=det)
        fns["det" if det else "plain"] = studies.launcher(scan, timer, x, y, n, Segments(heads=heads))
    t = studies.interleaved(timer, fns, 6, 10)
    cells = " | ".join(f"{k} {n / s / 1e9:.1f}" for k, s in t.items())
    name = f"{size}iB" if mib else f"2^{size}"
    return f"segmented flags {dtype} {name} mean {mean}: {cells} || det/plain {t['plain'] / t['det']:.3f}"


def host_calls(dtype: str, e: int, calls: int = 2000, rounds: int = 5) -> str:
    n = 1 << e
    x = cupy.asarray(np.random.default_rng(1).standard_normal(n).astype(dtype))
    y = cupy.empty_like(x)
    per: dict[bool, list[float]] = {False: [], True: []}
    for r in range(rounds):
        for det in (False, True) if r % 2 == 0 else (True, False):
            jitscan.cumsum(x, out=y, deterministic=det)
            cupy.cuda.Device().synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                jitscan.cumsum(x, out=y, deterministic=det)
            t1 = time.perf_counter()
            cupy.cuda.Device().synchronize()
            per[det].append((t1 - t0) / calls * 1e6)
    plain, det = min(per[False]), min(per[True])
    return f"host per call {dtype} 2^{e}: plain {plain:.2f} us, deterministic {det:.2f} us"


def main() -> None:
    args = sys.argv[1:]
    only = args.pop(0) if args and args[0] in ("segmented", "flat") else ""
    only_segmented = only == "segmented"
    dtypes = args.pop(0).split(",") if args and not args[0][0].isdigit() else ["float32", "float64"]
    timer = bench.Timer("cupy")
    rng = np.random.default_rng(11)
    if only_segmented:
        for dtype in dtypes:
            for e in args or ["20", "24", "28"]:
                for mean in (1000, 100_000, 10_000_000):
                    print(segmented(timer, dtype, e, mean, rng), flush=True)
        return
    exps = [int(a) for a in args] or [16, 18, 20, 22, 24, 26, 28]
    for kind in ("inclusive", "reduce"):
        for dtype in dtypes:
            for e in exps if kind == "inclusive" else exps[::2]:
                print(scans(timer, dtype, e, kind, rng), flush=True)
    if only == "flat":
        return
    for dtype in dtypes:
        for e in ("20", "24", "28"):
            for mean in (1000, 100_000, 10_000_000):
                print(segmented(timer, dtype, e, mean, rng), flush=True)
    for dtype in dtypes:
        for e in (10, 20):
            print(host_calls(dtype, e), flush=True)


if __name__ == "__main__":
    main()
