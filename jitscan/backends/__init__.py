"""Backend registry: one module per runtime."""

from __future__ import annotations

import os

from ..errors import BackendUnavailableError
from .base import Backend, Build, DeviceInfo, Program
from .cupy import CupyBackend
from .opencl import OpenCLBackend

_BACKENDS: dict[str, Backend] = {"cupy": CupyBackend(), "opencl": OpenCLBackend()}
#: the backends by their array type (owner_of)
_BY_TYPE: dict[type, Backend] = {b.array_type: b for b in _BACKENDS.values()}

#: preference order for NumPy input when no backend is named: a CUDA GPU, then OpenCL
#: (whose default device is a GPU if there is one, else PoCL on the CPU)
PREFERENCE = ("cupy", "opencl")


def names() -> tuple[str, ...]:
    """Names of all backends jitscan knows, available here or not."""
    return tuple(_BACKENDS)


def get(name: str) -> Backend:
    """The backend called ``name``; ValueError listing the choices if there is none."""
    if name not in _BACKENDS:
        raise ValueError(f"unknown backend {name!r}; valid backends: {', '.join(_BACKENDS)}")
    return _BACKENDS[name]


def available() -> tuple[str, ...]:
    """Names of the backends that can run on this machine."""
    return tuple(n for n, b in _BACKENDS.items() if b.available())


def require(name: str) -> Backend:
    """The backend ``name``, or BackendUnavailableError saying why it cannot run."""
    b = get(name)
    if not b.available():
        raise BackendUnavailableError(f"backend {name!r} is unavailable: {b.unavailable_reason()}")
    return b


def owner_of(t: type) -> Backend | None:
    """The backend whose array type is exactly ``t`` (a subclass: None), by one lookup."""
    return _BY_TYPE.get(t)


def for_array(x: object) -> Backend | None:
    """The backend whose array type ``x`` is, if any."""
    for b in _BACKENDS.values():
        if b.owns(x):
            return b
    return None


def typical_device(name: str) -> DeviceInfo:
    """A stand-in device for rendering source when backend ``name`` cannot run here."""
    gpu = name != "opencl"
    return DeviceInfo(
        name=f"typical {name} device",
        backend=name,
        is_gpu=gpu,
        shuffle_width=32 if gpu else None,
        max_threads=1024,
        int64_atomics=True,
        fp64=True,
        clock="globaltimer" if gpu else "",
    )


def default() -> Backend:
    """Backend for NumPy input: $JITSCAN_BACKEND, else the first available in PREFERENCE."""
    env = os.environ.get("JITSCAN_BACKEND")
    if env:
        return require(env)
    for name in PREFERENCE:
        if _BACKENDS[name].available():
            return _BACKENDS[name]
    reasons = "; ".join(f"{n}: {_BACKENDS[n].unavailable_reason()}" for n in PREFERENCE)
    raise BackendUnavailableError(f"no jitscan backend can run here ({reasons})")


__all__ = [
    "Backend",
    "Build",
    "DeviceInfo",
    "Program",
    "names",
    "get",
    "available",
    "require",
    "for_array",
    "default",
    "typical_device",
]
