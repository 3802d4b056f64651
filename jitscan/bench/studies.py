"""What the experiments in ``experiments/`` share: scans of one shape, launches to time, inputs.

The experiments are one-off measurements (tile-shape and spin-limit sweeps, jitscan
against CUB in turns, segmented targets) behind the defaults of ``jitscan.plan.tuning``
and the numbers of ``docs/performance.md``; ``experiments/README.md`` indexes them.
They time bare launches of prepared scans with a :class:`~jitscan.bench.timing.Timer`:
:func:`plan_for` makes the scan of one variant and shape on the timer's device,
:func:`launcher` compiles it and returns the ``fn(i)`` the timer takes, and
:func:`interleaved` (the bench's own) times several contenders in alternating rounds.
CUB comes from :func:`jitscan.bench.cub.cub_call`: :func:`cub_launcher` rotates its
inputs, :func:`cub_segmented_reduce` also allocates the output of a segmented
reduction. Nothing in the library imports this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..plan import PreparedScan, plan
from ..variants import Bound
from ..variants.segments import NONE, Segments
from .timing import Timer, interleaved


def plan_for(
    timer: Timer,
    variant: str,
    dtype: str,
    segmented: str = "",
    kind: str = "inclusive",
    *,
    op: str = "add",
    stats: bool = False,
    **knobs: Any,
) -> PreparedScan:
    """A prepared scan of one variant and shape on the timer's device.

    The device defaults of ``jitscan.plan.tuning`` apply to every knob not given; the
    tile shape and look-back window then follow the size class of each launch's ``n``.

    Parameters
    ----------
    timer : Timer
    variant : {"fallback", "lookback", "rts", "memcpy"}
    dtype : str
        NumPy name of the element type.
    segmented : {"", "flags", "offsets", "rows"}
    kind : {"inclusive", "exclusive", "reduce"}
    op : str
        The operator (default a sum).
    stats : bool
        Count look-back events: each launch returns the counters (and waits for them).
    **knobs
        Tuning knobs of :func:`jitscan.plan` (``threads``, ``vectors``, ``min_blocks``,
        ``lookback_width``, ``spin_limit``, ``simulate_blocking``, ...).

    Returns
    -------
    PreparedScan
    """
    return plan(
        dtype,
        op,
        kind=kind,
        variant=variant,
        backend=timer.backend.name,
        device=timer.device,
        segmented=segmented,
        stats=stats,
        **knobs,
    )


def bound(scan: PreparedScan, timer: Timer, n: int, seg: Segments = NONE) -> Bound:
    """The compiled program a launch of ``n`` elements with ``seg`` uses on the timer's queue.

    Compiles it on first use; its ``spec`` holds the tile shape and window of ``n``'s
    size class.
    """
    return scan.bound(timer.queue, n, seg.row_tiles > 0)


def resources(bound: Bound, entry: str) -> str:
    """Registers a thread, and local (spill) and static shared bytes, of a compiled CUDA entry point."""
    import cupy

    ptr = bound.program.kernels[entry].function.ptr
    get = cupy.cuda.driver.funcGetAttribute
    # CUfunction_attribute: 4 registers a thread, 3 local bytes a thread, 1 static shared bytes
    return f"regs={get(4, ptr)} local={get(3, ptr)}B shared={get(1, ptr)}B"


def launcher(
    scan: PreparedScan,
    timer: Timer,
    ins: Any,
    out: Any,
    n: int,
    seg: Segments = NONE,
) -> Callable[[int], Any]:
    """``fn(i)``: one launch of ``scan`` over input ``i`` (rotating) into ``out``, not waited for.

    The program is compiled before this returns, so that no timed run compiles. The
    launch reads nothing back (``check=False``): launches stay back to back.

    Parameters
    ----------
    scan : PreparedScan
    timer : Timer
    ins : device array or sequence of device arrays
        Contiguous, aligned arrays of ``scan``'s dtype; a sequence rotates.
    out : device array
        Where the result goes (one element for a reduction, one per segment for a
        segmented reduction).
    n : int
        Elements scanned.
    seg : Segments
        Where segments start (default: a plain scan).

    Returns
    -------
    callable
        ``fn(i)``, returning what the launch returns (the counters of a counting scan).
    """
    arrays = list(ins) if isinstance(ins, (list, tuple)) else [ins]
    queue = timer.queue
    bound(scan, timer, n, seg)

    def run(i: int) -> Any:
        return scan.launch(arrays[i % len(arrays)], out, n, seg, check=False, queue=queue)

    return run


def cub_launcher(kind: str, ins: Sequence[Any], out: Any, n: int, **kw: Any) -> Callable[[int], Any]:
    """``fn(i)``: CUB (``jitscan.bench.cub.cub_call``) over ``ins[i % len(ins)]`` into ``out``.

    Parameters
    ----------
    kind : {"inclusive", "exclusive", "reduce", "segmented_reduce"}
    ins : sequence of cupy.ndarray
        Inputs of equal size and dtype, used in turn.
    out : cupy.ndarray
    n : int
        ``num_items`` of the CUB call.
    **kw
        ``op`` and ``offsets``, as :func:`~jitscan.bench.cub.cub_call` takes them.
    """
    from .cub import cub_call  # needs CuPy and cuda.compute: imported only when used

    fn = cub_call(kind, ins[0], out, num_items=n, **kw)
    return lambda i: fn(ins[i % len(ins)])


def cub_segmented_reduce(x: Any, off: np.ndarray, op: str = "add") -> tuple[Callable[[int], Any], Any]:
    """CUB's segmented reduction of ``x`` over CSR offsets ``off``, and the array it writes.

    Parameters
    ----------
    x : cupy.ndarray
    off : numpy.ndarray or cupy.ndarray
        CSR offsets, ``nseg + 1`` of them, 0 first and ``x.size`` last.
    op : str

    Returns
    -------
    fn : callable
        ``fn(i)`` enqueues one run (``i`` is ignored: one input).
    out : cupy.ndarray
        One total per segment, of ``x``'s dtype.
    """
    import cupy

    out = cupy.empty(int(off.shape[0]) - 1, x.dtype)
    return cub_launcher("segmented_reduce", [x], out, x.size, op=op, offsets=off), out


def host_and_piped(
    fn: Callable[[], object], host_calls: int = 100, piped_calls: int = 50
) -> tuple[float, float]:
    """(host µs, pipelined µs) of one warm call of ``fn`` on the current CuPy stream.

    Host: the median of ``host_calls`` calls, ``perf_counter`` around each, nothing waiting
    inside. Pipelined: ``piped_calls`` calls back to back between two events, one
    synchronization, per call.
    """
    import statistics
    import time

    import cupy

    host = []
    for _ in range(host_calls):
        t = time.perf_counter()
        fn()
        host.append(time.perf_counter() - t)
    cupy.cuda.get_current_stream().synchronize()
    return statistics.median(host) * 1e6, piped(fn, piped_calls)


def piped(fn: Callable[[], object], calls: int = 10) -> float:
    """µs a call of ``fn`` on the current CuPy stream: ``calls`` calls back to back between
    two events, one synchronization."""
    import cupy

    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(calls):
        fn()
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) * 1e3 / calls


def isolated(fn: Callable[[], object]) -> float:
    """µs of one call of ``fn`` on an idle GPU, as a user's single call sees it: the device
    synchronized, then an event, the call, an event, on the current CuPy stream."""
    import cupy

    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    cupy.cuda.runtime.deviceSynchronize()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) * 1e3


def host_block(fn: Callable[[], object], calls: int, stub: Any = False) -> float:
    """Host µs a call of ``fn`` over ``calls`` calls back to back (``perf_counter`` around the
    block, one synchronization after it, untimed); with ``stub``, CuPy's driver launch
    (``jitscan.backends.cupy._launch``, or that of ``stub`` where it is another tree's
    module) does nothing meanwhile, which times jitscan's Python alone. A block too short
    to fill CUDA's launch queue gives the host's time."""
    import time

    import cupy

    from ..backends import cupy as cupy_backend

    module = stub if stub and stub is not True else cupy_backend
    real = module._launch
    if stub:
        module._launch = _nothing
    try:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
    finally:
        module._launch = real
    cupy.cuda.runtime.deviceSynchronize()
    return (t1 - t0) / calls * 1e6


def _nothing(*args: object) -> None:
    return None


def best_in_turns(fns: dict[str, Callable[[], object]], rounds: int, calls: int) -> dict[str, float]:
    """The best seconds a call of each function over ``rounds`` rounds of ``calls`` calls,
    the functions taking turns (forward, then backward), after one untimed call each: the
    CPU experiments' comparison, in one process, of contenders a machine's phases move
    alike."""
    import time

    for f in fns.values():
        f()
    best = dict.fromkeys(fns, float("inf"))
    names = list(fns)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            t = time.perf_counter()
            for _ in range(calls):
                fns[name]()
            best[name] = min(best[name], (time.perf_counter() - t) / calls)
    return best


def random_offsets(rng: np.random.Generator, n: int, mean: int) -> np.ndarray:
    """CSR offsets (int64, from 0 to ``n``) of segments of geometric length with mean ``mean``.

    No segment is empty; the last one ends at ``n``.
    """
    off = np.concatenate([[0], np.cumsum(rng.geometric(1.0 / mean, size=n // mean * 2))])
    return np.concatenate([off[off < n], [n]]).astype(np.int64)


def numpy_cases(
    exps: Iterable[int], mean: int = 1000, seed: int = 0
) -> Iterator[tuple[str, int, Any, Any, Any]]:
    """``(dtype, log2 n, x, y, offsets)`` for int32 and float32 at each ``2^e`` elements: the
    NumPy inputs of the CPU experiments (``cpu_numpy.py``, ``cpu_segments.py``).

    ``x`` holds integers in -100..99, ``y`` is an empty array like it, and the CSR offsets
    cut segments of lengths drawn uniformly from 1 to ``2 * mean - 1`` (the last ends at n).
    """
    rng = np.random.default_rng(seed)
    for e in exps:
        n = 1 << e
        for dt in ("int32", "float32"):
            x = rng.integers(-100, 100, n).astype(dt)
            y = np.empty_like(x)
            ends = np.cumsum(rng.integers(1, 2 * mean, n // mean + 2))
            yield dt, e, x, y, np.concatenate([[0], ends[ends < n], [n]]).astype(np.int64)


def selection_cases(log2n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The compaction and runs experiments' inputs of 2^log2n elements: int32 values, a mask
    keeping half of them at random, and int32 keys in runs of geometric length, mean 8."""
    n = 1 << log2n
    rng = np.random.default_rng(log2n)
    x = rng.integers(-1000, 1000, n, dtype=np.int32)
    mask = rng.random(n) < 0.5
    lengths = rng.geometric(1 / 8, n // 4)
    keys = np.repeat(np.arange(lengths.size, dtype=np.int32) % 1000, lengths)[:n]
    return x, mask, keys


def heads_from_offsets(off: np.ndarray, n: int) -> np.ndarray:
    """uint8 head flags (1 at each segment's first element) of CSR offsets over ``n`` elements.

    Empty segments share their head with the next segment.
    """
    heads = np.zeros(n, np.uint8)
    heads[off[:-1][off[:-1] < n]] = 1
    return heads


__all__ = [
    "best_in_turns",
    "resources",
    "host_and_piped",
    "bound",
    "cub_launcher",
    "cub_segmented_reduce",
    "heads_from_offsets",
    "interleaved",
    "launcher",
    "plan_for",
    "numpy_cases",
    "random_offsets",
]
