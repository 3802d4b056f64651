"""jitscan's Dask scan against ``dask.array.cumsum`` on the same CuPy chunks, and its bounds.

Usage: python experiments/dask_gpu.py [LOG2_CHUNK] [LOG2_TOTAL] [ROUNDS]   (default 26 30 5)

A float32 array of 2^LOG2_TOTAL elements on the GPU, as a persisted Dask array of CuPy
chunks of 2^LOG2_CHUNK elements. Each round times, taking turns, with the same scheduler:
``jitscan.cumsum(d).persist()`` with each of its plans (``dask.config`` key
``jitscan.dask-plan``: the chain, which ``auto`` takes on one device, and the tree) and
``dask.array.cumsum(d).persist()`` (every block computed and kept on the GPU, no
concatenation), a copy of every chunk through Dask (``d.map_blocks(cupy.copy)``: one pass
through Dask) and Dask alone (``d.map_blocks`` of a function that returns its block: the
host work of such a pass, no GPU work), each until the device is idle; and a copy of the
whole array (``cupy.copyto``). The bounds: 1.5 copies for the tree's passes (two reads, one write
per element; the issue's bound), one copy for the chain's. Prints the medians and ratios.
"""

from __future__ import annotations

import statistics
import sys
import time

import cupy
import dask
import dask.array as da

import jitscan


def _same(block):  # noqa: ANN001, ANN202
    return block


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
    with dask.config.set(scheduler="sync"):  # the chunks already made, as a user's array is
        d = da.from_array(x, chunks=chunk, asarray=False).persist()
    copy = cupy.empty_like(x)
    print(f"{cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}: float32, 2^{log_total} elements")
    print(f"in {n // chunk} CuPy chunks of 2^{log_chunk}; dask {dask.__version__}, CuPy {cupy.__version__}")
    for scheduler in ("threads", "sync"):
        with dask.config.set(scheduler=scheduler):
            runs = {
                "jitscan, chain": (jitscan.cumsum, "chain", 1.0),
                "jitscan, tree": (jitscan.cumsum, "tree", 1.5),
                "dask.array": (da.cumsum, "auto", None),
                "Dask's copy of the chunks": (lambda d: d.map_blocks(cupy.copy), "auto", 1.0),
                "Dask alone (blocks returned as they are)": (lambda d: d.map_blocks(_same), "auto", None),
            }
            times: dict[str, list[float]] = {name: [] for name in [*runs, "copy"]}
            for fn, plan, _ in runs.values():  # warm-up: compiles, pools
                with dask.config.set({"jitscan.dask-plan": plan}):
                    fn(d).persist()
            for _ in range(rounds):
                for name, (fn, plan, _) in runs.items():
                    with dask.config.set({"jitscan.dask-plan": plan}):
                        t, y = timed(lambda fn=fn: fn(d).persist())
                    times[name].append(t)
                    del y
                times["copy"].append(timed(lambda: cupy.copyto(copy, x))[0])
            med = {k: statistics.median(v) for k, v in times.items()}
            copy_t = med["copy"]
            print(f"\nscheduler={scheduler}, median of {rounds} rounds")
            print("| | ms | G elements/s | vs dask.array.cumsum | of 1.5 copies | of its plan's bound |")
            print("|---|---:|---:|---:|---:|---:|")
            for name, (_, _, copies) in runs.items():
                t = med[name]
                ratio = med["dask.array"] / t
                own = f"{copies * copy_t / t:.2f} ({copies:g} copies)" if copies else ""
                row = [
                    f"{t * 1e3:.2f}",
                    f"{n / t / 1e9:.1f}",
                    f"{ratio:.2f}x",
                    f"{1.5 * copy_t / t:.2f}",
                    own,
                ]
                print(f"| {name} | {' | '.join(row)} |")
            print(f"| copy of the array | {copy_t * 1e3:.2f} | {n / copy_t / 1e9:.1f} | | | |")
    want = float(cupy.sum(x, dtype=cupy.float64))
    for plan in ("chain", "tree"):
        with dask.config.set({"scheduler": "threads", "jitscan.dask-plan": plan}):
            last = float(jitscan.cumsum(d).persist()[-1].compute())
        error = abs(last - want) / want
        print(f"{plan}: last element {last:.6g}, float64 sum {want:.6g}, relative error {error:.1e}")


if __name__ == "__main__":
    main(sys.argv[1:])
