"""Tile-shape sweep on a GPU: throughput of chained variants per (threads, vectors).

Usage: python scripts/sweep.py BACKEND DTYPE LOG2N [LOG2N ...]
Prints Ge/s of memcpy and fallback per shape, with the kernel's registers and spills
(CUDA) so that a shape that spills is visible. A development tool, not part of the API.
"""

from __future__ import annotations

import sys

import numpy as np

from jitscan import bench, tuning
from jitscan.dtypes import lookup
from jitscan.monoid import resolve

SHAPES = [(64, 4), (128, 4), (128, 8), (256, 2), (256, 4), (256, 8), (512, 4), (512, 2), (1024, 2)]


def attributes(timer: bench._Timer, spec) -> str:
    if timer.name != "cupy":
        return ""
    prog = timer.backend.program(spec, timer.queue)
    k = prog.kernels["js_chained"]
    get = (lambda a: k.attributes[a]) if hasattr(k, "attributes") else (lambda a: getattr(k, a))
    try:
        return f"regs={get('num_regs')} local={get('local_size_bytes')}B smem={get('shared_size_bytes')}B"
    except Exception as exc:  # noqa: BLE001
        return f"attrs? {exc}"


def main() -> None:
    backend, dtype, *exps = sys.argv[1:]
    timer = bench._Timer(backend)
    rng = np.random.default_rng(1)
    for e in map(int, exps):
        n = 1 << e
        mem = bench.measure_variant(timer, "memcpy", dtype, n, 20, rng).elements_per_s
        for threads, vectors in SHAPES:
            knobs = {"threads": threads, "vectors": vectors}
            try:
                r = bench.measure_variant(timer, "fallback", dtype, n, 20, rng, **knobs)
            except Exception as exc:  # noqa: BLE001
                print(f"{dtype} 2^{e} {threads}x{vectors}: failed {exc}")
                continue
            spec = tuning.spec_for(timer.info, variant="fallback", kind="inclusive", dtype=lookup(dtype),
                                   monoid=resolve("add"), **knobs)
            print(f"{backend} {dtype} 2^{e} t={threads:4d} p={vectors} tile={spec.tile:6d}: "
                  f"{r.elements_per_s / 1e9:6.1f} Ge/s = {100 * r.elements_per_s / mem:5.1f}% of memcpy "
                  f"({mem / 1e9:.0f})  spins={r.stats.get('spins')} fb={r.stats.get('fallbacks')} "
                  f"{attributes(timer, spec)}", flush=True)


if __name__ == "__main__":
    main()
