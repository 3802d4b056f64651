"""A backend that runs nothing: it records what the layers above it ask of a device.

Its arrays have a shape, a dtype and a place in a buffer but no storage, so a launch
plan can be followed at any size without a device. Every backend call goes to
``RecordingBackend.log`` in order; a program records its launches there after checking
them against the entry points and argument kinds of the ``Build`` it was made from, as
a real runtime would refuse a wrong argument list. ``read_u32`` answers with words a
test plants per scratch slot (a deadlock flag, counters, a failed offsets check).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from jitscan.backends.base import Backend, Build, DeviceInfo, Program
from jitscan.backends.launch import Alarm, Scratch

#: a GPU as the tuning sees one: shuffles, 64-bit atomics, float64
GPU = DeviceInfo(
    name="recording GPU",
    backend="recording",
    is_gpu=True,
    shuffle_width=32,
    max_threads=1024,
    int64_atomics=True,
    fp64=True,
)

#: a CPU OpenCL device as the tuning sees one (PoCL): no shuffles, tiles of one thread
CPU = DeviceInfo(
    name="recording CPU",
    backend="recording",
    is_gpu=False,
    shuffle_width=None,
    max_threads=4096,
    int64_atomics=True,
    fp64=True,
    compute_units=2,
)

_serial = itertools.count()


class Buffer:
    """A device buffer: a size and where it came from, no storage."""

    def __init__(self, nbytes: int, slot: str) -> None:
        self.nbytes = nbytes
        self.slot = slot
        self.serial = next(_serial)

    def __repr__(self) -> str:
        return f"Buffer({self.slot!r}#{self.serial}, {self.nbytes} bytes)"


class Array:
    """A contiguous device array: ``shape`` elements of ``dtype`` from element ``offset`` of ``buf``."""

    def __init__(
        self, shape: tuple[int, ...], dtype: Any, buf: Buffer | None = None, offset: int = 0
    ) -> None:
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.size = int(np.prod(self.shape, dtype=object))
        self.ndim = len(self.shape)
        self.offset = offset
        self.buf = buf if buf is not None else Buffer((offset + self.size) * self.dtype.itemsize, "array")
        self.flags = SimpleNamespace(c_contiguous=True)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def reshape(self, *shape: Any) -> Array:
        if len(shape) == 1 and isinstance(shape[0], tuple):
            shape = shape[0]
        return Array(tuple(shape), self.dtype, self.buf, self.offset)

    def view(self, dtype: Any) -> Array:
        dtype = np.dtype(dtype)
        assert dtype.itemsize == self.dtype.itemsize
        return Array(self.shape, dtype, self.buf, self.offset)

    def astype(self, dtype: Any) -> Array:
        return Array(self.shape, dtype)

    def __repr__(self) -> str:
        return f"Array({self.shape}, {self.dtype}, {self.buf!r}, offset={self.offset})"


@dataclass(frozen=True)
class Queue:
    """A queue of one device (devices are told apart by name)."""

    device: str
    info: DeviceInfo


@dataclass(frozen=True)
class Launch:
    entry: str
    groups: int
    args: tuple[Any, ...]


def _check_arg(entry: str, i: int, kind: str, value: Any) -> None:
    if kind == "buf":
        ok = isinstance(value, Buffer)
    else:
        bits = 64 if kind == "size" else 32
        ok = isinstance(value, int | np.integer) and not isinstance(value, bool) and 0 <= value < 1 << bits
    if not ok:
        raise TypeError(f"{entry} argument {i} is declared {kind!r} but got {value!r}")


class RecordingProgram(Program):
    """A compiled program that records launches instead of running them."""

    def __init__(self, backend: RecordingBackend, build: Build, queue: Queue) -> None:
        self.backend = backend
        self.build = build
        self.queue = queue

    def launch(self, entry: str, groups: int, args: Sequence[Any], queue: Any) -> None:
        kinds = self.build.entries.get(entry)
        if kinds is None:
            raise KeyError(f"{entry} is not an entry point of the build ({', '.join(self.build.entries)})")
        if len(args) != len(kinds):
            raise TypeError(f"{entry} takes {len(kinds)} arguments {kinds}, got {len(args)}: {list(args)}")
        for i, (kind, value) in enumerate(zip(kinds, args, strict=True)):
            _check_arg(entry, i, kind, value)
        if not (isinstance(groups, int) and groups >= 1):
            raise ValueError(f"{entry} launched over {groups!r} workgroups")
        if queue != self.queue:
            raise ValueError(f"{entry} compiled for {self.queue.device} launched on {queue.device}")
        self.backend.log.append(("launch", Launch(entry, groups, tuple(args))))


class RecordingBackend(Backend):
    """Arrays without storage, programs that record their launches, scratch that remembers its slot."""

    name = "recording"
    array_type = Array

    def __init__(self, info: DeviceInfo = GPU, dialect: str = "cuda") -> None:
        self.dialect = dialect
        self.default_queue = Queue("device 0", info)
        #: every call, in order: (method name, details...)
        self.log: list[tuple[Any, ...]] = []
        #: every Build passed to program(), with the queue it was for
        self.builds: list[tuple[Build, Queue]] = []
        #: words read_u32 returns from a scratch buffer of each slot (zeros elsewhere)
        self.planted: dict[str, np.ndarray] = {}
        self._scratch: dict[tuple[Queue, str], Scratch] = {}
        self._alarms: dict[Queue, Alarm] = {}

    # -- what a test reads ---------------------------------------------------------
    def launches(self) -> list[Launch]:
        return [e[1] for e in self.log if e[0] == "launch"]

    def calls(self) -> list[str]:
        """The names of the backend calls made, in order."""
        return [e[0] for e in self.log]

    def events(self, name: str) -> list[tuple[Any, ...]]:
        """The details of every call of ``name``."""
        return [e[1:] for e in self.log if e[0] == name]

    def scratch_buffer(self, slot: str, queue: Queue | None = None) -> Buffer:
        return self.scratch_of(slot, queue).buf

    def scratch_of(self, slot: str, queue: Queue | None = None) -> Scratch:
        """The Scratch of a slot, as the variants hold it (its epoch included)."""
        return self._scratch[(queue or self.default_queue, slot)]

    def plant(self, slot: str, words: Sequence[int]) -> None:
        self.planted[slot] = np.asarray(words, np.uint32)

    def clear(self) -> None:
        self.log.clear()

    def ring(self, word: int, queue: Queue | None = None) -> None:
        """As a kernel that found bad offsets: the alarm's flag seen by the host, ``word`` on its word."""
        self.alarm(queue or self.default_queue)._host[0] = 1
        self.plant("alarm-word", [word])

    # -- Backend ---------------------------------------------------------------------
    def available(self) -> bool:
        return True

    def unavailable_reason(self) -> str:
        return ""

    def owns(self, x: object) -> bool:
        return isinstance(x, Array)

    def queue_of(self, x: object | None) -> Queue:
        self.log.append(("queue_of",))
        return self.default_queue

    def queue_for(self, device: Any) -> Queue:
        if device is None:
            return self.default_queue
        return Queue(str(device), self.default_queue.info)

    def device_info(self, queue: Queue) -> DeviceInfo:
        return queue.info

    def program(self, build: Build, queue: Queue) -> RecordingProgram:
        self.log.append(("program", build.key, queue))
        self.builds.append((build, queue))
        return RecordingProgram(self, build, queue)

    def to_device(self, host: np.ndarray, queue: Any) -> Array:
        self.log.append(("to_device", host.shape))
        return Array(host.shape, host.dtype)

    def to_host(self, arr: Array) -> np.ndarray:
        self.log.append(("to_host", arr.shape))
        return np.zeros(arr.shape, arr.dtype)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype, queue: Any) -> Array:
        self.log.append(("empty", tuple(shape)))
        return Array(shape, dtype)

    def contiguous(self, arr: Array) -> Array:
        return arr

    def buffer(self, arr: Array) -> tuple[Buffer, int]:
        self.log.append(("buffer", arr.buf))
        return arr.buf, arr.offset

    def scratch(self, nbytes: int, queue: Any, slot: str) -> Scratch:
        s = self._scratch.get((queue, slot))
        if s is None:
            s = self._scratch[(queue, slot)] = Scratch()
        fresh = s.nbytes < nbytes
        if fresh:
            s.replace(Buffer(max(nbytes, 64), slot), max(nbytes, 64))
        self.log.append(("scratch", slot, nbytes, s.buf, fresh))
        return s

    def alarm(self, queue: Any) -> Alarm:
        made = self._alarms.get(queue)
        if made is None:
            word, flag = Buffer(4, "alarm-word"), Buffer(4, "alarm-flag")

            def reset() -> None:
                self.log.append(("zero", word, 4))
                self.planted.pop("alarm-word", None)

            made = self._alarms[queue] = Alarm(word, flag, np.zeros(1, np.uint32), reset)
        return made

    def zero(self, buf: Buffer, nbytes: int | None, queue: Any) -> None:
        self.log.append(("zero", buf, nbytes))

    def write_bytes(self, buf: Buffer, offset: int, data: bytes, queue: Any) -> None:
        self.log.append(("write_bytes", buf, offset, data))

    def copy_bytes(self, buf: Buffer, offset: int, src: Array, queue: Any) -> None:
        self.log.append(("copy_bytes", buf, offset, src.buf))

    def read_u32(self, buf: Buffer, count: int, queue: Any) -> np.ndarray:
        self.log.append(("read_u32", buf, count))
        words = np.zeros(count, np.uint32)
        planted = self.planted.get(buf.slot, words)[:count]
        words[: planted.size] = planted
        return words

    def concatenate(self, parts: Sequence[Array], axis: int = 0) -> Array:
        self.log.append(("concatenate", len(parts), axis))
        shape = list(parts[0].shape)
        shape[axis] = sum(p.shape[axis] for p in parts)
        return Array(tuple(shape), parts[0].dtype)

    def replace_nan(self, arr: Array, value: float) -> Array:
        self.log.append(("replace_nan", arr.buf, value))
        return Array(arr.shape, arr.dtype)

    def copy(self, dst: Array, src: Array) -> None:
        self.log.append(("copy", dst.buf, src.buf))

    def shares_memory(self, a: Array, b: Array) -> bool:
        return a.buf is b.buf and a.offset < b.offset + b.size and b.offset < a.offset + a.size

    @property
    def compiled_count(self) -> int:
        return len(self.builds)
