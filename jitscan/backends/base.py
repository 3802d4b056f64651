"""What every backend provides to the layers above it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..spec import ScanSpec


@dataclass(frozen=True)
class DeviceInfo:
    """Capabilities of one device, as far as kernel generation cares.

    Attributes
    ----------
    name : str
        Human-readable device name.
    backend : str
        Name of the backend that drives it.
    key : Hashable
        Identifies the device (and context) for the program cache.
    is_gpu : bool
    shuffle_width : int or None
        Subgroup (warp, wavefront) size when the dialect can shuffle, else None.
    max_threads : int
        Largest workgroup.
    int64_atomics : bool
        64-bit atomic max available (the packed tile state needs it).
    fp64 : bool
    forward_progress : bool or None
        Whether co-resident workgroups are guaranteed to progress (None: unknown).
    compute_units : int
    """

    name: str
    backend: str
    key: Hashable
    is_gpu: bool
    shuffle_width: int | None
    max_threads: int
    int64_atomics: bool
    fp64: bool
    forward_progress: bool | None
    compute_units: int


class Program(ABC):
    """A compiled spec on one device."""

    @abstractmethod
    def launch(self, entry: str, groups: int, args: Sequence[Any]) -> None:
        """Enqueue ``groups`` workgroups of kernel ``entry``; args are buffers and ints."""


class Backend(ABC):
    """One runtime (OpenCL, CUDA). Arrays, buffers and queues are the runtime's own."""

    name: str
    dialect: str

    @abstractmethod
    def available(self) -> bool: ...

    @abstractmethod
    def unavailable_reason(self) -> str: ...

    @abstractmethod
    def owns(self, x: object) -> bool:
        """Whether ``x`` is an array of this backend."""

    @abstractmethod
    def queue_of(self, x: object | None) -> Any:
        """The queue (stream) work on ``x`` goes to; the default one for None."""

    @abstractmethod
    def device_info(self, queue: Any) -> DeviceInfo: ...

    @abstractmethod
    def program(self, spec: ScanSpec, queue: Any) -> Program:
        """Compile (or fetch from the cache) the kernels of ``spec``."""

    @abstractmethod
    def to_device(self, host: np.ndarray, queue: Any) -> Any: ...

    @abstractmethod
    def to_host(self, arr: Any) -> np.ndarray: ...

    @abstractmethod
    def empty(self, shape: tuple[int, ...], dtype: np.dtype, queue: Any) -> Any: ...

    @abstractmethod
    def contiguous(self, arr: Any) -> Any:
        """A C-contiguous array with the same elements (``arr`` itself when it is one)."""

    def aligned(self, arr: Any) -> bool:
        """Whether a contiguous array suits the kernels' vector loads as it is."""
        return True

    @abstractmethod
    def buffer(self, arr: Any) -> tuple[Any, int]:
        """(buffer to pass to a kernel, offset in elements) of a contiguous array."""

    @abstractmethod
    def scratch(self, nbytes: int, queue: Any, slot: str) -> tuple[Any, bool]:
        """A device buffer of at least ``nbytes``, reused across calls per (queue, slot).

        Returns ``(buffer, fresh)``; a fresh buffer was just allocated and zeroed.
        """

    @abstractmethod
    def zero(self, buf: Any, nbytes: int | None, queue: Any) -> None:
        """Enqueue zeroing of the first ``nbytes`` of ``buf`` (all of it for None)."""

    @abstractmethod
    def read_u32(self, buf: Any, count: int, queue: Any) -> np.ndarray:
        """Copy the first ``count`` uint32 of ``buf`` to the host (synchronizes)."""

    @abstractmethod
    def copy(self, dst: Any, src: Any) -> None:
        """Device-to-device copy of equal-sized contiguous arrays."""

    @abstractmethod
    def shares_memory(self, a: Any, b: Any) -> bool: ...

    @abstractmethod
    def write(self, arr: Any, offset: int, host: np.ndarray) -> None:
        """Copy ``host`` into ``arr`` starting at element ``offset``."""

    @abstractmethod
    def take(self, arr: Any, indices: np.ndarray) -> Any:
        """A new device array of ``arr[indices]``."""
