"""Fallback spin limits on a CUDA GPU: flat scans under simulated blocking, segmented scans without.

Usage: python experiments/spin_sweep.py [SPIN ...]   (default 32 64 128 256)
A workgroup falls back on a predecessor after SPIN window reads that found it NOT_READY.
Too few and it falls back on tiles that are merely slow (a whole tile read each time);
too many and a truly stalled tile holds its successors longer. Prints 10^9 elements/s with
fallbacks and spins per workgroup: flat int32 at 2^25 with 1 in k workgroups never
posting, and segmented int32 + uint8 flags at 2^28 (mean lengths 10 and 1000).
"""

from __future__ import annotations

import sys

import cupy
import numpy as np

from jitscan import bench
from jitscan.bench import studies
from jitscan.variants import NONE, Segments

RATES = (0, 512, 64, 2)


def rate_and_stats(
    timer: bench.Timer, x: list, y: cupy.ndarray, n: int, segmented: str = "", seg: Segments = NONE, **knobs
) -> str:
    """10^9 elements/s of the int32 fallback scan with ``knobs``; one counting run's fallbacks and spins."""
    scan = studies.plan_for(timer, "fallback", "int32", segmented, **knobs)
    t = timer.time(studies.launcher(scan, timer, x, y, n, seg), 20)[0]
    counting = studies.plan_for(timer, "fallback", "int32", segmented, stats=True, **knobs)
    st = studies.launcher(counting, timer, x, y, n, seg)(0)
    tiles = st["tiles"]
    return f"{n / t / 1e9:6.1f} ({st['fallbacks'] / tiles:.3f} fb, {st['spins'] / tiles:.1f} sp)"


def main() -> None:
    spins = [int(a) for a in sys.argv[1:]] or [32, 64, 128, 256]
    timer = bench.Timer("cupy")
    rng = np.random.default_rng(11)
    n_flat, n_seg = 1 << 25, 1 << 28
    flat_in = timer.inputs(n_flat, "int32", rng)
    flat_out = cupy.empty(n_flat, np.int32)
    seg_in = [cupy.asarray(rng.integers(-1000, 1000, n_seg, dtype=np.int32))]
    seg_out = cupy.empty_like(seg_in[0])
    heads = {
        m: cupy.asarray(studies.heads_from_offsets(studies.random_offsets(rng, n_seg, m), n_seg))
        for m in (10, 1000)
    }
    head = " | ".join(f"flat 1/{k}" if k else "flat none" for k in RATES)
    print(f"spin | {head} | seg mean 10 | seg mean 1000", flush=True)
    for s in spins:
        cells = []
        for k in RATES:
            knobs = dict(spin_limit=s, simulate_blocking=k or None)
            cells.append(rate_and_stats(timer, flat_in, flat_out, n_flat, **knobs))
        for m in (10, 1000):
            seg = Segments(heads=heads[m])
            cells.append(rate_and_stats(timer, seg_in, seg_out, n_seg, "flags", seg, spin_limit=s))
        print(f"{s} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
