"""Peer libraries on the same device and data, supplied per backend through :data:`PEERS`.

Each peer is called as a user calls it, into one output array it keeps: on CUDA,
``cudaMemcpyAsync`` (CuPy's ``copy_from_device_async``), ``cupy.cumsum``,
``torch.cumsum`` on the same memory and CUB through a reused ``cuda.compute`` object;
on OpenCL, ``clEnqueueCopyBuffer``, PyOpenCL's ``InclusiveScanKernel`` and a segmented
``GenericScanKernel``. NumPy's ``cumsum``, on the host, is timed once per dtype and size.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dtypes import lookup
from .cub import cub_call
from .inputs import head_flags
from .results import Result, log2_label
from .timing import Timer

#: what a peer computes: a copy (the speed of light), the inclusive sum, or a segmented sum
PEER_KINDS = ("copy", "scan", "segmented")

#: a peer's builder: called once, returns its run ``fn(i)`` (input ``i``, rotating)
Builder = Callable[[], Callable[[int], Any]]


@dataclass
class Peer:
    """A peer library's scan (or copy) on the same device and data."""

    name: str
    run: Callable[[int], Any]
    out: Any = None  # the array it writes
    timing: str = "device"
    kind: str = "scan"


@dataclass(frozen=True)
class BackendPeers:
    """The peers of one backend.

    Attributes
    ----------
    builders : callable
        ``builders(timer, dtype, n, ins, out)`` returns ``{name: (kind, builder)}``
        in the order the peers are reported.
    baseline : str
        The peer that per-call figures are compared with (the fastest scan a user of
        that runtime would otherwise call).
    """

    builders: Callable[[Timer, str, int, list, Any], dict[str, tuple[str, Builder]]]
    baseline: str


def _cuda(timer: Timer, dtype: str, n: int, ins: list, out: Any) -> dict[str, tuple[str, Builder]]:
    cp = timer.cupy  # type: ignore[attr-defined]
    nbytes = n * np.dtype(dtype).itemsize

    def memcpy() -> Callable[[int], Any]:
        stream = cp.cuda.get_current_stream()
        dst = out.data
        return lambda i: dst.copy_from_device_async(ins[i % len(ins)].data, nbytes, stream)

    def cupy_cumsum() -> Callable[[int], Any]:
        return lambda i: cp.cumsum(ins[i % len(ins)], dtype=out.dtype, out=out)

    def torch_cumsum() -> Callable[[int], Any]:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch has no CUDA here")
        tins = [torch.as_tensor(a, device="cuda") for a in ins]
        tout = torch.as_tensor(out, device="cuda")
        return lambda i: torch.cumsum(tins[i % len(tins)], 0, dtype=tout.dtype, out=tout)

    def cub() -> Callable[[int], Any]:
        fn = cub_call("inclusive", ins[0], out, num_items=n)
        return lambda i: fn(ins[i % len(ins)])

    return {
        "cudaMemcpy": ("copy", memcpy),
        "cupy.cumsum": ("scan", cupy_cumsum),
        "torch.cumsum": ("scan", torch_cumsum),
        "CUB (cuda.compute)": ("scan", cub),
    }


def _opencl(timer: Timer, dtype: str, n: int, ins: list, out: Any) -> dict[str, tuple[str, Builder]]:
    cl = timer.cl  # type: ignore[attr-defined]
    q = timer.queue
    nbytes = n * np.dtype(dtype).itemsize
    ctype = lookup(dtype).opencl

    def copy_buffer() -> Callable[[int], Any]:
        dst = out.base_data
        return lambda i: cl.enqueue_copy(q, dst, ins[i % len(ins)].base_data, byte_count=nbytes)

    def inclusive_scan() -> Callable[[int], Any]:
        from pyopencl.scan import InclusiveScanKernel

        knl = InclusiveScanKernel(q.context, np.dtype(dtype), "a+b", neutral="0")
        return lambda i: knl(ins[i % len(ins)], out, queue=q)

    def segmented_scan() -> Callable[[int], Any]:
        from pyopencl.scan import GenericScanKernel

        flags = timer.backend.to_device(head_flags(n, np.random.default_rng(n)), q)
        knl = GenericScanKernel(
            q.context,
            np.dtype(dtype),
            arguments=f"__global const {ctype} *x, __global const uchar *head, __global {ctype} *y",
            input_expr="x[i]",
            scan_expr="across_seg_boundary ? b : (a + b)",
            neutral="0",
            is_segment_start_expr="head[i]",
            output_statement="y[i] = item;",
        )
        return lambda i: knl(ins[i % len(ins)], flags, out, queue=q)

    return {
        "clEnqueueCopyBuffer": ("copy", copy_buffer),
        "pyopencl InclusiveScanKernel": ("scan", inclusive_scan),
        "pyopencl segmented GenericScanKernel": ("segmented", segmented_scan),
    }


#: the peers of each backend
PEERS: Mapping[str, BackendPeers] = {
    "cupy": BackendPeers(_cuda, baseline="CUB (cuda.compute)"),
    "opencl": BackendPeers(_opencl, baseline="pyopencl InclusiveScanKernel"),
}


def baseline(backend: str) -> str | None:
    """The peer per-call figures of ``backend`` are compared with (None if it has no peers)."""
    peers = PEERS.get(backend)
    return peers.baseline if peers else None


def peer_functions(
    timer: Timer,
    dtype: str,
    n: int,
    rng: np.random.Generator | None = None,
    kinds: tuple[str, ...] = PEER_KINDS,
) -> tuple[list[Peer], list[str]]:
    """Peers of this backend that can run here (of the given kinds), and why the others cannot.

    Each peer is built and run once (a failure shows here, not in the middle of the
    timing). CUDA: ``cudaMemcpy`` (device to device), ``cupy.cumsum``,
    ``torch.cumsum``, CUB through ``cuda.compute``. OpenCL: ``clEnqueueCopyBuffer``,
    PyOpenCL's ``InclusiveScanKernel`` and a segmented ``GenericScanKernel`` (head
    flags, mean segment length 10).
    """
    ins = timer.inputs(n, dtype, rng)
    out = timer.backend.empty((n,), np.dtype(dtype), timer.queue)
    peers: list[Peer] = []
    skipped: list[str] = []
    supplier = PEERS.get(timer.name)
    if supplier is None:
        return peers, skipped
    for name, (kind, build) in supplier.builders(timer, dtype, n, ins, out).items():
        if kind not in kinds:
            continue
        try:
            fn = build()
            fn(0)
            timer.sync()
            peers.append(Peer(name, fn, out, kind=kind))
        except ImportError as exc:
            skipped.append(f"{name}: not installed ({exc})")
        except Exception as exc:  # noqa: BLE001 - a peer failing must not stop the run
            skipped.append(f"{name}: {type(exc).__name__}: {exc}")
    return peers, skipped


def measure_peers(
    timer: Timer,
    dtype: str,
    n: int,
    reps: int,
    rng: np.random.Generator | None = None,
    skipped: list[str] | None = None,
) -> list[Result]:
    """Device time of every peer of the timer's backend that runs here."""
    peers, why = peer_functions(timer, dtype, n, rng)
    if skipped is not None:
        skipped.extend(f"{p} ({timer.name}, {dtype}, 2^{log2_label(n)})" for p in why)
    results = []
    for peer in peers:
        try:
            med, spread, times = timer.time(peer.run, reps)
        except Exception as exc:  # noqa: BLE001 - a peer failing must not stop the run
            if skipped is not None:
                skipped.append(f"{peer.name} ({timer.name}, {dtype}, 2^{log2_label(n)}): {exc}")
            continue
        results.append(Result(timer.name, peer.name, dtype, n, med, spread, category="peer", times=times))
    return results


def measure_numpy(timer: Timer, dtype: str, n: int, reps: int) -> Result:
    """``numpy.cumsum`` in the input dtype, host-timed, on host copies of the inputs."""
    host = timer.host_inputs(n, dtype)
    out = np.empty(n, np.dtype(dtype))
    med, spread, times = timer.time_host(
        lambda i: np.cumsum(host[i % len(host)], dtype=out.dtype, out=out), reps
    )
    return Result("host", "numpy.cumsum", dtype, n, med, spread, category="peer", timing="host", times=times)


__all__ = [
    "PEERS",
    "PEER_KINDS",
    "BackendPeers",
    "Peer",
    "baseline",
    "measure_numpy",
    "measure_peers",
    "peer_functions",
]
