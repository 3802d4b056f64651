"""Throughput measurement of jitscan's variants and of peer libraries, on one backend.

Timing is device time: CUDA events on the CUDA backend, profiling events on OpenCL.
Each measurement warms up, then times ``reps`` runs and keeps the median. On CUDA a
short spin kernel is queued before every timed run, so that the host enqueues the run
before the GPU reaches it and the events see only device work (for jitscan and the
peers alike). Inputs are random and rotate over enough buffers that caches do not hold
them between runs.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from . import backends, execute, tuning
from .dtypes import lookup
from .monoid import resolve

#: bytes that rotating inputs should span, so that no run finds its input in L2
_ROTATE_BYTES = 256 << 20


@dataclass
class Result:
    """One timed configuration."""

    backend: str
    name: str  # variant, or peer name
    dtype: str
    n: int
    seconds: float
    spread: float  # (p90 - p10) / median
    stats: dict = field(default_factory=dict)

    @property
    def elements_per_s(self) -> float:
        return self.n / self.seconds

    def as_dict(self) -> dict:
        d = asdict(self)
        d["elements_per_s"] = self.elements_per_s
        return d


class _Timer:
    """Device timing for one backend."""

    def __init__(self, backend: str) -> None:
        self.backend = backends.require(backend)
        self.name = backend
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
        self.info = self.backend.device_info(self.queue)

    def inputs(self, n: int, dtype: str, rng: np.random.Generator) -> list[Any]:
        nbytes = n * np.dtype(dtype).itemsize
        count = max(2, min(64, -(-_ROTATE_BYTES // max(nbytes, 1))))
        host = _random(rng, n, dtype)
        bufs = []
        for k in range(count):
            bufs.append(self.backend.to_device(np.roll(host, k * 7919), self.queue))
        return bufs

    def time(self, fn: Callable[[int], None], reps: int, warmup: int = 3) -> tuple[float, float]:
        """Median seconds of fn(i) (i: the repetition index) and its relative spread."""
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
                start = cl.enqueue_marker(self.queue)
                fn(i)
                end = cl.enqueue_marker(self.queue)
                end.wait()
                times.append((end.profile.end - start.profile.start) * 1e-9)
        times.sort()
        med = statistics.median(times)
        p10, p90 = times[len(times) // 10], times[(len(times) * 9) // 10]
        return med, (p90 - p10) / med if med else 0.0


def _random(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.uniform(-1, 1, n).astype(dt)
    return rng.integers(-1000 if dt.kind == "i" else 0, 1000, n).astype(dt)


def measure_variant(
    timer: _Timer,
    variant: str,
    dtype: str,
    n: int,
    reps: int,
    rng: np.random.Generator,
    op: str = "add",
    kind: str = "inclusive",
    **knobs: Any,
) -> Result:
    """Time one jitscan variant (device time of the tile-state reset and the launches)."""
    b, q = timer.backend, timer.queue
    dt = lookup(dtype)
    stats_wanted = variant in ("lookback", "fallback")
    spec = tuning.spec_for(timer.info, variant=variant, kind=kind, dtype=dt, monoid=resolve(op), **knobs)
    ins = timer.inputs(n, dtype, rng)
    out = b.empty((n,), dt.numpy, q)
    result = Result(
        timer.name,
        variant,
        dtype,
        n,
        *timer.time(lambda i: execute.run(b, q, spec, ins[i % len(ins)], out, n, check=False), reps),
    )
    if stats_wanted:
        # one instrumented run for the look-back counters (not timed)
        import dataclasses

        counted = dataclasses.replace(spec, stats=True)
        result.stats = execute.run(b, q, counted, ins[0], out, n) or {}
    return result


def _peer_functions(timer: _Timer, dtype: str, n: int, ins: list[Any], out: Any) -> dict[str, Callable]:
    """Peers measured on the same device and data, when importable."""
    peers: dict[str, Callable] = {}
    nbytes = n * np.dtype(dtype).itemsize
    if timer.name == "cupy":
        cp = timer.cupy
        stream = cp.cuda.get_current_stream()
        peers["cudaMemcpy"] = lambda i: out.data.copy_from_device_async(
            ins[i % len(ins)].data, nbytes, stream
        )
        peers["cupy.cumsum"] = lambda i: cp.cumsum(ins[i % len(ins)], out=out)
        try:
            import torch

            tins = [torch.as_tensor(a, device="cuda") for a in ins]
            tout = torch.as_tensor(out, device="cuda")
            peers["torch.cumsum"] = lambda i: torch.cumsum(tins[i % len(tins)], 0, out=tout)
        except Exception:  # noqa: BLE001 - torch absent or without CUDA
            pass
        try:
            import cuda.compute as cc

            scanner = cc.make_inclusive_scan(d_in=ins[0], d_out=out, op=cc.OpKind.PLUS)
            nbytes_tmp = scanner(
                temp_storage=None, d_in=ins[0], d_out=out, op=cc.OpKind.PLUS, init_value=None, num_items=n
            )
            tmp = cp.empty(max(int(nbytes_tmp), 1), np.uint8)
            peers["CUB (cuda.compute)"] = lambda i: scanner(
                temp_storage=tmp,
                d_in=ins[i % len(ins)],
                d_out=out,
                op=cc.OpKind.PLUS,
                init_value=None,
                num_items=n,
            )
        except Exception:  # noqa: BLE001 - cuda-cccl absent or failing
            pass
    else:
        cl = timer.cl
        q = timer.queue
        peers["clEnqueueCopyBuffer"] = lambda i: cl.enqueue_copy(
            q, out.base_data, ins[i % len(ins)].base_data, byte_count=nbytes
        )
        try:
            from pyopencl.scan import InclusiveScanKernel

            ctype = lookup(dtype).opencl
            knl = InclusiveScanKernel(q.context, np.dtype(dtype), "a+b")
            del ctype
            peers["pyopencl InclusiveScanKernel"] = lambda i: knl(ins[i % len(ins)], out, queue=q)
        except Exception:  # noqa: BLE001
            pass
    return peers


def measure_peers(timer: _Timer, dtype: str, n: int, reps: int, rng: np.random.Generator) -> list[Result]:
    ins = timer.inputs(n, dtype, rng)
    out = timer.backend.empty((n,), np.dtype(dtype), timer.queue)
    results = []
    for name, fn in _peer_functions(timer, dtype, n, ins, out).items():
        try:
            results.append(Result(timer.name, name, dtype, n, *timer.time(fn, reps)))
        except Exception as exc:  # noqa: BLE001 - a peer failing must not stop the run
            print(f"  peer {name} failed at n={n}: {exc}")
    return results


def run(
    backend: str,
    variants: Iterable[str],
    dtypes: Iterable[str],
    sizes: Iterable[int],
    reps: int = 30,
    peers: bool = True,
    progress: Callable[[str], None] | None = None,
    **knobs: Any,
) -> list[Result]:
    """Measure every variant (and peer) at every dtype and size."""
    timer = _Timer(backend)
    rng = np.random.default_rng(0)
    results: list[Result] = []
    for dtype in dtypes:
        for n in sizes:
            for variant in variants:
                r = measure_variant(timer, variant, dtype, n, reps, rng, **knobs)
                results.append(r)
                if progress:
                    progress(
                        f"{backend} {variant} {dtype} 2^{np.log2(n):.0f}: {r.elements_per_s / 1e9:.1f} Ge/s"
                    )
            if peers:
                for r in measure_peers(timer, dtype, n, reps, rng):
                    results.append(r)
                    if progress:
                        progress(
                            f"{backend} {r.name} {dtype} 2^{np.log2(n):.0f}: {r.elements_per_s / 1e9:.1f} Ge/s"
                        )
    return results


def table(results: list[Result], baseline: str = "memcpy") -> str:
    """Markdown table: Ge/s per configuration and % of the baseline at the same dtype and size."""
    base = {(r.dtype, r.n): r.elements_per_s for r in results if r.name == baseline}
    lines = [
        "| backend | dtype | n | algorithm | Ge/s | % of memcpy | spread | fallbacks | spins |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        pct = 100 * r.elements_per_s / base[(r.dtype, r.n)] if (r.dtype, r.n) in base else float("nan")
        lines.append(
            f"| {r.backend} | {r.dtype} | 2^{np.log2(r.n):.0f} | {r.name} | {r.elements_per_s / 1e9:.1f} | "
            f"{pct:.1f}% | {100 * r.spread:.1f}% | {r.stats.get('fallbacks', '')} | {r.stats.get('spins', '')} |"
        )
    return "\n".join(lines)
