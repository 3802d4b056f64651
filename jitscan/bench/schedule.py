"""The plan of a bench run: default sizes per class of device, and the steps that time them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .calls import PIPELINE_CALLS, measure_calls
from .cases import measure_variant
from .forms import FLAT
from .host import measure_host_calls
from .peers import measure_numpy, measure_peers
from .results import Result, Unsupported, log2_label
from .timing import Timer
from .tuples import measure_tuples

#: simulated-blocking rates of the paper's figure: 1 in k tiles never posts
BLOCKING_RATES = (512, 256, 128, 64, 32, 16, 8, 4, 2)
#: the size of the paper's results table
PAPER_SIZE = 1 << 25
#: the dtypes of the per-call table on a GPU
LATENCY_DTYPES = ("int32", "float32", "int64", "float64")
#: the dtypes of a full run on a CPU
CPU_DTYPES = ("int32", "float32")


@dataclass
class Preset:
    """Default sizes, repetitions, blocking sweep and dtypes for one class of device."""

    sizes: list[int]
    reps: int
    blocking_rates: list[int]
    blocking_size: int
    dtypes: list[str] = field(default_factory=lambda: ["int32"])


def preset(is_gpu: bool, quick: bool = False, latency: bool = False) -> Preset:
    """Defaults for a GPU or a CPU (PoCL) device; ``quick`` for a run of a minute or two.

    GPU: 2^10 .. 2^28 (every power of two, the paper's figure), 30 runs each, blocking at
    2^25 (the paper's table size). CPU: 2^10 .. 2^24 every other power, int32 and float32
    (NumPy's integer and float sums differ most), 10 runs, blocking at 2^18. Quick: three or
    four sizes (a CPU's 2^16, 2^20 and 2^24), 5 runs, four blocking rates.

    ``latency`` (the per-call table, no blocking sweep): GPU 2^10 .. 2^28 every other
    power, 20 repetitions, int32, float32, int64 and float64; CPU 2^10 .. 2^18 every
    other power, 10 repetitions, int32. Quick: three or four sizes, 5 repetitions, int32.
    """
    if latency:
        if quick:
            sizes = [1 << e for e in ((10, 16, 22, 28) if is_gpu else (10, 14, 18))]
            return Preset(sizes, 5, [], 0)
        if is_gpu:
            return Preset([1 << e for e in range(10, 29, 2)], 20, [], 0, list(LATENCY_DTYPES))
        return Preset([1 << e for e in range(10, 19, 2)], 10, [], 0)
    if quick:
        sizes = [1 << e for e in ((16, 20, 24, 28) if is_gpu else (16, 20, 24))]
        return Preset(sizes, 5, [512, 64, 8, 2], 1 << (24 if is_gpu else 18))
    if is_gpu:
        return Preset([1 << e for e in range(10, 29)], 30, list(BLOCKING_RATES), PAPER_SIZE)
    return Preset([1 << e for e in range(10, 25, 2)], 10, list(BLOCKING_RATES), 1 << 18, list(CPU_DTYPES))


def table_size(sizes: Iterable[int]) -> int:
    """The size the paper-style table reports: 2^25 if measured, else the nearest below it."""
    sizes = sorted(set(sizes))
    below = [n for n in sizes if n <= PAPER_SIZE]
    return below[-1] if below else sizes[0]


@dataclass
class Task:
    """One step of a bench run (one tick of the progress bar)."""

    label: str
    run: Callable[[], list[Result]]


@dataclass
class Plan:
    """The steps of one backend's part of a run.

    Per dtype and size: each variant's device time, the peers' (and NumPy's, once per
    dtype and size over all backends), the per-call figures and, on a device that works
    in host memory (a CPU), NumPy to NumPy against NumPy (:mod:`jitscan.bench.host`);
    with ``tuples``, per size, the tuple values' calls (:mod:`jitscan.bench.tuples`);
    then the blocking sweep on the first dtype. Without ``device_time`` (``--latency``), only the
    per-call figures. ``forms`` are the call forms of the per-call figures
    (:data:`jitscan.bench.forms.FORMS`).
    """

    timer: Timer
    variants: list[str]
    dtypes: list[str]
    sizes: list[int]
    reps: int
    peers: bool
    rates: list[int]
    blocking_size: int
    knobs: dict
    note: Callable[[str], None]
    numpy_done: set[tuple[str, int]]
    calls: bool = True
    pipeline: int = PIPELINE_CALLS
    device_time: bool = True
    tuples: bool = False
    forms: list[str] = field(default_factory=lambda: [FLAT])
    said: set[str] = field(default_factory=set)

    def _once(self, key: str, msg: str) -> None:
        if key not in self.said:
            self.said.add(key)
            self.note(msg)

    def variant(self, variant: str, dtype: str, n: int, category: str = "variant", **extra: Any) -> Task:
        """Device time of one variant (and its counters)."""
        name = self.timer.name
        where = f"({name}, {dtype}, 2^{log2_label(n)})"
        block = extra.get("simulate_blocking")
        label = f"{name} {variant}{f' 1/{block}' if block else ''} {dtype} 2^{log2_label(n)}"

        def go() -> list[Result]:
            try:
                r = measure_variant(self.timer, variant, dtype, n, self.reps, **{**self.knobs, **extra})
                r.category = category
                return [r]
            except Unsupported as exc:
                self._once(f"{variant} {where}", f"{variant} {where}: skipped, {exc}")
            except Exception as exc:  # noqa: BLE001 - one failure must not lose the run
                self.note(f"{variant} {where}: {type(exc).__name__}: {exc}")
            return []

        return Task(label, go)

    def peers_at(self, dtype: str, n: int) -> Task:
        """Device time of the peers, and NumPy's host time."""

        def go() -> list[Result]:
            why: list[str] = []
            out = measure_peers(self.timer, dtype, n, self.reps, skipped=why)
            for msg in why:
                self._once(msg.split(" (", 1)[0], msg)  # once per peer, not per size
            if (dtype, n) not in self.numpy_done:
                self.numpy_done.add((dtype, n))
                out.append(measure_numpy(self.timer, dtype, n, self.reps))
            return out

        return Task(f"{self.timer.name} peers {dtype} 2^{log2_label(n)}", go)

    def calls_at(self, dtype: str, n: int) -> Task:
        """The per-call figures of jitscan's calls of every form and the peers'; each jitscan call
        that failed is also noted (once per call, backend and dtype), its cells saying ``error``."""
        where = f"({self.timer.name}, {dtype}, 2^{log2_label(n)})"

        def go() -> list[Result]:
            why: list[str] = []
            try:
                out = measure_calls(
                    self.timer,
                    dtype,
                    n,
                    self.reps,
                    self.pipeline,
                    skipped=why,
                    peers=self.peers,
                    forms=self.forms,
                )
            except Unsupported as exc:
                self._once(f"calls {where}", f"per-call figures {where}: skipped, {exc}")
                return []
            except Exception as exc:  # noqa: BLE001 - one failure must not lose the run
                self.note(f"per-call figures {where}: {type(exc).__name__}: {exc}")
                return []
            for msg in why:
                self._once(msg.split(" (", 1)[0], msg)
            for r in out:
                if r.error:
                    key = f"error {r.name} ({self.timer.name}, {dtype})"
                    self._once(key, f"{r.name} {where}: {r.error}")
            return out

        return Task(f"{self.timer.name} calls {dtype} 2^{log2_label(n)}", go)

    def host_at(self, dtype: str, n: int) -> Task:
        """NumPy to NumPy against NumPy, on a device that works in host memory."""
        where = f"({self.timer.name}, {dtype}, 2^{log2_label(n)})"

        def go() -> list[Result]:
            try:
                return measure_host_calls(self.timer, dtype, n, self.reps)
            except Exception as exc:  # noqa: BLE001 - one failure must not lose the run
                self.note(f"NumPy to NumPy {where}: {type(exc).__name__}: {exc}")
                return []

        return Task(f"{self.timer.name} numpy {dtype} 2^{log2_label(n)}", go)

    def tuples_at(self, n: int) -> Task:
        """Tuple values and Python operators as a user calls them (:mod:`jitscan.bench.tuples`)."""
        where = f"({self.timer.name}, 2^{log2_label(n)})"

        def go() -> list[Result]:
            try:
                return measure_tuples(self.timer, n, self.reps, self.pipeline)
            except Unsupported as exc:
                self._once(f"tuples {where}", f"tuple values {where}: skipped, {exc}")
            except Exception as exc:  # noqa: BLE001 - one failure must not lose the run
                self.note(f"tuple values {where}: {type(exc).__name__}: {exc}")
            return []

        return Task(f"{self.timer.name} tuples 2^{log2_label(n)}", go)

    def tasks(self) -> list[Task]:
        """Every step, in the order they run."""
        tasks = []
        for dtype in self.dtypes:
            for n in self.sizes:
                if n > self.timer.max_elements(dtype):
                    self.note(
                        f"{self.timer.name} {dtype} 2^{log2_label(n)}: skipped, "
                        "more than the device memory holds"
                    )
                    continue
                if self.device_time:
                    tasks.extend(self.variant(v, dtype, n) for v in self.variants)
                    if self.peers:
                        tasks.append(self.peers_at(dtype, n))
                if self.calls:
                    tasks.append(self.calls_at(dtype, n))
                if self.device_time and self.peers and not self.timer.info.is_gpu:
                    tasks.append(self.host_at(dtype, n))
        if self.tuples:
            tasks.extend(self.tuples_at(n) for n in self.sizes)
        if self.device_time and self.rates and self.dtypes:
            dtype, n = self.dtypes[0], self.blocking_size
            tasks.append(self.variant("memcpy", dtype, n, "blocking"))
            tasks.append(self.variant("fallback", dtype, n, "blocking"))
            tasks.extend(
                self.variant("fallback", dtype, n, "blocking", simulate_blocking=k) for k in self.rates
            )
        return tasks


__all__ = ["BLOCKING_RATES", "LATENCY_DTYPES", "PAPER_SIZE", "Plan", "Preset", "Task", "preset", "table_size"]
