"""segmented_reduce at small sizes: rts (four launches: pre-pass, reduce, spine, fix-up) against
the chained reduction by offsets (pre-pass and one pass), beside CUB's segmented reduce.

Usage: python experiments/seg_reduce_small.py [LOG2N,...]

Per size and contender: the isolated call (event, call, event; median of 200) and the
pipelined time per call (50 back to back, median of 9 rounds), in microseconds, int32 with a
segment per 16 elements on average, contenders in turns.
"""

from __future__ import annotations

import statistics
import sys

import cupy
import numpy as np

import jitscan
from jitscan.bench.studies import cub_segmented_reduce, isolated, piped


def main() -> None:
    sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "10,14,18,22").split(",")]
    print("| 2^k | contender | isolated µs | pipelined µs |\n|---|---|---|---|")
    for k in sizes:
        n = 1 << k
        rng = np.random.default_rng(k)
        x = cupy.asarray(rng.integers(0, 9, n).astype(np.int32))
        cuts = np.sort(rng.choice(np.arange(1, n), max(n // 16, 1), replace=False))
        host_off = np.r_[0, cuts, n].astype(np.int64)
        off = cupy.asarray(host_off)
        fns = {
            name: lambda v=name, x=x, off=off: jitscan.segmented_reduce(x, offsets=off, variant=v)
            for name in ("rts", "fallback")
        }
        try:
            cub, _ = cub_segmented_reduce(x, host_off)
            fns["CUB"] = lambda cub=cub: cub(1)
        except Exception as exc:  # noqa: BLE001
            print(f"| {k} | CUB | {exc} | |")
        want = np.add.reduceat(cupy.asnumpy(x), host_off[:-1]) if n else None
        got = cupy.asnumpy(fns["fallback"]())
        assert np.array_equal(got[np.diff(host_off) > 0], want[np.diff(host_off) > 0])
        iso: dict[str, list[float]] = {name: [] for name in fns}
        pip: dict[str, list[float]] = {name: [] for name in fns}
        for f in fns.values():
            f()
        for r in range(200):
            for name in fns if r % 2 == 0 else list(fns)[::-1]:
                iso[name].append(isolated(fns[name]))
        for r in range(9):
            for name in fns if r % 2 == 0 else list(fns)[::-1]:
                pip[name].append(piped(fns[name], 50))
        for name in fns:
            a, b = statistics.median(iso[name]), statistics.median(pip[name])
            print(f"| {k} | {name} | {a:.1f} | {b:.1f} |")


if __name__ == "__main__":
    main()
