"""The search: coordinate descent from the built-in knobs, every candidate checked, then timed.

For each case (``space.Case``) the run starts from the built-in knobs and walks the knobs
in ``space.ORDER``: it times every value of one knob with the others held, moves to the
best if it beats the current knobs by ``MARGIN``, and goes on to the next knob; a second
pass follows if the first moved (ScanBox's coordinate search, pruned by the budget). A
candidate's result is compared with the built-in knobs' result before it is timed; one
that fails to build or gives another answer is reported and skipped. The winner is timed
against the built-in knobs once more, in turns, at every power of two of the case's size
class, and kept only if it is faster by half the margin overall and slower at no size
beyond noise (``NOISE``); a case that keeps nothing
keeps the built-in knobs. Device time throughout (``jitscan.bench.timing.Timer``).
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import backends, variants
from ..bench.timing import Timer, interleaved
from ..plan import plan, tuned
from ..plan.prepared import PreparedScan
from . import space

#: a move must beat the current knobs by this fraction of time
MARGIN = 0.02
#: the winner may be this much slower than the built-in knobs at one point (timing noise)
NOISE = 0.01
#: timed runs of one candidate at one point (large inputs; small ones take more, reps())
REPS = 10


def reps(n: int) -> int:
    """Timed runs at ``n`` elements: short launches vary more, and cost little."""
    return REPS if n >= 1 << 22 else 3 * REPS


@dataclass
class Outcome:
    """What the run found for one case.

    Attributes
    ----------
    case : str
        The case's name (``jitscan.plan.tuned.case``).
    knobs : dict
        The knobs kept (empty: the built-in knobs stay).
    speedup : float
        Built-in time over tuned time, geometric mean over the case's points (1.0: kept).
    tried, skipped : int, list of str
        Candidates timed, and candidates that failed to build or to check, with why.
    seconds : float
    """

    case: str
    knobs: dict[str, Any]
    speedup: float
    tried: int = 0
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    points: list[tuple[str, int, float]] = field(default_factory=list)


@contextmanager
def _builtin_only() -> Iterator[None]:
    """Tables off while tuning: the built-in knobs are the baseline."""
    old = os.environ.get(tuned.SWITCH)
    os.environ[tuned.SWITCH] = "off"
    try:
        yield
    finally:
        if old is None:
            del os.environ[tuned.SWITCH]
        else:
            os.environ[tuned.SWITCH] = old


class _Points:
    """One case's inputs and reference answers on the timer's device."""

    def __init__(
        self, timer: Timer, case: space.Case, rng: np.random.Generator, points: list | None = None
    ) -> None:
        self.timer, self.case = timer, case
        b, q = timer.backend, timer.queue
        self.data: list[tuple[str, int, Any, Any, Any]] = []
        for dtype, n in case.points if points is None else points:
            x = timer.inputs(n, dtype, rng)[0]
            if case.op == "custom":  # mostly zeros, so that the fill carries far
                host = b.to_host(x)
                host[rng.random(n) < 0.9] = 0
                x = b.to_device(host, q)
            flags = None
            if case.segmented:
                flags = b.to_device((rng.random(n) < 1e-3).astype(np.uint8), q)
            self.data.append((dtype, n, x, b.empty((n,), np.dtype(dtype), q), flags))
        # a check input per dtype: tens of tiles, so that look-back and carries run
        self.checks: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
        for dtype in dict.fromkeys(d for d, _ in case.points):  # in order: the same inputs every run
            m = 40_000 + 17
            host = (rng.random(m) * 100).astype(dtype)
            if case.op == "custom":
                host[rng.random(m) < 0.9] = 0
            f = (rng.random(m) < 1e-2).astype(np.uint8) if case.segmented else None
            self.checks[dtype] = (host, f)
        self._expected: dict[str, np.ndarray] | None = None
        self._scans: dict[tuple, PreparedScan] = {}

    @property
    def expected(self) -> dict[str, np.ndarray]:
        """The built-in knobs' answers on the check inputs (made on first use: a
        confirmation times, it does not check)."""
        if self._expected is None:
            self._expected = {dtype: self._answer(self.scan(dtype, {}), dtype) for dtype in self.checks}
        return self._expected

    def scan(self, dtype: str, knobs: dict[str, Any]) -> PreparedScan:
        """The prepared scan of ``knobs`` for ``dtype``, made once (the check and the timing share it)."""
        key = (dtype, *sorted(knobs.items()))
        p = self._scans.get(key)
        if p is None:
            c = self.case
            p = self._scans[key] = plan(
                dtype,
                space.OPS[c.op],
                variant=variants.default().name,  # the tables are the default variant's
                segmented=c.segmented,
                backend=self.timer.backend.name,
                device=self.timer.device,
                **knobs,
            )
        return p

    def _answer(self, p: PreparedScan, dtype: str) -> np.ndarray:
        host, f = self.checks[dtype]
        b, q = self.timer.backend, self.timer.queue
        x = b.to_device(host, q)
        kw = {} if f is None else {"flags": b.to_device(f, q)}
        return b.to_host(p(x, **kw))

    def check(self, knobs: dict[str, Any]) -> str | None:
        """None if the knobs give the built-in knobs' answers, else what went wrong."""
        for dtype, want in self.expected.items():
            try:
                got = self._answer(self.scan(dtype, knobs), dtype)
            except Exception as exc:  # noqa: BLE001 - a candidate that does not build or fit
                return f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            exact = self.case.op == "custom" or np.dtype(dtype).kind != "f"
            same = np.array_equal(got, want) if exact else np.allclose(got, want, rtol=1e-5, atol=1e-3)
            if not same:
                return f"wrong answer ({dtype})"
        return None

    def launchers(self, knobs: dict[str, Any]) -> list[Callable[[int], Any]]:
        """``fn(i)`` per point: one call of the knobs' scan on the point's input (compiled first)."""
        fns = []
        for dtype, _, x, out, flags in self.data:
            p = self.scan(dtype, knobs)
            kw = {} if flags is None else {"flags": flags}
            p(x, out, **kw)  # compiles and warms
            fns.append(lambda i, p=p, x=x, out=out, kw=kw: p(x, out, **kw))
        return fns

    def times(self, knobs: dict[str, Any]) -> list[float]:
        return [
            self.timer.time(fn, reps(n))[0]
            for (_, n, *_), fn in zip(self.data, self.launchers(knobs), strict=True)
        ]


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def tune_case(
    timer: Timer,
    case: space.Case,
    deadline: float,
    progress: Callable[[str], None] | None = None,
    rng: np.random.Generator | None = None,
) -> Outcome:
    """Coordinate descent for one case until ``deadline`` (``time.perf_counter``), then the confirmation."""
    t0 = time.perf_counter()
    rng = rng if rng is not None else np.random.default_rng(7)
    info = timer.backend.device_info(timer.queue)
    pts = _Points(timer, case, rng)
    dtype0, n0 = case.points[0]
    start = space.defaults(info, dtype0, case.segmented, n0)
    axes = space.axes(info, case.itemsize)
    base = pts.times({})
    out = Outcome(case.name, {}, 1.0)

    def score(knobs: dict[str, Any]) -> float | None:
        why = pts.check(knobs)
        if why is not None:
            out.skipped.append(f"{_short(knobs)}: {why}")
            return None
        out.tried += 1
        return _geomean([t / b for t, b in zip(pts.times(knobs), base, strict=True)])

    best, best_score = dict(start), 1.0
    for _ in range(2):
        moved = False
        for knob in space.ORDER:
            if knob not in axes:
                continue
            tried: list[tuple[float, dict[str, Any]]] = []
            for value in axes[knob]:
                if value == best.get(knob) or time.perf_counter() > deadline:
                    continue
                candidate = space.fit(info, best | {knob: value})
                s = score(candidate)
                if progress is not None:
                    progress(f"{case.name} {knob}={value}: {'skipped' if s is None else f'{s:.3f}'}")
                if s is not None:
                    tried.append((s, candidate))
            if tried:
                s, candidate = min(tried, key=lambda t: t[0])
                if s < best_score * (1 - MARGIN):
                    best, best_score, moved = candidate, s, True
        if not moved or time.perf_counter() > deadline:
            break
    if best != start:
        wide = _Points(timer, case, rng, case.confirm or case.points)
        out.knobs, out.speedup, out.points = _confirm(timer, wide, best)
    out.seconds = time.perf_counter() - t0
    return out


def _confirm(timer: Timer, pts: _Points, knobs: dict[str, Any]) -> tuple[dict[str, Any], float, list]:
    """Built-in against tuned at every point, in turns: the knobs if they win, else nothing."""
    builtin, mine = pts.launchers({}), pts.launchers(knobs)
    ratios, points = [], []
    for (dtype, n, *_), a, b in zip(pts.data, builtin, mine, strict=True):
        t = interleaved(timer, {"builtin": a, "tuned": b}, rounds=4, reps=reps(n))
        ratios.append(t["tuned"] / t["builtin"])
        points.append((dtype, n, t["builtin"] / t["tuned"]))
    if _geomean(ratios) <= 1 - MARGIN / 2 and max(ratios) <= 1 + NOISE:
        return knobs, 1 / _geomean(ratios), points
    return {}, 1.0, points


def _short(knobs: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in knobs.items())


@dataclass
class Report:
    """A tuning run: the device, where its table went, and each case's outcome."""

    backend: str
    device: str
    path: str
    outcomes: list[Outcome]
    seconds: float

    def markdown(self) -> str:
        rows = [
            "| case | knobs kept | built-in / tuned time | candidates timed | skipped |",
            "|---|---|---:|---:|---:|",
        ]
        for o in self.outcomes:
            kept = _short(o.knobs) if o.knobs else "(built-in)"
            rows.append(f"| {o.case} | {kept} | {o.speedup:.3f} | {o.tried} | {len(o.skipped)} |")
        return "\n".join(rows)


def tune(
    backend: str | None = None,
    *,
    dtypes: tuple[str, ...] | list[str] = ("int32", "float32", "float64"),
    ops: tuple[str, ...] | list[str] = ("add", "custom"),
    segmented: tuple[str, ...] | list[str] = ("", "flags"),
    sizes: list[int] | None = None,
    budget: float = 300.0,
    write: bool = True,
    path: str | None = None,
    progress: Callable[[str], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> Report:
    """Search the tile shapes of this device's scans and keep the fastest in the user's cache.

    Parameters
    ----------
    backend : str, optional
        Default: the default backend (its default device).
    dtypes : sequence of str
        Element types; each dtype class (its size in bytes) is one set of cases.
    ops : sequence of {"add", "custom"}
        The op classes: the built-in sum, and a non-commutative monoid standing for every
        operator of your own (a forward fill).
    segmented : sequence of {"", "flags"}
        Plain scans, and scans segmented by head flags (tuned with the sum).
    sizes : list of int, optional
        Element counts (default 2^12 to 2^28 by 4, capped by the device's memory); each
        size class they meet is one case, timed at its smallest and largest size.
    budget : float
        Seconds for the search, spread evenly over the cases (each case's confirmation
        comes on top).
    write : bool
        Write the table (else only report).
    path : str, optional
        Where to write it (default: the user's cache, ``jitscan.plan.tuned.cache_dir``).
    progress, log : callable, optional
        Called with a line per candidate, and with notes.

    Returns
    -------
    Report
    """
    for op in ops:
        if op not in space.OPS:
            raise ValueError(f"unknown op class {op!r}; choose from {sorted(space.OPS)}")
    for seg in segmented:
        if seg not in space.SEGMENTED:
            raise ValueError(f"segmented takes '' or 'flags', not {seg!r}")
    t0 = time.perf_counter()
    timer = Timer(backend or backends.default().name)
    info = timer.backend.device_info(timer.queue)
    if sizes is None:
        top = min(timer.max_elements(d) for d in dtypes)
        sizes = [1 << e for e in range(12, 29, 4) if 1 << e <= top]
    todo = space.cases(list(dtypes), list(ops), list(segmented), sorted(sizes))
    outcomes = []
    with _builtin_only():
        for k, case in enumerate(todo):
            # an equal share of what is left, so that a slow case does not starve the rest
            now = time.perf_counter()
            deadline = now + max(0.0, t0 + budget - now) / (len(todo) - k)
            outcome = tune_case(timer, case, deadline, progress)
            outcomes.append(outcome)
            if log is not None:
                kept = _short(outcome.knobs) or "built-in knobs"
                log(f"{case.name}: {kept} ({outcome.speedup:.3f}x, {outcome.tried} timed)")
                for why in outcome.skipped:
                    log(f"{case.name}: skipped {why}")
            timer.release()
    target = path or str(tuned.cache_dir() / tuned.file_name(info))
    if write:
        save(info, outcomes, target)
    return Report(timer.backend.name, info.name, target, outcomes, time.perf_counter() - t0)


def save(info: Any, outcomes: list[Outcome], path: str) -> None:
    """Merge the outcomes into the table at ``path`` (a table of another device, driver or
    build, or a corrupt one, is replaced), atomically."""
    table = None
    if os.path.exists(path):
        with _quiet():
            old = tuned.read(Path(path))
        if old is not None and all(old.get(k) == v for k, v in tuned.header(info).items()):
            table = old
    if table is None:
        table = tuned.header(info) | {"cases": {}}
    for o in outcomes:
        if not o.tried and not o.knobs:
            continue  # the budget ran out before this case: what it had (or the shipped table's) stays
        entry = {"knobs": o.knobs, "speedup": round(o.speedup, 4)}
        entry["points"] = [[d, n, round(r, 4)] for d, n, r in o.points]
        table["cases"][o.case] = entry
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "w") as fh:
            json.dump(table, fh, indent=1, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)  # readers see the old table or the new one, never a part
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    tuned.forget()
    from ..api import cache

    cache.clear()  # prepared scans made before keep their programs: drop them


@contextmanager
def _quiet() -> Iterator[None]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def compare(
    backend: str | None = None,
    dtypes: tuple[str, ...] | list[str] = ("int32", "float32", "float64"),
    sizes: list[int] | None = None,
    segmented: str = "",
    op: str = "add",
    rounds: int = 6,
) -> list[tuple[str, int, float, float]]:
    """Built-in against tuned knobs (the table in use), in turns: (dtype, n, builtin s, tuned s)."""
    timer = Timer(backend or backends.default().name)
    if sizes is None:
        top = min(timer.max_elements(d) for d in dtypes)
        sizes = [1 << e for e in range(12, 29, 2) if 1 << e <= top]
    rows = []
    for dtype in dtypes:
        for n in sizes:
            case = space.Case(np.dtype(dtype).itemsize, op, segmented, 0, [(dtype, n)])
            pts = _Points(timer, case, np.random.default_rng(n))
            with _builtin_only():
                (builtin,) = pts.launchers({})
                builtin(0)
            (mine,) = pts.launchers({})  # the table applies: no knobs given
            t = interleaved(timer, {"builtin": builtin, "tuned": mine}, rounds=rounds, reps=reps(n))
            rows.append((dtype, n, t["builtin"], t["tuned"]))
        timer.release()
    return rows
