"""Where the time of a Dask chain scan goes: graph, Dask's optimize, the chunk calls, the GPU.

Usage: python experiments/dask_profile.py   (float32, 2^30 elements in CuPy chunks of 2^26)

With Dask's synchronous scheduler and ``jitscan.dask-plan="chain"``, medians of 7 calls:
building the graph, ``persist()`` until it returns (host) and until the GPU is idle, the
same chunk scans called in a loop without Dask (host, and until idle: the GPU's work),
and ``dask.optimize`` of the graph; then a cProfile of 20 ``persist()`` calls by
internal time.
"""

from __future__ import annotations

import cProfile
import pstats
import statistics
import time

import cupy
import dask
import dask.array as da

import jitscan


def main() -> None:
    n, chunk = 1 << 30, 1 << 26
    x = cupy.random.default_rng(1).random(n, dtype=cupy.float32)
    d = da.from_array(x, chunks=chunk, asarray=False)
    sync = cupy.cuda.Device().synchronize
    parts = [x[i : i + chunk] for i in range(0, n, chunk)]

    def loop() -> list:
        outs, prev = [], None
        for p in parts:
            prev = jitscan.cumsum(p) if prev is None else jitscan.scan(p, initial=prev[-1:])
            outs.append(prev)
        return outs

    def median_ms(fn, idle: bool = True) -> float:  # noqa: ANN001
        times = []
        for _ in range(7):
            sync()
            t = time.perf_counter()
            r = fn()
            if idle:
                sync()
            times.append(time.perf_counter() - t)
            del r
        return statistics.median(times) * 1e3

    with dask.config.set({"scheduler": "sync", "jitscan.dask-plan": "chain"}):
        jitscan.cumsum(d).persist()
        loop()
        sync()
        y = jitscan.cumsum(d)
        rows = {
            "graph": median_ms(lambda: jitscan.cumsum(d), idle=False),
            "persist, host": median_ms(lambda: jitscan.cumsum(d).persist(), idle=False),
            "persist, until idle": median_ms(lambda: jitscan.cumsum(d).persist()),
            "chunk scans alone, host": median_ms(loop, idle=False),
            "chunk scans alone, until idle": median_ms(loop),
            "dask.optimize": median_ms(lambda: dask.optimize(y), idle=False),
        }
        for name, ms in rows.items():
            print(f"| {name} | {ms:.3f} ms |")
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(20):
            jitscan.cumsum(d).persist()
        profile.disable()
        sync()
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
