"""Throughput measurement of jitscan's variants and of peer libraries.

Used by ``python -m jitscan bench`` (see :mod:`jitscan.__main__`) and by the asv suite in
``benchmarks/``.

Timing is device time: CUDA events on the CUDA backend, profiling events on OpenCL; the
NumPy peer, which has no device, is timed on the host. Each measurement warms up, then
times ``reps`` runs. On CUDA a short spin kernel is queued before every timed run, so that
the host enqueues the run before the GPU reaches it and the events see only device work
(for jitscan and the peers alike). Inputs are random and rotate over enough buffers that
caches do not hold them between runs.

The summary statistics follow the paper's results table (Smith, Levien & Owens, SPAA
2025): the harmonic mean of elements per second over the timed runs of one size (``n``
over the mean run time), the ratios fallback/memcpy and fallback/RTS, and the look-back
counters of instrumented runs (spins and look-back length per workgroup, fallbacks
initiated and successful insertions per scan).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from . import backends, execute, tuning
from .dtypes import lookup
from .monoid import resolve

#: bytes that rotating inputs should span, so that no run finds its input in L2
_ROTATE_BYTES = 256 << 20
#: every variant the bench knows; "segmented" is measured once jitscan.segmented_scan exists
VARIANTS = ("memcpy", "rts", "lookback", "fallback", "segmented")
#: the variants whose kernels carry look-back counters
CHAINED = ("lookback", "fallback")
#: simulated-blocking rates of the paper's figure: 1 in k tiles never posts
BLOCKING_RATES = (512, 256, 128, 64, 32, 16, 8, 4, 2)
#: mean segment length of the segmented inputs (head flags)
SEGMENT_LENGTH = 10
#: the size of the paper's results table
PAPER_SIZE = 1 << 25
#: host seconds a host-timed peer may spend at one size (NumPy on 2^28 is slow)
_HOST_BUDGET_S = 3.0


class Unsupported(Exception):
    """A configuration that cannot run here (skipped, with this message as the reason)."""


def segmented_available() -> bool:
    """Whether this jitscan has segmented scans (``jitscan.segmented_scan``)."""
    import jitscan

    return hasattr(jitscan, "segmented_scan")


@dataclass
class Result:
    """One timed configuration.

    Attributes
    ----------
    backend : str
        Backend of the device that ran it (``"host"`` for NumPy).
    name : str
        The jitscan variant, or the peer's name.
    dtype : str
    n : int
        Elements scanned.
    seconds : float
        Median seconds of one run.
    spread : float
        ``(p90 - p10) / median`` of the run times.
    stats : dict
        Look-back counters averaged over instrumented runs (chained variants only):
        ``spins``, ``lookback_steps``, ``fallbacks``, ``insertions``, ``tiles``.
    category : {"variant", "peer", "blocking"}
    block_every : int
        Simulated blocking, 1 in ``block_every`` tiles never posts; 0 for none.
    timing : {"device", "host"}
        Device events, or host clock.
    times : list of float
        Seconds of every timed run.
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
        return {
            "devices": self.devices,
            "config": self.config,
            "versions": versions(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "results": [r.as_dict() for r in self.results],
            "skipped": self.skipped,
        }


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


# -- device timing ---------------------------------------------------------------------


# a dependent chain no compiler shortens: one work item busy for ``iters`` steps
_CL_SPIN = """
__kernel void js_spin(uint iters, __global uint* sink)
{
    uint x = (uint)get_global_id(0) + 1u;
    for (uint i = 0; i < iters; ++i)
        x = x * 1664525u + 1013904223u;
    if (x == 0u)
        sink[0] = x;
}
"""


class Timer:
    """Device timing, inputs and memory limits for one backend's default device."""

    def __init__(self, backend: str) -> None:
        self.backend = backends.require(backend)
        self.name = backend
        self._inputs: dict[tuple[str, int], list[Any]] = {}
        self._host: dict[tuple[str, int], list[np.ndarray]] = {}
        if backend == "cupy":
            import cupy

            self.cupy = cupy
            self._spin = cupy.RawKernel(
                r"""extern "C" __global__ void js_spin(long long cycles) {
                    long long t0 = clock64(); while (clock64() - t0 < cycles) { } }""",
                "js_spin",
            )
            self.queue = self.backend.queue_of(None)
        else:
            import pyopencl as cl

            self.cl = cl
            base = self.backend.default_queue()  # type: ignore[attr-defined]
            self.queue = cl.CommandQueue(
                base.context, base.device, properties=cl.command_queue_properties.PROFILING_ENABLE
            )
            self.backend.set_default_queue(self.queue)  # type: ignore[attr-defined]
            self._calibrate_cl_spin()
        self.info = self.backend.device_info(self.queue)

    def _calibrate_cl_spin(self) -> None:
        """Build the OpenCL spin kernel and size it to keep the device busy ~300 us.

        Like the CUDA timer's clock64 spin: the device works through it while the host
        enqueues the timed commands, so their host-side launch cost (Python, argument
        setting) is not counted as device time. Without it an H100 run of the fallback
        scan at 2^28 timed 4% slower than the host clock over 50 back-to-back launches.
        300 us rather than CUDA's 100: PyOpenCL's launch path is slower, and one run
        with a CuPy context in the same process still read 5% low with 100.
        """
        cl = self.cl
        self._sink = cl.Buffer(self.queue.context, cl.mem_flags.READ_WRITE, 4)
        self._cl_spin = cl.Program(self.queue.context, _CL_SPIN).build().js_spin
        self._cl_spin.set_scalar_arg_dtypes([np.uint32, None])
        probe = 20_000
        per_iter = math.inf
        busy = 0.0
        # the fastest of several probes, after ~5 ms of spinning: sized at the clock the
        # device reaches while busy, the spin lasts at least as long at any lower clock
        for _ in range(200):
            ev = self._cl_spin(self.queue, (1,), (1,), probe, self._sink)
            ev.wait()
            t = (ev.profile.end - ev.profile.start) * 1e-9
            per_iter = min(per_iter, max(t / probe, 1e-10))
            busy += t
            if busy > 5e-3:
                break
        self._cl_spin_iters = int(min(max(300e-6 / per_iter, 1000), 1 << 26))

    # -- memory ---------------------------------------------------------------------
    def memory_bytes(self) -> tuple[int, int]:
        """(global memory, largest single allocation) of the device, in bytes."""
        if self.name == "cupy":
            props = self.cupy.cuda.runtime.getDeviceProperties(self.queue.device)
            total = int(props["totalGlobalMem"])
            return total, total
        dev = self.queue.device
        return int(dev.global_mem_size), int(dev.max_mem_alloc_size)

    def max_elements(self, dtype: str) -> int:
        """Largest power of two ``n`` whose inputs, output and peers' scratch fit on the device.

        A large size keeps two rotating inputs; with the output and room for a peer's
        temporaries that is five arrays, which may use half of the device memory.
        """
        total, single = self.memory_bytes()
        item = np.dtype(dtype).itemsize
        limit = min(total // 2 // (5 * item), single // item)
        return 1 << max(0, int(limit).bit_length() - 1)

    # -- inputs ---------------------------------------------------------------------
    def inputs(self, n: int, dtype: str, rng: np.random.Generator | None = None) -> list[Any]:
        """Rotating device inputs of ``n`` random elements (cached for the last size)."""
        key = (dtype, n)
        if key not in self._inputs:
            self._inputs.clear()
            self._host.clear()
            rng = rng if rng is not None else np.random.default_rng(n)
            nbytes = n * np.dtype(dtype).itemsize
            count = max(2, min(64, -(-_ROTATE_BYTES // max(nbytes, 1))))
            host = _random(rng, n, dtype)
            self._host[key] = [host]
            self._inputs[key] = [
                self.backend.to_device(np.roll(host, k * 7919), self.queue) for k in range(count)
            ]
        return self._inputs[key]

    def host_inputs(self, n: int, dtype: str) -> list[np.ndarray]:
        """Rotating host copies of the inputs (for host-timed peers)."""
        devs = self.inputs(n, dtype)
        host = self._host[(dtype, n)]
        while len(host) < min(len(devs), 4):
            host.append(np.roll(host[0], len(host) * 7919))
        return host

    def release(self) -> None:
        """Free the cached inputs (and, on CUDA, the memory CuPy's pool keeps)."""
        self._inputs.clear()
        self._host.clear()
        if self.name == "cupy":
            self.sync()
            self.cupy.get_default_memory_pool().free_all_blocks()

    # -- timing -----------------------------------------------------------------------
    def sync(self) -> None:
        """Wait for all work queued on the timer's queue (stream)."""
        if self.name == "cupy":
            self.cupy.cuda.get_current_stream().synchronize()
        else:
            self.queue.finish()

    def time(self, fn: Callable[[int], Any], reps: int, warmup: int = 3) -> tuple[float, float, list[float]]:
        """Device time of ``fn(i)`` (i: the repetition index).

        Returns the median seconds, the relative spread ``(p90 - p10) / median`` and the
        seconds of every timed run.
        """
        for i in range(warmup):
            fn(i)
        times = []
        if self.name == "cupy":
            cp = self.cupy
            stream = cp.cuda.get_current_stream()
            for i in range(reps):
                start, end = cp.cuda.Event(), cp.cuda.Event()
                self._spin((1,), (1,), (np.int64(200_000),))  # ~100 us at H100 clocks
                start.record(stream)
                fn(i)
                end.record(stream)
                end.synchronize()
                times.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
        else:
            cl = self.cl
            for i in range(reps):
                self.queue.finish()
                self._cl_spin(self.queue, (1,), (1,), self._cl_spin_iters, self._sink)
                start = cl.enqueue_marker(self.queue)
                fn(i)
                end = cl.enqueue_marker(self.queue)
                end.wait()
                times.append((end.profile.end - start.profile.start) * 1e-9)
        return _summary(times)

    def time_host(
        self, fn: Callable[[int], Any], reps: int, warmup: int = 1
    ) -> tuple[float, float, list[float]]:
        """Host time of a synchronous ``fn(i)``; fewer runs where one is slow."""
        t = 0.0
        for i in range(max(1, warmup)):
            t0 = time.perf_counter()
            fn(i)
            t = time.perf_counter() - t0
        reps = max(3, min(reps, int(_HOST_BUDGET_S / max(t, 1e-9))))
        times = []
        for i in range(reps):
            t0 = time.perf_counter()
            fn(i)
            times.append(time.perf_counter() - t0)
        return _summary(times)


#: the name the first cut of this module used (scripts/sweep.py)
_Timer = Timer


def _summary(times: list[float]) -> tuple[float, float, list[float]]:
    ordered = sorted(times)
    med = statistics.median(ordered)
    p10, p90 = ordered[len(ordered) // 10], ordered[(len(ordered) * 9) // 10]
    return med, ((p90 - p10) / med if med else 0.0), list(times)


def _random(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.uniform(-1, 1, n).astype(dt)
    return rng.integers(-1000 if dt.kind == "i" else 0, 1000, n).astype(dt)


def head_flags(n: int, rng: np.random.Generator, mean_length: int = SEGMENT_LENGTH) -> np.ndarray:
    """uint8 segment-head flags, segments of mean length ``mean_length``; element 0 is a head."""
    flags = (rng.random(n) < 1.0 / mean_length).astype(np.uint8)
    if n:
        flags[0] = 1
    return flags


# -- jitscan variants ------------------------------------------------------------------


@dataclass
class Case:
    """One prepared jitscan configuration: compiled, with its inputs on the device.

    ``run(i)`` queues one scan of input ``i`` (rotating) without waiting for it.
    """

    timer: Timer
    variant: str
    dtype: str
    n: int
    run: Callable[[int], Any]
    counted: Callable[[], dict | None] | None = None  # one instrumented run's counters

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
    """Compile ``variant`` for ``dtype`` and upload inputs of ``n`` elements.

    Raises
    ------
    Unsupported
        For ``segmented`` before jitscan has segmented scans, for a size the device
        memory cannot hold, or a dtype the device lacks.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; valid variants: {', '.join(VARIANTS)}")
    if n > timer.max_elements(dtype):
        raise Unsupported(f"2^{_log2(n)} {dtype} elements do not fit in {timer.info.name}'s memory")
    dt = lookup(dtype)
    if dt.name == "float64" and not timer.info.fp64:
        raise Unsupported(f"{timer.info.name} has no float64")
    b, q = timer.backend, timer.queue
    extra: dict[str, Any] = {}
    seg: dict[str, Any] = {}
    if variant == "segmented":
        if not segmented_available():
            raise Unsupported("jitscan.segmented_scan does not exist yet")
        # the fallback variant on (value, head) pairs; heads of mean segment length 10
        extra["segmented"] = "flags"
        seg["heads"] = b.to_device(head_flags(n, np.random.default_rng(n)), q)
    algorithm = "fallback" if variant == "segmented" else variant
    spec = tuning.spec_for(
        timer.info, variant=algorithm, kind=kind, dtype=dt, monoid=resolve(op), n=n, **extra, **knobs
    )
    b.program(spec, q)  # compile outside any timed region
    ins = timer.inputs(n, dtype, rng)
    out = b.empty((n,), dt.numpy, q)

    def run(i: int) -> None:
        execute.run(b, q, spec, ins[i % len(ins)], out, n, check=False, **seg)

    counted = None
    if algorithm in CHAINED:
        stats_spec = dataclasses.replace(spec, stats=True)

        def counted() -> dict | None:
            return execute.run(b, q, stats_spec, ins[0], out, n, **seg)

    return Case(timer, variant, dtype, n, run, counted)


def _average_counters(case: Case, runs: int) -> dict:
    """Look-back counters averaged over ``runs`` instrumented runs.

    A run whose look-back watchdog fired (``lookback`` on a device that starved a
    predecessor) is counted under ``deadlocks`` instead of raising.
    """
    from .errors import DeadlockError

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
        result.stats = _average_counters(case, stat_runs)
    result.block_every = int(knobs.get("simulate_blocking") or 0)
    return result


# -- peers -----------------------------------------------------------------------------


@dataclass
class Peer:
    """A peer library's scan (or copy) on the same device and data."""

    name: str
    run: Callable[[int], Any]
    out: Any = None  # the array it writes
    timing: str = "device"


def peer_functions(
    timer: Timer, dtype: str, n: int, rng: np.random.Generator | None = None
) -> tuple[list[Peer], list[str]]:
    """Peers of this backend that can run here, and why the others cannot.

    CUDA: ``cudaMemcpy`` (device to device), ``cupy.cumsum``, ``torch.cumsum``, CUB
    through ``cuda.compute``. OpenCL: ``clEnqueueCopyBuffer``, PyOpenCL's
    ``InclusiveScanKernel`` and a segmented ``GenericScanKernel`` (head flags, mean
    segment length 10).
    """
    ins = timer.inputs(n, dtype, rng)
    out = timer.backend.empty((n,), np.dtype(dtype), timer.queue)
    nbytes = n * np.dtype(dtype).itemsize
    peers: list[Peer] = []
    skipped: list[str] = []

    def attempt(name: str, build: Callable[[], Callable[[int], Any]]) -> None:
        try:
            fn = build()
            fn(0)  # a failure shows here, not in the middle of the timing
            timer.sync()
            peers.append(Peer(name, fn, out))
        except ImportError as exc:
            skipped.append(f"{name}: not installed ({exc})")
        except Exception as exc:  # noqa: BLE001 - a peer failing must not stop the run
            skipped.append(f"{name}: {type(exc).__name__}: {exc}")

    if timer.name == "cupy":
        cp = timer.cupy

        def memcpy() -> Callable[[int], Any]:
            stream = cp.cuda.get_current_stream()
            return lambda i: out.data.copy_from_device_async(ins[i % len(ins)].data, nbytes, stream)

        def cupy_cumsum() -> Callable[[int], Any]:
            return lambda i: cp.cumsum(ins[i % len(ins)], dtype=out.dtype, out=out)

        def torch_cumsum() -> Callable[[int], Any]:
            import torch

            if not torch.cuda.is_available():
                raise RuntimeError("torch has no CUDA here")
            tins = [torch.as_tensor(a, device="cuda") for a in ins]
            tout = torch.as_tensor(out, device="cuda")
            return lambda i: torch.cumsum(tins[i % len(tins)], 0, dtype=tout.dtype, out=tout)

        def cub() -> Callable[[int], Any]:
            import cuda.compute as cc

            scanner = cc.make_inclusive_scan(d_in=ins[0], d_out=out, op=cc.OpKind.PLUS)
            tmp_bytes = scanner(
                temp_storage=None, d_in=ins[0], d_out=out, op=cc.OpKind.PLUS, init_value=None, num_items=n
            )
            tmp = cp.empty(max(int(tmp_bytes), 1), np.uint8)
            return lambda i: scanner(
                temp_storage=tmp,
                d_in=ins[i % len(ins)],
                d_out=out,
                op=cc.OpKind.PLUS,
                init_value=None,
                num_items=n,
            )

        attempt("cudaMemcpy", memcpy)
        attempt("cupy.cumsum", cupy_cumsum)
        attempt("torch.cumsum", torch_cumsum)
        attempt("CUB (cuda.compute)", cub)
    else:
        cl = timer.cl
        q = timer.queue
        ctype = lookup(dtype).opencl

        def copy_buffer() -> Callable[[int], Any]:
            return lambda i: cl.enqueue_copy(q, out.base_data, ins[i % len(ins)].base_data, byte_count=nbytes)

        def inclusive_scan() -> Callable[[int], Any]:
            from pyopencl.scan import InclusiveScanKernel

            knl = InclusiveScanKernel(q.context, np.dtype(dtype), "a+b", neutral="0")
            return lambda i: knl(ins[i % len(ins)], out, queue=q)

        def segmented_scan() -> Callable[[int], Any]:
            from pyopencl.scan import GenericScanKernel

            flags = timer.backend.to_device(head_flags(n, np.random.default_rng(n)), q)
            knl = GenericScanKernel(
                q.context,
                np.dtype(dtype),
                arguments=f"__global const {ctype} *x, __global const uchar *head, __global {ctype} *y",
                input_expr="x[i]",
                scan_expr="across_seg_boundary ? b : (a + b)",
                neutral="0",
                is_segment_start_expr="head[i]",
                output_statement="y[i] = item;",
            )
            return lambda i: knl(ins[i % len(ins)], flags, out, queue=q)

        attempt("clEnqueueCopyBuffer", copy_buffer)
        attempt("pyopencl InclusiveScanKernel", inclusive_scan)
        attempt("pyopencl segmented GenericScanKernel", segmented_scan)
    return peers, skipped


def measure_peers(
    timer: Timer,
    dtype: str,
    n: int,
    reps: int,
    rng: np.random.Generator | None = None,
    skipped: list[str] | None = None,
) -> list[Result]:
    """Time every peer of the timer's backend that runs here."""
    peers, why = peer_functions(timer, dtype, n, rng)
    if skipped is not None:
        skipped.extend(f"{p} ({timer.name}, {dtype}, 2^{_log2(n)})" for p in why)
    results = []
    for peer in peers:
        try:
            med, spread, times = timer.time(peer.run, reps)
        except Exception as exc:  # noqa: BLE001 - a peer failing must not stop the run
            if skipped is not None:
                skipped.append(f"{peer.name} ({timer.name}, {dtype}, 2^{_log2(n)}): {exc}")
            continue
        results.append(Result(timer.name, peer.name, dtype, n, med, spread, category="peer", times=times))
    return results


def measure_numpy(timer: Timer, dtype: str, n: int, reps: int) -> Result:
    """``numpy.cumsum`` in the input dtype, host-timed, on host copies of the inputs."""
    host = timer.host_inputs(n, dtype)
    out = np.empty(n, np.dtype(dtype))
    med, spread, times = timer.time_host(
        lambda i: np.cumsum(host[i % len(host)], dtype=out.dtype, out=out), reps
    )
    return Result("host", "numpy.cumsum", dtype, n, med, spread, category="peer", timing="host", times=times)


# -- a whole run -----------------------------------------------------------------------


@dataclass
class Preset:
    """Default sizes, repetitions and blocking sweep for one class of device."""

    sizes: list[int]
    reps: int
    blocking_rates: list[int]
    blocking_size: int


def preset(is_gpu: bool, quick: bool = False) -> Preset:
    """Defaults for a GPU or a CPU (PoCL) device; ``quick`` for a run of a minute or two.

    GPU: 2^10 .. 2^28 (every power of two, the paper's figure), 30 runs each, blocking at
    2^25 (the paper's table size). CPU: 2^10 .. 2^20 every other power, 10 runs, blocking
    at 2^18. Quick: three or four sizes, 5 runs, four blocking rates.
    """
    if quick:
        sizes = [1 << e for e in ((16, 20, 24, 28) if is_gpu else (16, 18, 20))]
        return Preset(sizes, 5, [512, 64, 8, 2], 1 << (24 if is_gpu else 18))
    if is_gpu:
        return Preset([1 << e for e in range(10, 29)], 30, list(BLOCKING_RATES), PAPER_SIZE)
    return Preset([1 << e for e in range(10, 21, 2)], 10, list(BLOCKING_RATES), 1 << 18)


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


def run(
    backend: str | Sequence[str],
    variants: Iterable[str] = VARIANTS,
    dtypes: Iterable[str] = ("int32",),
    sizes: Iterable[int] | None = None,
    reps: int | None = None,
    peers: bool = True,
    blocking_rates: Iterable[int] | None = None,
    blocking_size: int | None = None,
    quick: bool = False,
    progress: Callable[[str], None] | None = None,
    log: Callable[[str], None] | None = None,
    total: Callable[[int], None] | None = None,
    **knobs: Any,
) -> Report:
    """Measure variants and peers at every dtype and size, then the blocking sweep.

    Parameters
    ----------
    backend : str or sequence of str
        Backend name(s); each is measured on its default device.
    variants, dtypes : iterable of str
    sizes : iterable of int, optional
        Element counts; default :func:`preset`'s for the device. Sizes beyond the
        device memory are skipped.
    reps : int, optional
        Timed runs per configuration (default from :func:`preset`).
    peers : bool
        Also time the peers (:func:`peer_functions`) and NumPy's ``cumsum``.
    blocking_rates : iterable of int, optional
        The simulated-blocking sweep of the ``fallback`` variant (1 in k tiles never
        posts) on the first dtype, with the unblocked ``fallback`` and ``memcpy`` as
        baselines; empty for none. Default from :func:`preset`.
    blocking_size : int, optional
        Elements of the blocking sweep (default from :func:`preset`).
    quick : bool
        Use the quick preset for whatever is not given.
    progress : callable, optional
        Called with a label after every step.
    log : callable, optional
        Called with a message for every configuration skipped or failed.
    total : callable, optional
        Called once per backend with the number of steps it adds.
    **knobs
        Passed to every variant (``tile_state``, ``spin_limit``, ...).

    Returns
    -------
    Report
    """
    names = [backend] if isinstance(backend, str) else list(backend)
    variants, dtypes = list(variants), list(dtypes)
    report = Report(devices={})
    report.config = {
        "backends": names,
        "variants": variants,
        "dtypes": dtypes,
        "quick": quick,
        "peers": peers,
        "knobs": knobs,
        "sizes": {},
        "reps": {},
        "blocking": {},
    }

    def note(msg: str) -> None:
        report.skipped.append(msg)
        if log:
            log(msg)

    numpy_done: set[tuple[str, int]] = set()
    for name in names:
        try:
            timer = Timer(name)
        except Exception as exc:  # noqa: BLE001 - an unavailable backend is reported, not fatal
            note(f"backend {name}: {exc}")
            continue
        report.devices[name] = timer.info.name
        pre = preset(timer.info.is_gpu, quick)
        plan = _Plan(
            timer=timer,
            variants=variants,
            dtypes=dtypes,
            sizes=sorted(set(sizes)) if sizes is not None else pre.sizes,
            reps=reps if reps is not None else pre.reps,
            peers=peers,
            rates=list(blocking_rates) if blocking_rates is not None else pre.blocking_rates,
            blocking_size=blocking_size if blocking_size is not None else pre.blocking_size,
            knobs=knobs,
            note=note,
            numpy_done=numpy_done,
        )
        report.config["sizes"][name] = plan.sizes
        report.config["reps"][name] = plan.reps
        report.config["blocking"][name] = {"rates": plan.rates, "n": plan.blocking_size}
        tasks = plan.tasks()
        if total:
            total(len(tasks))
        for task in tasks:
            report.results.extend(task.run())
            if progress:
                progress(task.label)
        timer.release()
    return report


@dataclass
class _Plan:
    """The steps of one backend's part of a run."""

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
    said: set[str] = field(default_factory=set)

    def _once(self, key: str, msg: str) -> None:
        if key not in self.said:
            self.said.add(key)
            self.note(msg)

    def variant(self, variant: str, dtype: str, n: int, category: str = "variant", **extra: Any) -> Task:
        name = self.timer.name
        where = f"({name}, {dtype}, 2^{_log2(n)})"
        block = extra.get("simulate_blocking")
        label = f"{name} {variant}{f' 1/{block}' if block else ''} {dtype} 2^{_log2(n)}"

        def go() -> list[Result]:
            try:
                r = measure_variant(self.timer, variant, dtype, n, self.reps, **{**self.knobs, **extra})
                r.category = category
                return [r]
            except Unsupported as exc:
                key = f"{variant} {exc}" if variant == "segmented" else f"{variant} {where}"
                self._once(key, f"{variant} {where}: skipped, {exc}")
            except Exception as exc:  # noqa: BLE001 - one failure must not lose the run
                self.note(f"{variant} {where}: {type(exc).__name__}: {exc}")
            return []

        return Task(label, go)

    def peers_at(self, dtype: str, n: int) -> Task:
        def go() -> list[Result]:
            why: list[str] = []
            out = measure_peers(self.timer, dtype, n, self.reps, skipped=why)
            for msg in why:
                self._once(msg.split(" (", 1)[0], msg)  # once per peer, not per size
            if (dtype, n) not in self.numpy_done:
                self.numpy_done.add((dtype, n))
                out.append(measure_numpy(self.timer, dtype, n, self.reps))
            return out

        return Task(f"{self.timer.name} peers {dtype} 2^{_log2(n)}", go)

    def tasks(self) -> list[Task]:
        tasks = []
        for dtype in self.dtypes:
            for n in self.sizes:
                if n > self.timer.max_elements(dtype):
                    self.note(
                        f"{self.timer.name} {dtype} 2^{_log2(n)}: skipped, more than the device memory holds"
                    )
                    continue
                tasks.extend(self.variant(v, dtype, n) for v in self.variants)
                if self.peers:
                    tasks.append(self.peers_at(dtype, n))
        if self.rates and self.dtypes:
            dtype, n = self.dtypes[0], self.blocking_size
            tasks.append(self.variant("memcpy", dtype, n, "blocking"))
            tasks.append(self.variant("fallback", dtype, n, "blocking"))
            tasks.extend(
                self.variant("fallback", dtype, n, "blocking", simulate_blocking=k) for k in self.rates
            )
        return tasks


def _log2(n: int) -> str:
    e = math.log2(n) if n > 0 else 0
    return f"{e:.0f}" if e == int(e) else f"{e:.2f}"


# -- tables ----------------------------------------------------------------------------


def _ge(v: float) -> str:
    return "" if v is None or math.isnan(v) else f"{v / 1e9:.3g}" if v < 1e10 else f"{v / 1e9:.1f}"


def _num(v: float, fmt: str = ".3f") -> str:
    return "" if v is None or math.isnan(v) else format(v, fmt)


def _pct(a: float, b: float) -> str:
    return "" if not b or math.isnan(a) or math.isnan(b) else f"{100 * a / b:.1f}%"


def paper_table(report: Report, n: int | None = None) -> str:
    """The paper's results table (rows: metrics; columns: backend and dtype) at one size.

    Harmonic means are over the timed runs at size ``n`` (default :func:`table_size` of
    the sizes measured); the look-back counters are averages over instrumented runs.
    """
    main = [r for r in report.results if r.category == "variant"]
    if not main:
        return "(no jitscan variant was measured)"
    n = n if n is not None else table_size(r.n for r in main)
    cols = sorted({(r.backend, r.dtype) for r in main if r.n == n}, key=lambda c: (c[0], c[1]))

    def get(backend: str, dtype: str, name: str) -> Result | None:
        found = [r for r in main if (r.backend, r.dtype, r.name, r.n) == (backend, dtype, name, n)]
        return found[0] if found else None

    def hm(c: tuple[str, str], name: str) -> float:
        r = get(*c, name)
        return r.hmean_elements_per_s if r else float("nan")

    def per_wg(c: tuple[str, str], counter: str) -> float:
        r = get(*c, "fallback")
        return r.per_workgroup(counter) if r else float("nan")

    def total(c: tuple[str, str], counter: str) -> float:
        r = get(*c, "fallback")
        return r.stats.get(counter, float("nan")) if r else float("nan")

    rows: list[tuple[str, Callable[[tuple[str, str]], str]]] = [
        ("H-mean memcpy (10^9 ele/s)", lambda c: _ge(hm(c, "memcpy"))),
        ("H-mean fallback (10^9 ele/s)", lambda c: _ge(hm(c, "fallback"))),
        ("H-mean RTS (10^9 ele/s)", lambda c: _ge(hm(c, "rts"))),
        ("H-mean lookback (10^9 ele/s)", lambda c: _ge(hm(c, "lookback"))),
        ("fallback / memcpy (%)", lambda c: _pct(hm(c, "fallback"), hm(c, "memcpy"))),
        ("fallback / RTS (%)", lambda c: _pct(hm(c, "fallback"), hm(c, "rts"))),
        ("Avg spins per workgroup", lambda c: _num(per_wg(c, "spins"))),
        ("Avg look-back length per workgroup", lambda c: _num(per_wg(c, "lookback_steps"))),
        ("Avg fallbacks initiated", lambda c: _num(total(c, "fallbacks"), ".1f")),
        ("Avg successful insertions", lambda c: _num(total(c, "insertions"), ".1f")),
        ("Workgroups (tiles)", lambda c: _num(total(c, "tiles"), ".0f")),
    ]
    lines = [
        "| Metric | " + " | ".join(f"{report.devices.get(b, b)} ({b}) {d}" for b, d in cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    lines += [f"| {label} | " + " | ".join(cell(c) for c in cols) + " |" for label, cell in rows]
    caption = f"Inclusive prefix sum, n = 2^{_log2(n)}."
    return caption + "\n\n" + "\n".join(lines)


def throughput_table(report: Report) -> str:
    """Ge/s of every variant and peer per size (and % of jitscan's memcpy), per backend and dtype."""
    main = [r for r in report.results if r.category in ("variant", "peer")]
    blocks = []
    for backend, dtype in sorted({(r.backend, r.dtype) for r in main if r.backend != "host"}):
        rows = [r for r in main if r.dtype == dtype and r.backend in (backend, "host")]
        sizes = sorted({r.n for r in rows if r.backend == backend})
        rows = [r for r in rows if r.n in sizes]
        base = {r.n: r.elements_per_s for r in rows if r.name == "memcpy" and r.category == "variant"}
        names: list[str] = []
        for r in rows:
            if r.name not in names:
                names.append(r.name)
        head = (
            f"**{report.devices.get(backend, backend)}** ({backend}), {dtype}: 10^9 elements/s (% of memcpy)"
        )
        lines = [
            head,
            "",
            "| algorithm | " + " | ".join(f"2^{_log2(n)}" for n in sizes) + " | H-mean |",
            "|---|" + "---:|" * (len(sizes) + 1),
        ]
        for name in names:
            cells = []
            speeds = []
            for n in sizes:
                r = next((r for r in rows if r.name == name and r.n == n), None)
                if r is None:
                    cells.append("")
                    continue
                speeds.append(r.elements_per_s)
                pct = _pct(r.elements_per_s, base.get(n, 0.0))
                cells.append(
                    f"{_ge(r.elements_per_s)} ({pct})" if pct and name != "memcpy" else _ge(r.elements_per_s)
                )
            hmean = statistics.harmonic_mean(speeds) if speeds else float("nan")
            host = " (host)" if any(r.timing == "host" for r in rows if r.name == name) else ""
            lines.append(f"| {name}{host} | " + " | ".join(cells) + f" | {_ge(hmean)} |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) if blocks else "(nothing measured)"


def blocking_table(report: Report) -> str:
    """The simulated-blocking sweep: throughput and look-back counters per blocking rate."""
    rows = [r for r in report.results if r.category == "blocking"]
    blocks = []
    for backend, dtype, n in sorted({(r.backend, r.dtype, r.n) for r in rows}):
        mine = [r for r in rows if (r.backend, r.dtype, r.n) == (backend, dtype, n)]
        memcpy = next((r for r in mine if r.name == "memcpy"), None)
        free = next((r for r in mine if r.name == "fallback" and r.block_every == 0), None)
        sweep = sorted(
            (r for r in mine if r.name == "fallback"), key=lambda r: (r.block_every != 0, -r.block_every)
        )
        lines = [
            f"**{report.devices.get(backend, backend)}** ({backend}), fallback, {dtype}, n = 2^{_log2(n)}: "
            "simulated blocking (1 in k workgroups never posts)",
            "",
            "| blocking rate | 10^9 ele/s | % of unblocked | % of memcpy | fallbacks / wg | spins / wg "
            "| look-back / wg | insertions / wg |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in sweep:
            rate = f"1/{r.block_every}" if r.block_every else "none"
            lines.append(
                f"| {rate} | {_ge(r.hmean_elements_per_s)} "
                f"| {_pct(r.hmean_elements_per_s, free.hmean_elements_per_s if free else 0.0)} "
                f"| {_pct(r.hmean_elements_per_s, memcpy.hmean_elements_per_s if memcpy else 0.0)} "
                f"| {_num(r.per_workgroup('fallbacks'))} | {_num(r.per_workgroup('spins'))} "
                f"| {_num(r.per_workgroup('lookback_steps'))} | {_num(r.per_workgroup('insertions'))} |"
            )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) if blocks else ""


def markdown(report: Report, n: int | None = None) -> str:
    """All tables of a report, as Markdown to paste into the README."""
    parts = ["## Results table (as in the paper)", paper_table(report, n)]
    parts += ["## Throughput against size", throughput_table(report)]
    blocking = blocking_table(report)
    if blocking:
        parts += ["## Simulated blocking", blocking]
    if report.skipped:
        parts += ["## Skipped", "\n".join(f"- {s}" for s in report.skipped)]
    return "\n\n".join(parts) + "\n"


def table(results: list[Result], baseline: str = "memcpy") -> str:
    """One row per result: Ge/s and % of ``baseline`` at the same backend, dtype and size."""
    base = {(r.backend, r.dtype, r.n): r.elements_per_s for r in results if r.name == baseline}
    lines = [
        "| backend | dtype | n | algorithm | blocking | Ge/s | % of memcpy | spread | fallbacks | spins |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        pct = _pct(r.elements_per_s, base.get((r.backend, r.dtype, r.n), 0.0))
        lines.append(
            f"| {r.backend} | {r.dtype} | 2^{_log2(r.n)} | {r.name} | "
            f"{f'1/{r.block_every}' if r.block_every else ''} | {_ge(r.elements_per_s)} | {pct} | "
            f"{100 * r.spread:.1f}% | {_num(r.stats.get('fallbacks', float('nan')), '.1f')} | "
            f"{_num(r.stats.get('spins', float('nan')), '.1f')} |"
        )
    return "\n".join(lines)


# -- files -----------------------------------------------------------------------------

CSV_FIELDS = (
    "backend",
    "category",
    "name",
    "dtype",
    "n",
    "block_every",
    "timing",
    "reps",
    "seconds",
    "spread",
    "elements_per_s",
    "hmean_elements_per_s",
    "spins",
    "lookback_steps",
    "fallbacks",
    "insertions",
    "tiles",
)


def write_json(report: Report, path: str | os.PathLike) -> None:
    """The report (configuration, devices, versions, every result with its run times) as JSON."""
    with open(path, "w") as fh:
        json.dump(report.as_dict(), fh, indent=1)


def write_csv(report: Report, path: str | os.PathLike) -> None:
    """One row per result (run times left out; see the JSON)."""
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in report.results:
            row = {k: getattr(r, k) for k in CSV_FIELDS[:6] + ("timing",)}
            row.update(
                reps=len(r.times),
                seconds=r.seconds,
                spread=r.spread,
                elements_per_s=r.elements_per_s,
                hmean_elements_per_s=r.hmean_elements_per_s,
            )
            row.update({k: r.stats.get(k, "") for k in CSV_FIELDS[12:]})
            w.writerow(row)


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global state

    return Figure(figsize=(width, height), layout="constrained")


def plot_throughput(report: Report, path: str | os.PathLike) -> None:
    """PNG of throughput against size: one panel per backend and dtype, a line per algorithm.

    Raises
    ------
    ImportError
        Without matplotlib.
    """
    main = [r for r in report.results if r.category in ("variant", "peer")]
    panels = list(dict.fromkeys((r.backend, r.dtype) for r in main if r.backend != "host"))
    colors = {name: f"C{i % 10}" for i, name in enumerate(dict.fromkeys(r.name for r in main))}
    cols = min(2, max(1, len(panels)))
    rows = max(1, -(-len(panels) // cols))
    fig = _figure(6.5 * cols, 4.5 * rows)
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, (backend, dtype) in zip(axes.flat, panels, strict=False):
        mine = [r for r in main if r.dtype == dtype and r.backend in (backend, "host")]
        names: list[str] = []
        for r in mine:
            if r.name not in names:
                names.append(r.name)
        for name in names:
            pts = sorted((r.n, r.elements_per_s / 1e9) for r in mine if r.name == name)
            is_variant = any(r.category == "variant" for r in mine if r.name == name)
            ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                marker="o" if is_variant else ".",
                linestyle="-" if is_variant else "--",
                color=colors[name],
                label=name if is_variant else f"{name} (peer)",
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("elements")
        ax.set_ylabel("10^9 elements / s")
        ax.set_title(f"{report.devices.get(backend, backend)} ({backend}), {dtype} inclusive sum", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.savefig(path, dpi=110)


def plot_blocking(report: Report, path: str | os.PathLike) -> None:
    """PNG of the simulated-blocking sweep, as in the paper's figure: fallbacks, spins and
    look-back length per workgroup, and throughput against the unblocked run and memcpy.

    Raises
    ------
    ImportError
        Without matplotlib.
    """
    rows = [r for r in report.results if r.category == "blocking"]
    fig = _figure(11, 8)
    axes = fig.subplots(2, 2, squeeze=False)
    panels = [
        (axes[0][0], "fallbacks initiated per workgroup", lambda r: r.per_workgroup("fallbacks")),
        (axes[0][1], "spins per workgroup", lambda r: r.per_workgroup("spins")),
        (axes[1][0], "look-back length per workgroup", lambda r: r.per_workgroup("lookback_steps")),
        (axes[1][1], "10^9 elements / s", lambda r: r.hmean_elements_per_s / 1e9),
    ]
    groups = sorted({(r.backend, r.dtype, r.n) for r in rows})
    for backend, dtype, n in groups:
        mine = [r for r in rows if (r.backend, r.dtype, r.n) == (backend, dtype, n)]
        sweep = sorted(
            (r for r in mine if r.name == "fallback" and r.block_every), key=lambda r: -r.block_every
        )
        label = f"{backend} {dtype} 2^{_log2(n)}"
        for ax, ylabel, value in panels:
            ax.plot([1 / r.block_every for r in sweep], [value(r) for r in sweep], marker="o", label=label)
            ax.set_ylabel(ylabel)
        ax = axes[1][1]
        for name, block, style in (("fallback", 0, ":"), ("memcpy", 0, "--")):
            ref = next((r for r in mine if r.name == name and r.block_every == block), None)
            if ref is not None:
                ax.axhline(
                    ref.hmean_elements_per_s / 1e9,
                    linestyle=style,
                    color="gray",
                    label=f"{name}, no blocking ({backend})",
                )
    rates = sorted({r.block_every for r in rows if r.block_every}, reverse=True)
    for ax, _, _ in panels:
        ax.set_xscale("log", base=2)
        ax.set_xticks([1 / k for k in rates], [f"1/{k}" for k in rates], minor=False)
        ax.set_xticks([], minor=True)
        ax.set_xlabel("simulated blocking rate (1 in k workgroups never posts)")
        ax.grid(True, alpha=0.3)
        if groups:
            ax.legend(fontsize=7)
    devices = ", ".join(f"{d} ({b})" for b, d in report.devices.items())
    fig.suptitle(f"Simulated blocking, fallback variant: {devices}", fontsize=10)
    fig.savefig(path, dpi=110)
