"""The CUDA backend: rendered CUDA C compiled by NVRTC through CuPy's RawModule.

Work goes on CuPy's current stream, as CuPy's own functions do. The source is also
valid HIP: the warp size comes from the device, and every intrinsic sits behind the
dialect's macros (ROCm is untested here: no AMD GPU was available).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import BackendUnavailableError, CompileError
from ..kernels import entry_points, render, signature
from ..spec import VECTOR_BYTES, ScanSpec
from .base import Backend, DeviceInfo, Program

try:  # optional dependency
    import cupy

    _IMPORT_ERROR: str | None = None
except ImportError as exc:  # pragma: no cover - depends on the machine
    cupy = None
    _IMPORT_ERROR = f"cupy is not installed ({exc}); pip install 'jitscan[cuda]'"

_ARG_DTYPES = {"size": np.uint64, "u32": np.uint32}


class _CudaQueue:
    """A device and the stream to launch on."""

    def __init__(self, device: int, stream: Any) -> None:
        self.device = device
        self.stream = stream


class _CudaProgram(Program):
    def __init__(self, module: Any, spec: ScanSpec, device: int) -> None:
        self.spec = spec
        self.device = device
        self.kernels = {name: module.get_function(name) for name in entry_points(spec)}
        self.stream: Any = None

    def launch(self, entry: str, groups: int, args: Sequence[Any]) -> None:
        sig = signature(entry, self.spec)
        conv = [a if kind == "buf" else _ARG_DTYPES[kind](a) for kind, a in zip(sig, args, strict=True)]
        with cupy.cuda.Device(self.device):
            self.kernels[entry]((groups,), (self.spec.threads,), tuple(conv), stream=self.stream)


class CupyBackend(Backend):
    """Runs rendered CUDA C through CuPy."""

    name = "cupy"
    dialect = "cuda"

    def __init__(self) -> None:
        self._programs: dict[tuple, _CudaProgram] = {}
        self._scratch: dict[tuple, Any] = {}
        self._info: dict[int, DeviceInfo] = {}

    def available(self) -> bool:
        if cupy is None:
            return False
        try:
            return cupy.cuda.runtime.getDeviceCount() > 0
        except Exception:  # noqa: BLE001 - no driver, no device
            return False

    def unavailable_reason(self) -> str:
        if cupy is None:
            return _IMPORT_ERROR or "cupy missing"
        return "CuPy found no CUDA/ROCm device"

    def owns(self, x: object) -> bool:
        return cupy is not None and isinstance(x, cupy.ndarray)

    def queue_of(self, x: object | None) -> _CudaQueue:
        if not self.available():
            raise BackendUnavailableError(self.unavailable_reason())
        device = x.device.id if self.owns(x) else cupy.cuda.Device().id  # type: ignore[union-attr]
        with cupy.cuda.Device(device):
            stream = cupy.cuda.get_current_stream()
        return _CudaQueue(device, stream)

    def device_info(self, queue: _CudaQueue) -> DeviceInfo:
        dev = queue.device
        if dev not in self._info:
            props = cupy.cuda.runtime.getDeviceProperties(dev)
            name = props["name"]
            name = name.decode() if isinstance(name, bytes) else str(name)
            hip = bool(getattr(cupy.cuda.runtime, "is_hip", False))
            self._info[dev] = DeviceInfo(
                name=name,
                backend=self.name,
                key=("cuda", dev),
                is_gpu=True,
                shuffle_width=int(props["warpSize"]),
                max_threads=int(props["maxThreadsPerBlock"]),
                int64_atomics=True,
                fp64=True,
                # NVIDIA documents forward progress for resident blocks; ROCm does not
                forward_progress=not hip,
                compute_units=int(props["multiProcessorCount"]),
            )
        return self._info[dev]

    def to_device(self, host: np.ndarray, queue: _CudaQueue) -> Any:
        with cupy.cuda.Device(queue.device), queue.stream:
            return cupy.asarray(np.ascontiguousarray(host))

    def to_host(self, arr: Any) -> np.ndarray:
        return cupy.asnumpy(arr)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype, queue: _CudaQueue) -> Any:
        with cupy.cuda.Device(queue.device):
            return cupy.empty(shape, dtype)

    def contiguous(self, arr: Any) -> Any:
        if arr.flags.c_contiguous and arr.data.ptr % VECTOR_BYTES == 0:
            return arr
        with cupy.cuda.Device(arr.device.id):
            out = cupy.empty(arr.shape, arr.dtype)
            out[...] = arr
            return out

    def aligned(self, arr: Any) -> bool:
        return arr.data.ptr % VECTOR_BYTES == 0

    def buffer(self, arr: Any) -> tuple[Any, int]:
        return arr, 0

    def scratch(self, nbytes: int, queue: _CudaQueue, slot: str) -> tuple[Any, bool]:
        key = (queue.device, queue.stream.ptr, slot)
        buf = self._scratch.get(key)
        if buf is not None and buf.nbytes >= nbytes:
            return buf, False
        with cupy.cuda.Device(queue.device):
            buf = cupy.empty(max(nbytes, 64), np.uint8)
        self._scratch[key] = buf
        self.zero(buf, buf.nbytes, queue)
        return buf, True

    def zero(self, buf: Any, nbytes: int | None, queue: _CudaQueue) -> None:
        size = buf.nbytes if nbytes is None else nbytes
        cupy.cuda.runtime.memsetAsync(buf.data.ptr, 0, size, queue.stream.ptr)

    def read_u32(self, buf: Any, count: int, queue: _CudaQueue) -> np.ndarray:
        host = np.empty(count, np.uint32)
        cupy.cuda.runtime.memcpyAsync(
            host.ctypes.data, buf.data.ptr, count * 4, cupy.cuda.runtime.memcpyDeviceToHost, queue.stream.ptr
        )
        queue.stream.synchronize()
        return host

    def copy(self, dst: Any, src: Any) -> None:
        dst[...] = src

    def shares_memory(self, a: Any, b: Any) -> bool:
        return bool(cupy.may_share_memory(a, b))

    def write(self, arr: Any, offset: int, host: np.ndarray) -> None:
        arr[offset : offset + host.size] = cupy.asarray(host, dtype=arr.dtype)

    def take(self, arr: Any, indices: np.ndarray) -> Any:
        return arr[cupy.asarray(indices)]

    def program(self, spec: ScanSpec, queue: _CudaQueue) -> _CudaProgram:
        spec = spec.program_spec()
        key = (spec, queue.device)
        prog = self._programs.get(key)
        if prog is None:
            src = render(spec, self.dialect)
            try:
                with cupy.cuda.Device(queue.device):
                    # no FMA contraction: a user operator must give bit-identical tile
                    # aggregates in every inlined copy (see js_scan_tile)
                    module = cupy.RawModule(code=src, options=("--fmad=false",))
                    module.compile()
                    prog = _CudaProgram(module, spec, queue.device)
            except cupy.cuda.compiler.CompileException as exc:
                raise CompileError(
                    f"NVRTC build of the {spec.variant} kernel for op {spec.monoid.name!r} "
                    f"({spec.dtype}) failed:\n{exc}"
                ) from exc
            self._programs[key] = prog
        prog.stream = queue.stream
        return prog

    @property
    def compiled_count(self) -> int:
        """How many programs this backend has built (for cache checks)."""
        return len(self._programs)
