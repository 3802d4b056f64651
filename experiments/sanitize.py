"""Every CUDA kernel once at small sizes, for NVIDIA's compute-sanitizer.

Usage::

    for tool in memcheck racecheck synccheck initcheck; do
        compute-sanitizer --tool $tool --error-exitcode 9 python experiments/sanitize.py
    done

NumPy inputs go to CuPy ($JITSCAN_BACKEND=cupy unless set).

Each case runs one kernel of each kind a user can reach (the chained variants with
both tile-state encodings, look-back, reduce-then-scan, the deterministic scan,
exclusive scans and reductions, segmented scans by flags and by offsets and their
reductions, a batched axis scan and the strided gather, a tuple value, memcpy), a few
tiles long with a ragged last tile, and checks the result against NumPy: the sanitizer
reports what the kernels touch, this script that they computed the right thing.
"""

from __future__ import annotations

import os
import sys

import numpy as np

import jitscan

TILES = 5  # a few tiles, the last one ragged: every protocol path and the bounds checks


def cases(rng: np.random.Generator) -> list[tuple[str, object, object]]:
    n = TILES * 4096 + 77
    x = rng.integers(-50, 50, n).astype(np.int32)
    f = rng.standard_normal(n).astype(np.float64)
    cuts = np.unique(rng.integers(1, n, 40))
    offsets = np.r_[0, cuts, n].astype(np.int64)
    flags = np.zeros(n, np.uint8)
    flags[offsets[:-1]] = 1
    seg = np.concatenate([np.cumsum(x[a:b]) for a, b in zip(offsets[:-1], offsets[1:], strict=True)])
    m = rng.integers(0, 9, (37, 1500)).astype(np.int64)
    out = []
    for variant in ("fallback", "lookback", "rts"):
        for state in ("packed", "split") if variant != "rts" else ("packed",):
            out.append(
                (
                    f"{variant} {state}",
                    lambda v=variant, s=state: jitscan.cumsum(x, dtype=np.int32, variant=v, tile_state=s),
                    np.cumsum(x, dtype=np.int32),
                )
            )
        out.append(
            (
                f"{variant} exclusive",
                lambda v=variant: jitscan.scan(x, "add", kind="exclusive", variant=v),
                np.r_[0, np.cumsum(x, dtype=np.int32)[:-1]].astype(np.int32),
            )
        )
        total = x.sum(dtype=np.int32)
        out.append((f"{variant} reduce", lambda v=variant: jitscan.reduce(x, variant=v), total))
    out += [
        ("deterministic float64", lambda: jitscan.cumsum(f, deterministic=True), np.cumsum(f)),
        (
            "deterministic lookback",
            lambda: jitscan.cumsum(f, deterministic=True, variant="lookback"),
            np.cumsum(f),
        ),
        ("segmented by flags", lambda: jitscan.segmented_scan(x, flags=flags, dtype=np.int32), seg),
        ("segmented by offsets", lambda: jitscan.segmented_scan(x, offsets=offsets, dtype=np.int32), seg),
        (
            "segmented reduce",
            lambda: jitscan.segmented_reduce(x, offsets=offsets, dtype=np.int32),
            np.add.reduceat(x, offsets[:-1], dtype=np.int32),
        ),
        (
            "segmented rts",
            lambda: jitscan.segmented_scan(x, offsets=offsets, variant="rts", dtype=np.int32),
            seg,
        ),
        ("axis=1 (rows)", lambda: jitscan.cumsum(m, axis=1), np.cumsum(m, axis=1)),
        ("axis=0 (strided gather)", lambda: jitscan.cumsum(m, axis=0), np.cumsum(m, axis=0)),
        (
            "tuple value (argmax)",
            lambda: jitscan.reduce((f, jitscan.index), jitscan.operator(_argmax, identity=(-np.inf, 0)))[1],
            int(np.argmax(f)),
        ),
        ("memcpy", lambda: jitscan.scan(x, variant="memcpy"), x),
    ]
    return out


def _argmax(a, b):  # noqa: ANN001, ANN202 - typed by Numba
    return b if b[0] > a[0] else a


def main() -> int:
    import cupy

    rng = np.random.default_rng(3)
    bad = 0
    for name, run, want in cases(rng):
        got = run()
        got = cupy.asnumpy(got) if isinstance(got, cupy.ndarray) else np.asarray(got)
        ok = np.allclose(got, want) if np.asarray(want).dtype.kind == "f" else np.array_equal(got, want)
        bad += not ok
        print(f"{name:28s} {'right' if ok else 'WRONG'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("JITSCAN_BACKEND", "cupy")  # NumPy input goes to CUDA
    sys.exit(main())
