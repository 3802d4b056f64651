"""jitscan's Dask scan against ``dask.array.cumsum`` on the same CuPy chunks, and its bound.

Usage: python experiments/dask_gpu.py [LOG2_CHUNK] [LOG2_TOTAL] [ROUNDS]   (default 26 30 5)

A float32 array of 2^LOG2_TOTAL elements on the GPU, as a Dask array of CuPy chunks of
2^LOG2_CHUNK elements. Each round times, taking turns, with the same scheduler:
``jitscan.cumsum(d).persist()`` and ``dask.array.cumsum(d).persist()`` (every block
computed and kept on the GPU, no concatenation), each until the device is idle; and a
copy of the whole array (``cupy.copyto``), whose 1.5x is the bound jitscan's passes imply
(two reads and one write per element). Prints the medians and the ratios.
"""

from __future__ import annotations

import statistics
import sys
import time

import cupy
import dask
import dask.array as da

import jitscan


def timed(fn):  # noqa: ANN001, ANN201
    cupy.cuda.Device().synchronize()
    t = time.perf_counter()
    out = fn()
    cupy.cuda.Device().synchronize()
    return time.perf_counter() - t, out


def main(argv: list[str]) -> None:
    log_chunk = int(argv[0]) if argv else 26
    log_total = int(argv[1]) if len(argv) > 1 else 30
    rounds = int(argv[2]) if len(argv) > 2 else 5
    n, chunk = 1 << log_total, 1 << log_chunk
    x = cupy.random.default_rng(1).random(n, dtype=cupy.float32)
    d = da.from_array(x, chunks=chunk, asarray=False)
    copy = cupy.empty_like(x)
    print(f"{cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}: float32, 2^{log_total} elements")
    print(f"in {n // chunk} CuPy chunks of 2^{log_chunk}; dask {dask.__version__}, CuPy {cupy.__version__}")
    for scheduler in ("threads", "sync"):
        with dask.config.set(scheduler=scheduler):
            runs = {"jitscan": jitscan.cumsum, "dask.array": da.cumsum}
            times: dict[str, list[float]] = {name: [] for name in [*runs, "copy"]}
            for fn in runs.values():  # warm-up: compiles, pools
                fn(d).persist()
            for _ in range(rounds):
                for name, fn in runs.items():
                    t, y = timed(lambda fn=fn: fn(d).persist())
                    times[name].append(t)
                    del y
                times["copy"].append(timed(lambda: cupy.copyto(copy, x))[0])
            med = {k: statistics.median(v) for k, v in times.items()}
            bound = 1.5 * med["copy"]
            print(f"\nscheduler={scheduler}, median of {rounds} rounds")
            print("| | ms | G elements/s | vs dask.array.cumsum | vs the bound (1.5 copies) |")
            print("|---|---:|---:|---:|---:|")
            for name in runs:
                t = med[name]
                ratio = med["dask.array"] / t
                print(f"| {name} | {t * 1e3:.2f} | {n / t / 1e9:.1f} | {ratio:.2f}x | {bound / t:.2f} |")
            print(f"| copy of the array | {med['copy'] * 1e3:.2f} | {n / med['copy'] / 1e9:.1f} | | |")
    with dask.config.set(scheduler="threads"):
        y = jitscan.cumsum(d).persist()
        last = float(y[-1].compute())
    want = float(cupy.sum(x, dtype=cupy.float64))
    print(f"\nlast element {last:.6g}, float64 sum {want:.6g}, relative error {abs(last - want) / want:.1e}")


if __name__ == "__main__":
    main(sys.argv[1:])
