"""Up to which size should tiles search the offsets themselves? Scans and reductions by
offsets with the search compiled in up to 2 MiB (today's), 16 MiB, and at every size.

Usage: python experiments/search_sweep.py [LOG2N ...]   (default 20 22 24 26 28)

Each bound is a prepared scan of its own (``tuning.SEARCH_SEGMENTS_BYTES`` set while its
programs compile), int32, segments of geometric lengths of mean 100 (the bench's), device
offsets. Per size and bound, in turns: the isolated call (event, call, event; median of
100) and the pipelined time a call (20 back to back between two events; median of 9
rounds), in µs, with the ratio to today's bound. A reduction by offsets above 64 MiB runs
rts, which never searches: its rows show the same program.
"""

from __future__ import annotations

import statistics
import sys

import cupy
import numpy as np

import jitscan
from jitscan.bench.studies import isolated, piped, random_offsets
from jitscan.plan import tuning

BOUNDS = {"2 MiB": 1 << 21, "16 MiB": 1 << 24, "all": float("inf")}


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [20, 22, 24, 26, 28]
    keep = tuning.SEARCH_SEGMENTS_BYTES
    print("| 2^k | form | bound | isolated µs | pipelined µs | / 2 MiB's |\n|---|---|---|---|---|---|")
    for k in sizes:
        one_size(k, keep)


def one_size(k: int, keep: int) -> None:
    n = 1 << k
    rng = np.random.default_rng(k)
    host_off = random_offsets(rng, n, 100)
    x = cupy.asarray(rng.integers(0, 9, n).astype(np.int32))
    off = cupy.asarray(host_off)
    y = cupy.empty(n, cupy.int32)
    fns = {}
    for name, bound in BOUNDS.items():
        tuning.SEARCH_SEGMENTS_BYTES = bound
        try:
            scan = jitscan.plan("int32", segmented="offsets")
            red = jitscan.plan("int32", kind="reduce", segmented="offsets")
            scan(x, offsets=off, out=y)  # compiled with this bound
            red(x, offsets=off)
        finally:
            tuning.SEARCH_SEGMENTS_BYTES = keep
        fns[("scan", name)] = lambda s=scan: s(x, offsets=off, out=y)
        fns[("reduce", name)] = lambda r=red: r(x, offsets=off)
    hx = cupy.asnumpy(x).astype(np.int64)
    sums = np.cumsum(hx)
    lengths = np.diff(host_off)
    want = {
        "reduce": np.add.reduceat(hx, host_off[:-1]).astype(np.int32),
        "scan": (sums - np.repeat(np.r_[0, sums][host_off[:-1]], lengths)).astype(np.int32),
    }
    for (form, name), fn in fns.items():
        got = cupy.asnumpy(fn() if form == "reduce" else (fn(), y)[1])
        assert np.array_equal(got, want[form]), (form, name)
    iso = {key: [] for key in fns}
    pip = {key: [] for key in fns}
    order = list(fns)
    for r in range(100):
        for key in order if r % 2 == 0 else order[::-1]:
            iso[key].append(isolated(fns[key]))
    for r in range(9):
        for key in order if r % 2 == 0 else order[::-1]:
            pip[key].append(piped(fns[key], 20))
    for form in ("scan", "reduce"):
        base = statistics.median(pip[(form, "2 MiB")])
        for name in BOUNDS:
            a, b = statistics.median(iso[(form, name)]), statistics.median(pip[(form, name)])
            print(f"| {k} | {form} | {name} | {a:.1f} | {b:.1f} | {b / base:.3f} |", flush=True)


if __name__ == "__main__":
    main()
