"""What every backend provides to the layers above it.

A backend knows its runtime's arrays, queues, buffers and compiler. It knows nothing
of scans: a program arrives as a :class:`Build` (a key, a source per dialect, entry
points with their argument kinds), and launches are lists of buffers and integers, or a
:class:`LaunchPlan` saying in its own terms (arrays, a count, a scratch buffer and its
epoch, a code, constants) what each argument holds.
"""

from __future__ import annotations

import ctypes
import re
import threading
from abc import ABC, abstractmethod
from bisect import bisect_left
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .launch import NO_CARRY, Alarm, LaunchPlan, Scratch

#: argument kinds of kernel entry points: a buffer, a 64-bit unsigned js_size, a js_u32
ARG_KINDS = ("buf", "size", "u32")

_CHAR_OVER = ctypes.c_char.from_buffer
_ADDRESS_OF = ctypes.addressof


def address(a: np.ndarray) -> int:
    """The address of the first byte of a NumPy array.

    A ctypes object over a writable array's buffer gives it in a quarter of the time of
    ``a.ctypes.data`` (0.4 against 1.8 us on the 2-core development machine), which builds
    an object of NumPy's own on every read: a host call checks two or three addresses.
    """
    try:
        return _ADDRESS_OF(_CHAR_OVER(a))
    except (TypeError, ValueError, BufferError):  # read-only, empty or not contiguous
        return a.ctypes.data


@dataclass(frozen=True)
class DeviceInfo:
    """Capabilities of one device, as far as kernel generation and tuning care.

    Attributes
    ----------
    name : str
        Human-readable device name.
    backend : str
        Name of the backend that drives it.
    is_gpu : bool
    shuffle_width : int or None
        Subgroup (warp, wavefront) size when the dialect can shuffle, else None.
    max_threads : int
        Largest workgroup.
    int64_atomics : bool
        64-bit atomic max available (the packed tile state needs it).
    fp64 : bool
    local_memory : int or None
        Bytes of local (shared) memory one workgroup may declare; None where unknown.
    clock : str
        The clock its kernels can read (``backends.clock``: "globaltimer", "tsc"), or "".
    registers : int or None
        32-bit registers one workgroup's threads may use together; None where unknown.
    thread_registers : int or None
        32-bit registers one thread may use; None where unknown.
    driver : str
        The driver's version as it reports it (tuned tables are kept per driver), or "".
    compute_units : int
        Compute units as the device reports them, or 0 where unknown. A CPU device of one
        (PoCL's single-thread driver) runs one workgroup at a time.
    cache_bytes : int
        The device's global memory cache as it reports it (a CPU's last-level cache), or 0
        where unknown.
    partial_windows : bool
        Whether look-backs of workgroups of several threads scan right in every form.
        False on PoCL from release 3.1 on, where 3.1 (LLVM 15, on a Zen 5) gave wrong scans
        for every window read by more than one and fewer than all of a workgroup's threads
        (4 to 256 threads), and deterministic scans of several threads hung or gave wrong
        scans; there the CPU's one-thread tiles, and windows of one thread or of the whole
        workgroup, scan right (3.0 and GPUs scan right in every form).
    vector_bytes : int
        Bytes of the vectors the device prefers (OpenCL's preferred vector width of int,
        times 4): a CPU's vector registers, 64 with AVX-512, 32 with AVX2, 16 with SSE or
        NEON. 16 where unknown.
    arch : str
        The GPU architecture programs are compiled for, as its compiler names it: an AMD
        target ("gfx90a", "gfx942", "gfx1100": ROCm's, whose defaults are their own) or an
        NVIDIA one ("sm_90"); "" where unknown (``backends.targets`` describes them).
    """

    name: str
    backend: str
    is_gpu: bool
    shuffle_width: int | None
    max_threads: int
    int64_atomics: bool
    fp64: bool
    local_memory: int | None = None
    clock: str = ""
    registers: int | None = None
    thread_registers: int | None = None
    driver: str = ""
    compute_units: int = 0
    cache_bytes: int = 0
    partial_windows: bool = True
    vector_bytes: int = 16
    arch: str = ""

    @property
    def amd(self) -> bool:
        """Whether it is an AMD GPU (ROCm's HIP): defaults of their own (tuning.geometry)."""
        return self.arch.startswith("gfx")


@dataclass(frozen=True)
class Build:
    """One program to compile: its cache key, its source, and how its kernels are called.

    Attributes
    ----------
    key : Hashable
        Identifies the program on a device (jitscan passes its ScanSpec).
    what : str
        Names the program in compile errors.
    source : callable
        Takes a dialect name and returns the program's source text (called only
        when the program is not cached yet).
    entries : mapping of str to tuple of str
        Kernel entry points and their argument kinds (see ``ARG_KINDS``).
    threads : int
        Workgroup size of every launch.
    min_blocks : int
        Occupancy hint: workgroups per multiprocessor (0: none).
    single : frozenset of str
        Entry points launched as one workgroup (no occupancy bound applies).
    """

    key: Hashable
    what: str
    source: Callable[[str], str]
    entries: Mapping[str, tuple[str, ...]]
    threads: int
    min_blocks: int = 0
    single: frozenset[str] = frozenset()


def build_failure(compiler: str, what: str, src: str, log: str, patterns: Sequence[str]) -> str:
    """The message of a failed build: the compiler's first message and the generated line it names.

    A compiler's log names a temporary file and repeats itself; a user whose combine
    expression does not compile wants the error and the line that holds the expression
    (callers keep the whole log on the exception's ``__cause__``). ``patterns`` are
    tried in order over the whole log; each has three groups: the line, the column
    (empty when the compiler gives none) and the message.
    """
    found = (re.match(pattern, text) for pattern in patterns for text in log.splitlines())
    m = next((hit for hit in found if hit), None)
    if m is None:
        return f"{compiler} build of the {what} failed:\n{log}"
    msg = f"{compiler} build of the {what} failed: {m.group(3).strip()}"
    lines = src.splitlines()
    if m.group(1) and 0 < int(m.group(1)) <= len(lines):
        raw = lines[int(m.group(1)) - 1]
        code = raw.lstrip()
        msg += f"\n  at line {m.group(1)} of the generated source:\n    {code}"
        if m.group(2):
            msg += "\n    " + " " * max(int(m.group(2)) - 1 - (len(raw) - len(code)), 0) + "^"
    return msg


class Program(ABC):
    """A compiled program on one device."""

    @abstractmethod
    def launch(self, entry: str, groups: int, args: Sequence[Any], queue: Any) -> None:
        """Enqueue ``groups`` workgroups of kernel ``entry`` on ``queue``; args are buffers and ints."""

    def launcher(
        self,
        plan: LaunchPlan,
        queue: Any,
        buffer: Callable[[Any], tuple[Any, int]],
        constants: Sequence[int] = (),
    ) -> Callable[..., None]:
        """``fire(groups, src, dst, n, scratch, code, epoch, carry=None)``: :meth:`launch`
        of ``plan``'s entry point on one queue, set up once; ``carry``: a carry's words
        (:meth:`LaunchPlan.carry_words`; none: zeros, which a launch then does not read).

        ``fire`` places its arguments where ``plan.slots`` says, the two arrays as
        ``buffer`` (the backend's :meth:`Backend.buffer`) makes them and ``constants``
        (the same on every call, which backends set once) in the constant slots. The
        launcher keeps its own argument storage, so launchers may fire from several
        threads at once; the calls of one launcher must not overlap (its owner
        serializes them: the queue's lock). Backends override this to do per call only
        the packing and the enqueue, for plans in :attr:`LaunchPlan.fire_order`.
        """
        launch, entry, arguments, constants = self.launch, plan.entry, plan.arguments, tuple(constants)
        if len(constants) != plan.nconst:
            raise ValueError(f"{entry} takes {plan.nconst} constants, got {len(constants)}")

        def fire(
            groups: int, src: Any, dst: Any, n: int, scratch: Any, code: int, epoch: int, carry: Any = None
        ) -> None:
            words = NO_CARRY if carry is None else carry
            args = arguments(buffer(src), buffer(dst), n, scratch, code, epoch, constants, (), words)
            launch(entry, groups, args, queue)

        return fire

    def packer(self, plan: LaunchPlan, queue: Any, constants: Sequence[int] = ()) -> Callable[..., None]:
        """``fire(groups, head, tail, constants=None, carry=None)``: :meth:`launch` of
        ``plan``'s entry point on one queue, for plans with a :attr:`LaunchPlan.tail`
        (segmented ones, tuple values).

        ``head`` holds the values of the :data:`FIRE_ORDER` slots, each array as the
        backend passes it (:meth:`Backend.buffer`; a tuple value's several arrays in
        turn), ``tail`` the segments' values; ``constants`` are set once, or replaced by
        the call's where it passes them (a scan of rows of whole tiles: its row's tiles);
        ``carry`` as :meth:`launcher`'s. As that ``fire``, it keeps its own argument storage.
        """
        if plan.tail is None:
            raise ValueError(f"{plan.entry}: its slots are not the packed layout ({plan.slots})")
        launch, entry, held = self.launch, plan.entry, tuple(constants)
        if len(held) != plan.nconst:
            raise ValueError(f"{entry} takes {plan.nconst} constants, got {len(held)}")
        zeros = NO_CARRY[: plan.ncarry]

        def fire(
            groups: int, head: Sequence[Any], tail: Sequence[Any], constants: Any = None, carry: Any = None
        ) -> None:
            consts = held if constants is None else constants
            launch(entry, groups, [*head, *consts, *(zeros if carry is None else carry), *tail], queue)

        return fire

    def fixed(self, entry: str, queue: Any, constants: Sequence[int] = ()) -> Callable[..., None]:
        """``fire(groups, *head)``: :meth:`launch` of ``entry`` on one queue, its last
        arguments ``constants`` (set once), ``head`` the others (arrays as the backend
        passes them). As :meth:`launcher`'s ``fire``, it keeps its own argument storage."""
        launch, held = self.launch, tuple(constants)

        def fire(groups: int, *head: Any) -> None:
            launch(entry, groups, [*head, *held], queue)

        return fire


class Once:
    """Values made once per key, however many threads ask at the same moment.

    Threads asking for one key wait for the one making it; different keys (two programs,
    two devices) are made at the same time. ``store`` keeps the values (``None`` too).
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._making: dict[Hashable, threading.Lock] = {}

    def get(self, store: dict, key: Hashable, make: Callable[[], Any]) -> Any:
        if key in store:
            return store[key]
        with self._guard:
            lock = self._making.setdefault(key, threading.Lock())
        try:
            with lock:
                if key not in store:
                    store[key] = make()
        finally:  # later callers find the value in the store (or make it again after an error)
            with self._guard:
                self._making.pop(key, None)
        return store[key]


class Backend(ABC):
    """One runtime (OpenCL, CUDA). Arrays, buffers and queues are the runtime's own."""

    name: str
    dialect: str
    #: the type of this backend's arrays (a placeholder type when its package is missing)
    array_type: type

    @abstractmethod
    def available(self) -> bool: ...

    @abstractmethod
    def unavailable_reason(self) -> str: ...

    @abstractmethod
    def owns(self, x: object) -> bool:
        """Whether ``x`` is an array of this backend."""

    def largest_buffer(self, queue: Any) -> int:
        """Bytes of the largest buffer the device of ``queue`` allocates; 0 where only its
        free memory bounds one."""
        return 0

    def memory_limit(self, exc: BaseException, queue: Any) -> tuple[str, int] | None:
        """For ``exc`` raised by the runtime because an allocation failed: what the device
        allows (a sentence) and the largest buffer in bytes it may still take; else None."""
        return None

    @abstractmethod
    def queue_of(self, x: object | None) -> Any:
        """The queue (stream) work on ``x`` goes to now; the default device's for None."""

    @abstractmethod
    def queue_for(self, device: Any) -> Any:
        """The queue of a device as a user names it (None: the current or default one)."""

    def device_of(self, x: Any) -> Any:
        """How :meth:`queue_for` names the device an array of this backend lives on."""
        return None

    @abstractmethod
    def device_info(self, queue: Any) -> DeviceInfo: ...

    @abstractmethod
    def program(self, build: Build, queue: Any) -> Program:
        """Compile ``build`` for the queue's device, or fetch it from the cache."""

    @abstractmethod
    def to_device(self, host: np.ndarray, queue: Any) -> Any: ...

    @abstractmethod
    def to_host(self, arr: Any) -> np.ndarray: ...

    def shared(self, host: np.ndarray, queue: Any, write: bool) -> Any:
        """A device array over ``host``'s own memory (no copy), or None where there is none.

        Devices that work in host memory (OpenCL on a CPU) scan NumPy arrays in place
        of a copy; ``host`` must be C-contiguous and stay alive until :meth:`settle`.
        ``write``: the kernels write it (a result).
        """
        return None

    def settle(self, arr: Any, nbytes: int = 0) -> None:
        """Make the kernels' writes to a :meth:`shared` array visible in its host memory
        (``nbytes``: what the call read, a hint of how long its kernels run)."""
        return None  # no backend here shares host memory but OpenCL, which overrides it

    def host_operands(
        self, x: Any, out: Any, dtype: np.dtype, one: bool, queue: Any, loads: Mapping[np.dtype, str]
    ) -> tuple[Any, Any, np.ndarray] | None:
        """``(src, dst, result)`` when a kernel on ``queue`` (a CPU device) can read and
        write NumPy ``x`` and ``out`` in place, else None.

        The common host call of a prepared scan, asked on every such call on a device
        that works in host memory. It holds for the arrays :meth:`operands` takes, but
        NumPy's: ``x`` a non-empty, C-contiguous, vector-aligned ``numpy.ndarray`` of a
        dtype in ``loads``, ``out`` None or a 1-D one of ``dtype`` not over ``x``.
        ``src`` and ``dst`` are what :meth:`buffer` takes; ``result`` is ``out``, or the
        new array ``dst`` writes. Call :meth:`host_done` before reading ``result``.
        """
        return None

    def host_sibling(self, queue: Any) -> Any:
        """A queue for small host calls of ``queue``'s CPU device, on a device of the same
        processor that runs each kernel in the calling thread; None where there is none.

        A threaded CPU runtime hands every command to worker threads and wakes the caller
        when they are done, which costs a small call more than its kernel. Host calls up
        to ``tuning.CPU_IN_THREAD_BYTES`` go to this queue instead.
        """
        return None

    def host_done(self, dst: Any, queue: Any, nbytes: int = 0) -> None:
        """Make the kernels' writes through ``dst`` of :meth:`host_operands` visible on the
        host (``nbytes``: what the call read, a hint of how long its kernels run)."""
        return None  # never asked where host_operands gives None

    @abstractmethod
    def empty(self, shape: tuple[int, ...], dtype: np.dtype, queue: Any) -> Any: ...

    def head(self, arr: Any, k: int) -> Any:
        """The first ``k`` elements of a C-contiguous 1-D device array: a view of it."""
        return arr[:k]

    def scalar(self, arr: Any) -> Any:
        """A one-element device array as a 0-d view of it (a reduction's result)."""
        return arr.reshape(())

    @abstractmethod
    def contiguous(self, arr: Any) -> Any:
        """A C-contiguous, vector-aligned array with the same elements (``arr`` itself when it is one)."""

    def aligned(self, arr: Any) -> bool:
        """Whether a contiguous array suits the kernels' vector loads as it is."""
        return True

    def ready(self, arr: Any) -> bool:
        """Whether an array of this backend is C-contiguous and aligned: the kernels take it as it is."""
        return bool(arr.flags.c_contiguous) and self.aligned(arr)

    def whole(self, arr: Any) -> bool:
        """Whether an array of this backend is C-contiguous and starts its buffer: a kernel
        argument of the buffer alone reads it (head flags, offsets)."""
        return bool(arr.flags.c_contiguous) and not self.buffer(arr)[1]

    def operands(
        self, x: Any, out: Any, dtype: np.dtype, one: bool, loads: Mapping[np.dtype, str]
    ) -> tuple[Any, int, Any] | None:
        """``(queue, n, dst)`` when a kernel can read ``x`` and write ``out`` as they are, else None.

        The check of the common call, asked on every call of a prepared scan, so backends
        answer it as cheaply as they can. It holds when ``x`` is a non-empty, ready
        array of this backend and of a dtype in ``loads`` (the scan's ``dtype`` and
        those its kernels convert as they load), and ``out`` is None (``dst`` is then a
        new array) or a ready, 1-D array of ``dtype`` that does not overlap ``x``, of
        one element if ``one`` (a reduction), else of ``n = x.size``.
        """
        t = self.array_type
        if type(x) is not t or x.dtype not in loads or not x.size or not self.ready(x):
            return None
        n = x.size
        m = 1 if one else n
        if out is not None and (
            type(out) is not t
            or out.dtype != dtype
            or out.ndim != 1
            or out.size != m
            or not self.ready(out)
            or self.shares_memory(out, x)
        ):
            return None
        queue = self.queue_of(x)  # after the checks: a call left to the long way made nothing
        return queue, n, self.empty((m,), dtype, queue) if out is None else out

    def common_call(
        self,
        dtype: np.dtype,
        one: bool,
        loads: Mapping[np.dtype, str],
        launchers: Mapping[tuple, Callable[..., None]],
        classes: Sequence[int],
        make: Callable[[Any, int, str], Callable[..., None]],
    ) -> Callable[[Any, Any, Any], Any]:
        """A prepared scan's common call as one function ``call(x, out, carry)``; ``carry`` is
        None or what ``PreparedScan`` makes of ``initial`` (bytes, or a one-element device
        array), passed on to the launch function.

        It takes the arrays :meth:`operands` takes and launches the scan: the launch
        function of ``(queue, bisect_left(classes, n), loads[x.dtype])`` in
        ``launchers``, or ``make(queue, n, loads[x.dtype])`` where there is none yet, is
        called as ``go(x, dst, n, carry)``. It returns the result (``dst`` of a scan; of a
        reduction without ``out``, ``dst`` as a 0-d array), or None where ``x`` or ``out``
        are not such arrays, having done nothing. A backend whose launch is short
        enough for each Python call around it to count folds :meth:`operands` in (CuPy).
        """
        return self._python_call(dtype, one, loads, launchers, classes, make)

    def _python_call(
        self,
        dtype: np.dtype,
        one: bool,
        loads: Mapping[np.dtype, str],
        launchers: Mapping[tuple, Callable[..., None]],
        classes: Sequence[int],
        make: Callable[[Any, int, str], Callable[..., None]],
        launched: Callable[[Any, Any, int, str, Any, Any], None] | None = None,
    ) -> Callable[[Any, Any, Any], Any]:
        """:meth:`common_call`'s Python call; ``launched(x, queue, cls, load, go, carry)``,
        where given, hears of each of its launches (a compiled call told what it may reuse)."""
        operands, get = self.operands, launchers.get

        def call(x: Any, out: Any, carry: Any) -> Any:
            common = operands(x, out, dtype, one, loads)
            if common is None:
                return None
            queue, n, dst = common
            load = loads[x.dtype]
            cls = bisect_left(classes, n)
            go = get((queue, cls, load))
            if go is None:
                go = make(queue, n, load)
            go(x, dst, n, carry)
            if launched is not None:
                launched(x, queue, cls, load, go, carry)
            return self.scalar(dst) if one and out is None else dst

        return call

    def form_call(
        self,
        slow: Callable[..., Any],
        dtype: np.dtype,
        one: bool,
        loads: Mapping[np.dtype, str],
        fields: tuple | None = None,
        outputs: tuple[np.dtype, ...] = (),
        transform: tuple[tuple[np.dtype, ...], tuple[np.dtype, ...]] | None = None,
    ) -> tuple[Callable[..., Any], Callable[..., None] | None]:
        """The other forms' common call (``plan/forms.py``) as one function, where the
        backend has one: ``(call, remember)``. ``call(x, out, flags, offsets, row_len,
        carry)`` launches a call like the last one that ``slow`` (the Python call of the
        same arguments, which takes every other) launched, and ``remember(queue, lo, hi,
        load, mode, whole, rows_tile, go)`` is what ``slow`` says after each launch of its
        own: the queue, the size class ``lo < n <= hi``, the load, the segments' mode,
        whether the call ran the program of rows of whole tiles (``rows_tile``: that
        program's tile, 0 where there is none) and the launch function it called. A tuple
        value's call names its ``fields`` (each field's dtype, None for an index field) and
        the written fields' dtypes (``outputs``, an index field's too); its mode is
        "fields". A transform's call (``plan/transformed.py``) names the dtypes of the
        arrays it reads and writes (``transform``): ``call(reads, writes, n, queue)``, mode
        "transform", no load. Here (no compiled call): ``(slow, None)``."""
        return slow, None

    @abstractmethod
    def buffer(self, arr: Any) -> tuple[Any, int]:
        """(buffer to pass to a kernel, offset in elements) of a contiguous array."""

    def lock(self, queue: Any) -> threading.RLock:
        """The lock of ``queue``'s scratch: held by a launch sequence from the moment it
        takes a :meth:`scratch` of the queue (and picks its epoch) to its last launch or
        read-back, so that another thread's launch on the same queue does not come between.

        One per queue, the same object for as long as the queue lives, so that launches on
        two queues never wait for each other. Reentrant: a variant's run holds it around
        helpers that take it too. This default keeps one per queue object for good;
        backends whose queues come and go override it.
        """
        locks = self.__dict__.get("_locks")
        if locks is None:
            locks = self.__dict__.setdefault("_locks", {})
        lock = locks.get(queue)
        if lock is None:
            lock = locks.setdefault(queue, threading.RLock())  # one of two threads' wins
        return lock

    @abstractmethod
    def scratch(self, nbytes: int, queue: Any, slot: str) -> Scratch:
        """The :class:`Scratch` of (queue, slot), its buffer at least ``nbytes``.

        A buffer too small is replaced by a new one, zeroed (its epoch 0). Callers hold
        the queue's :meth:`lock` while they use it. The Scratch is one object for as long
        as the backend keeps the queue's entry; a backend that drops it (a bound on
        queues) makes a new one next time, under the same lock. Backends guard their table
        of every queue's scratch themselves: two queues' launches change it at once.
        """

    @abstractmethod
    def alarm(self, queue: Any) -> Alarm:
        """The :class:`Alarm` of ``queue``: made on first use (both words 0), one object for good."""

    @abstractmethod
    def zero(self, buf: Any, nbytes: int | None, queue: Any) -> None:
        """Enqueue zeroing of the first ``nbytes`` of ``buf`` (all of it for None)."""

    @abstractmethod
    def read_u32(self, buf: Any, count: int, queue: Any) -> np.ndarray:
        """Copy the first ``count`` uint32 of ``buf`` to the host (synchronizes)."""

    @abstractmethod
    def write_bytes(self, buf: Any, offset: int, data: bytes, queue: Any) -> None:
        """Copy ``data`` into ``buf`` at byte ``offset``, ordered before the queue's next work."""

    @abstractmethod
    def copy_bytes(self, buf: Any, offset: int, src: Any, queue: Any) -> None:
        """Copy the device array ``src`` into ``buf`` at byte ``offset``, in ``queue``'s order
        (the host does not wait)."""

    @abstractmethod
    def concatenate(self, parts: Sequence[Any], axis: int = 0) -> Any:
        """Arrays of one dtype and queue joined along ``axis``, in a new array."""

    def astype(self, arr: Any, dtype: np.dtype) -> Any:
        """This backend's array ``arr`` converted to ``dtype`` on its device (safe from any thread)."""
        return arr.astype(dtype)

    def fill(self, arr: Any, value: Any) -> None:
        """Every element of this backend's array ``arr`` set to ``value`` (safe from any thread)."""
        arr.fill(value)

    @abstractmethod
    def replace_nan(self, arr: Any, value: float) -> Any:
        """A copy of a float array with every NaN replaced by ``value``."""

    def plus_zero(self, arr: Any) -> Any:
        """``arr + 0.0`` of a float array, on the device and without the host waiting: a
        sum's zeros as NumPy's (+0.0, where -0.0 + +0.0 is +0.0), every other value kept."""
        return arr + arr.dtype.type(0)

    @abstractmethod
    def copy(self, dst: Any, src: Any) -> None:
        """Device-to-device copy of equal-sized contiguous arrays."""

    @abstractmethod
    def shares_memory(self, a: Any, b: Any) -> bool: ...

    @property
    @abstractmethod
    def compiled_count(self) -> int:
        """How many programs this backend has built in this process (for cache checks)."""
