"""Every public call form as a user writes it, beside the peers it is compared with.

The per-call table (:mod:`jitscan.bench.calls`) times one row per call form, each into
an output the caller keeps where the function takes ``out=``, on the timer's device
arrays (CuPy, or PyOpenCL on the opencl backend, a CPU device included), in the dtype of
the table:

========================  ============================================================
form                      jitscan's call
========================  ============================================================
``flat``                  ``cumsum(x, out=y)``, ``cumsum(x, dtype=x.dtype)``, ``plan(...)(x, out=y)``
``python-op``             ``scan(x, op=python_add, out=y)`` (a :func:`jitscan.operator` sum)
``exclusive``             ``cumsum(x, exclusive=True, out=y)``
``initial``               ``scan(x, initial=1, out=y)`` (``cumsum`` takes no ``initial=``)
``tuple``                 ``scan((a, x), op=affine, output=1, out=h)``: h = a h + x
``segmented-offsets``     ``segmented_cumsum(x, offsets=o, out=y)`` (device offsets)
``segmented-flags``       ``segmented_cumsum(x, flags=f, out=y)`` (device uint8 flags)
``segmented-reduce``      ``segmented_reduce(x, offsets=o)`` (``out=r`` where it takes one)
``axis-scan``             ``cumsum(x2d, axis=1, out=y2d)`` of x as ``(64, n / 64)``
``axis-reduce``           ``reduce(x2d, axis=1)`` (``out=r`` where it takes one)
========================  ============================================================

The segments (offsets and flags describe the same ones) have geometric lengths of mean
:data:`SEGMENT_MEAN`. The peers of each form: on CUDA, CUB through ``cuda.compute``
(the flat inclusive and exclusive scans, ``make_segmented_reduce``, a scan by key where
``cuda.compute`` has one), ``cupy.cumsum``, ``torch.cumsum(x, out=)``,
``torch.cumsum(x2d, dim=1, out=)`` and ``torch.sum(x2d, dim=1, out=)``; on OpenCL,
PyOpenCL's scans (:mod:`jitscan.bench.peers`) and a segmented ``GenericScanKernel`` on
the same flags. :data:`REFERENCES` names the row each form's ratios are taken to: on
CUDA CUB's flat scan of the same element count for the flat and segmented scans (what a
segmented scan is held to), CUB's segmented reduction for a segmented
reduction, torch for the axis forms, jitscan's own flat ``cumsum(x, out=y)`` for the
tuple scan; on OpenCL jitscan's flat ``cumsum(x, out=y)`` for every other form.

A jitscan call that cannot be made here (a form a backend does not support, say) is
reported as an error cell with the reason, never stops the run; a peer that cannot run
is skipped with the reason, as every peer is.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..api import cumsum, reduce, scan, segmented_cumsum, segmented_reduce
from .operators import affine, python_add
from .studies import random_offsets
from .timing import Timer

#: the call forms, in the order the tables show them
FORMS = (
    "flat",
    "python-op",
    "exclusive",
    "initial",
    "tuple",
    "segmented-offsets",
    "segmented-flags",
    "segmented-reduce",
    "axis-scan",
    "axis-reduce",
)
#: the form of the per-call rows of a device-time run (and of results without a form)
FLAT = "flat"
#: mean segment length of the segmented forms
SEGMENT_MEAN = 100
#: rows of the axis forms' matrix (fewer where there are fewer elements)
AXIS_ROWS = 64

PYTHON_OP = "jitscan.scan(x, op=python_add, out=y)"
EXCLUSIVE = "jitscan.cumsum(x, exclusive=True, out=y)"
INITIAL = "jitscan.scan(x, initial=1, out=y)"
TUPLE = "jitscan.scan((a, x), op=affine, output=1, out=h)"
SEG_OFFSETS = "jitscan.segmented_cumsum(x, offsets=o, out=y)"
SEG_FLAGS = "jitscan.segmented_cumsum(x, flags=f, out=y)"
AXIS_SCAN = "jitscan.cumsum(x2d, axis=1, out=y2d)"
CUB_FLAT = "CUB (cuda.compute)"
CUB_EXCLUSIVE = "CUB exclusive (cuda.compute)"
CUB_SEG_REDUCE = "CUB segmented reduce (cuda.compute)"
CUB_BY_KEY = "CUB inclusive scan by key (cuda.compute)"
TORCH_AXIS_SCAN = "torch.cumsum(x2d, dim=1, out=y2d)"
TORCH_AXIS_SUM = "torch.sum(x2d, dim=1, out=r)"
CL_SEGMENTED = "pyopencl segmented GenericScanKernel (flags)"
#: jitscan's flat call, the reference of the forms that have no peer of their own
CUMSUM_OUT = "jitscan.cumsum(x, out=y)"

#: per backend: the row each form's ratios are taken to (the flat form: the backend's baseline)
REFERENCES: Mapping[str, Mapping[str, str]] = {
    "cupy": {
        "flat": CUB_FLAT,
        "python-op": CUB_FLAT,
        "exclusive": CUB_EXCLUSIVE,
        "initial": CUB_FLAT,
        "tuple": CUMSUM_OUT,
        "segmented-offsets": CUB_FLAT,
        "segmented-flags": CUB_FLAT,
        "segmented-reduce": CUB_SEG_REDUCE,
        "axis-scan": TORCH_AXIS_SCAN,
        "axis-reduce": TORCH_AXIS_SUM,
    },
    "opencl": {
        "flat": "pyopencl InclusiveScanKernel",
        **{form: CUMSUM_OUT for form in FORMS if form != "flat"},
    },
}


def reference(backend: str, form: str) -> str | None:
    """The row whose figures ``form``'s rows are divided by on ``backend`` (None: no ratios)."""
    return REFERENCES.get(backend, {}).get(form)


def form_names(forms: Iterable[str] | str | None) -> list[str]:
    """The forms asked for, in table order; ``None`` or ``"all"``: every form.

    Raises
    ------
    ValueError
        For a name that is not one of :data:`FORMS`, naming the valid ones.
    """
    if forms is None or forms == "all":
        return list(FORMS)
    asked = [forms] if isinstance(forms, str) else list(forms)
    if "all" in asked:
        return list(FORMS)
    unknown = [f for f in asked if f not in FORMS]
    if unknown:
        raise ValueError(f"unknown call form(s) {', '.join(unknown)}; valid forms: all, {', '.join(FORMS)}")
    return [f for f in FORMS if f in asked]


def _takes_out(fn: Callable[..., Any]) -> bool:
    """Whether a public function has an ``out`` parameter (a form uses it where it exists)."""
    try:
        return "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


@dataclass
class Call:
    """One call of one form: ``build()`` makes the ``fn(i)`` that calls on input ``i`` (rotating)."""

    form: str
    name: str
    build: Callable[[], Callable[[int], Any]]
    jitscan: bool = True
    out: Any = None


@dataclass
class Inputs:
    """The data every form of one dtype and size shares, made once (see :func:`shared`)."""

    ins: list
    y: Any
    offsets: Any
    flags: Any
    host_offsets: np.ndarray
    rows: int
    x2d: list
    y2d: Any
    extra: dict = field(default_factory=dict)


def shared(timer: Timer, dtype: str, n: int, rng: np.random.Generator | None = None) -> Inputs:
    """The rotating inputs, one output, the segments (device offsets and flags), the matrix views."""
    rng = rng if rng is not None else np.random.default_rng(n + 1)
    b, q, dt = timer.backend, timer.queue, np.dtype(dtype)
    ins = timer.inputs(n, dtype)
    off = random_offsets(rng, n, SEGMENT_MEAN)
    flags = np.zeros(n, np.uint8)
    flags[off[:-1][off[:-1] < n]] = 1
    rows = max(1, min(AXIS_ROWS, n))
    while n % rows:
        rows //= 2
    return Inputs(
        ins=ins,
        y=b.empty((n,), dt, q),
        offsets=b.to_device(off, q),
        flags=b.to_device(flags, q),
        host_offsets=off,
        rows=rows,
        x2d=[x.reshape(rows, n // rows) for x in ins],
        y2d=b.empty((rows, n // rows), dt, q),
    )


def jitscan_calls(timer: Timer, form: str, data: Inputs) -> list[Call]:
    """jitscan's calls of ``form`` (not ``flat``, whose calls :mod:`jitscan.bench.calls` makes)."""
    ins, y, x2d, y2d = data.ins, data.y, data.x2d, data.y2d
    b, q = timer.backend, timer.queue
    dt = np.dtype(ins[0].dtype)
    k = len(ins)

    def python_op() -> Callable[[int], Any]:
        return lambda i: scan(ins[i % k], op=python_add, out=y)

    def exclusive() -> Callable[[int], Any]:
        return lambda i: cumsum(ins[i % k], exclusive=True, out=y)

    def initial() -> Callable[[int], Any]:
        v = dt.type(1)
        return lambda i: scan(ins[i % k], initial=v, out=y)

    def pair() -> Callable[[int], Any]:
        n = y.shape[0]
        rng = np.random.default_rng(n + 2)
        host = rng.uniform(0.5, 1.0, n) if dt.kind == "f" else np.ones(n)
        a = data.extra.setdefault("a", b.to_device(host.astype(dt), q))
        return lambda i: scan((a, ins[i % k]), op=affine, output=1, out=y)

    def seg_offsets() -> Callable[[int], Any]:
        o = data.offsets
        return lambda i: segmented_cumsum(ins[i % k], offsets=o, out=y)

    def seg_flags() -> Callable[[int], Any]:
        f = data.flags
        return lambda i: segmented_cumsum(ins[i % k], flags=f, out=y)

    def seg_reduce() -> Callable[[int], Any]:
        o = data.offsets
        if _takes_out(segmented_reduce):
            r = b.empty((len(data.host_offsets) - 1,), dt, q)
            return lambda i: segmented_reduce(ins[i % k], offsets=o, out=r)  # type: ignore[call-arg]
        return lambda i: segmented_reduce(ins[i % k], offsets=o)

    def axis_scan() -> Callable[[int], Any]:
        return lambda i: cumsum(x2d[i % k], axis=1, out=y2d)

    def axis_reduce() -> Callable[[int], Any]:
        if _takes_out(reduce):
            r = b.empty((data.rows,), dt, q)
            return lambda i: reduce(x2d[i % k], axis=1, out=r)  # type: ignore[call-arg]
        return lambda i: reduce(x2d[i % k], axis=1)

    out_r = ", out=r)" if _takes_out(segmented_reduce) else ")"
    out_ar = ", out=r)" if _takes_out(reduce) else ")"
    table: dict[str, list[Call]] = {
        "python-op": [Call(form, PYTHON_OP, python_op, out=y)],
        "exclusive": [Call(form, EXCLUSIVE, exclusive, out=y)],
        "initial": [Call(form, INITIAL, initial, out=y)],
        "tuple": [Call(form, TUPLE, pair, out=y)],
        "segmented-offsets": [Call(form, SEG_OFFSETS, seg_offsets, out=y)],
        "segmented-flags": [Call(form, SEG_FLAGS, seg_flags, out=y)],
        "segmented-reduce": [Call(form, "jitscan.segmented_reduce(x, offsets=o" + out_r, seg_reduce)],
        "axis-scan": [Call(form, AXIS_SCAN, axis_scan, out=y2d)],
        "axis-reduce": [Call(form, "jitscan.reduce(x2d, axis=1" + out_ar, axis_reduce)],
    }
    return table.get(form, [])


def _cuda_peers(timer: Timer, form: str, data: Inputs) -> list[Call]:
    from .cub import cub_call

    ins, y, x2d, y2d, k = data.ins, data.y, data.x2d, data.y2d, len(data.ins)
    n = y.shape[0]

    def cub_exclusive() -> Callable[[int], Any]:
        fn = cub_call("exclusive", ins[0], y, num_items=n)
        return lambda i: fn(ins[i % k])

    def cub_seg_reduce() -> Callable[[int], Any]:
        cp = timer.cupy  # type: ignore[attr-defined]
        r = cp.empty(len(data.host_offsets) - 1, ins[0].dtype)
        fn = cub_call("segmented_reduce", ins[0], r, num_items=n, offsets=data.offsets)
        return lambda i: fn(ins[i % k])

    def cub_by_key() -> Callable[[int], Any]:
        cp = timer.cupy  # type: ignore[attr-defined]
        keys = data.extra.setdefault("keys", cp.cumsum(data.flags, dtype=cp.int32))
        fn = cub_call("inclusive_by_key", ins[0], y, num_items=n, keys=keys)
        return lambda i: fn(ins[i % k])

    def torch_tensors(arrays: list) -> list:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch has no CUDA here")
        return [torch.as_tensor(a, device="cuda") for a in arrays]

    def torch_axis_scan() -> Callable[[int], Any]:
        import torch

        t, (out,) = torch_tensors(x2d), torch_tensors([y2d])
        return lambda i: torch.cumsum(t[i % k], 1, dtype=out.dtype, out=out)

    def torch_axis_sum() -> Callable[[int], Any]:
        import torch

        cp = timer.cupy  # type: ignore[attr-defined]
        t, (out,) = torch_tensors(x2d), torch_tensors([cp.empty(data.rows, ins[0].dtype)])
        return lambda i: torch.sum(t[i % k], 1, dtype=out.dtype, out=out)

    table = {
        "exclusive": [Call(form, CUB_EXCLUSIVE, cub_exclusive, jitscan=False, out=y)],
        "segmented-offsets": [Call(form, CUB_BY_KEY, cub_by_key, jitscan=False, out=y)],
        "segmented-reduce": [Call(form, CUB_SEG_REDUCE, cub_seg_reduce, jitscan=False)],
        "axis-scan": [Call(form, TORCH_AXIS_SCAN, torch_axis_scan, jitscan=False, out=y2d)],
        "axis-reduce": [Call(form, TORCH_AXIS_SUM, torch_axis_sum, jitscan=False)],
    }
    return table.get(form, [])


def _opencl_peers(timer: Timer, form: str, data: Inputs) -> list[Call]:
    if form != "segmented-flags":
        return []
    from ..dtypes import lookup

    ins, y, k = data.ins, data.y, len(data.ins)
    q = timer.queue

    def segmented() -> Callable[[int], Any]:
        from pyopencl.scan import GenericScanKernel

        ctype = lookup(np.dtype(ins[0].dtype).name).opencl
        knl = GenericScanKernel(
            q.context,
            np.dtype(ins[0].dtype),
            arguments=f"__global const {ctype} *x, __global const uchar *head, __global {ctype} *y",
            input_expr="x[i]",
            scan_expr="across_seg_boundary ? b : (a + b)",
            neutral="0",
            is_segment_start_expr="head[i]",
            output_statement="y[i] = item;",
        )
        f = data.flags
        return lambda i: knl(ins[i % k], f, y, queue=q)

    return [Call(form, CL_SEGMENTED, segmented, jitscan=False, out=y)]


#: per backend: the peers of each form beyond the flat form's (``peers.PEERS``)
FORM_PEERS: Mapping[str, Callable[[Timer, str, Inputs], list[Call]]] = {
    "cupy": _cuda_peers,
    "opencl": _opencl_peers,
}


def form_calls(timer: Timer, forms: Iterable[str], data: Inputs, peers: bool = True) -> list[Call]:
    """jitscan's calls (then, with ``peers``, the peers') of every form but ``flat``, in table order."""
    found: list[Call] = []
    for form in form_names(list(forms)):
        if form == FLAT:
            continue
        found += jitscan_calls(timer, form, data)
        supplier = FORM_PEERS.get(timer.name)
        if peers and supplier is not None:
            found += supplier(timer, form, data)
    return found


__all__ = [
    "AXIS_ROWS",
    "FLAT",
    "FORMS",
    "FORM_PEERS",
    "REFERENCES",
    "SEGMENT_MEAN",
    "Call",
    "Inputs",
    "form_calls",
    "form_names",
    "jitscan_calls",
    "reference",
    "shared",
]
