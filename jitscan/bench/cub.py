"""CUB through ``cuda.compute`` (package ``cuda-cccl``): one wrapper for every CUB call the bench makes.

The bench and the experiments call CUB the way a user who cares about speed would: the
algorithm object is made once (``make_inclusive_scan`` and its kin), the scratch space
is sized by a first call with ``temp_storage=None`` and allocated once with CuPy, and
each run is one call of the object. :func:`cub_call` does that and returns the run as a
function of its input array.

Written against cuda-cccl 1.2.1 (CuPy 14); every argument is passed by keyword.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

#: what :func:`cub_call` can make
KINDS = ("inclusive", "exclusive", "reduce", "segmented_reduce", "inclusive_by_key")
#: jitscan's op names -> the names of cuda.compute's OpKind members
OPS = {
    "add": "PLUS",
    "mul": "MULTIPLIES",
    "min": "MINIMUM",
    "max": "MAXIMUM",
    "and": "BIT_AND",
    "or": "BIT_OR",
    "xor": "BIT_XOR",
}


class _Stream:
    """A CuPy stream as cuda.compute takes one (the ``__cuda_stream__`` protocol, version 0)."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.ptr)


def _compute() -> Any:
    """The ``cuda.compute`` module; ImportError saying how to get it when it is missing."""
    try:
        import cuda.compute as cc
    except ImportError as exc:
        raise ImportError(f"cuda.compute is not installed ({exc}); pip install cuda-cccl") from exc
    return cc


def _identity(op: str, dtype: np.dtype) -> np.ndarray:
    """The op's identity in ``dtype`` as a one-element host array (CUB's ``init_value``/``h_init``)."""
    from ..dtypes import lookup
    from ..operators import resolve

    return np.asarray([resolve(op).identity_for(lookup(dtype))], dtype=dtype)


def cub_call(
    kind: str,
    d_in: Any,
    d_out: Any,
    *,
    num_items: int,
    op: str = "add",
    offsets: Any = None,
    keys: Any = None,
) -> Callable[[Any], None]:
    """One of CUB's device-wide algorithms, made once, as a function of its input.

    Parameters
    ----------
    kind : {"inclusive", "exclusive", "reduce", "segmented_reduce", "inclusive_by_key"}
        ``make_inclusive_scan``, ``make_exclusive_scan`` (the op's identity first),
        ``make_reduce_into`` (``d_out`` of one element), ``make_segmented_reduce``
        (``d_out`` of one element per segment) or ``make_inclusive_scan_by_key`` (a
        segmented scan: runs of equal adjacent ``keys``; newer ``cuda.compute`` only).
    d_in, d_out : cupy.ndarray
        Input and output; every later input must have ``d_in``'s size and dtype.
    num_items : int
        Elements of ``d_in`` to process; ``segmented_reduce`` takes its segments from
        ``offsets`` instead (whose last entry should be ``num_items``).
    op : {"add", "mul", "min", "max", "and", "or", "xor"}
        jitscan's name of the operator (a cuda.compute ``OpKind``).
    offsets : array of int, optional
        ``segmented_reduce`` only: CSR offsets, ``nseg + 1`` of them, 0 first and
        ``num_items`` last (NumPy or CuPy; copied to the device once, as start and end
        offsets).
    keys : cupy.ndarray, optional
        ``inclusive_by_key`` only: one key per element (a segment id), compared for
        equality with the next.

    Returns
    -------
    callable
        ``fn(d_in)`` enqueues one run reading ``d_in`` and writing ``d_out``, on the CuPy
        stream that was current when the wrapper was made, and returns at once.

    Raises
    ------
    ImportError
        Without ``cuda.compute`` (or CuPy), or (``inclusive_by_key``) a ``cuda.compute``
        without ``make_inclusive_scan_by_key``.
    ValueError
        An unknown ``kind`` or ``op``, or ``offsets`` missing for (or given to anything
        but) ``segmented_reduce``, or ``keys`` for ``inclusive_by_key``.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown CUB call {kind!r}; valid kinds: {', '.join(KINDS)}")
    if op not in OPS:
        raise ValueError(f"unknown op {op!r} for CUB; valid ops: {', '.join(OPS)}")
    if (offsets is None) == (kind == "segmented_reduce"):
        raise ValueError("offsets= is needed by segmented_reduce, and taken by nothing else")
    if (keys is None) == (kind == "inclusive_by_key"):
        raise ValueError("keys= is needed by inclusive_by_key, and taken by nothing else")
    cc = _compute()
    import cupy

    opkind = getattr(cc.OpKind, OPS[op])
    stream_ptr = cupy.cuda.get_current_stream().ptr
    stream = _Stream(stream_ptr) if stream_ptr else None  # None: the null (legacy) stream
    dtype = np.dtype(d_in.dtype)

    if kind == "inclusive_by_key":
        return _by_key(cc, d_in, d_out, keys, num_items, opkind, stream)
    if kind in ("inclusive", "exclusive"):
        init = None if kind == "inclusive" else _identity(op, dtype)
        make = cc.make_inclusive_scan if kind == "inclusive" else cc.make_exclusive_scan
        algo = make(d_in=d_in, d_out=d_out, op=opkind, init_value=init)
        fixed: dict[str, Any] = dict(d_out=d_out, op=opkind, num_items=num_items, init_value=init)
    elif kind == "reduce":
        init = _identity(op, np.dtype(d_out.dtype))
        algo = cc.make_reduce_into(d_in=d_in, d_out=d_out, op=opkind, h_init=init)
        fixed = dict(d_out=d_out, op=opkind, num_items=num_items, h_init=init)
    else:
        off = cupy.asarray(offsets)
        if off.ndim != 1 or off.size < 1:
            raise ValueError("offsets must be 1-D with nseg + 1 entries")
        starts, ends = off[:-1].copy(), off[1:].copy()
        init = _identity(op, np.dtype(d_out.dtype))
        algo = cc.make_segmented_reduce(
            d_in=d_in, d_out=d_out, start_offsets_in=starts, end_offsets_in=ends, op=opkind, h_init=init
        )
        fixed = dict(
            d_out=d_out,
            op=opkind,
            num_segments=int(off.size) - 1,
            start_offsets_in=starts,
            end_offsets_in=ends,
            h_init=init,
        )
    nbytes = algo(temp_storage=None, d_in=d_in, stream=stream, **fixed)
    fixed["temp_storage"] = cupy.empty(max(int(nbytes), 1), np.uint8)
    fixed["stream"] = stream

    def fn(x: Any) -> None:
        algo(d_in=x, **fixed)

    return fn


def _by_key(cc: Any, d_in: Any, d_out: Any, keys: Any, num_items: int, op: Any, stream: Any) -> Callable:
    """``make_inclusive_scan_by_key`` made once, scratch sized and allocated once (see :func:`cub_call`)."""
    import cupy

    make = getattr(cc, "make_inclusive_scan_by_key", None)
    if make is None:
        raise ImportError("this cuda.compute has no make_inclusive_scan_by_key (a newer cuda-cccl has)")
    equal = getattr(cc.OpKind, "EQUAL_TO", None)
    if equal is None:

        def equal(a: Any, b: Any) -> bool:
            return a == b

    algo = make(d_keys_in=keys, d_values_in=d_in, d_values_out=d_out, op=op, equality_op=equal)
    fixed: dict[str, Any] = dict(
        d_keys_in=keys, d_values_out=d_out, op=op, equality_op=equal, init_value=None, num_items=num_items
    )
    nbytes = algo(temp_storage=None, d_values_in=d_in, stream=stream, **fixed)
    fixed["temp_storage"] = cupy.empty(max(int(nbytes), 1), np.uint8)
    fixed["stream"] = stream

    def fn(x: Any) -> None:
        algo(d_values_in=x, **fixed)

    return fn


__all__ = ["KINDS", "OPS", "cub_call"]
