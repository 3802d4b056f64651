"""Compaction, unique runs and the by-key functions on a CUDA GPU, beside CuPy, torch and a copy.

Usage: python experiments/selection_gpu.py [LOG2N ...]   (default 20 24 28)

Per size, int32: the isolated call (an event before and after one Python call, the median
of 15 rounds taken in turns with the peers) of
- ``jitscan.extract(mask, x)`` (half kept at random; the host waits for the count),
  ``extract(..., size=n)`` (no wait), CuPy's ``x[mask]``, ``torch.masked_select``;
- ``jitscan.unique_consecutive(k, return_counts=True)`` of runs of mean length 8, and
  ``torch.unique_consecutive(return_counts=True)``;
- ``jitscan.reduce_by_key`` and ``scan_by_key`` of the same keys and int32 values, and
  ``segmented_cumsum`` by the equivalent uint8 flags;
- a copy of as many bytes as compaction must move (read x and the mask, write the kept
  values), CuPy's ``dst[...] = src`` of uint8: the yardstick of the 90% target.
Then a table of µs and ratios.
"""

from __future__ import annotations

import statistics
import sys

import cupy
import numpy as np

import jitscan
from jitscan.bench.studies import selection_cases

try:
    import torch
except ImportError:  # the peers that need it are skipped
    torch = None


def isolated(fn, rounds: int = 15) -> list[float]:
    a, b = cupy.cuda.Event(), cupy.cuda.Event()
    out = []
    for _ in range(rounds):
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(cupy.cuda.get_elapsed_time(a, b) * 1e3)
    return out


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [20, 24, 28]
    rows: list[tuple[int, str, float]] = []
    for log2n in sizes:
        one_size(log2n, rows)
    print("\n| 2^k | call | isolated µs (median) |\n|---|---|---|")
    for log2n, name, us in rows:
        print(f"| {log2n} | {name} | {us:.1f} |")
    gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    tv = getattr(torch, "__version__", "-")
    print(f"\njitscan {jitscan.__version__}, CuPy {cupy.__version__}, torch {tv}, {gpu}")


def one_size(log2n: int, rows: list[tuple[int, str, float]]) -> None:
    n = 1 << log2n
    x_h, mask_h, keys_h = selection_cases(log2n)
    x, mask, keys = cupy.asarray(x_h), cupy.asarray(mask_h), cupy.asarray(keys_h)
    flags = cupy.asarray(np.r_[1, keys_h[1:] != keys_h[:-1]].astype(np.uint8))
    vals = x
    yard = cupy.empty(n * 7 // 2, np.uint8)
    yard2 = cupy.empty_like(yard)
    calls = {
        "jitscan.extract(mask, x)": lambda: jitscan.extract(mask, x),
        "jitscan.extract(mask, x, size=n)": lambda: jitscan.extract(mask, x, size=n),
        "cupy x[mask]": lambda: x[mask],
        "copy of compaction's bytes": lambda: yard2.__setitem__(Ellipsis, yard),
        "jitscan.unique_consecutive(k, return_counts=True)": lambda: jitscan.unique_consecutive(
            keys, return_counts=True
        ),
        "jitscan.reduce_by_key(k, v)": lambda: jitscan.reduce_by_key(keys, vals),
        "jitscan.scan_by_key(k, v)": lambda: jitscan.scan_by_key(keys, vals),
        "jitscan.segmented_cumsum(v, flags=f)": lambda: jitscan.segmented_cumsum(vals, flags=flags),
    }
    if torch is not None and torch.cuda.is_available():
        tx, tm, tk = (
            torch.as_tensor(x, device="cuda"),
            torch.as_tensor(mask, device="cuda"),
            torch.as_tensor(keys, device="cuda"),
        )
        calls["torch.masked_select"] = lambda: torch.masked_select(tx, tm)
        calls["torch.unique_consecutive(return_counts=True)"] = lambda: torch.unique_consecutive(
            tk, return_counts=True
        )
    # right first: a wrong answer is no figure
    assert cupy.array_equal(jitscan.extract(mask, x), x[mask])
    v, c = jitscan.unique_consecutive(keys, return_counts=True)
    head = np.r_[True, keys_h[1:] != keys_h[:-1]]
    assert np.array_equal(cupy.asnumpy(v), keys_h[head])
    assert np.array_equal(cupy.asnumpy(c), np.diff(np.r_[np.flatnonzero(head), n]))
    times: dict[str, list[float]] = {k: [] for k in calls}
    for fn in calls.values():  # warm: compiled, pools grown
        fn()
    cupy.cuda.runtime.deviceSynchronize()
    for _ in range(5):  # in turns
        for name, fn in calls.items():
            try:
                times[name] += isolated(fn, 3)
            except Exception as exc:  # a peer that cannot run is reported, not fatal
                times[name] = []
                print(f"{name}: {type(exc).__name__}: {exc}")
    med = {k: statistics.median(v) for k, v in times.items() if v}
    for name, us in med.items():
        rows.append((log2n, name, us))
    base = med.get("copy of compaction's bytes")
    print(f"\n2^{log2n}: " + ", ".join(f"{k} {v:.1f}" for k, v in med.items()))
    if base:
        ext = med["jitscan.extract(mask, x, size=n)"]
        print(f"  extract(size=n) at {base / ext:.2f} of the copy of its bytes")


if __name__ == "__main__":
    main()
