"""The OpenCL backend: PyOpenCL on any OpenCL 1.2+ device (PoCL on a plain CPU)."""

from __future__ import annotations

import inspect
import math
import operator
import os
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..dtypes import VECTOR_BYTES
from ..errors import BackendUnavailableError
from . import clock, opencl_calls, opencl_icd
from .base import Backend, Build, DeviceInfo, Once, address
from .launch import Alarm, Scratch
from .opencl_devices import in_thread_sibling, pick_device, pocl_release
from .opencl_programs import GATHER, CLProgram, build_program, compile_program

try:  # optional dependency
    import pyopencl as cl
    import pyopencl.array as cl_array
    import pyopencl.elementwise as cl_elementwise
    import pyopencl.tools as cl_tools

    _IMPORT_ERROR: str | None = None
except ImportError as exc:  # pragma: no cover - depends on the machine
    cl = None
    cl_array = None
    cl_elementwise = None
    cl_tools = None
    _IMPORT_ERROR = (
        f'pyopencl is not installed ({exc}); pip install "pyopencl[pocl]" (PoCL gives a CPU '
        "device where no GPU driver provides one); in a jitscan source checkout, pip install '.[opencl]'"
    )


#: scratch buffers kept (one per queue and use); beyond it the oldest queue's go
SCRATCH_LIMIT = 64
#: result memory pools kept (one per queue); beyond it the oldest queue's frees its blocks
POOL_LIMIT = 16
#: free blocks a pool keeps: at most this many bytes, or 4 times the block asked for when
#: that is more (sizes that change call after call would otherwise leave a block in every
#: size bin; one size called again and again keeps its blocks)
POOL_HELD_BYTES = 64 << 20
#: a host call of up to POLL_BYTES on a CPU device whose worker threads run the kernels
#: waits for them by polling (yielding the core between looks), for at most POLL_SECONDS,
#: before it blocks in clFinish; a longer call would share the cores with the workers
POLL_BYTES = 1 << 20
POLL_SECONDS = 1e-3
#: on a device whose kernels cannot write host memory (a GPU's driver: NVIDIA's never shows
#: a kernel's write through a mapping, experiments/ocl_zero_copy.py) the alarm's flag is
#: copied back behind a launch that may set it at most once in this many seconds: the
#: driver's read costs about a launch's host time (6.1 us on NVIDIA's), and a flag is only
#: ever set, so one copy brings what every launch before it set
ALARM_COPY_EVERY = 5e-4
#: gives the core to another thread between two looks (Windows has no sched_yield)
_yield = getattr(os, "sched_yield", None) or (lambda: time.sleep(0))


#: the OpenCL C types of the float dtypes plus_zero takes
_CL_FLOATS = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
#: whether PyOpenCL's Array takes the fast constructor's keywords (2021 and later)
_FAST_ARRAY = cl_array is not None and "_fast" in inspect.signature(cl_array.Array.__init__).parameters


def _view(arr: Any, shape: tuple[int, ...], strides: tuple[int, ...], size: int) -> Any:
    """A view of ``arr``'s first elements through PyOpenCL's fast constructor, as its own
    views are made: its slicing and reshape check the strides and flags again, about a small
    launch's time a view."""
    return type(arr)(
        None,
        shape,
        arr.dtype,
        allocator=arr.allocator,
        data=arr.base_data,
        offset=arr.offset,
        strides=strides,
        events=arr.events,
        _fast=True,
        _size=size,
        _context=arr.context,
        _queue=arr.queue,
    )


#: write_bytes' copies held at once (their events keep the host bytes alive)
_WRITES_HELD = 256


class HostArray:
    """A NumPy array's memory as the kernels take it on a CPU device (``shared``).

    What the launch code reads of a device array, and no more: a pyopencl ``Array``'s
    constructor costs more than a small scan on a CPU (18 us against a 35 us launch).
    It holds ``host``, whose memory the buffer is, until the call that made it has
    waited for its kernels (``settle``).
    """

    __slots__ = ("base_data", "dtype", "host", "queue", "shape", "size")
    offset = 0  # the buffer starts at the array's first element

    def __init__(self, buf: Any, host: np.ndarray, queue: Any) -> None:
        self.base_data, self.host, self.queue = buf, host, queue
        self.dtype, self.shape, self.size = host.dtype, host.shape, host.size


#: PyOpenCL's own elementwise kernels (astype, fill, comparisons) are one kernel object per
#: context, shared by every thread, whose arguments are set and then enqueued in separate
#: steps: jitscan calls them one thread at a time (8 threads converting their results with
#: out= of another dtype got wrong results without it)
_ELEMENTWISE = threading.Lock()


class _NoArray:
    """Stands in for pyopencl.array.Array where PyOpenCL is missing: no object is of this type."""


class OpenCLBackend(Backend):
    """Runs rendered OpenCL C through PyOpenCL."""

    name = "opencl"
    dialect = "opencl"
    array_type = cl_array.Array if cl_array is not None else _NoArray

    def __init__(self) -> None:
        self._queue: Any = None
        self._programs: dict[tuple, CLProgram] = {}
        #: (queue pointer, slot) -> (the queue, its scratch): the queue is held so that its
        #: pointer cannot name another queue while the entry lives; the oldest entries go
        #: beyond SCRATCH_LIMIT (a program making queue after queue must not grow without end)
        self._scratch: dict[tuple, tuple[Any, Scratch]] = {}
        #: queue pointer -> the lock of its scratch (Backend.lock), kept for good: a lock is
        #: a few dozen bytes, and a queue made at a freed queue's address that takes its lock
        #: only waits for launches it need not wait for, never races with one
        self._locks: dict[int, threading.RLock] = {}
        self._info: dict[Any, DeviceInfo] = {}
        self._utility: dict[tuple, tuple[Any, threading.Lock]] = {}
        self._available: bool | None = None
        #: queue pointer -> (the queue, its result pool, its context): the queue is held so that its pointer
        #: names no other queue while the entry lives
        self._pools: dict[int, tuple[Any, Any, Any]] = {}
        #: per device: whether its writes to a host-pointer buffer land in the host array
        #: itself (probed once, see _in_place), and whether a host call polls for its end
        self._in_place: dict[int, bool] = {}
        self._polls: dict[int, bool] = {}
        #: per device: the queue of its single-thread sibling, or None (host_sibling)
        self._siblings: dict[int, Any] = {}
        #: (queue pointer) -> (the queue, its Alarm), bounded like _scratch
        self._alarms: dict[int, tuple[Any, Any]] = {}
        #: the last writes of write_bytes, each a NannyEvent that keeps its host bytes alive
        #: (and waits for its copy when let go: only the oldest of _WRITES_HELD queued ones)
        self._writes: deque = deque(maxlen=_WRITES_HELD)
        #: plus_zero's kernel by context and dtype
        self._plus_zero: dict[tuple, Any] = {}
        #: threads meeting a fresh backend at once make one default queue, one device info
        #: (a probe build on NVIDIA), one build of each program, one pool and sibling a queue
        self._once = Once()
        self._queue_lock = threading.Lock()
        self._pools_lock = threading.Lock()
        #: the tables of scratch and alarms, which two queues' launches change at once
        self._table_lock = threading.Lock()

    # -- availability ------------------------------------------------------------
    def available(self) -> bool:
        if self._available is None:
            try:
                self._available = cl is not None and bool(
                    [d for p in cl.get_platforms() for d in p.get_devices()]
                )
            except Exception:  # noqa: BLE001 - no ICD loader, no platform
                self._available = False
        return self._available

    def unavailable_reason(self) -> str:
        if cl is None:
            return _IMPORT_ERROR or "pyopencl missing"
        return "pyopencl found no OpenCL platform with a device"

    # -- arrays ----------------------------------------------------------------------
    def owns(self, x: object) -> bool:
        return cl_array is not None and isinstance(x, cl_array.Array)

    def largest_buffer(self, queue: Any) -> int:
        return int(queue.device.max_mem_alloc_size)

    def memory_limit(self, exc: BaseException, queue: Any) -> tuple[str, int] | None:
        # a buffer over CL_DEVICE_MAX_MEM_ALLOC_SIZE is INVALID_BUFFER_SIZE; one the device
        # cannot place, MEM_OBJECT_ALLOCATION_FAILURE (or OUT_OF_RESOURCES, at the launch)
        if cl is None or not isinstance(exc, cl.Error):
            return None
        codes = cl.status_code
        failed = (codes.INVALID_BUFFER_SIZE, codes.MEM_OBJECT_ALLOCATION_FAILURE, codes.OUT_OF_HOST_MEMORY)
        if not isinstance(exc, cl.MemoryError) and exc.code not in failed:
            return None
        dev = queue.device
        largest = int(dev.max_mem_alloc_size)
        total = int(dev.global_mem_size)
        said = f"{dev.name.strip()} allocates at most {largest:,} bytes a buffer, of {total:,} in all"
        return said, largest

    def default_queue(self) -> Any:
        if self._queue is None:
            with self._queue_lock:
                if self._queue is None:
                    if not self.available():
                        raise BackendUnavailableError(self.unavailable_reason())
                    self._queue = cl.CommandQueue(pick_device())
        return self._queue

    def set_default_queue(self, queue: Any) -> None:
        """Make ``queue`` (a ``pyopencl.CommandQueue``) the one NumPy inputs go to."""
        with self._queue_lock:
            self._queue = queue

    def device_of(self, x: Any) -> Any:
        return x.queue  # None for an array without one: the default queue

    def queue_for(self, device: Any) -> Any:
        if device is None:
            return self.default_queue()
        if cl is not None and isinstance(device, cl.CommandQueue):
            return device
        raise TypeError(f"an OpenCL device is named by a pyopencl.CommandQueue, not {device!r}")

    def queue_of(self, x: object | None) -> Any:
        if self.owns(x):
            return x.queue or self.default_queue()  # type: ignore[union-attr]
        return self.default_queue()

    def device_info(self, queue: Any) -> DeviceInfo:
        key = (queue.device.int_ptr, queue.context.int_ptr)
        info = self._info.get(key)
        if info is None:
            info = self._once.get(self._info, key, lambda: self._make_info(queue))
        return info

    def _make_info(self, queue: Any) -> DeviceInfo:
        """What ``device_info`` keeps of the queue's device (one probe build on NVIDIA)."""
        dev = queue.device
        ext = dev.extensions
        is_gpu = bool(dev.type & cl.device_type.GPU)
        shuffle_width = self._ptx_shuffle_width(queue) if is_gpu else None
        return DeviceInfo(
            name=f"{dev.name.strip()} ({dev.platform.name.strip()})",
            backend=self.name,
            is_gpu=is_gpu,
            shuffle_width=shuffle_width,
            max_threads=int(dev.max_work_group_size),
            int64_atomics="cl_khr_int64_extended_atomics" in ext,
            fp64="cl_khr_fp64" in ext or dev.double_fp_config != 0,
            local_memory=int(dev.local_mem_size),
            clock=self._clock(dev, ptx=shuffle_width is not None),
            # NVIDIA's cl_nv_device_attribute_query; no other driver says
            registers=int(dev.registers_per_block_nv) if "cl_nv_device_attribute_query" in ext else None,
            thread_registers=255 if "cl_nv_device_attribute_query" in ext else None,
            driver=dev.driver_version.strip(),
            compute_units=int(dev.max_compute_units),
            cache_bytes=int(dev.global_mem_cache_size),
            partial_windows=is_gpu or (pocl_release(dev.platform) or (3, 0)) < (3, 1),
            vector_bytes=max(16, 4 * int(dev.preferred_vector_width_int)),
        )

    @staticmethod
    def _clock(dev: Any, ptx: bool) -> str:
        """The clock a kernel on ``dev`` can read: PTX's on NVIDIA, the host's TSC in PoCL's CPU device."""
        if ptx:
            return "globaltimer"
        if (
            dev.type & cl.device_type.CPU
            and dev.platform.name.strip() == "Portable Computing Language"
            and clock.host_tsc()
        ):
            return "tsc"
        return ""

    @staticmethod
    def _ptx_shuffle_width(queue: Any) -> int | None:
        """32 on NVIDIA GPUs whose OpenCL compiler takes inline PTX shuffles, else None.

        OpenCL C 1.2 has no portable shuffles; NVIDIA's driver has no cl_khr_subgroups
        but accepts inline PTX. JITSCAN_OPENCL_SHUFFLE=0 turns this off.
        """
        dev = queue.device
        if os.environ.get("JITSCAN_OPENCL_SHUFFLE") == "0" or "NVIDIA" not in dev.platform.name:
            return None
        probe = """__kernel void probe(__global uint* a) {
            uint r;
            asm volatile("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;"
                         : "=r"(r) : "r"(a[0]), "r"(1u));
            a[get_global_id(0)] = r; }"""
        try:
            build_program(cl.Program(queue.context, probe), dev)
        except Exception:  # noqa: BLE001 - no inline PTX here: local-memory scans instead
            return None
        return 32

    def to_device(self, host: np.ndarray, queue: Any) -> Any:
        # ascontiguousarray makes a 0-d array 1-d: keep the shape
        return cl_array.to_device(queue, np.ascontiguousarray(host).reshape(np.shape(host)))

    def to_host(self, arr: Any) -> np.ndarray:
        return arr.get()

    def shared(self, host: np.ndarray, queue: Any, write: bool) -> Any:
        # a CPU device reads and writes host memory itself: a buffer over the NumPy
        # array's memory (CL_MEM_USE_HOST_PTR) saves the copies in and out. A runtime may
        # keep a copy of its own where the pointer is not aligned to the device's base
        # address alignment (PoCL 3 does not); settle() makes the result right either way
        if self.device_info(queue).is_gpu or address(host) % VECTOR_BYTES:
            return None
        mf = cl.mem_flags
        flags = mf.USE_HOST_PTR | (mf.READ_WRITE if write else mf.READ_ONLY)
        return HostArray(cl.Buffer(queue.context, flags, hostbuf=host), host, queue)

    def settle(self, arr: Any, nbytes: int = 0) -> None:
        self.host_done(arr.base_data, arr.queue, nbytes)

    def host_sibling(self, queue: Any) -> Any:
        # one queue per device, in a context of its own: host calls make their buffers
        # on the queue they run on
        key = queue.device.int_ptr
        if key not in self._siblings:

            def make() -> Any:
                other = in_thread_sibling(queue.device)
                return None if other is None else cl.CommandQueue(cl.Context([other]))

            return self._once.get(self._siblings, key, make)
        return self._siblings[key]

    def host_operands(
        self, x: Any, out: Any, dtype: np.dtype, one: bool, queue: Any, loads: Mapping[np.dtype, str]
    ) -> tuple[Any, Any, np.ndarray] | None:
        # Backend.host_operands in one function, for a CPU device: bare buffers over the
        # NumPy arrays' memory (no pyopencl Array: its constructor would cost more than
        # a small scan)
        if type(x) is not np.ndarray or x.dtype not in loads or not x.flags.c_contiguous:
            return None
        n = x.size
        at = address(x)
        if not n or at % VECTOR_BYTES:
            return None
        m = 1 if one else n
        if out is None:
            out = np.empty(m, dtype)  # NumPy aligns to 16 bytes (VECTOR_BYTES) or more
        elif type(out) is not np.ndarray or out.dtype is not dtype or out.shape != (m,):
            return None
        elif not out.flags.c_contiguous:
            return None
        to = address(out)
        if to % VECTOR_BYTES or (to < at + x.nbytes and at < to + out.nbytes):
            return None
        mf = cl.mem_flags
        src = cl.Buffer(queue.context, mf.USE_HOST_PTR | mf.READ_ONLY, hostbuf=x)
        return src, cl.Buffer(queue.context, mf.USE_HOST_PTR | mf.READ_WRITE, hostbuf=out), out

    def host_done(self, dst: Any, queue: Any, nbytes: int = 0) -> None:
        # mapping is what the OpenCL model promises makes a USE_HOST_PTR buffer's
        # contents visible on the host. A device that keeps such a buffer in the host
        # array itself (PoCL's CPU device) has written it there once its queue is
        # finished; the map would only add a command and a wait (27 of 60 us a call
        # of 1,024 floats on the 2-core development machine)
        key = queue.device.int_ptr
        known = self._in_place.get(key)
        if known is None:
            # (_polls first: a thread that finds _in_place set reads it next)
            self._polls[key] = queue.device.max_compute_units > 1
            known = self._in_place[key] = self._writes_in_place(queue)
        if known:
            if nbytes <= POLL_BYTES and self._polls[key]:
                self._poll(queue)
            queue.finish()
            return
        flags = cl.map_flags.READ
        mapped, _event = cl.enqueue_map_buffer(queue, dst, flags, 0, (dst.size,), np.uint8, is_blocking=True)
        mapped.base.release()

    @staticmethod
    def _poll(queue: Any) -> None:
        """Wait up to POLL_SECONDS for the queue's commands by polling a marker behind them.

        PoCL's threaded driver hands a command to its worker threads and wakes a thread
        blocked in clFinish once they are done, which costs a small call most of its time
        on the 2-core development machine (an empty kernel and clFinish: 32-87 us). A
        caller that looks at the marker's status instead, yielding the core to the workers
        between looks, is not asleep when they finish: a kernel over 1,024 int32 took
        64-66 us with clFinish and 24-25 polling (experiments/notes/performance-log.md, "Polling for a host
        call's end"). Not on a device of one compute unit: PoCL's single-thread driver
        runs the kernels in the thread that waits for them.
        """
        done = cl.enqueue_marker(queue)
        queue.flush()
        end = time.perf_counter() + POLL_SECONDS
        while done.command_execution_status > 0 and time.perf_counter() < end:  # 0: complete, < 0: failed
            _yield()

    def _writes_in_place(self, queue: Any) -> bool:
        """Whether the device's writes to a USE_HOST_PTR buffer are in the host array once its queue finishes.

        Probed with a fill of a buffer over an array 16 bytes past a 64-byte boundary,
        the weakest alignment the kernels are given, checked before the buffer is
        released or mapped. Asked of CPU devices only: a GPU keeps its own copy.
        """
        if self.device_info(queue).is_gpu:
            return False
        raw = np.zeros(4096 + 128, np.uint8)
        start = (-raw.ctypes.data) % 64 + 16
        host = raw[start : start + 4096]
        mf = cl.mem_flags
        buf = cl.Buffer(queue.context, mf.USE_HOST_PTR | mf.READ_WRITE, hostbuf=host)
        cl.enqueue_fill_buffer(queue, buf, np.uint8(0xA5), 0, host.nbytes)
        queue.finish()
        seen = bool((host == 0xA5).all())
        buf.release()
        return seen

    def empty(self, shape: tuple[int, ...], dtype: np.dtype, queue: Any) -> Any:
        # results come from a memory pool per queue: clCreateBuffer costs tens of
        # microseconds to milliseconds a call on NVIDIA's driver, growing with the size.
        # Per queue, so that a block freed while its queue still reads it goes back to
        # work ordered after that read. Like CuPy's pool it keeps freed blocks: free_pools()
        held = self._pools.get(queue.int_ptr)
        if held is None:
            held = self._new_pool(queue)
        pool = held[1]
        if pool.managed_bytes - pool.active_bytes > POOL_HELD_BYTES:
            nbytes = math.prod(shape) * np.dtype(dtype).itemsize
            if pool.managed_bytes - pool.active_bytes > 4 * nbytes:
                pool.free_held()
        if not _FAST_ARRAY:
            return cl_array.empty(queue, shape, dtype, allocator=pool)
        # PyOpenCL's own fast constructor (the one its arrays' views use): its checked
        # constructor spends 10-20 us a call on shape, size and strides, several times the
        # launch of a small scan (experiments/profile_forms.py --opencl); a 1-D result of a
        # dtype, the compiled call's (opencl_calls.py), skips even the strides' loop
        if not isinstance(dtype, np.dtype):
            dtype = np.dtype(dtype)
        if len(shape) == 1 and type(shape[0]) is int and shape[0] >= 0:
            size, strides = shape[0], (dtype.itemsize,)
        else:
            shape = tuple(map(operator.index, shape))
            size = math.prod(shape)
            steps, step = [], dtype.itemsize
            for extent in reversed(shape):
                steps.append(step)
                step *= max(extent, 1)
            strides = tuple(reversed(steps))
        return cl_array.Array(
            None,
            shape,
            dtype,
            allocator=pool,
            strides=strides,
            _fast=True,
            _size=size,
            _context=held[2],  # the queue's context, kept: each read of it makes an object
            _queue=queue,
        )

    def head(self, arr: Any, k: int) -> Any:
        if not _FAST_ARRAY or not 0 <= k <= arr.size or arr.ndim != 1 or not arr.flags.c_contiguous:
            return arr[:k]
        return _view(arr, (k,), arr.strides, k)

    def scalar(self, arr: Any) -> Any:
        if not _FAST_ARRAY or arr.size != 1:
            return arr.reshape(())
        return _view(arr, (), (), 1)

    def _new_pool(self, queue: Any) -> Any:
        with self._pools_lock:
            held = self._pools.get(queue.int_ptr)
            if held is None:
                while len(self._pools) >= POOL_LIMIT:
                    # the oldest queue's pool: its free blocks go back now; blocks still in
                    # use keep it alive until they are freed
                    self._pools.pop(next(iter(self._pools)))[1].free_held()
                # PyOpenCL's DeferredAllocator, not its ImmediateAllocator: that one enqueues
                # a command on the queue as it allocates, and with threads allocating and
                # enqueueing on one queue NVIDIA's driver (580) crashed in a thread of its own
                # (a PyOpenCL-only reproduction: 17 of 48 processes of 8 threads; with the
                # deferred allocator 0 of 32, docs/reliability.md). What the deferred one
                # gives up: running out of device memory shows at the launch, not here, so
                # the pool's own answer to it (collect, free its held blocks, try again)
                # does not run; free_pools() does that by hand
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", "Memory pools expect non-deferred", UserWarning)
                    pool = cl_tools.MemoryPool(cl_tools.DeferredAllocator(queue.context))
                held = self._pools[queue.int_ptr] = (queue, pool, queue.context)
            return held

    def free_pools(self) -> None:
        """Give the blocks the result pools hold back to the driver (as CuPy's ``free_all_blocks``)."""
        with self._pools_lock:
            pools = [held[1] for held in self._pools.values()]
        for pool in pools:
            pool.free_held()

    def contiguous(self, arr: Any) -> Any:
        if arr.flags.c_contiguous and self.aligned(arr):
            return arr
        return self._gather(arr)

    def aligned(self, arr: Any) -> bool:
        # buffers start at CL_DEVICE_MEM_BASE_ADDR_ALIGN (at least 128 bytes), so a
        # view's byte offset decides whether the kernels' 16-byte vector accesses fit
        return arr.offset % VECTOR_BYTES == 0

    def _gather(self, arr: Any) -> Any:
        """Copy a strided view (negative strides too) into a new C-contiguous array."""
        queue = arr.queue or self.default_queue()
        out = cl_array.empty(queue, arr.shape, arr.dtype)
        if arr.size == 0:
            return out
        item = arr.dtype.itemsize
        dims = np.array(list(arr.shape) + [s // item for s in arr.strides], dtype=np.int64)
        key = ("gather", queue.context.int_ptr, queue.device.int_ptr, item)
        held = self._utility.get(key)
        if held is None:

            def make() -> tuple[Any, threading.Lock]:
                word = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}[item]
                prog = build_program(cl.Program(queue.context, GATHER.replace("WORD", word)), queue.device)
                kernel = prog.js_gather
                kernel.set_scalar_arg_dtypes([None, np.int64, None, None, np.int32, np.uint64])
                # its arguments are the kernel object's: set and enqueued by one thread at a time
                return kernel, threading.Lock()

            held = self._once.get(self._utility, key, make)
        kernel, lock = held
        dims_buf = cl_array.to_device(queue, dims)
        with lock:
            kernel(
                queue,
                (arr.size,),
                None,
                arr.base_data,
                np.int64(arr.offset // item),
                out.data,
                dims_buf.data,
                np.int32(arr.ndim),
                np.uint64(arr.size),
            )
        return out

    def common_call(
        self,
        dtype: np.dtype,
        one: bool,
        loads: Mapping[np.dtype, str],
        launchers: Mapping[tuple, Callable[..., None]],
        classes: Sequence[int],
        make: Callable[[Any, int, str], Callable[..., None]],
    ) -> Callable[[Any, Any, Any], Any]:
        # compiled where the extension and the ICD loader's entry points are (opencl_calls.py)
        return opencl_calls.common_call(self, dtype, one, loads, launchers, classes, make)

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
        return opencl_calls.form_call(self, slow, dtype, one, loads, fields, outputs, transform)

    def buffer(self, arr: Any) -> tuple[Any, int]:
        if type(arr) is cl.Buffer:  # a bare buffer of host_operands
            return arr, 0
        itemsize = arr.dtype.itemsize
        if arr.size == 0:
            return None, 0
        return arr.base_data, arr.offset // itemsize

    def lock(self, queue: Any) -> threading.RLock:
        # a pyopencl queue takes no attribute and no weak reference: a table, by pointer
        lock = self._locks.get(queue.int_ptr)
        if lock is None:
            lock = self._locks.setdefault(queue.int_ptr, threading.RLock())  # one of two threads' wins
        return lock

    def scratch(self, nbytes: int, queue: Any, slot: str) -> Scratch:
        key = (queue.int_ptr, slot)
        held = self._scratch.get(key)
        if held is None:  # (this queue's own launches come one at a time: its lock)
            with self._table_lock:  # other queues' launches change the table meanwhile
                while len(self._scratch) >= SCRATCH_LIMIT:
                    # OpenCL keeps a released buffer until the commands using it finish
                    del self._scratch[next(iter(self._scratch))]
                held = self._scratch[key] = (queue, Scratch())
        s = held[1]
        if s.nbytes < nbytes:
            buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, max(nbytes, 64))
            s.replace(buf, buf.size)
            self.zero(buf, buf.size, queue)
        return s

    def alarm(self, queue: Any) -> Alarm:
        held = self._alarms.get(queue.int_ptr)
        if held is not None:
            return held[1]
        with self._table_lock:  # two first calls at once: one alarm, the table changed by one
            held = self._alarms.get(queue.int_ptr)
            if held is not None:
                return held[1]
            while len(self._alarms) >= SCRATCH_LIMIT:
                del self._alarms[next(iter(self._alarms))]
            mf = cl.mem_flags
            word = cl.Buffer(queue.context, mf.READ_WRITE, 4)
            host = np.zeros(4, np.uint32)  # 16 bytes: the alignment a host buffer is given
            owner: Any = None
            in_place = not self.device_info(queue).is_gpu and self._writes_in_place(queue)
            copy = None
            if in_place:
                # a CPU device writes the flag into the host array itself
                flag = cl.Buffer(queue.context, mf.USE_HOST_PTR | mf.READ_WRITE, hostbuf=host)
            else:
                flag = cl.Buffer(queue.context, mf.READ_WRITE, 4)
                # copied into pinned memory (the mapped memory of a buffer the driver allocates
                # on the host) by the driver's own read where the ICD loader is at hand, no
                # event made or asked after (opencl_icd: 6.1 us a call on NVIDIA's driver),
                # else by PyOpenCL's. No copy at all does not work there: a kernel's write never
                # showed through the mapping (experiments/ocl_zero_copy.py)
                pinned = cl.Buffer(queue.context, mf.READ_WRITE | mf.ALLOC_HOST_PTR, 16)
                host, _ = cl.enqueue_map_buffer(
                    queue, pinned, cl.map_flags.READ | cl.map_flags.WRITE, 0, (4,), np.uint32
                )
                host[:] = 0
                owner = pinned
                copy = opencl_icd.reader(queue, flag, host, 4) or _pyopencl_reader(queue, flag, host)

            def reset() -> None:
                cl.enqueue_fill_buffer(queue, word, np.uint32(0), 0, 4)
                if not in_place:
                    cl.enqueue_fill_buffer(queue, flag, np.uint32(0), 0, 4)

            reset()
            made = Alarm(word, flag, host, reset, owner=owner, copy=copy, every=ALARM_COPY_EVERY)
            self._alarms[queue.int_ptr] = (queue, made)
            return made

    def zero(self, buf: Any, nbytes: int | None, queue: Any) -> None:
        size = buf.size if nbytes is None else min(buf.size, -(-nbytes // 4) * 4)
        cl.enqueue_fill_buffer(queue, buf, np.uint32(0), 0, size)

    def read_u32(self, buf: Any, count: int, queue: Any) -> np.ndarray:
        host = np.empty(count, np.uint32)
        cl.enqueue_copy(queue, host, buf, is_blocking=True)
        return host

    def write_bytes(self, buf: Any, offset: int, data: bytes, queue: Any) -> None:
        # without waiting: the copy runs in queue order, its event holds the bytes (a blocking
        # write would wait for everything queued before it)
        host = np.frombuffer(data, np.uint8)
        self._writes.append(cl.enqueue_copy(queue, buf, host, dst_offset=offset, is_blocking=False))

    def copy_bytes(self, buf: Any, offset: int, src: Any, queue: Any) -> None:
        if src.queue is not None and src.queue is not queue:
            # written in another queue: this one waits for all that queue holds now
            cl.enqueue_barrier(queue, wait_for=[cl.enqueue_marker(src.queue)])
        cl.enqueue_copy(
            queue, buf, src.base_data, byte_count=src.nbytes, dst_offset=offset, src_offset=src.offset
        )

    def concatenate(self, parts: Sequence[Any], axis: int = 0) -> Any:
        queue = parts[0].queue or self.default_queue()
        if axis == 0:
            return cl_array.concatenate(list(parts), queue=queue)
        # PyOpenCL joins along axis 0 only: the other axes go by the host
        return self.to_device(np.concatenate([p.get() for p in parts], axis=axis), queue)

    def replace_nan(self, arr: Any, value: float) -> Any:
        if arr.dtype.kind == "c":  # PyOpenCL compares no complex arrays: by the host
            host = arr.get()
            return self.to_device(np.where(np.isnan(host), host.dtype.type(value), host), arr.queue)
        # NaN is the one value not equal to itself; where x == x keep x, else value
        with _ELEMENTWISE:
            fill = cl_array.empty_like(arr).fill(arr.dtype.type(value))
            return cl_array.if_positive(arr == arr, arr, fill)

    def plus_zero(self, arr: Any) -> Any:
        # PyOpenCL makes x + 0 a copy of x, -0.0 and all: a kernel of its own (one launch)
        key = (arr.context.int_ptr, arr.dtype)
        add = self._plus_zero.get(key)
        if add is None:
            with _ELEMENTWISE:
                add = self._plus_zero[key] = cl_elementwise.ElementwiseKernel(
                    arr.context, f"{_CL_FLOATS[arr.dtype]} *y, const {_CL_FLOATS[arr.dtype]} *x",
                    f"y[i] = x[i] + ({_CL_FLOATS[arr.dtype]})0", "js_plus_zero",
                )  # fmt: skip
        out = cl_array.empty_like(arr)
        with _ELEMENTWISE:
            add(out, arr, queue=arr.queue)
        return out

    def astype(self, arr: Any, dtype: np.dtype) -> Any:
        if any(d.kind == "b" or d.name == "float16" for d in (np.dtype(arr.dtype), np.dtype(dtype))):
            # PyOpenCL converts neither bool nor float16 arrays on the device: by the host
            return self.to_device(self.to_host(arr).astype(dtype), self.queue_of(arr))
        with _ELEMENTWISE:
            return arr.astype(dtype)

    def fill(self, arr: Any, value: Any) -> None:
        with _ELEMENTWISE:
            arr.fill(value)

    def copy(self, dst: Any, src: Any) -> None:
        cl.enqueue_copy(
            dst.queue,
            dst.base_data,
            src.base_data,
            byte_count=src.nbytes,
            dst_offset=dst.offset,
            src_offset=src.offset,
        )

    def shares_memory(self, a: Any, b: Any) -> bool:
        if a.base_data is None or b.base_data is None or a.base_data != b.base_data:
            return False
        a0, a1 = a.offset, a.offset + a.nbytes
        b0, b1 = b.offset, b.offset + b.nbytes
        return a0 < b1 and b0 < a1

    # -- compilation -------------------------------------------------------------------
    def program(self, build: Build, queue: Any) -> CLProgram:
        # programs belong to a context; kernels take their queue at each launch
        key = (build.key, queue.context.int_ptr, queue.device.int_ptr)
        prog = self._programs.get(key)
        if prog is None:
            prog = self._once.get(self._programs, key, lambda: compile_program(build, queue, self.dialect))
        return prog

    @property
    def compiled_count(self) -> int:
        return len(self._programs)


def _pyopencl_reader(queue: Any, flag: Any, host: np.ndarray) -> Callable[[], Callable[[], bool]]:
    """``copy()``: PyOpenCL's read of the 4-byte ``flag`` into ``host`` (not its
    enqueue_copy, which dispatches on its arguments in Python: on NVIDIA's driver 7.0-8.5
    us a call into pinned memory against 14-19 into pageable, experiments/call_forms_h200.md,
    runs H and I), not waiting; it returns the test of whether the read has run."""
    into, done = host[:1], cl.command_execution_status.COMPLETE
    read = getattr(cl._cl, "_enqueue_read_buffer", None)
    if read is None:  # a PyOpenCL without it: its public copy

        def read(queue: Any, flag: Any, into: Any, offset: int, wait: Any, blocking: bool) -> Any:
            return cl.enqueue_copy(queue, into, flag, is_blocking=blocking)

    def copy() -> Callable[[], bool]:
        event = read(queue, flag, into, 0, None, False)
        return lambda: event.command_execution_status == done

    return copy
