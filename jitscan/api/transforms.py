"""Scans that read expressions and write through rules: the users' own (:class:`ScanKernel`),
and what compaction, partition, unique runs and the by-key functions share.

The functions of ``selection.py`` and ``runs.py`` each describe their one pass as a
:class:`~jitscan.kernels.transform.Transform` and run it through a
:class:`~jitscan.plan.transformed.TransformScan` made once per transform, scan type,
backend and knobs (:func:`prepared`). This module moves their arrays: host input to the
default device and results back, device arrays as they are (flattened, C-contiguous).
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import backends
from ..backends.base import Backend
from ..kernels.transform import ARRAY_CTYPES, Transform, Write
from ..operators import Monoid
from ..plan import arrays, tuning
from ..plan.transformed import TransformScan
from .cache import shortcut

#: the knobs every function built on a transform takes (tests: tiles that never post, small
#: tiles)
KNOBS = ("variant", "simulate_blocking", "threads", "vectors", "min_blocks")
#: positions and counts are scanned in 32 bits below this many elements, else in 64
COUNT32_LIMIT = (1 << 31) - 1

#: the transforms' scans (emptied with the other prepared scans: cache.clear)
_PREPARED: dict[tuple, TransformScan] = shortcut()
#: a transform made once per description: making one parses every expression it holds, which
#: costs a call more than its launch
transform = functools.lru_cache(maxsize=512)(Transform)
_LOCK = threading.Lock()
#: Operands.constant's arrays: (queue, array) by (backend, queue, dtype, value)
_CONSTANTS: dict[tuple, tuple[Any, Any]] = {}


def prepared(
    transform: Transform, dtype: str, op: str | Monoid, kind: str, backend: Backend, knobs: Mapping[str, Any]
) -> TransformScan:
    """The transform's scan, made once per (transform, dtype, op, kind, backend, knobs)."""
    if knobs:
        unknown = sorted(set(knobs) - set(KNOBS))
        if unknown:
            raise TypeError(
                f"unknown keyword argument(s) {', '.join(unknown)}; these functions take {', '.join(KNOBS)}"
            )
        key: tuple = (transform, dtype, op, kind, backend.name, tuple(sorted(knobs.items())))
    else:  # (the common call: no knob to sort)
        key = (transform, dtype, op, kind, backend.name)
    scan = _PREPARED.get(key)
    if scan is None:
        with _LOCK:
            scan = _PREPARED.get(key)
            if scan is None:
                if len(_PREPARED) > 256:
                    _PREPARED.clear()
                scan = _PREPARED[key] = TransformScan(transform, dtype, op, kind, backend, **knobs)
    return scan


def count_dtype(n: int) -> str:
    """The type positions and counts of ``n`` elements are scanned in."""
    return "int32" if n < COUNT32_LIMIT else "int64"


#: array_dtype's names by dtype (NumPy's dtype.name costs a call microseconds)
_NAMES: dict[Any, str] = {}


def dtype_name(dtype: Any) -> str:
    """NumPy's name of a dtype (``dtype.name`` costs a call microseconds): kept by dtype."""
    try:
        name = _NAMES.get(dtype)
    except TypeError:  # unhashable
        return np.dtype(dtype).name
    if name is None:
        name = np.dtype(dtype).name
        if len(_NAMES) < 64:
            _NAMES[dtype] = name
    return name


def array_dtype(fn: str, what: str, dtype: Any) -> str:
    """The transform's name of an array's dtype, or TypeError naming the ones taken."""
    name = dtype_name(dtype)
    if name not in ARRAY_CTYPES:
        raise TypeError(
            f"jitscan.{fn}: {what} of dtype {name} is not supported; dtypes: {', '.join(ARRAY_CTYPES)}"
        )
    return name


@dataclass
class Operands:
    """Arrays of one call on the device: the backend, the queue, and whether they came so.

    Host input on a device that works in host memory (OpenCL on a CPU) is not copied: the
    kernels read the NumPy arrays and write NumPy results in place (``Backend.shared``);
    elsewhere it is copied to the device and the results back. Results are made with
    :meth:`empty` and :meth:`full`, and handed back with :meth:`result`.
    """

    backend: Backend
    queue: Any
    on_device: bool
    arrays: list[Any]

    def empty(self, n: int, dtype: Any) -> Any:
        dt = np.dtype(dtype)
        if not self.on_device:
            host = np.empty(n, dt)
            shared = self.backend.shared(host, self.queue, True) if n else None
            if shared is not None:
                return shared
        return self.backend.empty((n,), dt, self.queue)

    def full(self, n: int, dtype: Any, value: Any) -> Any:
        out = self.empty(n, dtype)
        if n:
            host = getattr(out, "host", None)
            if isinstance(host, np.ndarray):
                host[...] = np.dtype(dtype).type(value)
            else:
                self.backend.fill(out, np.dtype(dtype).type(value))
        return out

    def constant(self, value: Any, dtype: Any) -> Any:
        """A one-element array of ``value`` the kernels read (never write), made once per
        value, dtype and queue: a launch's fill value without a copy or a fill of its own."""
        v = np.dtype(dtype).type(value)
        # a host call's are of host memory (full's), a device call's device arrays, which a
        # compiled call takes: one cache of each
        key = (self.backend.name, id(self.queue), self.on_device, v.dtype.str, v.tobytes())
        held = _CONSTANTS.get(key)
        if held is None or held[0] is not self.queue:
            if len(_CONSTANTS) > 256:
                _CONSTANTS.clear()
            held = _CONSTANTS[key] = (self.queue, self.full(1, v.dtype, v))
        return held[1]

    def head(self, arr: Any, k: int) -> Any:
        """The first ``k`` elements of a result of :meth:`empty` as the kernels write them."""
        host = getattr(arr, "host", None)
        if isinstance(host, np.ndarray):
            return self.backend.shared(host[:k], self.queue, True)
        return self.backend.head(arr, k)

    def result(self, arr: Any, stop: int | None = None) -> Any:
        """A result as the caller's arrays are (its first ``stop`` elements): device arrays
        stay, host input gets NumPy (the host waits for the kernels)."""
        host = getattr(arr, "host", None)
        if isinstance(host, np.ndarray):  # a NumPy array the kernels wrote in place
            self.backend.settle(arr)
            return host if stop is None else host[:stop]
        arr = arr if stop is None else self.backend.head(arr, stop)
        return arr if self.on_device else self.backend.to_host(arr)

    def count(self, arr: Any) -> int:
        """A count the kernels wrote (a one-element array): the host waits for it."""
        return int(np.asarray(self.result(arr) if not self.on_device else self.backend.to_host(arr))[0])


#: the most warm calls a function built on transforms keeps (warm_key)
WARM_CALLS = 64


def warm_key(arrays: Sequence[Any], *options: Any) -> tuple | None:
    """The key of a call on device arrays of one backend (their type and dtypes, then
    ``options``: the call's other arguments), under which a function keeps what a call like
    it runs without its checks and lookups; None for any other call (host input, arrays of
    two kinds, an unhashable option), which takes the long way."""
    t = type(arrays[0])
    if backends.owner_of(t) is None:
        return None
    for a in arrays:
        if type(a) is not t:
            return None
    key = (t, *[a.dtype for a in arrays], *options)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def warm_call(cache: dict[tuple, Any], key: tuple | None, *arrays: Any) -> Any:
    """What the warm call kept under ``key`` returns for ``arrays``; None where none is kept
    (``key`` None too) or it declines them, and the call takes the long way."""
    go = cache.get(key) if key is not None else None
    return None if go is None else go(*arrays)


def value_key(value: Any) -> Any:
    """A scalar option as a key tells it apart: by type, and a float by its sign too (-0.0 and
    0.0 are equal and hash alike, but pad with other bits)."""
    t = type(value)
    return (t, value, math.copysign(1.0, value)) if t is float else (t, value)


def remember(cache: dict[tuple, Any], key: tuple, go: Any) -> None:
    """Keep ``go`` under ``key``, forgetting every call kept once there are WARM_CALLS."""
    if len(cache) >= WARM_CALLS:
        cache.clear()
    cache[key] = go


def flat_on_one_queue(b: Backend, arrays: Sequence[Any], n: int) -> Any:
    """The queue of device arrays that are 1-D, of ``n`` elements each, as the kernels take
    them (Backend.ready: contiguous and aligned) and all on it (a warm call's check of its
    arrays), else None."""
    ready = b.ready  # (CuPy's: its flag itself, where arr.flags builds an object a read)
    for a in arrays:
        if a.ndim != 1 or a.size != n or not ready(a):
            return None
    queue = b.queue_of(arrays[0])
    for a in arrays[1:]:
        if b.queue_of(a) is not queue:
            return None
    return queue


def constants_of(b: Backend, values: Sequence[tuple[Any, Any]]) -> Callable[[Any], list[Any]]:
    """``of(queue)``: the one-element arrays of ``values`` ((value, dtype) each) on ``queue``
    (:meth:`Operands.constant`), looked up once per queue."""
    held: dict[Any, list[Any]] = {}

    def of(queue: Any) -> list[Any]:
        got = held.get(queue)
        if got is None:
            ops = Operands(b, queue, True, [])
            got = [ops.constant(v, d) for v, d in values]
            if len(held) >= 8:
                held.clear()
            held[queue] = got
        return got

    return of


def operands(fn: str, xs: Sequence[Any], backend: str | None, names: Sequence[str]) -> Operands:
    """``xs`` as flat, C-contiguous arrays the kernels read, of one backend and queue (host
    input shared in place where the device works in host memory, else moved).

    Raises TypeError where the arrays are of different kinds (device and host, or two
    backends), and ValueError for a device array on another device than the first's.
    """
    given = [x for x in xs if x is not None]
    t = type(given[0])
    b = backends.owner_of(t)
    if b is not None and (backend is None or backend == b.name):
        # device arrays of one backend (the common call): its queue, flat views as they are
        queue = b.queue_of(given[0])
        out: list[Any] = []
        for x in xs:
            if x is None:
                out.append(None)
                continue
            if type(x) is not t or (b.queue_of(x) is not queue and b.device_of(x) != b.device_of(given[0])):
                break  # the general path below says what is wrong
            out.append(x if x.ndim == 1 and x.flags.c_contiguous else b.contiguous(x).reshape(-1))
        else:
            return Operands(b, queue, True, out)
    b, on_device = arrays.pick_backend(given[0], backend)
    for name, x in zip(names, xs, strict=True):
        if x is not None and b.owns(x) != on_device:
            raise TypeError(
                f"jitscan.{fn}: {name} and {names[0]} must both be device arrays or both host arrays"
            )
    out: list[Any] = []
    if on_device:
        queue = b.queue_of(given[0])
        for x in xs:
            if x is not None and b.queue_of(x) is not queue and b.device_of(x) != b.device_of(given[0]):
                raise ValueError(f"jitscan.{fn}: the arrays are on different devices")
            contiguous = x is None or (x.ndim == 1 and x.flags.c_contiguous)
            out.append(x if contiguous else b.contiguous(x).reshape(-1))
        return Operands(b, queue, on_device, out)
    hosts = [None if x is None else np.ascontiguousarray(np.asarray(x)).reshape(-1) for x in xs]
    queue = b.queue_for(None)
    if sum(h.nbytes for h in hosts if h is not None) <= tuning.CPU_IN_THREAD_BYTES:
        # small host calls on a CPU device run in the calling thread, as the scans' do
        # (Backend.host_sibling), where its tiles run in turn and scan in one pass
        queue = b.host_sibling(queue) or queue
    for host in hosts:
        shared = b.shared(host, queue, False) if host is not None and host.size else None
        out.append(shared if shared is not None or host is None else b.to_device(host, queue))
    return Operands(b, queue, on_device, out)


class ScanKernel:
    """A scan of your own: element ``i`` scans as an expression of arrays, and writes its
    scanned value through rules, in one pass.

    Parameters
    ----------
    reads : sequence of (name, dtype)
        The arrays the expressions read. In an expression ``x`` alone is element ``i`` of
        array ``x``, and ``x[j]`` element ``j`` (0 outside the array).
    item : str
        The value element ``i`` scans as: a C expression over ``i``, ``n`` (the element
        count) and the read arrays, in the grammar of a :class:`jitscan.Monoid`'s combine.
    writes : sequence of (name, dtype)
        The arrays the rules write.
    rules : sequence of Write
        ``Write(array, at, value, when="1")``: where ``when`` holds, ``array[at] = value``,
        each an expression over ``i``, ``n``, ``v`` (the element's scanned value), ``item``
        (the value it scanned as) and the read arrays. A place outside the array writes
        nothing.
    dtype : dtype, default int64
        The scanned values' type.
    op : str or Monoid, default "add"
    kind : {"inclusive", "exclusive"}
        Whether ``v`` includes element ``i``.
    name : str, optional
        A C identifier naming the kernel in its program.
    **knobs
        ``variant=`` (a chained variant), ``simulate_blocking=``, ``threads=``, ``vectors=`` and
        ``min_blocks=`` (the tile).

    Examples
    --------
    Keep the positive values, and count them:

    >>> import numpy as np, jitscan
    >>> keep = jitscan.ScanKernel(
    ...     reads=[("x", "int32")], item="x > 0", writes=[("y", "int32"), ("count", "int64")],
    ...     rules=[jitscan.Write("y", at="v", value="x", when="item"),
    ...            jitscan.Write("count", at="0", value="v + item", when="i == n - 1")],
    ...     kind="exclusive")
    >>> y, count = np.zeros(5, np.int32), np.zeros(1, np.int64)
    >>> keep(x=np.array([3, -1, 4, -1, 5], np.int32), y=y, count=count)
    >>> y[: count[0]]
    array([3, 4, 5], dtype=int32)
    """

    def __init__(
        self,
        reads: Sequence[tuple[str, Any]],
        item: str,
        writes: Sequence[tuple[str, Any]],
        rules: Sequence[Write],
        dtype: Any = "int64",
        op: str | Monoid = "add",
        kind: str = "inclusive",
        name: str = "user",
        **knobs: Any,
    ) -> None:
        reads = tuple((a, array_dtype("ScanKernel", f"array {a!r}", d)) for a, d in reads)
        writes = tuple((a, array_dtype("ScanKernel", f"array {a!r}", d)) for a, d in writes)
        self.transform = Transform(name, reads, item, writes, tuple(rules))
        self.dtype, self.op, self.kind = np.dtype(dtype).name, op, kind
        self.knobs = dict(knobs)
        unknown = sorted(set(knobs) - set(KNOBS))
        if unknown:
            raise TypeError(
                f"unknown keyword argument(s) {', '.join(unknown)}; ScanKernel takes {', '.join(KNOBS)}"
            )

    def __call__(self, *, n: int | None = None, backend: str | None = None, **named: Any) -> None:
        """Scan ``n`` elements (default: the length of the first read array) over the arrays
        given by name. Device arrays are written in place without the host waiting; NumPy
        arrays are copied to the default device and the written ones copied back."""
        t = self.transform
        names = [a for a, _ in t.reads] + [a for a, _ in t.writes]
        missing = [a for a in names if a not in named]
        extra = sorted(set(named) - set(names))
        if missing or extra:
            raise TypeError(
                f"ScanKernel {t.name!r} takes the arrays {', '.join(names)}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unknown {', '.join(extra)}" if extra else "")
            )
        k = len(t.reads)
        for a in names[k:]:
            if not hasattr(named[a], "dtype") or not hasattr(named[a], "shape"):
                kind = type(named[a]).__name__
                raise TypeError(f"ScanKernel {t.name!r}: {a!r} is written, so it is an array, not a {kind}")
        # what is only read may be anything NumPy reads (a list), as the read dtype
        for a, d in t.reads:
            if not hasattr(named[a], "dtype"):
                named[a] = np.asarray(named[a], dtype=np.dtype(d))
        given = [named[a] for a in names]
        for (a, d), x in zip((*t.reads, *t.writes), given, strict=True):
            if np.dtype(x.dtype).name != d:
                raise TypeError(f"ScanKernel {t.name!r}: array {a!r} is {x.dtype}, not {d}")
        for a, _ in t.writes:
            x = named[a]
            if not getattr(x, "flags", None) or not x.flags.c_contiguous:
                raise ValueError(f"ScanKernel {t.name!r}: array {a!r} must be C-contiguous (it is written)")
        ops = operands("ScanKernel", given, backend, names)
        count = int(np.size(named[t.reads[0][0]])) if n is None else int(n)
        if count < 0:
            raise ValueError(f"n must be at least 0, got {n}")
        b = ops.backend
        writes = ops.arrays[k:]
        if not ops.on_device:  # written in place where the device works in host memory
            shared = [b.shared(x.reshape(-1), ops.queue, True) if x.size else None for x in given[k:]]
            writes = [s if s is not None else w for s, w in zip(shared, writes, strict=True)]
        scan = prepared(t, self.dtype, self.op, self.kind, b, self.knobs)
        scan(ops.arrays[:k], writes, count, ops.queue)
        if not ops.on_device:  # device arrays were written in place (contiguous: views of them)
            for x, dev in zip(given[k:], writes, strict=True):
                if isinstance(getattr(dev, "host", None), np.ndarray):
                    b.settle(dev)
                else:
                    x.reshape(-1)[...] = b.to_host(dev)


__all__ = [
    "KNOBS",
    "Operands",
    "ScanKernel",
    "Write",
    "WARM_CALLS",
    "array_dtype",
    "constants_of",
    "flat_on_one_queue",
    "remember",
    "value_key",
    "warm_call",
    "warm_key",
    "count_dtype",
    "dtype_name",
    "operands",
    "prepared",
    "transform",
]
