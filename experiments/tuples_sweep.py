"""Which tile shapes suit tuple values on a CUDA GPU? A sweep of threads x vectors x blocks per SM.

Usage: python experiments/tuples_sweep.py [LOG2N [CASE ...]]   (default 26, every case)

For each case of ``tuples_gpu.py`` (the recurrence scan, argmax's reduction and running
form, Welford's running form), every shape of threads {128, 256} x vectors {2, 4, 8, 16}
x min_blocks {0, 2, 3, 4} that compiles, timed as 20 calls back to back between two
events (median of 3), in GB/s of the bytes the call moves and against the default shape.
The last line of each case is the default (``tuning.record_shape``).
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable

import cupy

import jitscan
from jitscan.bench.tuples import affine, argmax, welford


def piped(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(3):
        cupy.cuda.get_current_stream().synchronize()
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(20):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e-3 / 20)
    return statistics.median(times)


def main() -> None:
    e = int(sys.argv[1]) if len(sys.argv) > 1 else 26
    n = 1 << e
    rng = cupy.random.default_rng(0)
    a = rng.uniform(0.5, 1.0, n, dtype=cupy.float32)
    b = rng.standard_normal(n, dtype=cupy.float32)
    h = cupy.empty(n, cupy.float32)
    i_out = cupy.empty(n, cupy.int64)
    ones, zeros = cupy.ones(n, cupy.float32), cupy.zeros(n, cupy.float32)
    mo, m2o = cupy.empty(n, cupy.float32), cupy.empty(n, cupy.float32)
    cases: dict[str, tuple[Callable[..., object], int]] = {
        "recurrence": (lambda **k: jitscan.scan((a, b), op=affine, output=1, out=h, **k), 12),
        "argmax reduce": (lambda **k: jitscan.reduce((b, jitscan.index), op=argmax, **k), 4),
        "argmax scan": (
            lambda **k: jitscan.scan((b, jitscan.index), op=argmax, output=1, out=i_out, **k),
            12,
        ),
        "welford scan": (
            lambda **k: jitscan.scan((ones, b, zeros), op=welford, output=(1, 2), out=(mo, m2o), **k),
            20,
        ),
    }
    print(f"{cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}, n = 2^{e}")
    print("case | threads | vectors | min_blocks | µs | GB/s | / default")
    only = sys.argv[2:]
    for name, (call, per) in cases.items():
        if only and name not in only:
            continue
        base = piped(lambda call=call: call())
        rows = []
        for threads in (128, 256):
            for vectors in (2, 4, 8, 16):
                for blocks in (0, 2, 3, 4):
                    knobs = {"threads": threads, "vectors": vectors, "min_blocks": blocks}
                    try:
                        call(**knobs)
                        t = piped(lambda call=call, knobs=knobs: call(**knobs))
                    except Exception as exc:  # noqa: BLE001 - a shape that does not build or fit
                        print(f"# {name} {knobs}: {type(exc).__name__}: {str(exc)[:100]}")
                        continue
                    rows.append((t, threads, vectors, blocks))
        rows.sort()
        for t, threads, vectors, blocks in rows[:6]:
            rate = per * n / t / 1e9
            print(f"{name} | {threads} | {vectors} | {blocks} | {t * 1e6:.0f} | {rate:.0f} | {base / t:.3f}")
        print(f"{name} | default | | | {base * 1e6:.0f} | {per * n / base / 1e9:.0f} | 1.000", flush=True)


if __name__ == "__main__":
    main()
