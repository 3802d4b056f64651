"""Scans and reductions of whole arrays: ``scan``, ``reduce``, ``cumsum`` and its kin."""

from __future__ import annotations

from typing import Any

from .. import backends, variants
from ..dtypes import lookup
from ..kernels.spec import KINDS, check_choice
from ..monoid import Monoid, resolve
from ..plan import check_knobs, tuning
from ..plan.prepared import LAUNCH_KNOBS
from . import axis as _axis
from .cache import as_array, is_device_type, prepared, shortcut


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
    x : array_like, cupy.ndarray or pyopencl.array.Array
        Input; without ``axis`` N-D arrays are scanned flattened in C order (as
        NumPy's ``axis=None``). Device arrays stay on the device and the result is a
        device array.
    op : {"add", "mul", "min", "max", "and", "or", "xor"} or Monoid
    kind : {"inclusive", "exclusive", "reduce"}
        ``exclusive`` puts the identity first; ``reduce`` returns the total only.
    variant : {"fallback", "lookback", "rts", "memcpy"}, optional
        Algorithm; default ``"fallback"``, which is safe on every device.
    backend : {"cupy", "opencl"}, optional
        Default: the input's own backend, else ``$JITSCAN_BACKEND``, else the fastest
        available.
    dtype : dtype, optional
        Type of the result and of the arithmetic; default ``x.dtype``.
    out : array, optional
        Where to write the result: shape ``(x.size,)`` (``x.shape`` with ``axis``; ``(1,)``
        for ``kind="reduce"``, which then returns ``out``), the result dtype, and the
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
        ``vectors``, ``vector_width`` (elements per vector access, at most 16 bytes),
        ``min_blocks`` (CUDA occupancy hint).

    Returns
    -------
    array
        The scan: 1-D (the shape of ``x`` with ``axis``), the array type of the input
        (NumPy for array_like input). A reduction returns a NumPy scalar, or a 0-d
        device array.

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

    See Also
    --------
    plan : prepare a scan once and call it in a loop.
    """
    if axis is not None:
        if kind == "reduce":
            raise ValueError("kind='reduce' with axis= is not supported; use segmented_reduce")
        return _axis.scan_along_axis(x, op, axis, kind, variant, backend, dtype, out, stats, knobs)
    x = as_array(x)
    return prepared(x, op, kind, variant, backend, dtype, stats is not None, knobs)(x, out, stats=stats)


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
    x = as_array(x)
    return prepared(x, op, "reduce", variant, backend, dtype, stats is not None, knobs)(x, stats=stats)


def _running(op: str, name: str, doc: str) -> Any:
    """A cumsum-like function for a built-in op."""

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
        if axis is None and not kwargs and dtype is None:
            # the common call: one lookup, keyed on what can differ between such calls
            try:
                p = mine[type(x), x.dtype, exclusive]
            except (KeyError, AttributeError):
                if not is_device_type(type(x)):
                    # host input also keys on $JITSCAN_BACKEND: the general cache knows how
                    return scan(x, op, kind=kind, out=out)
                p = mine[type(x), x.dtype, exclusive] = prepared(x, op, kind, None, None, None, False, {})
            return p(x, out)
        return scan(x, op, kind=kind, dtype=dtype, out=out, axis=axis, **kwargs)

    #: prepared scans of this function's common call, by input type, dtype and kind
    mine = shortcut()

    running.__name__ = running.__qualname__ = name
    running.__doc__ = doc
    return running


cumsum = _running(
    "add",
    "cumsum",
    """Cumulative sum, like ``numpy.cumsum(x, axis)`` but in ``x.dtype`` unless ``dtype`` is given.

    ``axis=None`` scans the flattened array; an axis scans every lane along it (rows
    as segments, one pass). ``exclusive=True`` starts from 0 instead of the first
    element. ``backend``, ``variant``, ``stats`` and the knobs as in :func:`scan`.
    To scan in a loop, :func:`plan` binds everything but the array once.
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
    """The generated kernel source for a scan of large inputs, as the backend would compile it.

    For a backend that cannot run here the source is rendered for a typical device
    of that backend (a 32-lane GPU for CUDA, a CPU for OpenCL). The launch arguments
    (kind, spin limit, simulated blocking) head the text as comments.
    """
    check_knobs(knobs)
    check_choice("kind", kind, KINDS)
    v = variants.get(variants.VARIANTS[0] if variant is None else variant)
    monoid = resolve(op)
    b = backends.get(backend) if backend is not None else backends.default()
    info = b.device_info(b.queue_for(None)) if b.available() else backends.typical_device(b.name)
    program_knobs = {k: val for k, val in knobs.items() if k not in LAUNCH_KNOBS}
    spec = tuning.spec_for(
        info, variant=v.name, kind=kind, dtype=lookup(dtype), monoid=monoid, **program_knobs
    )
    v.check(spec)
    launch = tuning.launch_for(
        info,
        variant=v.name,
        kind=kind,
        spin_limit=knobs.get("spin_limit"),
        simulate_blocking=knobs.get("simulate_blocking"),
    )
    head = "".join(
        f"/* launch argument {k} = {val} */\n"
        for k, val in (
            ("kind", launch.kind_code),
            ("spin_limit", launch.spin_limit),
            ("block_every", launch.block_every),
            ("row_tiles", 0),
        )
    )
    return head + v.source(spec, b.dialect)
