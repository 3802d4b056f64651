"""Host time of the common call on CUDA, for comparing two jitscan trees.

Usage: TREE=name python experiments/host_ab.py DTYPE[,DTYPE...] LOG2N ...
       BASE=DIR python experiments/host_ab.py DTYPE[,DTYPE...] LOG2N ...

Times ``jitscan.cumsum(x, out=y)``, the allocating ``jitscan.cumsum(x, dtype=x.dtype)``,
a prepared ``p(x, out=y)``, the first and the third with the driver launch stubbed out
(jitscan's Python alone; not where the common call is compiled, which launches past the
stub), and CUB's call (``cuda.compute``), each in blocks of ``CALLS``
calls in ``ROUNDS`` rounds taking turns; prints one line of medians (microseconds a call)
per dtype and size.

Two trees in one process (``BASE``, the better comparison: the machine's speed moves
between processes by up to 2x, within one far less): ``DIR`` holds the other tree's package
under the name ``jitscan_base`` (``git archive REV jitscan | tar -x -C DIR --transform
s/^jitscan/jitscan_base/``; the package imports itself relatively), and each contender of
it takes turns with this tree's. Without ``BASE``, run it in alternating processes with
each tree first on ``PYTHONPATH``, tagged with ``$TREE``, and compare the ratios to CUB.
"""

from __future__ import annotations

import importlib
import inspect
import os
import statistics
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import cupy
import numpy as np

import jitscan
from jitscan.bench import studies
from jitscan.bench.cub import cub_call

CALLS = 200
ROUNDS = 9


#: a contender: a function of no arguments, and the CUDA backend module to stub (or None)
Call = tuple[Callable[[], object], Any]


def contenders(trees: dict[str, ModuleType], dtype: str, n: int) -> dict[str, Call]:
    """Each call of each tree, and CUB's."""
    x = cupy.asarray(np.random.default_rng(1).integers(-9, 9, n).astype(dtype))
    y = cupy.empty_like(x)
    cub = cub_call("inclusive", x, y, num_items=n)
    found: dict[str, Call] = {}
    for tag, js in trees.items():
        p = js.plan(dtype, "add", backend="cupy")
        backend = importlib.import_module(f"{js.__name__}.backends.cupy")
        found |= {
            f"{tag}cumsum(x, out=y)": (lambda js=js: js.cumsum(x, out=y), None),
            f"{tag}cumsum(x)": (lambda js=js: js.cumsum(x, dtype=x.dtype), None),
            f"{tag}p(x, out=y)": (lambda p=p: p(x, out=y), None),
        }
        if inspect.isfunction(p._common):  # the compiled call launches past the stub: not timed
            found |= {
                f"{tag}stubbed cumsum(x, out=y)": (lambda js=js: js.cumsum(x, out=y), backend),
                f"{tag}stubbed p(x, out=y)": (lambda p=p: p(x, out=y), backend),
            }
    found["CUB"] = (lambda: cub(x), None)
    return found


def main() -> None:
    base = os.environ.get("BASE")
    trees = {"": jitscan}
    if base:
        sys.path.insert(0, base)
        trees = {"new ": jitscan, "base ": importlib.import_module("jitscan_base")}
    tag = os.environ.get("TREE", "?")
    for dtype in sys.argv[1].split(","):
        for e in (int(a) for a in sys.argv[2:]):
            found = contenders(trees, dtype, 1 << e)
            for fn, _ in found.values():
                fn()
            names = list(found)
            times: dict[str, list[float]] = {name: [] for name in names}
            for r in range(ROUNDS):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    fn, stub = found[name]
                    times[name].append(studies.host_block(fn, CALLS, stub))
            med = {name: statistics.median(t) for name, t in times.items()}
            cub = med["CUB"]
            cells = " | ".join(f"{name} {t:.2f}" for name, t in med.items())
            ratios = ", ".join(
                f"{t}cumsum/CUB {med[f'{t}cumsum(x, out=y)'] / cub:.3f}, "
                f"{t}p/CUB {med[f'{t}p(x, out=y)'] / cub:.3f}"
                for t in trees
            )
            head = f"tree={tag} " if not base else ""
            print(f"{head}{dtype} 2^{e}: {cells} | {ratios}", flush=True)


if __name__ == "__main__":
    main()
