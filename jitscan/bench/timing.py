"""Timing per backend: one timer class per runtime, picked by name through :data:`TIMERS`.

Every timer measures the same figures; only how a point in time is marked on the
device differs (a CUDA event on CuPy's current stream, an OpenCL marker on a queue
with profiling enabled):

- **device time** (:meth:`Timer.time`): a short spin kernel is queued first, so that
  the host has queued the run before the device reaches it; an event before and one
  after the run then see device work only. This is the time of the variants'
  throughput tables and of the paper's table.
- **the isolated call** (:meth:`Timer.call`): on an idle device, an event, the Python
  call itself, an event, one synchronization: what a user waiting on one call sees.
  The host time of the call (``perf_counter`` around the Python call alone) comes with it.
- **the pipelined rate** (:meth:`Timer.pipelined`): many calls back to back, one
  synchronization at the end, the time per call.
- **host time** (:meth:`Timer.time_host`): NumPy, which has no device.

A timer also owns the rotating random inputs of the current size and knows how much
of the device memory a bench may use.
"""

from __future__ import annotations

import math
import statistics
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from .. import backends
from .inputs import random_values, rotation
from .results import summary

#: host seconds a host-timed peer may spend at one size (NumPy on 2^28 is slow)
HOST_BUDGET_S = 3.0


class Timer(ABC):
    """Device timing, inputs and memory limits for one backend's default device.

    ``Timer("cupy")`` and ``Timer("opencl")`` make the backend's own timer (a
    :class:`CudaTimer` or an :class:`OpenCLTimer`, see :data:`TIMERS`). A subclass
    marks points in time (:meth:`mark`), waits for them (:meth:`elapsed`) and keeps
    the device busy (:meth:`spin`); the figures are measured here, the same way for
    every backend.

    Attributes
    ----------
    name : str
        The backend's name.
    backend : Backend
    queue : Any
        Where the timed work goes: the backend's queue of CuPy's current stream, or a
        ``pyopencl.CommandQueue`` with profiling enabled (made the OpenCL backend's
        default queue, so NumPy input goes there too).
    info : DeviceInfo
    device : Any
        The device as :func:`jitscan.plan` takes it (``device=``).
    """

    name: ClassVar[str]

    def __new__(cls, backend: str | None = None) -> Timer:
        if cls is Timer:
            kind = TIMERS.get(backend) if backend is not None else None
            if kind is None:
                if backend is None:
                    raise TypeError("Timer() needs a backend name, e.g. Timer('cupy')")
                backends.get(backend)  # an unknown name: ValueError listing the backends
                raise ValueError(f"the bench has no timer for backend {backend!r}")
            cls = kind
        return super().__new__(cls)

    def __init__(self, backend: str | None = None) -> None:
        if backend is not None and backend != self.name:
            raise ValueError(f"{type(self).__name__} times backend {self.name!r}, not {backend!r}")
        self.backend = backends.require(self.name)
        self._inputs: dict[tuple[str, int], list[Any]] = {}
        self._host: dict[tuple[str, int], list[np.ndarray]] = {}
        self.queue = self._make_queue()
        self.info = self.backend.device_info(self.queue)

    # -- what each runtime provides ----------------------------------------------------
    @abstractmethod
    def _make_queue(self) -> Any:
        """Make the queue (stream) the timed work goes to."""

    @property
    @abstractmethod
    def device(self) -> Any:
        """The timer's device as ``jitscan.plan(device=...)`` takes it."""

    @abstractmethod
    def memory_bytes(self) -> tuple[int, int]:
        """(global memory, largest single allocation) of the device, in bytes."""

    @abstractmethod
    def sync(self) -> None:
        """Wait for all work queued on the timer's queue (stream)."""

    @abstractmethod
    def mark(self) -> Any:
        """Queue a point in time (an event, a marker) behind everything queued so far."""

    def submit(self) -> None:  # noqa: B027 - an optional hook: nothing to do by default
        """Make sure what is queued starts without waiting for more (OpenCL: a flush)."""

    @abstractmethod
    def elapsed(self, start: Any, end: Any) -> float:
        """Wait for ``end``; the seconds between two marks."""

    @abstractmethod
    def spin(self) -> None:
        """Keep the device busy while the host queues the timed run (see :meth:`time`)."""

    def _free(self) -> None:  # noqa: B027 - an optional hook: nothing to do by default
        """Give back memory the runtime keeps after the inputs are dropped."""

    # -- memory ---------------------------------------------------------------------
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
        """Rotating device inputs of ``n`` random elements (cached for the last size).

        As many as span 256 MiB (2 to 64), so that no run finds its input in a cache;
        each is the first rolled by a different amount.
        """
        key = (dtype, n)
        if key not in self._inputs:
            self._inputs.clear()
            self._host.clear()
            rng = rng if rng is not None else np.random.default_rng(n)
            host = random_values(rng, n, dtype)
            self._host[key] = [host]
            self._inputs[key] = [
                self.backend.to_device(np.roll(host, k * 7919), self.queue) for k in range(rotation(n, dtype))
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
        self._free()

    # -- timing -----------------------------------------------------------------------
    def time(self, fn: Callable[[int], Any], reps: int, warmup: int = 3) -> tuple[float, float, list[float]]:
        """Device time of ``fn(i)`` (i: the repetition index).

        Before each timed run the spin kernel is queued, then a mark, the run, a mark;
        the device reaches the run only after the host has queued all of it.

        Returns the median seconds, the relative spread ``(p90 - p10) / median`` and the
        seconds of every timed run.
        """
        for i in range(warmup):
            fn(i)
        times = []
        for i in range(reps):
            self.spin()
            start = self.mark()
            fn(i)
            end = self.mark()
            times.append(self.elapsed(start, end))
        return summary(times)

    def call(self, fn: Callable[[int], Any], i: int = 0) -> tuple[float, float]:
        """One isolated call ``fn(i)``: (host seconds of the call, seconds between marks around it).

        The device is idle first; a mark goes before the call and one after it, then
        one synchronization. The host time is ``perf_counter`` around ``fn(i)`` alone.
        """
        self.sync()
        start = self.mark()
        self.submit()
        t0 = time.perf_counter()
        fn(i)
        t1 = time.perf_counter()
        end = self.mark()
        return t1 - t0, self.elapsed(start, end)

    def host_per_call(self, fn: Callable[[int], Any], calls: int, first: int = 0, every: int = 20) -> float:
        """Median ``perf_counter`` time of one call among ``calls`` warm calls back to back.

        The host time a user's loop pays per call. A synchronization (not timed) every
        ``every`` calls keeps the queue from filling, which would stall the calls
        themselves.
        """
        self.sync()
        times = []
        for i in range(first, first + calls):
            t0 = time.perf_counter()
            fn(i)
            times.append(time.perf_counter() - t0)
            if (i - first) % every == every - 1:
                self.sync()
        self.sync()
        return float(np.median(times))

    def pipelined(self, fn: Callable[[int], Any], calls: int, first: int = 0) -> float:
        """Seconds per call of ``fn(first) .. fn(first + calls - 1)`` back to back, one synchronization."""
        self.sync()
        start = self.mark()
        self.submit()
        for i in range(first, first + calls):
            fn(i)
        end = self.mark()
        return self.elapsed(start, end) / calls

    def time_host(
        self, fn: Callable[[int], Any], reps: int, warmup: int = 1
    ) -> tuple[float, float, list[float]]:
        """Host time of a synchronous ``fn(i)``; fewer runs where one is slow."""
        t = 0.0
        for i in range(max(1, warmup)):
            t0 = time.perf_counter()
            fn(i)
            t = time.perf_counter() - t0
        reps = max(3, min(reps, int(HOST_BUDGET_S / max(t, 1e-9))))
        times = []
        for i in range(reps):
            t0 = time.perf_counter()
            fn(i)
            times.append(time.perf_counter() - t0)
        return summary(times)


class CudaTimer(Timer):
    """CUDA events on CuPy's current stream; a ``clock64`` spin of ~100 us before device-timed runs."""

    name = "cupy"

    def _make_queue(self) -> Any:
        import cupy

        self.cupy = cupy
        self._spin = cupy.RawKernel(
            r"""extern "C" __global__ void js_spin(long long cycles) {
                long long t0 = clock64(); while (clock64() - t0 < cycles) { } }""",
            "js_spin",
        )
        queue = self.backend.queue_of(None)
        self.stream = queue.stream
        # made ahead and used in turn, so that no event is created between a call and its
        # mark; an event comes round again after 16 marks, long after it was read
        self._events = [cupy.cuda.Event() for _ in range(16)]
        self._next = 0
        return queue

    @property
    def device(self) -> int:
        return self.queue.device

    def memory_bytes(self) -> tuple[int, int]:
        props = self.cupy.cuda.runtime.getDeviceProperties(self.queue.device)
        total = int(props["totalGlobalMem"])
        return total, total

    def sync(self) -> None:
        self.stream.synchronize()

    def mark(self) -> Any:
        ev = self._events[self._next]
        self._next = (self._next + 1) % len(self._events)
        ev.record(self.stream)
        return ev

    def elapsed(self, start: Any, end: Any) -> float:
        end.synchronize()
        return self.cupy.cuda.get_elapsed_time(start, end) / 1e3

    def spin(self) -> None:
        self._spin((1,), (1,), (np.int64(200_000),))  # ~100 us at H100 clocks

    def _free(self) -> None:  # noqa: B027 - an optional hook: nothing to do by default
        self.sync()
        self.cupy.get_default_memory_pool().free_all_blocks()


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


class OpenCLTimer(Timer):
    """Markers on a profiling queue (the backend's default queue from now on); a calibrated spin."""

    name = "opencl"

    def _make_queue(self) -> Any:
        import pyopencl as cl

        self.cl = cl
        base = self.backend.default_queue()  # type: ignore[attr-defined]
        queue = cl.CommandQueue(
            base.context, base.device, properties=cl.command_queue_properties.PROFILING_ENABLE
        )
        self.backend.set_default_queue(queue)  # type: ignore[attr-defined]
        self._calibrate_spin(queue)
        return queue

    def _calibrate_spin(self, queue: Any) -> None:
        """Build the OpenCL spin kernel and size it to keep the device busy ~300 us.

        Like the CUDA timer's clock64 spin: the device works through it while the host
        enqueues the timed commands, so their host-side launch cost (Python, argument
        setting) is not counted as device time. Without it an H100 run of the fallback
        scan at 2^28 timed 4% slower than the host clock over 50 back-to-back launches.
        300 us rather than CUDA's 100: PyOpenCL's launch path is slower, and one run
        with a CuPy context in the same process still read 5% low with 100.
        """
        cl = self.cl
        self._sink = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 4)
        self._spin_kernel = cl.Program(queue.context, _CL_SPIN).build().js_spin
        self._spin_kernel.set_scalar_arg_dtypes([np.uint32, None])
        probe = 20_000
        per_iter = math.inf
        busy = 0.0
        # the fastest of several probes, after ~5 ms of spinning: sized at the clock the
        # device reaches while busy, the spin lasts at least as long at any lower clock
        for _ in range(200):
            ev = self._spin_kernel(queue, (1,), (1,), probe, self._sink)
            ev.wait()
            t = (ev.profile.end - ev.profile.start) * 1e-9
            per_iter = min(per_iter, max(t / probe, 1e-10))
            busy += t
            if busy > 5e-3:
                break
        self._spin_iters = int(min(max(300e-6 / per_iter, 1000), 1 << 26))

    @property
    def device(self) -> Any:
        return self.queue

    def memory_bytes(self) -> tuple[int, int]:
        dev = self.queue.device
        return int(dev.global_mem_size), int(dev.max_mem_alloc_size)

    def sync(self) -> None:
        self.queue.finish()

    def mark(self) -> Any:
        return self.cl.enqueue_marker(self.queue)

    def submit(self) -> None:  # noqa: B027 - an optional hook: nothing to do by default
        self.queue.flush()

    def elapsed(self, start: Any, end: Any) -> float:
        end.wait()
        return (end.profile.end - start.profile.start) * 1e-9

    def spin(self) -> None:
        self.queue.finish()
        self._spin_kernel(self.queue, (1,), (1,), self._spin_iters, self._sink)


#: the timer class of each backend
TIMERS: Mapping[str, type[Timer]] = {t.name: t for t in (CudaTimer, OpenCLTimer)}


def interleaved(
    timer: Timer, fns: Mapping[str, Callable[[int], Any]], rounds: int = 6, reps: int = 10
) -> dict[str, float]:
    """Median device seconds of each ``fn(i)``, timed in turns (the order flipped each round).

    Two close contenders timed one after the other differed by 3-4% between runs;
    timing them in turns spreads clock and thermal drift over both.
    """
    samples: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            samples[name] += timer.time(fns[name], reps)[2]
    return {name: statistics.median(ts) for name, ts in samples.items()}


__all__ = ["HOST_BUDGET_S", "TIMERS", "CudaTimer", "OpenCLTimer", "Timer", "interleaved"]
