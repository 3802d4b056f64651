"""What a bench run measured: one :class:`Result` per timed configuration, collected in a :class:`Report`."""

from __future__ import annotations

import math
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

#: the figures of a per-call measurement (category "call"), in the order tables show them
CALL_FIGURES = ("host", "isolated", "pipelined", "device")


class Unsupported(Exception):
    """A configuration that cannot run here (skipped, with this message as the reason)."""


def log2_label(n: int) -> str:
    """The exponent of ``n`` as a table shows it: ``"20"`` for 2^20, ``"20.58"`` between powers."""
    e = math.log2(n) if n > 0 else 0
    return f"{e:.0f}" if e == int(e) else f"{e:.2f}"


@dataclass
class Result:
    """One timed configuration.

    Attributes
    ----------
    backend : str
        Backend of the device that ran it (``"host"`` for NumPy).
    name : str
        The jitscan variant, the peer's name, or (category ``"call"``) the call timed.
    dtype : str
    n : int
        Elements scanned.
    seconds : float
        Median seconds of one run (of one call, for category ``"call"``).
    spread : float
        ``(p90 - p10) / median`` of the run times.
    stats : dict
        Look-back counters averaged over instrumented runs (chained variants only):
        ``spins``, ``lookback_steps``, ``fallbacks``, ``insertions``, ``tiles``.
    category : {"variant", "peer", "blocking", "call", "numpy", "tuples"}
        A jitscan variant's device time, a peer's, the simulated-blocking sweep, a
        figure of a call as a user makes it, or (on a CPU) a call from NumPy to NumPy
        beside NumPy's own (:mod:`jitscan.bench.host`), or the per-call figures of tuple
        values and Python operators (:mod:`jitscan.bench.tuples`).
    block_every : int
        Simulated blocking, 1 in ``block_every`` tiles never posts; 0 for none.
    timing : {"device", "host", "isolated", "pipelined"}
        Device events around device work only, or the host clock (NumPy). Category
        ``"call"`` has one result per figure: ``"host"`` (the host time of the Python
        call), ``"isolated"`` (an event before the call and one after it, on an idle
        device), ``"pipelined"`` (many calls back to back, one synchronization, per
        call) and ``"device"`` (as for the variants).
    times : list of float
        Seconds of every timed run.
    call : str
        Category ``"call"``: the call form the row belongs to (``"flat"``, ``"segmented-offsets"``,
        ...: :data:`jitscan.bench.forms.FORMS`); empty for the other categories (and for
        per-call results of reports made before there were forms, which are all flat).
    error : str
        Why the call could not be timed here (then ``seconds`` is NaN); empty when it was.
    """

    backend: str
    name: str
    dtype: str
    n: int
    seconds: float
    spread: float
    stats: dict = field(default_factory=dict)
    category: str = "variant"
    block_every: int = 0
    timing: str = "device"
    times: list = field(default_factory=list)
    call: str = ""
    error: str = ""

    @property
    def elements_per_s(self) -> float:
        """Elements per second of the median run."""
        return self.n / self.seconds if self.seconds > 0 else float("nan")

    @property
    def hmean_elements_per_s(self) -> float:
        """Harmonic mean of the elements per second of every timed run."""
        if not self.times:
            return self.elements_per_s
        mean = statistics.fmean(self.times)
        return self.n / mean if mean > 0 else float("nan")

    def per_workgroup(self, counter: str) -> float:
        """A look-back counter per workgroup (tile); NaN where there are no counters."""
        tiles = self.stats.get("tiles")
        if not tiles or counter not in self.stats:
            return float("nan")
        return self.stats[counter] / tiles

    def as_dict(self) -> dict:
        """Plain data for JSON, with the derived throughputs."""
        d = asdict(self)
        d["elements_per_s"] = self.elements_per_s
        d["hmean_elements_per_s"] = self.hmean_elements_per_s
        return d


@dataclass
class Report:
    """Everything one bench run measured, and what it skipped."""

    devices: dict[str, str]  # backend -> device name
    results: list[Result] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    config: dict = field(default_factory=dict)

    def by(self, **where: Any) -> list[Result]:
        """The results whose attributes equal ``where``."""
        return [r for r in self.results if all(getattr(r, k) == v for k, v in where.items())]

    def as_dict(self) -> dict:
        """Plain data for JSON: devices, configuration, versions, results and skips."""
        return {
            "devices": self.devices,
            "config": self.config,
            "versions": versions(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "results": [r.as_dict() for r in self.results],
            "skipped": self.skipped,
        }


def summary(times: list[float]) -> tuple[float, float, list[float]]:
    """(median, ``(p90 - p10) / median``, the times) of a list of run times."""
    ordered = sorted(times)
    med = statistics.median(ordered)
    p10, p90 = ordered[len(ordered) // 10], ordered[(len(ordered) * 9) // 10]
    return med, ((p90 - p10) / med if med else 0.0), list(times)


def versions() -> dict[str, str]:
    """Versions of jitscan and of the libraries measured, where installed."""
    from importlib import metadata

    out = {"python": sys.version.split()[0]}
    for dist in (
        "jitscan",
        "numpy",
        "pyopencl",
        "cupy",
        "cupy-cuda12x",
        "cupy-cuda13x",
        "torch",
        "cuda-cccl",
    ):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    if "jitscan" not in out:
        import jitscan

        out["jitscan"] = jitscan.__version__
    return out


__all__ = ["CALL_FIGURES", "Report", "Result", "Unsupported", "log2_label", "summary", "versions"]
