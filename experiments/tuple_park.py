"""Does parking part of a tuple value's tile in shared memory take the pair scan under 1.6x?

Usage: python experiments/tuple_park.py K [LOG2N ...]   (default 22 25 28)

The pair scan's program (the recurrence ``(a, b)`` of float32 with ``output=1``, the
largest class's 128 x 16 vectors) uses 255 registers a thread and spills: a thread holds
its 64 pairs from the loads to the stores, through the look-back. The segmented chained
scans park half their vectors in shared memory while the walk runs (``ScanSpec.
parked_vectors``, chained.c's ``park``); tuple values park none. Here ``K`` vectors of a
tuple value's tile are parked (the property replaced in this process only, so each K
needs a process of its own; the limit on the parked bytes is lifted to 40 KiB). Prints
the registers and spill bytes of the pair scan's chained kernel, then per size the
pipelined time (20 calls back to back between two events, median of 7) of the pair scan
and of an int32 ``cumsum(x, out=y)`` of the same length, in turns, and their ratio.
"""

from __future__ import annotations

import statistics
import sys

import cupy

import jitscan
from jitscan.bench import studies
from jitscan.bench.tuples import affine
from jitscan.kernels import spec as spec_mod
from jitscan.kernels import storage

K = int(sys.argv[1])  # -1: the library's own rule (ScanSpec.parked_vectors as it is)
SIZES = [int(a) for a in sys.argv[2:]] or [22, 25, 28]
_orig = spec_mod.ScanSpec.parked_vectors.fget


def _parked(self: spec_mod.ScanSpec) -> int:
    if self.record and self.chained and self.shuffle and not self.segmented:
        return min(K, self.vectors // 2, (40 << 10) // storage.parked_vector_bytes(self))
    return _orig(self)


if K >= 0:
    spec_mod.ScanSpec.parked_vectors = property(_parked)  # type: ignore[method-assign]


def piped(fn) -> float:
    """µs a call: the median of 7 runs of 20 calls back to back (studies.piped)."""
    cupy.cuda.get_current_stream().synchronize()
    return statistics.median(studies.piped(fn, 20) for _ in range(7)) * 1e-6


def show_resources() -> None:
    """The registers, spill bytes and static shared bytes of the pair scan's chained kernels."""
    for key, prog in jitscan.backends.get("cupy")._programs.items():
        s = key[0]
        if getattr(s, "record", None) and s.chained:
            for name, entry in prog.kernels.items():
                # CUfunction_attribute: 4 registers, 3 local (spill) bytes, 1 static shared bytes
                get, ptr = cupy.cuda.driver.funcGetAttribute, entry.function.ptr
                print(
                    f"K={K} {s.variant} {s.threads}x{s.vectors} parked={s.parked_vectors} "
                    f"{name}: regs={get(4, ptr)} local={get(3, ptr)} shared={get(1, ptr)}"
                )


def main() -> None:
    rng = cupy.random.default_rng(0)
    top = 1 << max(SIZES)
    a = rng.uniform(0.5, 1.0, top, dtype=cupy.float32)
    b = rng.standard_normal(top, dtype=cupy.float32)
    h = cupy.empty(top, cupy.float32)
    xi = cupy.ones(top, cupy.int32)
    yi = cupy.empty(top, cupy.int32)
    rows = []
    for e in SIZES:
        n = 1 << e
        av, bv, hv, xv, yv = a[:n], b[:n], h[:n], xi[:n], yi[:n]

        def pair(av=av, bv=bv, hv=hv) -> None:
            jitscan.scan((av, bv), op=affine, output=1, out=hv)

        def flat(xv=xv, yv=yv) -> None:
            jitscan.cumsum(xv, out=yv)

        pair()
        flat()
        # a check that parking keeps the result: the affine recurrence h = a * h + b
        ref = cupy.empty_like(hv)
        jitscan.scan((av, bv), op=affine, output=1, out=ref, variant="rts")
        ok = bool(cupy.allclose(hv, ref, rtol=1e-3, atol=1e-3))
        tp, tf = [], []
        for _ in range(3):  # in turns
            tp.append(piped(pair))
            tf.append(piped(flat))
        p, f = min(tp), min(tf)
        rows.append((e, p, f, ok))
    try:  # every size's program made by now
        show_resources()
    except Exception as exc:  # the timing matters more than the counts
        print(f"K={K}: the kernels' resources could not be read ({type(exc).__name__}: {exc})")
    print("K | 2^k | pair µs | int32 µs | ratio | same as rts")
    for e, p, f, ok in rows:
        print(f"{K} | {e} | {p * 1e6:.1f} | {f * 1e6:.1f} | {p / f:.3f} | {ok}")


if __name__ == "__main__":
    main()
