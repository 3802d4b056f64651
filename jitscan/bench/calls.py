"""What a user sees per call: host time, the isolated call and the pipelined rate.

The timed call is the Python call a user writes, with a device input and an output
it keeps: ``jitscan.cumsum(x, out=y)``, a prepared scan ``p(x, out=y)``, and every
inclusive scan or copy of the backend's peers (:mod:`jitscan.bench.peers`) as a user
calls it: the ``flat`` form. The other call forms (a Python operator, exclusive,
``initial=``, tuple values, segmented by offsets and by flags, segmented reductions,
axis scans and reductions) and their peers come from :mod:`jitscan.bench.forms`; each
result names its form (``Result.call``). For each, :func:`measure_calls` takes four
figures (see :mod:`jitscan.bench.timing`):

- ``host``: ``perf_counter`` around the Python call alone (nothing waits inside), the
  median of ``HOST_CALLS`` warm calls back to back;
- ``isolated``: on an idle device, a mark before the call, the call, a mark after
  it, one synchronization; the time between the marks (median of ``reps`` calls);
- ``pipelined``: ``calls`` calls back to back, one synchronization; per call;
- ``device``: device time, measured as for the variants (spin kernel first).

Contenders take turns in ``ROUNDS`` rounds, each measuring every contender's block of
calls, the order rotating by one each round, so that clock and thermal drift fall on
all of them; each figure is the median over the rounds. A jitscan call that fails
(building it, its first call, or any timed call) gives error results (NaN seconds and
the reason) and leaves the others to finish.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..api import cumsum  # jitscan.cumsum itself
from ..plan import plan
from .forms import FLAT, form_calls, shared
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
    """One call as a user makes it: ``call(i)`` scans input ``i`` (rotating) into ``out``.

    ``form`` is the call form it belongs to (:data:`jitscan.bench.forms.FORMS`; empty
    outside the per-call table), ``error`` why it cannot be timed here (then ``call`` is
    never made and the results are error cells).
    """

    name: str
    call: Callable[[int], Any]
    out: Any = None
    form: str = ""
    error: str = ""


def _failed(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _never(i: int) -> None:
    raise RuntimeError("a contender that failed to build is not called")


def contenders(
    timer: Timer,
    dtype: str,
    n: int,
    rng: np.random.Generator | None = None,
    peers: bool = True,
    forms: Iterable[str] = (FLAT,),
) -> tuple[list[Contender], list[str]]:
    """jitscan's calls and (``peers``) the peers' of each form; why any peer is missing.

    The ``flat`` form: ``jitscan.cumsum`` twice and a prepared scan, the backend's
    peers' scans and copies. Every other form of ``forms``: its jitscan calls and peers
    (:func:`jitscan.bench.forms.form_calls`). Each call is built and made once here; a
    jitscan call that fails is kept with its ``error`` (an error cell), a peer that fails
    is left out with a line in the second list.

    Raises
    ------
    Unsupported
        A size the device memory cannot hold, or a dtype the device lacks.
    """
    forms = list(forms)
    if n > timer.max_elements(dtype):
        raise Unsupported(f"2^{log2_label(n)} {dtype} elements do not fit in {timer.info.name}'s memory")
    if np.dtype(dtype) == np.float64 and not timer.info.fp64:
        raise Unsupported(f"{timer.info.name} has no float64")
    ins = timer.inputs(n, dtype, rng)
    b, q = timer.backend, timer.queue
    out_cumsum = b.empty((n,), np.dtype(dtype), q)
    out_prepared = b.empty((n,), np.dtype(dtype), q)
    p = plan(dtype, "add", backend=timer.name, device=timer.device)
    found: list[Contender] = []
    skipped: list[str] = []
    if FLAT in forms:
        found += [
            Contender(CUMSUM, lambda i: cumsum(ins[i % len(ins)], out=out_cumsum), out_cumsum, FLAT),
            # allocates its result each call, as a user's plain call does
            Contender(CUMSUM_NEW, lambda i: cumsum(ins[i % len(ins)], dtype=dtype), form=FLAT),
            Contender(PREPARED, lambda i: p(ins[i % len(ins)], out=out_prepared), out_prepared, FLAT),
        ]
        if peers:
            others, skipped = peer_functions(timer, dtype, n, rng, kinds=("scan", "copy"))
            found += [Contender(peer.name, peer.run, peer.out, FLAT) for peer in others]
    if any(form != FLAT for form in forms):
        data = shared(timer, dtype, n)
        for c in form_calls(timer, forms, data, peers):
            try:
                fn = c.build()
                fn(0)
                timer.sync()
            except ImportError as exc:
                if not c.jitscan:
                    skipped.append(f"{c.name}: not installed ({exc})")
                    continue
                found.append(Contender(c.name, _never, c.out, c.form, _failed(exc)))
            except Exception as exc:  # noqa: BLE001 - a failing form must not stop the run
                if not c.jitscan:
                    skipped.append(f"{c.name}: {_failed(exc)}")
                    continue
                found.append(Contender(c.name, _never, c.out, c.form, _failed(exc)))
            else:
                found.append(Contender(c.name, fn, c.out, c.form))
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
    forms: Iterable[str] = (FLAT,),
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
    forms : iterable of str
        The call forms (:data:`jitscan.bench.forms.FORMS`); default the flat one.
    """
    found, why = contenders(timer, dtype, n, rng, peers, forms)
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
    """The four per-call figures of each of ``found``, taken in turns (see :func:`measure_calls`).

    A contender with an ``error``, or one whose call raises (warming up or timed), gives
    one error result per figure (NaN seconds, the reason in ``error``) and is not called
    again; the others go on.
    """
    failed: dict[str, str] = {c.name: c.error for c in found if c.error}

    def guarded(c: Contender, measure: Callable[[], None]) -> None:
        try:
            measure()
        except Exception as exc:  # noqa: BLE001 - one failing call must not stop the others
            failed[c.name] = _failed(exc)
            try:
                timer.sync()
            except Exception:  # noqa: BLE001, S110 - the queue may stay broken; the next figure says so
                pass

    def warm(c: Contender) -> None:
        for i in range(warmup):
            c.call(i)

    for c in found:
        if c.name not in failed:
            guarded(c, lambda c=c: warm(c))
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
            if c.name in failed:
                continue

            def block(c: Contender = c, first: int = step) -> None:
                got = samples[c.name]
                host = timer.host_per_call(c.call, HOST_CALLS, first)
                first += HOST_CALLS
                isolated = float(np.median([timer.call(c.call, first + i)[1] for i in range(reps)]))
                first += reps
                pipelined = timer.pipelined(c.call, calls, first)
                first += calls
                device = timer.time(lambda i: c.call(first + i), max(3, reps // 4), warmup=0)[0]
                for figure, t in zip(CALL_FIGURES, (host, isolated, pipelined, device), strict=True):
                    got[figure].append(t)

            guarded(c, block)
            step += HOST_CALLS + 2 * reps + calls
    results = []
    for c in found:
        for figure in CALL_FIGURES:
            if c.name in failed:
                r = Result(timer.name, c.name, dtype, n, float("nan"), 0.0, category=category, timing=figure)
                r.error = failed[c.name]
            else:
                med, spread, times = summary(samples[c.name][figure])
                r = Result(
                    timer.name, c.name, dtype, n, med, spread, category=category, timing=figure, times=times
                )
            r.call = c.form
            results.append(r)
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
