"""Can the chained reduction by offsets (fallback: pre-pass and one pass, two launches) match
rts (four launches) at large sizes with a tile shape of its own?

Usage: python experiments/seg_reduce_shapes.py [LOG2N,...] [MEAN,...]

For each size and mean segment length (offsets at random cuts; a mean of 1024 stands for
a reduction along rows), the pipelined time per call of ``jitscan.segmented_reduce``
(20 back to back between two events, median of 7 rounds, contenders in turns): rts with
its own shape, fallback with its default shape and with the shapes below (threads x
vectors x min_blocks), in microseconds and against rts.
"""

from __future__ import annotations

import statistics
import sys

import cupy
import numpy as np

import jitscan

SHAPES = [
    {},
    {"threads": 128, "vectors": 16, "min_blocks": 4},
    {"threads": 128, "vectors": 16, "min_blocks": 0},
    {"threads": 256, "vectors": 16, "min_blocks": 0},
    {"threads": 256, "vectors": 8, "min_blocks": 2},
    {"threads": 256, "vectors": 4, "min_blocks": 0},
    {"threads": 512, "vectors": 8, "min_blocks": 0},
    {"threads": 128, "vectors": 8, "min_blocks": 4},
]


def piped(fn, calls: int = 20) -> float:
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(calls):
        fn()
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) * 1e3 / calls


def name_of(shape: dict) -> str:
    if not shape:
        return "default"
    return f"{shape['threads']}x{shape['vectors']} mb{shape['min_blocks']}"


def main() -> None:
    sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "22,24,26,28").split(",")]
    means = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "16,1024").split(",")]
    print("| 2^k | mean | contender | pipelined µs | / rts |\n|---|---|---|---|---|")
    for k in sizes:
        for mean in means:
            n = 1 << k
            rng = np.random.default_rng(k + mean)
            x = cupy.asarray(rng.integers(0, 9, n).astype(np.int32))
            cuts = np.sort(rng.choice(np.arange(1, n), max(n // mean, 1), replace=False))
            host_off = np.r_[0, cuts, n].astype(np.int64)
            off = cupy.asarray(host_off)
            want = cupy.asnumpy(jitscan.segmented_reduce(x, offsets=off, variant="rts"))
            fns = {"rts": lambda x=x, off=off: jitscan.segmented_reduce(x, offsets=off, variant="rts")}
            for shape in SHAPES:
                fn = lambda x=x, off=off, s=shape: jitscan.segmented_reduce(  # noqa: E731
                    x, offsets=off, variant="fallback", **s
                )
                try:
                    got = cupy.asnumpy(fn())
                except Exception as exc:  # noqa: BLE001 (a shape that does not compile)
                    print(f"| {k} | {mean} | fallback {name_of(shape)} | {type(exc).__name__} | |")
                    continue
                assert np.array_equal(got, want), name_of(shape)
                fns[f"fallback {name_of(shape)}"] = fn
            times: dict[str, list[float]] = {name: [] for name in fns}
            for f in fns.values():
                f()
            for r in range(7):
                for name in fns if r % 2 == 0 else list(fns)[::-1]:
                    times[name].append(piped(fns[name]))
            base = statistics.median(times["rts"])
            for name in fns:
                t = statistics.median(times[name])
                print(f"| {k} | {mean} | {name} | {t:.1f} | {t / base:.3f} |")
            del x, off


if __name__ == "__main__":
    main()
