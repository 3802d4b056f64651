"""Public functions: validate input, pick a backend, run the scan, hand back the result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import backends, execute, tuning
from .backends.base import Backend
from .dtypes import DType, lookup
from .kernels import render
from .monoid import Monoid, resolve
from .spec import KINDS, VARIANTS, ScanSpec, check_choice

DEFAULT_VARIANT = "fallback"

#: keyword-only tuning knobs every scan function accepts (see :func:`scan`)
KNOBS = (
    "tile_state",
    "spin_limit",
    "simulate_blocking",
    "lookback_width",
    "threads",
    "vectors",
    "vector_width",
    "min_blocks",
)


@dataclass
class _Input:
    backend: Backend
    queue: Any
    on_device: bool
    data: Any  # contiguous 1-D device array of the result dtype
    n: int
    dtype: DType


def _pick_backend(x: object, backend: str | None) -> tuple[Backend, bool]:
    owner = backends.for_array(x)
    if backend is not None:
        b = backends.get(backend)
        if owner is not None and owner is not b:
            raise ValueError(f"a {owner.name} array cannot be scanned with backend={backend!r}")
        if not b.available():
            backends.require(backend)
        return b, owner is not None
    if owner is not None:
        return owner, True
    return backends.default(), False


def _prepare(x: object, backend: str | None, dtype: object) -> _Input:
    b, on_device = _pick_backend(x, backend)
    if on_device:
        src_dtype = np.dtype(x.dtype)  # type: ignore[attr-defined]
        shape = tuple(x.shape)  # type: ignore[attr-defined]
    else:
        x = np.asarray(x)
        src_dtype, shape = x.dtype, x.shape
    if dtype is None:
        result = lookup(src_dtype)
    else:
        result = lookup(dtype)
        if src_dtype.kind not in "biuf":
            raise TypeError(f"cannot scan an array of dtype {src_dtype}")
    if len(shape) == 0:
        raise ValueError("jitscan scans arrays of at least one dimension, got a 0-d array")
    n = int(np.prod(shape))
    queue = b.queue_of(x if on_device else None)
    if on_device:
        data = b.contiguous(x)
        if data.dtype != result.numpy:
            data = data.astype(result.numpy)
        data = data.reshape(n)
    else:
        host = np.ascontiguousarray(np.ravel(x), dtype=result.numpy)
        data = b.to_device(host, queue) if n else None
    return _Input(b, queue, on_device, data, n, result)


def _check_out(out: Any, inp: _Input, shape: tuple[int, ...]) -> None:
    if out is None:
        return
    if inp.on_device:
        if not inp.backend.owns(out):
            raise TypeError(f"out= must be a {inp.backend.name} array for {inp.backend.name} input")
    elif not isinstance(out, np.ndarray):
        raise TypeError("out= must be a numpy.ndarray for NumPy input")
    if tuple(out.shape) != shape:
        raise ValueError(f"out= has shape {tuple(out.shape)}, expected {shape}")
    if np.dtype(out.dtype) != inp.dtype.numpy:
        raise ValueError(f"out= has dtype {np.dtype(out.dtype)}, expected {inp.dtype.name}")
    if inp.on_device and not out.flags.c_contiguous:
        raise ValueError("out= must be C-contiguous")


def _spec(
    inp: _Input, variant: str, kind: str, monoid: Monoid, stats: bool, knobs: dict, segmented: str = ""
) -> ScanSpec:
    unknown = set(knobs) - set(KNOBS)
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {sorted(unknown)}; tuning knobs: {', '.join(KNOBS)}")
    info = inp.backend.device_info(inp.queue)
    return tuning.spec_for(
        info,
        variant=variant,
        kind=kind,
        dtype=inp.dtype,
        monoid=monoid,
        stats=stats,
        n=inp.n,
        segmented=segmented,
        **knobs,
    )


def _empty_result(inp: _Input, out: Any) -> Any:
    if out is not None:
        return out
    if inp.on_device:
        return inp.backend.empty((0,), inp.dtype.numpy, inp.queue)
    return np.empty(0, inp.dtype.numpy)


def _run(
    inp: _Input,
    spec: ScanSpec,
    out_len: int,
    out: Any,
    stats: dict | None,
    **segments: Any,
) -> Any:
    """Run ``spec`` and return the result array (device or host, like the input).

    ``segments`` (heads, row_len or offsets) go to :func:`execute.run`."""
    b = inp.backend
    if inp.on_device:
        dst = out
        if dst is None or b.shares_memory(dst, inp.data) or not b.aligned(dst):
            # in place: a fallback may re-read a tile after its owner wrote it
            dst = b.empty((out_len,), inp.dtype.numpy, inp.queue)
        counters = execute.run(b, inp.queue, spec, inp.data, dst, inp.n, **segments)
        if out is not None and dst is not out:
            b.copy(out, dst)
            dst = out
        result = dst
    else:
        dst = b.empty((out_len,), inp.dtype.numpy, inp.queue)
        counters = execute.run(b, inp.queue, spec, inp.data, dst, inp.n, **segments)
        host = b.to_host(dst)
        if out is not None:
            out[...] = host
            host = out
        result = host
    if stats is not None and counters is not None:
        stats.clear()
        stats.update(counters)
    return result


def scan(
    x: Any,
    op: str | Monoid = "add",
    *,
    kind: str = "inclusive",
    variant: str | None = None,
    backend: str | None = None,
    dtype: Any = None,
    out: Any = None,
    stats: dict | None = None,
    axis: int | None = None,
    **knobs: Any,
) -> Any:
    """Prefix scan of ``x`` with an associative operator.

    Parameters
    ----------
    x : array_like, pyopencl.array.Array
        Input; N-D arrays are scanned flattened in C order (as NumPy's ``axis=None``).
        Device arrays stay on the device and the result is a device array.
    op : {"add", "mul", "min", "max", "and", "or", "xor"} or Monoid
    kind : {"inclusive", "exclusive", "reduce"}
        ``exclusive`` puts the identity first; ``reduce`` returns the total only.
    variant : {"fallback", "lookback", "rts", "memcpy"}, optional
        Algorithm; default ``"fallback"``, which is safe on every device.
    backend : {"opencl", ...}, optional
        Default: the input's own backend, else ``$JITSCAN_BACKEND``, else the fastest
        available.
    dtype : dtype, optional
        Type of the result and of the arithmetic; default ``x.dtype``.
    out : array, optional
        Where to write the result: shape ``(x.size,)``, the result dtype, and the
        input's array type.
    stats : dict, optional
        Chained variants only: filled with the look-back counters of this run
        (``spins``, ``lookback_steps``, ``fallbacks``, ``insertions``, ``tiles``).
    axis : int, optional
        Scan every 1-D lane along ``axis`` independently (a batched, segmented scan in
        one pass); the result has the shape of ``x``. Default: the flattened array.
    **knobs
        ``tile_state`` ("packed" or "split"), ``spin_limit`` (spins before a fallback,
        or the look-back deadlock watchdog), ``simulate_blocking`` (k in 2..512: 1 in k
        tiles withholds its postings; fallback only), ``lookback_width``, ``threads``,
        ``vectors``, ``vector_width`` (elements per vector access, at most 16 bytes).

    Returns
    -------
    array
        The scan, 1-D, same array type as the input (NumPy for array_like input).

    Raises
    ------
    TypeError
        Unsupported dtype, or an op that does not apply to it.
    ValueError
        0-d input, unknown op / kind / variant / backend, bad ``out=`` or knob.
    CompileError
        A user-defined monoid whose expression does not compile.
    DeadlockError
        ``variant="lookback"`` on a device that starved a predecessor.
    """
    check_choice("kind", kind, KINDS)
    variant = DEFAULT_VARIANT if variant is None else check_choice("variant", variant, VARIANTS)
    monoid = resolve(op)
    if kind == "reduce":
        if axis is not None:
            raise ValueError("kind='reduce' with axis= is not supported; use segmented_reduce")
        return reduce(x, op=monoid, variant=variant, backend=backend, dtype=dtype, stats=stats, **knobs)
    if axis is not None:
        if variant == "memcpy":
            raise ValueError("variant='memcpy' has no axis form")
        from .segmented import scan_along_axis

        return scan_along_axis(x, monoid, axis, kind, variant, backend, dtype, out, stats, knobs)
    inp = _prepare(x, backend, dtype)
    _check_out(out, inp, (inp.n,))
    spec = _spec(inp, variant, kind, monoid, stats is not None, knobs)
    if inp.n == 0:
        return _empty_result(inp, out)
    return _run(inp, spec, inp.n, out, stats)


def reduce(
    x: Any,
    op: str | Monoid = "add",
    *,
    variant: str | None = None,
    backend: str | None = None,
    dtype: Any = None,
    stats: dict | None = None,
    **knobs: Any,
) -> Any:
    """Combine all elements of ``x`` with ``op`` (the identity for an empty array).

    Takes the same arguments as :func:`scan`. Returns a NumPy scalar for host input
    and a 0-d device array for device input.
    """
    variant = DEFAULT_VARIANT if variant is None else check_choice("variant", variant, VARIANTS)
    if variant == "memcpy":
        raise ValueError("variant='memcpy' copies; it does not reduce")
    monoid = resolve(op)
    inp = _prepare(x, backend, dtype)
    spec = _spec(inp, variant, "reduce", monoid, stats is not None, knobs)
    if inp.n == 0:
        ident = monoid.identity_for(inp.dtype)
        if inp.on_device:
            return inp.backend.to_device(np.array(ident), inp.queue)
        return ident
    result = _run(inp, spec, 1, None, stats)
    if inp.on_device:
        return result.reshape(())
    return result[0]


def _running(op: str, name: str, doc: str) -> Any:
    """A cumsum-like function for another built-in op."""

    def running(
        x: Any,
        axis: int | None = None,
        dtype: Any = None,
        out: Any = None,
        *,
        exclusive: bool = False,
        **kwargs: Any,
    ) -> Any:
        kind = "exclusive" if exclusive else "inclusive"
        return scan(x, op, kind=kind, dtype=dtype, out=out, axis=axis, **kwargs)

    running.__name__ = running.__qualname__ = name
    running.__doc__ = doc
    return running


cumsum = _running(
    "add",
    "cumsum",
    """Cumulative sum, like ``numpy.cumsum(x, axis)`` but in ``x.dtype`` unless ``dtype`` is given.

    ``axis=None`` scans the flattened array; an axis scans every lane along it (rows
    as segments, one pass). ``exclusive=True`` starts from 0 instead of the first
    element. Other keywords as in :func:`scan`.
    """,
)
cumprod = _running("mul", "cumprod", "Cumulative product (arguments as :func:`cumsum`).")
cummax = _running(
    "max",
    "cummax",
    "Running maximum, like ``numpy.maximum.accumulate`` (NaN propagates; arguments as :func:`cumsum`).",
)
cummin = _running(
    "min",
    "cummin",
    "Running minimum, like ``numpy.minimum.accumulate`` (NaN propagates; arguments as :func:`cumsum`).",
)


def memcpy(x: Any, out: Any = None, *, backend: str | None = None, **knobs: Any) -> Any:
    """Copy ``x`` through the scan machinery's loads and stores: the speed-of-light baseline."""
    return scan(x, "add", variant="memcpy", backend=backend, out=out, **knobs)


def source(
    dtype: Any = "int32",
    op: str | Monoid = "add",
    *,
    kind: str = "inclusive",
    variant: str | None = None,
    backend: str | None = None,
    **knobs: Any,
) -> str:
    """The generated kernel source for a scan, as the backend would compile it.

    For a backend that cannot run here the source is rendered for a typical device
    of that backend (a 32-lane GPU for CUDA, a CPU for OpenCL).
    """
    check_choice("kind", kind, KINDS)
    variant = DEFAULT_VARIANT if variant is None else check_choice("variant", variant, VARIANTS)
    monoid = resolve(op)
    dt = lookup(dtype)
    b = backends.get(backend) if backend is not None else backends.default()
    if b.available():
        info = b.device_info(b.queue_of(None))
    else:
        info = backends.typical_device(b.name)
    spec = tuning.spec_for(info, variant=variant, kind=kind, dtype=dt, monoid=monoid, **knobs)
    launch = "".join(
        f"/* launch argument {k} = {v} */\n"
        for k, v in (
            ("kind", spec.kind_code),
            ("spin_limit", spec.spin_limit),
            ("block_every", spec.block_every),
            ("row_tiles", 0),
        )
    )
    return launch + render(spec, b.dialect)
