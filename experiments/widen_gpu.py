"""``jitscan.cumsum`` of int32 on a CUDA GPU (an int64 result, as NumPy's) against its peers.

Usage: python experiments/widen_gpu.py [LOG2N ...]   (default 16 20 24 28)

The kernels read the int32 items and widen them as they load (``ScanSpec.in_dtype``).
Beside it: the same call as it ran before that, a conversion then the int64 scan
(``jitscan.cumsum(x.astype(int64))``), ``torch.cumsum(t, 0)`` (int64 too) and
``cupy.cumsum(x)``. Each is called as a user writes it, result allocated by the call.

Per call, microseconds: ``host`` is the Python call alone (median of 100 warm calls, no
wait inside), ``piped`` 50 calls back to back between two events, one synchronization.
Contenders take turns in 5 rounds, the order rotating; medians over the rounds.
"""

from __future__ import annotations

import statistics
import sys

import cupy
import numpy as np
import torch

import jitscan
from jitscan.bench.studies import host_and_piped


def main() -> None:
    exps = [int(a) for a in sys.argv[1:]] or [16, 20, 24, 28]
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"{name}; CuPy {cupy.__version__}, torch {torch.__version__}")
    print("n | call | host µs | piped µs | piped / jitscan")
    for e in exps:
        n = 1 << e
        x = cupy.random.randint(-1000, 1000, n, dtype=cupy.int32)
        tx = torch.as_tensor(x, device="cuda")
        want = np.cumsum(cupy.asnumpy(x))
        fns = {
            "jitscan.cumsum(x)": lambda x=x: jitscan.cumsum(x),
            "jitscan, converted first": lambda x=x: jitscan.cumsum(x.astype(cupy.int64)),
            "torch.cumsum(t, 0)": lambda tx=tx: torch.cumsum(tx, 0),
            "cupy.cumsum(x)": lambda x=x: cupy.cumsum(x),
        }
        got = fns["jitscan.cumsum(x)"]()
        assert got.dtype == cupy.int64 and np.array_equal(cupy.asnumpy(got), want)
        rounds: dict[str, list[tuple[float, float]]] = {k: [] for k in fns}
        names = list(fns)
        for r in range(5):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                rounds[name].append(host_and_piped(fns[name]))
        med = {
            k: (statistics.median(h for h, _ in v), statistics.median(p for _, p in v))
            for k, v in rounds.items()
        }
        base = med["jitscan.cumsum(x)"][1]
        for name, (h, p) in med.items():
            print(f"2^{e} | {name} | {h:.1f} | {p:.1f} | {p / base:.2f}", flush=True)


if __name__ == "__main__":
    main()
