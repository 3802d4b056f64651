"""The CUDA backend: rendered CUDA C compiled by NVRTC through CuPy's RawModule.

Work goes on CuPy's current stream, as CuPy's own functions do. Compiled modules are
cached in memory per (program, device) and on disk by CuPy itself (``RawModule``
compiles through CuPy's kernel cache, ``$CUPY_CACHE_DIR``, default
``~/.cupy/kernel_cache``), so a new process loads a program it built before instead
of running NVRTC again. The source is also valid HIP: the warp size comes from the
device, and every intrinsic sits behind the dialect's macros. CI compiles the programs for
ROCm's targets (tests/test_target_compile.py); none has run on AMD hardware.
"""

from __future__ import annotations

import ctypes
import functools
import os
import struct
import sys
import threading
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..dtypes import VECTOR_BYTES
from ..errors import BackendUnavailableError, CompileError
from .base import Backend, Build, DeviceInfo, Once, Program, build_failure
from .compiled import FLAG_TYPES, OFFSET_TYPES, CommonCall, arg_codes, form_arrays, form_record, launch_record
from .launch import FIRE_ORDER, NO_CARRY, Alarm, LaunchPlan, Scratch

try:  # optional dependency
    import cupy

    # looked up once: the common call reaches for these on every call
    _launch = cupy.cuda.driver.launchKernel
    _ndarray = cupy.ndarray
    _current_stream = cupy.cuda.get_current_stream
    _DriverError = cupy.cuda.driver.CUDADriverError
    _IMPORT_ERROR: str | None = None
except ImportError as exc:  # pragma: no cover - depends on the machine
    cupy = None
    _IMPORT_ERROR = (
        f"cupy is not installed ({exc}); pip install cupy-cuda13x or cupy-cuda12x, the one matching "
        "the CUDA major version of your driver (nvidia-smi shows it); in a jitscan source "
        "checkout, pip install '.[cuda13]' or '.[cuda12]'"
    )


#: streams (queues) and scratch buffers kept; beyond it the oldest are dropped
QUEUE_LIMIT = 64


#: pinned slots of write_bytes, and the bytes of each (a carry is at most 32)
_RING_SLOTS, _SLOT_BYTES = 256, 64


class CudaQueue:
    """A device and the stream to launch on (one object per pair, reused), and the lock of
    its scratch (Backend.lock): a queue made again for a stream after the old one was let go
    has scratch of its own, so the two locks never guard one buffer."""

    __slots__ = ("device", "stream", "ptr", "lock")

    def __init__(self, device: int, stream: Any) -> None:
        self.device = device
        self.stream = stream
        self.ptr = stream.ptr
        self.lock = threading.RLock()


class _Entry:
    """One kernel entry point and its argument block, packed in place for cuLaunchKernel.

    Every argument gets an 8-byte slot (a js_u32 reads the low half: the machines CUDA
    and ROCm run on are little-endian); ``params`` holds the slots' addresses, which is
    what cuLaunchKernel's ``kernelParams`` wants. Packing ints into one buffer costs a
    fraction of CuPy's per-argument conversion in ``RawKernel.__call__``. ``tail``: the
    last arguments, packed once; ``pack`` then packs the ones before them.
    """

    __slots__ = ("function", "ptr", "nargs", "slots", "view", "params", "params_ptr", "pack")

    def __init__(self, function: Any, nargs: int, tail: Sequence[int] = ()) -> None:
        # RawModule.get_function gives a RawKernel, whose loaded cuda Function has the pointer
        self.function = getattr(function, "kernel", function)  # keeps the module alive
        self.ptr = self.function.ptr
        self.nargs = nargs
        self.slots = np.zeros(max(nargs, 1), np.uint64)
        self.view = memoryview(self.slots).cast("B")
        self.params = self.slots.ctypes.data + 8 * np.arange(nargs, dtype=np.uint64)
        self.params_ptr = self.params.ctypes.data
        head = nargs - len(tail)
        if tail:
            struct.pack_into(f"<{len(tail)}Q", self.view, 8 * head, *tail)
        self.pack = struct.Struct(f"<{head}Q").pack_into


#: per thread: whether it has bound a CUDA context (see _bind_context)
_thread = threading.local()


def _bind_context() -> None:
    """Make the current device's primary context current on this thread, once per thread.

    cuLaunchKernel needs a current context, which a thread that has made no runtime
    call yet lacks; any runtime call binds the device's primary one.
    """
    cupy.cuda.runtime.free(0)
    _thread.has_context = True


def _enqueuer(
    ptr: int, params: int, threads: int, stream: int, device: int, only: bool
) -> Callable[[int], None]:
    """``enqueue(groups)``: cuLaunchKernel of one argument block on a stream, on its device
    (the current one where the machine has one GPU), binding a thread's context first."""
    thread = _thread

    def enqueue(groups: int) -> None:
        if not getattr(thread, "has_context", False):
            _bind_context()
        if only or cupy.cuda.runtime.getDevice() == device:
            _launch(ptr, groups, 1, 1, threads, 1, 1, 0, stream, params, 0)
        else:
            with cupy.cuda.Device(device):
                _launch(ptr, groups, 1, 1, threads, 1, 1, 0, stream, params, 0)

    return enqueue


class _CudaProgram(Program):
    def __init__(self, module: Any, build: Build, device: int, only_device: bool) -> None:
        self.module = module
        self.device = device
        self.only_device = only_device  # the machine's one GPU: always the current device
        self.threads = build.threads
        self.kernels = {
            name: _Entry(module.get_function(name), len(sig)) for name, sig in build.entries.items()
        }
        # the argument blocks are shared: one launch at a time packs and enqueues
        self._lock = threading.Lock()

    def launch(self, entry: str, groups: int, args: Sequence[Any], queue: CudaQueue) -> None:
        e = self.kernels[entry]
        if not getattr(_thread, "has_context", False):
            _bind_context()
        with self._lock:
            e.pack(e.view, 0, *args)  # buffers are device pointers (CupyBackend.buffer)
            if self.only_device or cupy.cuda.runtime.getDevice() == self.device:
                _launch(e.ptr, groups, 1, 1, self.threads, 1, 1, 0, queue.ptr, e.params_ptr, 0)
            else:
                with cupy.cuda.Device(self.device):
                    _launch(e.ptr, groups, 1, 1, self.threads, 1, 1, 0, queue.ptr, e.params_ptr, 0)

    def launcher(
        self,
        plan: LaunchPlan,
        queue: CudaQueue,
        buffer: Callable[[Any], tuple[Any, int]],
        constants: Sequence[int] = (),
    ) -> Callable[..., None]:
        shared = self.kernels[plan.entry]
        if not plan.fire_order or shared.nargs != len(arg_codes(plan)) or len(constants) != plan.nconst:
            return super().launcher(plan, queue, buffer, constants)
        # its own argument block (no lock): the constants and a carry's words (zeros) at its end
        e = _Entry(shared.function, shared.nargs, (*constants, *NO_CARRY[: plan.ncarry]))
        pack, view, ptr, threads, params = e.pack, e.view, e.ptr, self.threads, e.params_ptr
        stream, device, thread = queue.ptr, self.device, _thread
        pack_carry = struct.Struct(f"<{plan.ncarry}Q").pack_into
        at_carry = 8 * (shared.nargs - plan.ncarry)
        # the arrays' device pointers, as CupyBackend.buffer gives them (offset 0), without the call
        if self.only_device:

            def fire(
                groups: int,
                src: Any,
                dst: Any,
                n: int,
                scratch: Any,
                code: int,
                epoch: int,
                carry: Any = None,
            ) -> None:
                pack(view, 0, src.data.ptr, 0, dst.data.ptr, 0, n, scratch, code, epoch)
                if carry is not None:  # stays in the block: a launch without JS_CARRY_ARGS_BIT reads none
                    pack_carry(view, at_carry, *carry)
                try:
                    _launch(ptr, groups, 1, 1, threads, 1, 1, 0, stream, params, 0)
                except _DriverError:
                    # a thread without a current context: a failed launch has launched
                    # nothing, so bind it and launch again (checked on failure only: the
                    # check costs a tenth of a warm call's Python)
                    if getattr(thread, "has_context", False):
                        raise
                    _bind_context()
                    _launch(ptr, groups, 1, 1, threads, 1, 1, 0, stream, params, 0)

        else:
            enqueue = _enqueuer(ptr, params, threads, stream, device, False)

            def fire(
                groups: int,
                src: Any,
                dst: Any,
                n: int,
                scratch: Any,
                code: int,
                epoch: int,
                carry: Any = None,
            ) -> None:
                pack(view, 0, src.data.ptr, 0, dst.data.ptr, 0, n, scratch, code, epoch)
                if carry is not None:
                    pack_carry(view, at_carry, *carry)
                enqueue(groups)

        fire.entry = e  # type: ignore[attr-defined]  # the argument block lives as long as fire
        if self.only_device:  # the launch as a compiled common call makes it (_common_call.c)
            codes = arg_codes(plan)
            fire.native = (codes, e.ptr, params, e.slots.ctypes.data, stream, threads)  # type: ignore[attr-defined]
        return fire

    def packer(
        self, plan: LaunchPlan, queue: CudaQueue, constants: Sequence[int] = ()
    ) -> Callable[..., None]:
        shared = self.kernels[plan.entry]
        tail = plan.tail
        head = shared.nargs - plan.nconst - plan.ncarry - (len(tail) if tail is not None else 0)
        if tail is None or head < len(FIRE_ORDER) or len(constants) != plan.nconst:
            return super().packer(plan, queue, constants)
        e = _Entry(shared.function, shared.nargs)  # its own argument block (no lock): zeros
        view, ptr, threads, params = e.view, e.ptr, self.threads, e.params_ptr
        pack_head = struct.Struct(f"<{head}Q").pack_into
        consts = struct.Struct(f"<{plan.nconst}Q")
        consts.pack_into(view, 8 * head, *constants)
        pack_consts, at_consts = consts.pack_into, 8 * head
        pack_carry, at_carry = struct.Struct(f"<{plan.ncarry}Q").pack_into, 8 * (head + plan.nconst)
        at_tail = 8 * (head + plan.nconst + plan.ncarry)
        pack_tail = struct.Struct(f"<{len(tail)}Q").pack_into
        stream, only = queue.ptr, self.only_device
        enqueue = _enqueuer(ptr, params, threads, stream, self.device, only)

        def fire(
            groups: int, head: Sequence[Any], tail: Sequence[Any], constants: Any = None, carry: Any = None
        ) -> None:
            pack_head(view, 0, *head)
            pack_tail(view, at_tail, *tail)
            if constants is not None:
                pack_consts(view, at_consts, *constants)
            if carry is not None:  # stays in the block: a launch without JS_CARRY_ARGS_BIT reads none
                pack_carry(view, at_carry, *carry)
            enqueue(groups)

        fire.entry = e  # type: ignore[attr-defined]  # the argument block lives as long as fire
        if only:  # the launch as a compiled form call makes it (_common_call.c)
            fire.native = (arg_codes(plan), e.ptr, params, e.slots.ctypes.data, stream, threads)  # type: ignore[attr-defined]
        return fire

    def fixed(self, entry: str, queue: CudaQueue, constants: Sequence[int] = ()) -> Callable[..., None]:
        shared = self.kernels[entry]
        if shared.nargs < len(constants):
            return super().fixed(entry, queue, constants)
        e = _Entry(shared.function, shared.nargs, constants)  # its own argument block: no lock
        pack, view, ptr, threads, params = e.pack, e.view, e.ptr, self.threads, e.params_ptr
        stream, only = queue.ptr, self.only_device
        enqueue = _enqueuer(ptr, params, threads, stream, self.device, only)

        def fire(groups: int, *head: Any) -> None:
            pack(view, 0, *head)
            enqueue(groups)

        fire.entry = e  # type: ignore[attr-defined]  # the argument block lives as long as fire
        if only:  # the launch as a compiled form call makes it: (function, block's addresses, slots, threads)
            fire.native = (e.ptr, params, e.slots.ctypes.data, threads)  # type: ignore[attr-defined]
        return fire


#: NVRTC's options: no FMA contraction (see program()); with $JITSCAN_LINEINFO set, line
#: information for profilers (ncu's source view; experiments/profile_scan.py)
_OPTIONS = ("--fmad=false", *(("-lineinfo",) if os.environ.get("JITSCAN_LINEINFO") else ()))

#: NVRTC: "<file>(L): error: msg"; hipRTC (clang): "<file>:L:C: error: msg"
_ERRORS = (
    r".*?\((\d+)\)()?: (?:catastrophic )?error: (.*)",
    r".*?:(\d+):(\d+): (?:fatal )?error: (.*)",
)


#: CUDA's graph entry points the compiled call launches a reduction in stages through, in
#: its order (``_common_call.c``'s GraphApi); each name's ``_v2`` where the driver has it
_GRAPH_ENTRIES = (
    "cuGraphCreate",
    "cuGraphAddKernelNode",
    "cuGraphInstantiateWithFlags",
    "cuGraphExecKernelNodeSetParams",
    "cuGraphLaunch",
    "cuGraphExecDestroy",
    "cuGraphDestroy",
)


@functools.cache
def _driver() -> Any:
    """The driver library CuPy uses (None: none by that name, or HIP)."""
    if cupy.cuda.runtime.is_hip:
        return None
    try:
        return ctypes.CDLL("nvcuda.dll" if os.name == "nt" else "libcuda.so.1")
    except OSError:
        return None


def _address(lib: Any, name: str) -> int:
    """An entry point's address in ``lib`` (0: none by that name)."""
    fn = getattr(lib, name, None)
    return (ctypes.cast(fn, ctypes.c_void_p).value or 0) if fn is not None else 0


@functools.cache
def _graph_addresses() -> tuple[int, ...] | None:
    """The graph entry points' addresses in the driver library (None: not all there, HIP,
    or ``JITSCAN_GRAPHS=0``: the stages then launch one by one). On the H100 (driver 580,
    experiments/stages_host.py) a reduction by offsets in stages took 7-16 µs of host time
    a call as one graph against 19-22 as four launches (call_forms_h200.md, run M)."""
    lib = _driver()
    if lib is None or os.environ.get("JITSCAN_GRAPHS", "1") == "0":
        return None
    found = tuple(_address(lib, name + "_v2") or _address(lib, name) for name in _GRAPH_ENTRIES)
    return found if all(found) else None


@functools.cache
def _launch_address() -> int:
    """cuLaunchKernel's address in the driver library CuPy uses (0: none, or HIP)."""
    lib = _driver()
    return 0 if lib is None else _address(lib, "cuLaunchKernel")


class _NoArray:
    """Stands in for cupy.ndarray where CuPy is missing: no object is of this type."""


class CupyBackend(Backend):
    """Runs rendered CUDA C through CuPy."""

    name = "cupy"
    dialect = "cuda"
    array_type = cupy.ndarray if cupy is not None else _NoArray

    def __init__(self) -> None:
        self._programs: dict[tuple, _CudaProgram] = {}
        self._once = Once()
        #: (device, stream, slot) -> (the queue, its scratch): the queue holds its stream, so
        #: the pointer names no other stream while the entry lives; bounded like _queues
        self._scratch: dict[tuple, tuple[CudaQueue, Scratch]] = {}
        self._sizes: dict[int, int] = {}  # bytes of each scratch allocation, by pointer
        self._info: dict[int, DeviceInfo] = {}
        self._queues: dict[tuple[int, int], CudaQueue] = {}
        self._available: bool | None = None
        self._devices = 0
        #: pinned host slots for write_bytes (a scan's carry), used in turn
        self._ring: Any = None
        self._ring_events: list = []
        self._ring_next = 0
        #: (device, stream) -> (the queue, its Alarm), bounded like _scratch
        self._alarms: dict[tuple, tuple[CudaQueue, Alarm]] = {}
        #: two queues' launches take a ring slot or change the scratch or alarm table at once
        self._ring_lock = threading.Lock()
        self._table_lock = threading.Lock()

    def available(self) -> bool:
        if self._available is None:
            try:
                self._devices = cupy.cuda.runtime.getDeviceCount() if cupy is not None else 0
            except Exception:  # noqa: BLE001 - no driver, no device
                self._devices = 0
            self._available = self._devices > 0
        return self._available

    def unavailable_reason(self) -> str:
        if cupy is None:
            return _IMPORT_ERROR or "cupy missing"
        return "CuPy found no CUDA/ROCm device"

    def owns(self, x: object) -> bool:
        return cupy is not None and isinstance(x, cupy.ndarray)

    def memory_limit(self, exc: BaseException, queue: Any) -> tuple[str, int] | None:
        if cupy is None:
            return None
        runtime_oom = isinstance(exc, cupy.cuda.runtime.CUDARuntimeError) and "MemoryAllocation" in str(exc)
        if not isinstance(exc, cupy.cuda.memory.OutOfMemoryError) and not runtime_oom:
            return None
        with cupy.cuda.Device(queue.device):
            free, total = cupy.cuda.runtime.memGetInfo()
            pool = cupy.get_default_memory_pool()
            held = pool.total_bytes() - pool.used_bytes()  # free blocks CuPy's pool keeps
        name = self.device_info(queue).name
        return f"{name} has {free:,} of {total:,} bytes free (CuPy's pool holds {held:,} more)", free + held

    def queue_of(self, x: object | None) -> CudaQueue:
        if self._devices == 1 and x is not None:
            # one GPU: the array is on it, and so is the current stream
            stream = _current_stream()
            q = self._queues.get((0, stream.ptr))
            if q is not None:
                q.stream = stream  # the same stream; keep the live object
                return q
            return self.current_queue(0)
        if not self.available():
            raise BackendUnavailableError(self.unavailable_reason())
        device = x.device.id if self.owns(x) else cupy.cuda.runtime.getDevice()  # type: ignore[union-attr]
        return self.current_queue(device)

    def device_of(self, x: Any) -> int:
        return int(x.device.id)

    def queue_for(self, device: Any) -> CudaQueue:
        if not self.available():
            raise BackendUnavailableError(self.unavailable_reason())
        if device is None:
            return self.current_queue(cupy.cuda.runtime.getDevice())
        return self.current_queue(int(getattr(device, "id", device)))

    def current_queue(self, device: int) -> CudaQueue:
        """The queue of ``device`` and CuPy's current stream on it (the one of this thread)."""
        if cupy.cuda.runtime.getDevice() == device:
            stream = cupy.cuda.get_current_stream()
        else:
            with cupy.cuda.Device(device):
                stream = cupy.cuda.get_current_stream()
        key = (device, stream.ptr)
        q = self._queues.get(key)
        if q is None:
            while len(self._queues) >= QUEUE_LIMIT:  # streams made one after another
                del self._queues[next(iter(self._queues))]
            q = self._queues[key] = CudaQueue(device, stream)
        q.stream = stream
        return q

    def device_info(self, queue: CudaQueue) -> DeviceInfo:
        dev = queue.device
        if dev not in self._info:
            props = cupy.cuda.runtime.getDeviceProperties(dev)
            name = props["name"]
            name = name.decode() if isinstance(name, bytes) else str(name)
            hip = cupy.cuda.runtime.is_hip
            # the compiler's name of the target: ROCm's gcnArchName ("gfx90a:sramecc+:xnack-")
            arch = props.get("gcnArchName", b"") if hip else f"sm_{props['major']}{props['minor']}"
            arch = (arch.decode() if isinstance(arch, bytes) else str(arch)).split(":")[0]
            self._info[dev] = DeviceInfo(
                name=name,
                backend=self.name,
                is_gpu=True,
                shuffle_width=int(props["warpSize"]),
                max_threads=int(props["maxThreadsPerBlock"]),
                int64_atomics=True,
                fp64=True,
                local_memory=int(props["sharedMemPerBlock"]),  # the static limit, 48 KiB
                # PTX's %globaltimer; HIP's constant-rate wall clock (backends.clock)
                clock="wall_clock64" if hip else "globaltimer",
                registers=int(props["regsPerBlock"]),
                # PTX caps a thread at 255 registers (CUDA's programming guide, "Technical
                # Specifications"); HIP's cap depends on the wave size: not checked
                thread_registers=None if hip else 255,
                driver=str(cupy.cuda.runtime.driverGetVersion()),
                compute_units=int(props["multiProcessorCount"]),
                arch=arch,
            )
        return self._info[dev]

    def to_device(self, host: np.ndarray, queue: CudaQueue) -> Any:
        with cupy.cuda.Device(queue.device), queue.stream:
            # ascontiguousarray makes a 0-d array 1-d: keep the shape
            return cupy.asarray(np.ascontiguousarray(host).reshape(np.shape(host)))

    def to_host(self, arr: Any) -> np.ndarray:
        return cupy.asnumpy(arr)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype, queue: CudaQueue) -> Any:
        # the constructor itself: cupy.empty is a Python function around it
        if self._devices == 1 or cupy.cuda.runtime.getDevice() == queue.device:
            return _ndarray(shape, dtype)
        with cupy.cuda.Device(queue.device):
            return _ndarray(shape, dtype)

    def contiguous(self, arr: Any) -> Any:
        if arr.flags.c_contiguous and arr.data.ptr % VECTOR_BYTES == 0:
            return arr
        with cupy.cuda.Device(arr.device.id):
            out = cupy.empty(arr.shape, arr.dtype)
            out[...] = arr
            return out

    def aligned(self, arr: Any) -> bool:
        return arr.data.ptr % VECTOR_BYTES == 0

    if cupy is not None and hasattr(cupy.ndarray, "_c_contiguous"):

        def ready(self, arr: Any) -> bool:
            # the flag itself: arr.flags builds a Flags object on every read
            return arr._c_contiguous and arr.data.ptr % VECTOR_BYTES == 0

        def whole(self, arr: Any) -> bool:
            return arr._c_contiguous  # a CuPy array's pointer is where it starts: no offset

        def common_call(
            self,
            dtype: np.dtype,
            one: bool,
            loads: Mapping[np.dtype, str],
            launchers: Mapping[tuple, Callable[..., None]],
            classes: Sequence[int],
            make: Callable[[Any, int, str], Callable[..., None]],
        ) -> Callable[[Any, Any, Any], Any]:
            # Backend.common_call with operands and queue_of folded in: a warm call's
            # Python is about as long as CUDA's launch, and each Python call in it counts
            get, queues, queue_of = launchers.get, self._queues, self.queue_of
            one_gpu = self._devices == 1
            osize = dtype.itemsize
            #: the last call's (stream, size class as lo < n <= hi, load, queue, launch
            #: function): a loop's next call finds them with a few compares (one GPU only,
            #: where the stream alone names the queue); one tuple, replaced whole, so that
            #: threads read a consistent one
            last: tuple = (None, 0, 0, None, None, None)

            def find(x: Any, n: int, load: str) -> tuple[Any, Any]:
                nonlocal last
                queue = stream = None
                if one_gpu:  # the array is on the one GPU, and so is the current stream
                    stream = _current_stream()
                    queue = queues.get((0, stream.ptr))
                    if queue is not None:
                        queue.stream = stream  # the same stream; keep the live object
                if queue is None:
                    queue = queue_of(x)
                cls = bisect_left(classes, n)
                go = get((queue, cls, load))
                if go is None:
                    go = make(queue, n, load)
                if one_gpu:  # holds the stream, as the queue does: no other takes its place
                    lo = classes[cls - 1] if cls else 0
                    hi = classes[cls] if cls < len(classes) else sys.maxsize
                    last = (stream, lo, hi, load, queue, go)
                    if compiled is not None:
                        compiled.remember(launch_record(stream, lo, hi, load, go))
                return queue, go

            def call(x: Any, out: Any, carry: Any) -> Any:
                if type(x) is not _ndarray or not x._c_contiguous:
                    return None
                load = loads.get(x.dtype)  # built-in dtypes are singletons: found by identity first
                n = x.size
                at = x.data.ptr
                if load is None or not n or at % VECTOR_BYTES:
                    return None
                m = 1 if one else n
                if out is not None:
                    if type(out) is not _ndarray or out.dtype is not dtype or out.ndim != 1 or out.size != m:
                        return None
                    to = out.data.ptr
                    if (
                        not out._c_contiguous
                        or to % VECTOR_BYTES
                        or (to < at + x.nbytes and at < to + m * osize)
                    ):
                        return None
                # after the checks: a call left to the long way has done nothing
                stream, lo, hi, was, queue, go = last  # never set on several GPUs: no class holds n
                if not (lo < n <= hi and load is was and _current_stream() is stream):
                    queue, go = find(x, n, load)
                dst = self.empty((m,), dtype, queue) if out is None else out
                go(x, dst, n, carry)
                return dst.reshape(()) if one and out is None else dst

            # the same call compiled, which leaves to this one every call it does not launch
            # as the last one did (_common_call.c); one GPU, CUDA (not HIP), a dict of loads
            compiled = None
            address = _launch_address() if one_gpu and CommonCall is not None and type(loads) is dict else 0
            if address:
                compiled = CommonCall(
                    ndarray=_ndarray,
                    dtype=dtype,
                    loads=loads,
                    stream_of=_current_stream,
                    slow=call,
                    osize=osize,
                    align=VECTOR_BYTES,
                    one=one,
                    launch=address,
                    scalar=self.scalar if one else None,  # a reduction's 0-d result, as call() makes it
                )
                return compiled
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
        # compiled as the plain common call is (one GPU, CUDA, a dict of loads)
        one_gpu = self._devices == 1
        address = _launch_address() if one_gpu and CommonCall is not None and type(loads) is dict else 0
        if not address:
            return slow, None
        arrays, values = form_arrays(fields, outputs, transform)
        if not values and one and _graph_addresses() is not None:  # a reduction, which may run in stages
            values = {"graph": _graph_addresses()}
        compiled = CommonCall(
            ndarray=_ndarray,
            dtype=dtype,
            loads=loads,
            stream_of=_current_stream,
            slow=slow,
            osize=dtype.itemsize,
            align=VECTOR_BYTES,
            one=one,
            launch=address,
            form=True,
            flag_types=FLAG_TYPES,
            offset_types=OFFSET_TYPES,
            **values,
        )

        def remember(
            queue: CudaQueue, lo: int, hi: int, load: str, mode: str, whole: bool, tile: int, go: Any
        ) -> None:
            # a transform's call is on the queue it is given, the others' on the current stream
            stream = queue if mode == "transform" else queue.stream
            record = form_record(stream, lo, hi, load, mode, whole, tile, go, arrays, queue.ptr)
            compiled.remember(record)

        return compiled, remember

    def buffer(self, arr: Any) -> tuple[int, int]:
        # kernels take raw device pointers (see _Entry); the array keeps the memory alive
        return arr.data.ptr, 0

    def lock(self, queue: CudaQueue) -> threading.RLock:
        return queue.lock

    def scratch(self, nbytes: int, queue: CudaQueue, slot: str) -> Scratch:
        key = (queue.device, queue.ptr, slot)
        held = self._scratch.get(key)
        if held is None or held[0] is not queue:  # a new stream at an old stream's address
            with self._table_lock:  # other queues' launches change the table meanwhile
                while len(self._scratch) >= QUEUE_LIMIT:
                    del self._scratch[next(iter(self._scratch))]
                held = self._scratch[key] = (queue, Scratch())
        s = held[1]
        if s.nbytes < nbytes:
            with cupy.cuda.Device(queue.device):
                held = cupy.empty(max(nbytes, 64), np.uint8)
            # kernels take the device pointer; the array keeps the memory alive
            s.replace(held.data.ptr, held.nbytes, held)
            self._sizes[held.data.ptr] = held.nbytes
            self.zero(s.buf, None, queue)
        return s

    def alarm(self, queue: CudaQueue) -> Alarm:
        key = (queue.device, queue.ptr)
        held = self._alarms.get(key)
        if held is not None and held[0] is queue:
            return held[1]
        with self._table_lock:  # two first calls at once: one alarm, the table changed by one
            held = self._alarms.get(key)
            if held is not None and held[0] is queue:
                return held[1]
            while len(self._alarms) >= QUEUE_LIMIT:
                del self._alarms[next(iter(self._alarms))]
            with cupy.cuda.Device(queue.device):
                word = cupy.empty(1, np.uint32)
            # the flag in pinned host memory, which kernels write through its own address
            # (unified addressing): the host reads it with no copy and no wait
            pinned = cupy.cuda.alloc_pinned_memory(4)
            host = np.frombuffer(pinned, np.uint32, 1)
            host[0] = 0
            ptr, stream = word.data.ptr, queue.ptr

            def reset() -> None:
                cupy.cuda.runtime.memsetAsync(ptr, 0, 4, stream)

            reset()
            made = Alarm(ptr, pinned.ptr, host, reset, owner=(word, pinned))
            self._alarms[key] = (queue, made)
            return made

    def zero(self, buf: int, nbytes: int | None, queue: CudaQueue) -> None:
        size = self._sizes[buf] if nbytes is None else nbytes
        cupy.cuda.runtime.memsetAsync(buf, 0, size, queue.ptr)

    def read_u32(self, buf: int, count: int, queue: CudaQueue) -> np.ndarray:
        host = np.empty(count, np.uint32)
        cupy.cuda.runtime.memcpyAsync(
            host.ctypes.data, buf, count * 4, cupy.cuda.runtime.memcpyDeviceToHost, queue.ptr
        )
        queue.stream.synchronize()
        return host

    def write_bytes(self, buf: int, offset: int, data: bytes, queue: CudaQueue) -> None:
        # through a ring of pinned slots, so that the copy is asynchronous (one from
        # pageable memory may wait for the stream): a slot is reused once the copy that
        # last read it has run, which its event says (long done, unless 256 are queued). The
        # ring is every queue's: a slot is taken, filled and its copy queued under its lock.
        # Each slot keeps one event, recorded again behind each copy from it (one made per
        # call cost more than the copy's own enqueue), and the bytes go in by one memmove.
        with self._ring_lock:
            if self._ring is None:
                self._ring = cupy.cuda.alloc_pinned_memory(_RING_SLOTS * _SLOT_BYTES)
                self._ring_events = [
                    cupy.cuda.Event(block=False, disable_timing=True) for _ in range(_RING_SLOTS)
                ]
            at = self._ring_next
            self._ring_next = (at + 1) % _RING_SLOTS
            event = self._ring_events[at]
            event.synchronize()  # at once where never recorded, or long done
            slot = self._ring.ptr + at * _SLOT_BYTES
            ctypes.memmove(slot, data, len(data))
            cupy.cuda.runtime.memcpyAsync(
                buf + offset, slot, len(data), cupy.cuda.runtime.memcpyHostToDevice, queue.ptr
            )
            event.record(queue.stream)

    def copy_bytes(self, buf: int, offset: int, src: Any, queue: CudaQueue) -> None:
        # ordered after what the scan's stream holds: a CuPy array does not say which
        # stream wrote it, so one written in another stream must be ready (the input's rule)
        cupy.cuda.runtime.memcpyAsync(
            buf + offset, src.data.ptr, src.nbytes, cupy.cuda.runtime.memcpyDeviceToDevice, queue.ptr
        )

    def concatenate(self, parts: Sequence[Any], axis: int = 0) -> Any:
        with cupy.cuda.Device(parts[0].device.id):
            return cupy.concatenate(list(parts), axis=axis)

    def replace_nan(self, arr: Any, value: float) -> Any:
        with cupy.cuda.Device(arr.device.id):
            return cupy.where(cupy.isnan(arr), arr.dtype.type(value), arr)

    def copy(self, dst: Any, src: Any) -> None:
        dst[...] = src

    def shares_memory(self, a: Any, b: Any) -> bool:
        # contiguous arrays: their byte ranges decide
        a0, b0 = a.data.ptr, b.data.ptr
        return a0 < b0 + b.nbytes and b0 < a0 + a.nbytes

    def program(self, build: Build, queue: CudaQueue) -> _CudaProgram:
        key = (build.key, queue.device)
        prog = self._programs.get(key)
        if prog is None:  # threads meeting it at once build it once (Once)
            prog = self._once.get(self._programs, key, lambda: self._compile(build, queue.device))
        return prog

    def _compile(self, build: Build, device: int) -> _CudaProgram:
        src = build.source(self.dialect)
        try:
            with cupy.cuda.Device(device):
                # no FMA contraction: a user operator must give bit-identical tile
                # aggregates in every inlined copy (see js_scan_tile)
                module = cupy.RawModule(code=src, options=_OPTIONS)
                module.compile()
                return _CudaProgram(module, build, device, self._devices == 1)
        except cupy.cuda.compiler.CompileException as exc:
            log = str(exc)
        # outside the handler, the log's text the cause: CuPy's exception and its context are
        # the driver's objects, which a pickled error takes along (opencl_programs.compile_program)
        raise CompileError(build_failure("NVRTC", build.what, src, log, _ERRORS)) from RuntimeError(log)

    @property
    def compiled_count(self) -> int:
        return len(self._programs)
