"""asv benchmarks: throughput of jitscan's variants, their share of memcpy, fallback under
simulated blocking, and the host time of a call. See docs/benchmarks.md.

Timing uses device events (CUDA events, OpenCL profiling events) through
:mod:`jitscan.bench`; asv's own clock times the calls of :class:`PerCall` and
:class:`PerCallForm` (the host path a user's call takes, every call form in the latter,
which also tracks the isolated call and the pipelined rate) and the end-to-end calls of
:class:`Call`, :class:`Segmented` and :class:`Selection` (compaction, runs, by key).
Each class measures its whole parameter grid once, in ``setup_cache`` (one process:
every kernel is compiled once), and its ``track_`` methods report from that cache, so a
run costs one measurement per configuration however many metrics are tracked.

Nothing here touches a device at import time: asv may import this module in a process
that forks (``--launch-method forkserver``), and neither CUDA nor PoCL survives a fork.
The parameter lists therefore come from what is importable and from the environment:

``JITSCAN_ASV_BACKENDS``
    Comma-separated backends (default: ``cupy`` if CuPy is importable, ``opencl`` if
    PyOpenCL is).
``JITSCAN_ASV_SIZES``
    Exponents of two, ``lo:hi[:step]`` or ``a,b,c`` (default ``10:28:2`` where CuPy is
    importable, a GPU machine; else ``10,14,18``, small sizes for PoCL on a CPU).
``JITSCAN_ASV_DTYPES``
    Comma-separated dtypes (default ``int32,float32,int64,float64``).
``JITSCAN_ASV_QUICK=1``
    A smoke-test grid for CI: 2^10 elements, int32, blocking rates none and 1/2, 3 runs
    (the variables above still override it).

A configuration that cannot run here (an absent backend or device, a size beyond the
device memory) raises ``NotImplementedError`` in ``setup``, which asv records as skipped.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

#: jitscan.bench.VARIANTS (not imported here: importing the suite stays cheap)
VARIANTS = ["memcpy", "rts", "lookback", "fallback", "segmented"]
ALL_DTYPES = ["int32", "float32", "int64", "float64"]


def _exponents(text: str) -> list[int]:
    if ":" in text:
        lo, hi, *step = (int(v) for v in text.split(":"))
        return [1 << e for e in range(lo, hi + 1, step[0] if step else 1)]
    return [1 << int(v) for v in text.split(",") if v.strip()]


def _backends() -> list[str]:
    env = os.environ.get("JITSCAN_ASV_BACKENDS")
    if env:
        return [v.strip() for v in env.split(",") if v.strip()]
    names = [n for n, mod in (("cupy", "cupy"), ("opencl", "pyopencl")) if importlib.util.find_spec(mod)]
    return names or ["opencl"]


def _gpu_machine() -> bool:
    return importlib.util.find_spec("cupy") is not None


QUICK = os.environ.get("JITSCAN_ASV_QUICK", "") not in ("", "0")
BACKENDS = _backends()
_DEFAULT_SIZES = "10" if QUICK else "10:28:2" if _gpu_machine() else "10,14,18"
SIZES = _exponents(os.environ.get("JITSCAN_ASV_SIZES", _DEFAULT_SIZES))
_DEFAULT_DTYPES = "int32" if QUICK else ",".join(ALL_DTYPES)
DTYPES = [v.strip() for v in os.environ.get("JITSCAN_ASV_DTYPES", _DEFAULT_DTYPES).split(",") if v.strip()]
#: timed runs per configuration (the median is reported)
REPS = 3 if QUICK else 20 if _gpu_machine() else 5
#: simulated blocking, 1 in k workgroups never posts (0: none)
BLOCKING_RATES = [0, 2] if QUICK else [0, 512, 64, 8, 2]
#: size of the blocking sweep
BLOCKING_SIZE = 1 << (12 if QUICK else 24 if _gpu_machine() else 16)


def _timer(name: str) -> Any:
    """A device timer for backend ``name``, or the reason there is none."""
    from jitscan import bench

    try:
        return bench.Timer(name)
    except Exception as exc:  # noqa: BLE001 - unavailable backend: every entry says why
        return f"backend {name} unavailable: {exc}"


def sweep(
    backends: list[str],
    variants: list[str],
    dtypes: list[str],
    sizes: list[int],
    reps: int = REPS,
    **knobs: Any,
) -> dict[tuple, Any]:
    """Device seconds of every configuration: ``{(backend, variant, dtype, n): seconds or reason}``.

    ``knobs`` go to every scan (``deterministic=True``, ...).
    """
    from jitscan import bench

    out: dict[tuple, Any] = {}
    for name in backends:
        timer = _timer(name)
        for dtype in dtypes:
            for n in sizes:
                for variant in variants:
                    key = (name, variant, dtype, n)
                    if isinstance(timer, str):
                        out[key] = timer
                        continue
                    try:
                        r = bench.measure_variant(timer, variant, dtype, n, reps, stat_runs=0, **knobs)
                        out[key] = r.seconds
                    except bench.Unsupported as exc:
                        out[key] = str(exc)
                    except Exception as exc:  # noqa: BLE001 - recorded as a skip with the reason
                        out[key] = f"{type(exc).__name__}: {exc}"
        if not isinstance(timer, str):
            timer.release()
    return out


def blocking_sweep(backends: list[str], rates: list[int], n: int, reps: int = REPS) -> dict[tuple, Any]:
    """The fallback variant under simulated blocking: ``{(backend, rate): Result or reason}``."""
    from jitscan import bench

    out: dict[tuple, Any] = {}
    for name in backends:
        timer = _timer(name)
        for k in rates:
            if isinstance(timer, str):
                out[(name, k)] = timer
                continue
            try:
                knobs = {"simulate_blocking": k} if k else {}
                out[(name, k)] = bench.measure_variant(timer, "fallback", "int32", n, reps, **knobs)
            except Exception as exc:  # noqa: BLE001 - recorded as a skip with the reason
                out[(name, k)] = f"{type(exc).__name__}: {exc}"
        if not isinstance(timer, str):
            timer.release()
    return out


def _entry(cache: dict, key: tuple) -> Any:
    value = cache.get(key, "not measured")
    if isinstance(value, str):
        raise NotImplementedError(value)  # asv: skipped
    return value


class Scan:
    """Inclusive prefix sum of random data: device time, elements/s and % of memcpy."""

    params = (BACKENDS, VARIANTS, DTYPES, SIZES)
    param_names = ("backend", "variant", "dtype", "n")
    timeout = 3600  # setup_cache measures the whole grid

    def setup_cache(self) -> dict:
        return sweep(BACKENDS, VARIANTS, DTYPES, SIZES)

    def setup(self, cache: dict, backend: str, variant: str, dtype: str, n: int) -> None:
        self.seconds = _entry(cache, (backend, variant, dtype, n))

    def track_device_seconds(self, cache: dict, backend: str, variant: str, dtype: str, n: int) -> float:
        """Median device time of one scan (CUDA or OpenCL events)."""
        return self.seconds

    track_device_seconds.unit = "seconds"  # type: ignore[attr-defined]

    def track_elements_per_second(self, cache: dict, backend: str, variant: str, dtype: str, n: int) -> float:
        """Throughput: elements scanned per second of device time."""
        return n / self.seconds

    track_elements_per_second.unit = "elements/s"  # type: ignore[attr-defined]

    def track_percent_of_memcpy(self, cache: dict, backend: str, variant: str, dtype: str, n: int) -> float:
        """Throughput as a percentage of jitscan's memcpy (same loads and stores, no scan)."""
        return 100.0 * _entry(cache, (backend, "memcpy", dtype, n)) / self.seconds

    track_percent_of_memcpy.unit = "%"  # type: ignore[attr-defined]


#: the float dtypes of the grid (deterministic scans change nothing for integers)
FLOATS = [d for d in DTYPES if d.startswith("float")] or ["float32"]


class Deterministic:
    """Chained scans with ``deterministic=True``: device time and % of the same scan without it."""

    params = (BACKENDS, ["fallback", "lookback"], FLOATS, SIZES)
    param_names = ("backend", "variant", "dtype", "n")
    timeout = 3600

    def setup_cache(self) -> dict:
        variants = ["fallback", "lookback"]
        return {
            "plain": sweep(BACKENDS, variants, FLOATS, SIZES),
            "deterministic": sweep(BACKENDS, variants, FLOATS, SIZES, deterministic=True),
        }

    def setup(self, cache: dict, backend: str, variant: str, dtype: str, n: int) -> None:
        self.seconds = _entry(cache["deterministic"], (backend, variant, dtype, n))
        self.plain = _entry(cache["plain"], (backend, variant, dtype, n))

    def track_device_seconds(self, cache: dict, backend: str, variant: str, dtype: str, n: int) -> float:
        """Median device time of one deterministic scan."""
        return self.seconds

    track_device_seconds.unit = "seconds"  # type: ignore[attr-defined]

    def track_percent_of_plain(self, cache: dict, backend: str, variant: str, dtype: str, n: int) -> float:
        """Throughput as a percentage of the same scan without ``deterministic``."""
        return 100.0 * self.plain / self.seconds

    track_percent_of_plain.unit = "%"  # type: ignore[attr-defined]


class Blocking:
    """The fallback variant (int32) when 1 in k workgroups never posts (the paper's figure)."""

    params = (BACKENDS, BLOCKING_RATES)
    param_names = ("backend", "blocking_rate")
    timeout = 1800

    def setup_cache(self) -> dict:
        return blocking_sweep(BACKENDS, BLOCKING_RATES, BLOCKING_SIZE)

    def setup(self, cache: dict, backend: str, rate: int) -> None:
        self.result = _entry(cache, (backend, rate))

    def track_elements_per_second(self, cache: dict, backend: str, rate: int) -> float:
        """Throughput under blocking."""
        return self.result.elements_per_s

    track_elements_per_second.unit = "elements/s"  # type: ignore[attr-defined]

    def track_percent_of_unblocked(self, cache: dict, backend: str, rate: int) -> float:
        """Throughput as a percentage of the same scan without blocking."""
        return 100.0 * self.result.elements_per_s / _entry(cache, (backend, 0)).elements_per_s

    track_percent_of_unblocked.unit = "%"  # type: ignore[attr-defined]

    def track_fallbacks_per_workgroup(self, cache: dict, backend: str, rate: int) -> float:
        """Fallbacks initiated per workgroup (instrumented runs)."""
        return self.result.per_workgroup("fallbacks")

    track_fallbacks_per_workgroup.unit = "fallbacks/workgroup"  # type: ignore[attr-defined]

    def track_spins_per_workgroup(self, cache: dict, backend: str, rate: int) -> float:
        """Spins on a not-ready predecessor per workgroup (instrumented runs)."""
        return self.result.per_workgroup("spins")

    track_spins_per_workgroup.unit = "spins/workgroup"  # type: ignore[attr-defined]


def _available(backend: str) -> Any:
    """The backend object, or asv's skip (NotImplementedError) when it is unavailable."""
    from jitscan import backends

    b = backends.get(backend)
    if not b.available():
        raise NotImplementedError(f"backend {backend} unavailable: {b.unavailable_reason()}")
    return b


def _sync(queue: Any) -> None:
    """Wait for everything queued on a CuPy or PyOpenCL queue."""
    if hasattr(queue, "finish"):
        queue.finish()
    else:
        queue.stream.synchronize()


class Call:
    """End-to-end ``jitscan.cumsum`` of int32 (an int64 result, widened as the kernels load; host
    clock): device input, and NumPy input (copied to a GPU and back, read in place on a CPU)."""

    params = (BACKENDS, ["fallback", "rts"], sorted({SIZES[0], SIZES[-1]}))
    param_names = ("backend", "variant", "n")
    timeout = 600

    def setup(self, backend: str, variant: str, n: int) -> None:
        import numpy as np

        import jitscan

        b = _available(backend)
        self.variant, self.backend = variant, b
        self.host = np.random.default_rng(n).integers(-1000, 1000, n).astype(np.int32)
        self.queue = b.queue_of(None)
        self.device = b.to_device(self.host, self.queue)
        jitscan.cumsum(self.device, variant=variant)  # compile outside the timing
        jitscan.cumsum(self.host, backend=backend, variant=variant)

    def _sync(self) -> None:
        _sync(self.queue)

    def time_cumsum_device(self, backend: str, variant: str, n: int) -> None:
        """A scan of a device array, waited for."""
        import jitscan

        jitscan.cumsum(self.device, variant=self.variant)
        self._sync()

    def time_cumsum_numpy(self, backend: str, variant: str, n: int) -> None:
        """A scan of a NumPy array: upload, scan, download (on a CPU device: in place)."""
        import jitscan

        jitscan.cumsum(self.host, backend=backend, variant=self.variant)


class Segmented:
    """End-to-end segmented calls on device arrays (host clock, waited for): int32 values
    with device CSR offsets of geometric segment lengths, and ``cumsum(axis=-1)`` of a
    float32 matrix of as many elements."""

    params = (BACKENDS, [10, 1000], [SIZES[-1]])
    param_names = ("backend", "mean_length", "n")
    timeout = 600

    def setup(self, backend: str, mean_length: int, n: int) -> None:
        import numpy as np

        b = _available(backend)
        rng = np.random.default_rng(n)
        ends = np.cumsum(rng.geometric(1.0 / mean_length, size=2 * n // mean_length + 2))
        offsets = np.concatenate([[0], ends[ends < n], [n]]).astype(np.int64)
        self.queue = b.queue_of(None)
        self.values = b.to_device(rng.integers(-1000, 1000, n).astype(np.int32), self.queue)
        self.offsets = b.to_device(offsets, self.queue)
        side = 1 << (n.bit_length() // 2)
        self.matrix = b.to_device(rng.standard_normal((n // side, side)).astype(np.float32), self.queue)
        for run in (self.time_segmented_cumsum, self.time_segmented_reduce, self.time_cumsum_rows):
            run(backend, mean_length, n)  # compile outside the timing

    def time_segmented_cumsum(self, backend: str, mean_length: int, n: int) -> None:
        import jitscan

        jitscan.segmented_cumsum(self.values, offsets=self.offsets)
        _sync(self.queue)

    def time_segmented_reduce(self, backend: str, mean_length: int, n: int) -> None:
        import jitscan

        jitscan.segmented_reduce(self.values, offsets=self.offsets)
        _sync(self.queue)

    def time_cumsum_rows(self, backend: str, mean_length: int, n: int) -> None:
        import jitscan

        jitscan.cumsum(self.matrix, axis=-1)
        _sync(self.queue)


class Selection:
    """End-to-end compaction, unique runs and by-key calls on device arrays (host clock,
    waited for): int32 values, half kept at random; keys in runs of mean length 8."""

    params = (BACKENDS, [SIZES[-1]])
    param_names = ("backend", "n")
    timeout = 600

    def setup(self, backend: str, n: int) -> None:
        import numpy as np

        b = _available(backend)
        rng = np.random.default_rng(n)
        self.queue = b.queue_of(None)
        self.values = b.to_device(rng.integers(-1000, 1000, n).astype(np.int32), self.queue)
        self.mask = b.to_device(rng.random(n) < 0.5, self.queue)
        lengths = rng.geometric(1 / 8, n)  # n runs of at least one: n keys at least
        keys = np.repeat(np.arange(lengths.size, dtype=np.int32) % 1000, lengths)[:n]
        self.keys = b.to_device(keys, self.queue)
        runs = (self.time_extract, self.time_extract_size, self.time_unique_counts)
        for run in (*runs, self.time_reduce_by_key, self.time_scan_by_key):
            run(backend, n)  # compile outside the timing

    def time_extract(self, backend: str, n: int) -> None:
        import jitscan

        jitscan.extract(self.mask, self.values)
        _sync(self.queue)

    def time_extract_size(self, backend: str, n: int) -> None:
        import jitscan

        jitscan.extract(self.mask, self.values, size=n)
        _sync(self.queue)

    def time_unique_counts(self, backend: str, n: int) -> None:
        import jitscan

        jitscan.unique_consecutive(self.keys, return_counts=True)
        _sync(self.queue)

    def time_reduce_by_key(self, backend: str, n: int) -> None:
        import jitscan

        jitscan.reduce_by_key(self.keys, self.values)
        _sync(self.queue)

    def time_scan_by_key(self, backend: str, n: int) -> None:
        import jitscan

        jitscan.scan_by_key(self.keys, self.values)
        _sync(self.queue)


#: per backend and size: (queue, input, output, prepared scan), made once per process
_PER_CALL: dict[tuple[str, int], tuple[Any, Any, Any, Any]] = {}


class PerCall:
    """Host time of one call as a user writes it, on a small device array (int32): the
    per-call path of the library, which the kernels' device time does not show.

    The calls are not waited for (the device keeps up with them at this size); setup
    and teardown wait for the queue. ``time_cumsum_out`` is ``jitscan.cumsum(x, out=y)``,
    ``time_cumsum`` the same call allocating its result, ``time_prepared_out`` a prepared
    scan ``p(x, out=y)`` (``p = jitscan.plan("int32")``).
    """

    params = (BACKENDS, [1 << 10])
    param_names = ("backend", "n")
    timeout = 300

    def setup(self, backend: str, n: int) -> None:
        import numpy as np

        import jitscan

        state = _PER_CALL.get((backend, n))
        if state is None:
            b = _available(backend)
            queue = b.queue_of(None)
            x = b.to_device(np.random.default_rng(n).integers(-1000, 1000, n).astype(np.int32), queue)
            y = b.empty((n,), np.dtype(np.int32), queue)
            scan = jitscan.plan("int32", backend=backend)
            for _ in range(3):  # compile and warm outside the timing
                jitscan.cumsum(x, out=y)
                jitscan.cumsum(x, dtype="int32")
                scan(x, out=y)
            state = _PER_CALL[(backend, n)] = (queue, x, y, scan)
        self.queue, self.x, self.y, self.scan = state
        self.cumsum = jitscan.cumsum  # bound here: the timed methods do nothing but the call
        _sync(self.queue)

    def teardown(self, backend: str, n: int) -> None:
        _sync(self.queue)

    def time_cumsum_out(self, backend: str, n: int) -> None:
        """``jitscan.cumsum(x, out=y)``: the public call into an output the caller keeps."""
        self.cumsum(self.x, out=self.y)

    def time_cumsum(self, backend: str, n: int) -> None:
        """``jitscan.cumsum(x, dtype=np.int32)``: the public call, allocating the result (32 bits)."""
        self.cumsum(self.x, dtype="int32")

    def time_prepared_out(self, backend: str, n: int) -> None:
        """``p(x, out=y)`` of a prepared scan."""
        self.scan(self.x, out=self.y)


#: jitscan.bench.FORMS (not imported here: importing the suite stays cheap)
FORMS = [
    "flat",
    "python-op",
    "exclusive",
    "initial",
    "tuple",
    "segmented-offsets",
    "segmented-flags",
    "segmented-reduce",
    "axis-scan",
    "axis-reduce",
]
#: isolated calls whose median :class:`PerCallForm` tracks
FORM_REPS = 20
#: per backend, a device timer; per backend, form and size, the form's call ``fn(i)``
_TIMERS: dict[str, Any] = {}
_FORM_CALLS: dict[tuple[str, str, int], Any] = {}


class PerCallForm:
    """Every public call form as a user writes it (``jitscan.bench.forms``: flat, a Python
    operator, exclusive, ``initial=``, tuple values, segmented by device offsets and by
    flags, a segmented reduction, an axis scan and reduction of a (64, n / 64) matrix), on
    a small device array of int32, into an output the caller keeps where the function
    takes ``out=``: the three per-call figures of ``python -m jitscan bench --latency``.

    ``time_call`` is the host time of the Python call (asv's clock, not waited for);
    ``track_isolated_seconds`` the median time between device marks around one call on
    an idle device, ``track_pipelined_seconds`` the time per call of 50 calls back to back
    (device marks, one synchronization). A form the backend cannot call is skipped with
    the reason. (The device timer is ``self.marks``: asv takes an attribute ``timer`` for
    its own clock.)
    """

    params = (BACKENDS, FORMS, [1 << 10])
    param_names = ("backend", "form", "n")
    timeout = 300

    def setup(self, backend: str, form: str, n: int) -> None:
        state = _FORM_CALLS.get((backend, form, n))
        if state is None:
            from jitscan import bench

            timer = _TIMERS.get(backend)
            if timer is None:
                _available(backend)
                timer = _timer(backend)
                if isinstance(timer, str):
                    raise NotImplementedError(timer)
                _TIMERS[backend] = timer
            found, _ = bench.contenders(timer, "int32", n, peers=False, forms=[form])
            if not found or found[0].error:
                raise NotImplementedError(f"{form} on {backend}: {found[0].error if found else 'no call'}")
            call = found[0].call
            for i in range(3):  # compile and warm outside the timing
                call(i)
            state = _FORM_CALLS[(backend, form, n)] = (timer, call)
        self.marks, self.call = state
        self.marks.sync()

    def teardown(self, backend: str, form: str, n: int) -> None:
        self.marks.sync()

    def time_call(self, backend: str, form: str, n: int) -> None:
        """The Python call of the form, not waited for."""
        self.call(0)

    def track_isolated_seconds(self, backend: str, form: str, n: int) -> float:
        """Median seconds between a device mark before one call and one after it, on an idle device."""
        import statistics

        return statistics.median(self.marks.call(self.call, i)[1] for i in range(FORM_REPS))

    track_isolated_seconds.unit = "seconds"  # type: ignore[attr-defined]

    def track_pipelined_seconds(self, backend: str, form: str, n: int) -> float:
        """Seconds per call of 50 calls back to back, one synchronization."""
        return self.marks.pipelined(self.call, 50)

    track_pipelined_seconds.unit = "seconds"  # type: ignore[attr-defined]


class Tuples:
    """Tuple values and Python operators, end to end on device float32 arrays (host clock,
    waited for): the linear recurrence ``scan((a, b), op=affine, output=1, out=h)``, argmax
    and Welford reductions with ``jitscan.index`` and (ones, x, zeros), and a Python sum
    against ``op="add"`` (the operators of :mod:`jitscan.bench.tuples`)."""

    params = (BACKENDS, [SIZES[-1]])
    param_names = ("backend", "n")
    timeout = 600

    def setup(self, backend: str, n: int) -> None:
        import numpy as np

        b = _available(backend)
        rng = np.random.default_rng(n)
        self.queue = b.queue_of(None)

        def put(values: Any) -> Any:
            return b.to_device(np.ascontiguousarray(values, np.float32), self.queue)

        self.a, self.x = put(rng.uniform(0.5, 1.0, n)), put(rng.standard_normal(n))
        self.ones, self.zeros = put(np.ones(n)), put(np.zeros(n))
        self.h, self.y = (
            b.empty((n,), np.dtype(np.float32), self.queue),
            b.empty((n,), np.dtype(np.float32), self.queue),
        )
        for run in (
            self.time_recurrence,
            self.time_argmax,
            self.time_welford,
            self.time_python_add,
            self.time_add,
        ):
            run(backend, n)  # compile (and check the operators) outside the timing

    def time_recurrence(self, backend: str, n: int) -> None:
        import jitscan
        from jitscan.bench.tuples import affine

        jitscan.scan((self.a, self.x), op=affine, output=1, out=self.h)
        _sync(self.queue)

    def time_argmax(self, backend: str, n: int) -> None:
        import jitscan
        from jitscan.bench.tuples import argmax

        jitscan.reduce((self.x, jitscan.index), op=argmax)
        _sync(self.queue)

    def time_welford(self, backend: str, n: int) -> None:
        import jitscan
        from jitscan.bench.tuples import welford

        jitscan.reduce((self.ones, self.x, self.zeros), op=welford)
        _sync(self.queue)

    def time_python_add(self, backend: str, n: int) -> None:
        import jitscan
        from jitscan.bench.tuples import python_add

        jitscan.scan(self.x, op=python_add, out=self.y)
        _sync(self.queue)

    def time_add(self, backend: str, n: int) -> None:
        import jitscan

        jitscan.scan(self.x, op="add", out=self.y)
        _sync(self.queue)
