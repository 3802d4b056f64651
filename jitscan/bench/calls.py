"""What a user sees per call: host time, the isolated call and the pipelined rate.

The timed call is the Python call a user writes, with a device input and an output
it keeps: ``jitscan.cumsum(x, out=y)``, a prepared scan ``p(x, out=y)``, and every
inclusive scan or copy of the backend's peers (:mod:`jitscan.bench.peers`) as a user
calls it. For each, :func:`measure_calls` takes four figures (see
:mod:`jitscan.bench.timing`):

- ``host``: ``perf_counter`` around the Python call alone (nothing waits inside), the
  median of ``HOST_CALLS`` warm calls back to back;
- ``isolated``: on an idle device, a mark before the call, the call, a mark after
  it, one synchronization; the time between the marks (median of ``reps`` calls);
- ``pipelined``: ``calls`` calls back to back, one synchronization; per call;
- ``device``: device time, measured as for the variants (spin kernel first).

Contenders take turns in ``ROUNDS`` rounds, each measuring every contender's block of
calls, the order rotating by one each round, so that clock and thermal drift fall on
all of them; each figure is the median over the rounds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..api import cumsum  # jitscan.cumsum itself
from ..plan import plan
from .peers import peer_functions
from .results import CALL_FIGURES, Result, Unsupported, log2_label, summary
from .timing import Timer

#: calls back to back in one pipelined measurement
PIPELINE_CALLS = 50
#: warm calls whose median is the host time of a call, per round
HOST_CALLS = 100
#: rounds in which the contenders take turns
ROUNDS = 3
#: the public call a user writes, and a prepared scan called directly
CUMSUM = "jitscan.cumsum(x, out=y)"
CUMSUM_NEW = "jitscan.cumsum(x, dtype=x.dtype)"
PREPARED = "jitscan.plan(...)(x, out=y)"
#: the jitscan calls, in the order tables show them
JITSCAN_CALLS = (CUMSUM, CUMSUM_NEW, PREPARED)


@dataclass
class Contender:
    """One call as a user makes it: ``call(i)`` scans input ``i`` (rotating) into ``out``."""

    name: str
    call: Callable[[int], Any]
    out: Any = None


def contenders(
    timer: Timer, dtype: str, n: int, rng: np.random.Generator | None = None, peers: bool = True
) -> tuple[list[Contender], list[str]]:
    """jitscan's calls and (``peers``) the backend's peers' scans and copies; why any peer is missing.

    Raises
    ------
    Unsupported
        A size the device memory cannot hold, or a dtype the device lacks.
    """
    if n > timer.max_elements(dtype):
        raise Unsupported(f"2^{log2_label(n)} {dtype} elements do not fit in {timer.info.name}'s memory")
    if np.dtype(dtype) == np.float64 and not timer.info.fp64:
        raise Unsupported(f"{timer.info.name} has no float64")
    ins = timer.inputs(n, dtype, rng)
    b, q = timer.backend, timer.queue
    out_cumsum = b.empty((n,), np.dtype(dtype), q)
    out_prepared = b.empty((n,), np.dtype(dtype), q)
    p = plan(dtype, "add", backend=timer.name, device=timer.device)
    found = [
        Contender(CUMSUM, lambda i: cumsum(ins[i % len(ins)], out=out_cumsum), out_cumsum),
        # allocates its result each call, as a user's plain call does
        Contender(CUMSUM_NEW, lambda i: cumsum(ins[i % len(ins)], dtype=dtype)),
        Contender(PREPARED, lambda i: p(ins[i % len(ins)], out=out_prepared), out_prepared),
    ]
    if not peers:
        return found, []
    others, skipped = peer_functions(timer, dtype, n, rng, kinds=("scan", "copy"))
    found += [Contender(peer.name, peer.run, peer.out) for peer in others]
    return found, skipped


def measure_calls(
    timer: Timer,
    dtype: str,
    n: int,
    reps: int,
    calls: int = PIPELINE_CALLS,
    rng: np.random.Generator | None = None,
    skipped: list[str] | None = None,
    warmup: int = 3,
    peers: bool = True,
) -> list[Result]:
    """The per-call figures of every contender at one size: four results each (category ``"call"``).

    Parameters
    ----------
    timer : Timer
    dtype : str
    n : int
    reps : int
        Repetitions: isolated calls and device-timed runs per contender, and
        pipelined batches (at least 3 of each).
    calls : int
        Calls per pipelined batch.
    rng : numpy.random.Generator, optional
    skipped : list of str, optional
        Gets a line for each peer that cannot run here.
    warmup : int
        Untimed calls of each contender first (compiles, allocates scratch).
    peers : bool
        Also the backend's peers (else jitscan's calls only).
    """
    found, why = contenders(timer, dtype, n, rng, peers)
    if skipped is not None:
        skipped.extend(f"{p} ({timer.name}, {dtype}, 2^{log2_label(n)})" for p in why)
    return measure_contenders(timer, found, dtype, n, reps, calls, warmup)


def measure_contenders(
    timer: Timer,
    found: list[Contender],
    dtype: str,
    n: int,
    reps: int,
    calls: int = PIPELINE_CALLS,
    warmup: int = 3,
    category: str = "call",
) -> list[Result]:
    """The four per-call figures of each of ``found``, taken in turns (see :func:`measure_calls`)."""
    for c in found:
        for i in range(warmup):
            c.call(i)
    timer.sync()
    reps = max(3, reps)
    samples: dict[str, dict[str, list[float]]] = {
        c.name: {figure: [] for figure in CALL_FIGURES} for c in found
    }
    # Rounds: each contender's figures are measured as a block of warm calls (a user's
    # loop calls the same function again and again; interleaving single calls of six
    # libraries measured their cold caches instead, 2-3x the warm time), and the
    # contenders take turns block by block, the order rotating each round, so that
    # drift falls on all of them. Every figure is the median over the rounds.
    step = 0
    for r in range(ROUNDS):
        turn = found[r % len(found) :] + found[: r % len(found)]
        for c in turn:
            samples[c.name]["host"].append(timer.host_per_call(c.call, HOST_CALLS, step))
            step += HOST_CALLS
            isolated = [timer.call(c.call, step + i)[1] for i in range(reps)]
            samples[c.name]["isolated"].append(float(np.median(isolated)))
            step += reps
            samples[c.name]["pipelined"].append(timer.pipelined(c.call, calls, step))
            step += calls
            device = timer.time(lambda i, c=c, s=step: c.call(s + i), max(3, reps // 4), warmup=0)[0]
            samples[c.name]["device"].append(device)
            step += reps
    results = []
    for c in found:
        for figure in CALL_FIGURES:
            med, spread, times = summary(samples[c.name][figure])
            results.append(
                Result(
                    timer.name, c.name, dtype, n, med, spread, category=category, timing=figure, times=times
                )
            )
    return results


__all__ = [
    "CUMSUM",
    "CUMSUM_NEW",
    "JITSCAN_CALLS",
    "PIPELINE_CALLS",
    "PREPARED",
    "Contender",
    "contenders",
    "measure_calls",
    "measure_contenders",
]
