"""jitscan's variants as the bench times them: prepared scans, compiled before any timing.

A case is a prepared scan (:func:`jitscan.plan`) bound to one size: its program is
compiled by ``p.bound`` before anything is timed, and a timed run is one bare launch
(``p.launch(..., check=False)``) of a rotating input into one output, so that device
time covers exactly what one scan puts on the queue (the tile-state reset, the
launches, three for ``rts``). The programs are those the public functions pick for
that size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import variants
from ..errors import DeadlockError
from ..plan import PreparedScan, plan
from ..variants import NONE, Segments
from .inputs import head_flags
from .results import Result, Unsupported, log2_label
from .timing import Timer

#: every variant the bench knows, in the order it reports them; "segmented" is the
#: fallback scan segmented by uint8 head flags (mean segment length 10)
VARIANTS = ("memcpy", "rts", "lookback", "fallback", "segmented")
#: the algorithm that runs each bench variant
ALGORITHM = {**{v: v for v in variants.VARIANTS}, "segmented": "fallback"}


@dataclass
class Case:
    """One prepared jitscan configuration: compiled, with its inputs on the device.

    ``run(i)`` queues one scan of input ``i`` (rotating) into ``out`` without waiting
    for it; ``counted()``, for chained variants, runs one instrumented scan and returns
    its look-back counters; ``scan`` is the prepared scan and ``seg`` its segments.
    """

    timer: Timer
    variant: str
    dtype: str
    n: int
    run: Callable[[int], Any]
    counted: Callable[[], dict | None] | None = None
    scan: PreparedScan | None = None
    out: Any = None
    seg: Segments = NONE

    def run_sync(self, i: int = 0) -> None:
        """One scan, waited for."""
        self.run(i)
        self.timer.sync()


def prepare(
    timer: Timer,
    variant: str,
    dtype: str,
    n: int,
    rng: np.random.Generator | None = None,
    op: str = "add",
    kind: str = "inclusive",
    **knobs: Any,
) -> Case:
    """Prepare ``variant`` for ``dtype``, compile its program for ``n`` and upload inputs.

    Raises
    ------
    ValueError
        An unknown variant (or knob values the prepared scan refuses).
    Unsupported
        A size the device memory cannot hold, or a dtype the device lacks.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; valid variants: {', '.join(VARIANTS)}")
    if n > timer.max_elements(dtype):
        raise Unsupported(f"2^{log2_label(n)} {dtype} elements do not fit in {timer.info.name}'s memory")
    if np.dtype(dtype) == np.float64 and not timer.info.fp64:
        raise Unsupported(f"{timer.info.name} has no float64")
    b, q = timer.backend, timer.queue
    algorithm = ALGORITHM[variant]
    segmented = "flags" if variant == "segmented" else ""
    seg = NONE
    if segmented:
        seg = Segments(heads=b.to_device(head_flags(n, np.random.default_rng(n)), q))

    def make(stats: bool) -> PreparedScan:
        return plan(
            dtype,
            op,
            kind=kind,
            variant=algorithm,
            backend=timer.name,
            device=timer.device,
            segmented=segmented,
            stats=stats,
            **knobs,
        )

    p = make(False)
    p.bound(q, n)  # compile outside any timed region
    ins = timer.inputs(n, dtype, rng)
    out = b.empty((n,), np.dtype(dtype), q)
    launch = p.launch

    def run(i: int) -> None:
        launch(ins[i % len(ins)], out, n, seg, check=False, queue=q)

    counted = None
    if variants.get(algorithm).caps.tile_state:
        counting = make(True)

        def counted() -> dict | None:
            return counting.launch(ins[0], out, n, seg, queue=q)

    return Case(timer, variant, dtype, n, run, counted, p, out, seg)


def average_counters(case: Case, runs: int) -> dict:
    """Look-back counters averaged over ``runs`` instrumented runs.

    A run whose look-back watchdog fired (``lookback`` on a device that starved a
    predecessor) is counted under ``deadlocks`` instead of raising.
    """
    total: dict[str, float] = {}
    deadlocks = 0
    for _ in range(runs):
        try:
            counters = case.counted() if case.counted else None
        except DeadlockError:
            deadlocks += 1
            continue
        for k, v in (counters or {}).items():
            total[k] = total.get(k, 0) + v
    done = runs - deadlocks
    out = {k: v / done for k, v in total.items()} if total and done else {}
    if deadlocks:
        out["deadlocks"] = deadlocks
    return out


def measure_variant(
    timer: Timer,
    variant: str,
    dtype: str,
    n: int,
    reps: int,
    rng: np.random.Generator | None = None,
    op: str = "add",
    kind: str = "inclusive",
    stat_runs: int = 3,
    **knobs: Any,
) -> Result:
    """Time one jitscan variant (device time of the tile-state reset and the launches).

    Chained variants also get the look-back counters, averaged over ``stat_runs``
    instrumented runs that are not timed (instrumentation is compiled in).
    """
    case = prepare(timer, variant, dtype, n, rng, op=op, kind=kind, **knobs)
    med, spread, times = timer.time(case.run, reps)
    result = Result(timer.name, variant, dtype, n, med, spread, times=times)
    if case.counted is not None and stat_runs > 0:
        result.stats = average_counters(case, stat_runs)
    result.block_every = int(knobs.get("simulate_blocking") or 0)
    return result


__all__ = ["ALGORITHM", "VARIANTS", "Case", "average_counters", "measure_variant", "prepare"]
