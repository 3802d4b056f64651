"""Host time of the common call on CUDA, for comparing two jitscan trees in turns.

Usage: TREE=name python experiments/host_ab.py DTYPE[,DTYPE...] LOG2N ...

Times ``jitscan.cumsum(x, out=y)``, the allocating ``jitscan.cumsum(x, dtype=x.dtype)``,
a prepared ``p(x, out=y)``, the first and the third with the driver launch stubbed out
(jitscan's Python alone), and CUB's call (``cuda.compute``), each in blocks of ``CALLS``
calls in ``ROUNDS`` rounds taking turns; prints one line of medians (microseconds a call)
per dtype and size, tagged with ``$TREE``. Run it in alternating processes with each tree
first on ``PYTHONPATH`` (``git archive REV jitscan | tar -x -C DIR``): a machine's speed
moves between processes, so compare the ratios to CUB in the same process.
"""

from __future__ import annotations

import os
import statistics
import sys
from collections.abc import Callable

import cupy
import numpy as np

import jitscan
from jitscan.bench import studies
from jitscan.bench.cub import cub_call

CALLS = 200
ROUNDS = 9


def contenders(dtype: str, n: int) -> dict[str, Callable[[], object]]:
    """Each call as a function of no arguments; names starting with "stubbed" run without the driver."""
    x = cupy.asarray(np.random.default_rng(1).integers(-9, 9, n).astype(dtype))
    y = cupy.empty_like(x)
    p = jitscan.plan(dtype, "add", backend="cupy")
    cub = cub_call("inclusive", x, y, num_items=n)
    return {
        "cumsum(x, out=y)": lambda: jitscan.cumsum(x, out=y),
        "cumsum(x)": lambda: jitscan.cumsum(x, dtype=x.dtype),
        "p(x, out=y)": lambda: p(x, out=y),
        "stubbed cumsum(x, out=y)": lambda: jitscan.cumsum(x, out=y),
        "stubbed p(x, out=y)": lambda: p(x, out=y),
        "CUB": lambda: cub(x),
    }


def main() -> None:
    tag = os.environ.get("TREE", "?")
    for dtype in sys.argv[1].split(","):
        for e in (int(a) for a in sys.argv[2:]):
            found = contenders(dtype, 1 << e)
            for fn in found.values():
                fn()
            names = list(found)
            times: dict[str, list[float]] = {name: [] for name in names}
            for r in range(ROUNDS):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    times[name].append(studies.host_block(found[name], CALLS, name.startswith("stubbed")))
            med = {name: statistics.median(t) for name, t in times.items()}
            cub = med["CUB"]
            cells = " | ".join(f"{name} {t:.2f}" for name, t in med.items())
            ratios = f"cumsum/CUB {med['cumsum(x, out=y)'] / cub:.3f}, p/CUB {med['p(x, out=y)'] / cub:.3f}"
            print(f"tree={tag} {dtype} 2^{e}: {cells} | {ratios}", flush=True)


if __name__ == "__main__":
    main()
