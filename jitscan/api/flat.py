"""Scans and reductions of whole arrays: ``scan``, ``reduce``, ``memcpy``, ``source``.

Each public function is its warm call (one lookup: ``warm.py``) or one :class:`Call`
handed to the dispatch (``dispatch.py``); ``running.py`` holds ``cumsum`` and its kin,
``segmented.py`` the segmented functions, ``runner.py`` what they run on arrays in memory.

The public functions follow NumPy's and the Array API's conventions (``conventions.py``):
result dtypes, 0-d input, ``AxisError``, ``out=`` cast under ``same_kind``.
"""

from __future__ import annotations

from typing import Any

from .. import backends, variants
from ..backends import targets
from ..dtypes import lookup
from ..kernels.spec import KINDS, SEGMENTED, check_choice
from ..operators import Monoid, resolve
from ..plan import check_knobs, tuning
from ..plan.knobs import LAUNCH_KNOBS
from ..plan.prepared import check_form
from .cache import call_key, shortcut
from .call import Call
from .dispatch import first

#: the tuning knobs every scan takes, documented once and quoted by each docstring
KNOBS_DOC = """
        ``tile_state`` ("packed" or "split"), ``spin_limit`` (spins before a fallback,
        or the look-back deadlock watchdog), ``spin_timeout`` (seconds a look-back waits
        on one predecessor before its watchdog fires, where the device has a clock;
        default 1), ``simulate_blocking`` (k in 2..512: 1 in k
        tiles withholds its postings; fallback only), ``lookback_width``, ``threads``,
        ``vectors``, ``vector_width`` (elements per vector access, at most 16 bytes),
        ``min_blocks`` (CUDA occupancy hint), ``deterministic`` (True: the same bits on
        every run, see the user guide's "Deterministic float scans"; integers are exact
        anyway), ``check`` ("deferred", the default, or "now": when bad device offsets
        raise, see :func:`segmented_scan`).
        Unknown names raise TypeError."""


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
    output: Any = None,
    initial: Any = None,
    **knobs: Any,
) -> Any:
    # the warm call: one lookup, keyed on what can differ between such calls (warm.py)
    ndim = getattr(x, "ndim", None) if axis is not None else None
    key = call_key(
        x, out, knobs, op, kind, variant, backend, dtype, axis, ndim, output, initial is None, stats is None
    )
    try:
        go = _SHORTCUTS[key]
    except (KeyError, TypeError):
        go = None
    if go is not None:
        return go(x, out, None, None, initial)
    call = Call(
        "scan",
        op,
        kind,
        variant,
        backend,
        dtype,
        out,
        stats,
        axis,
        output=output,
        initial=initial,
        knobs=knobs,
    )
    return first(_SHORTCUTS, key, x, call)


#: the warm calls of scan() (None: that call takes the long way)
_SHORTCUTS = shortcut()


scan.__doc__ = (
    """Prefix scan of ``x`` with an associative operator.

    Parameters
    ----------
    x : array_like, cupy.ndarray or pyopencl.array.Array, or a tuple of them
        Input of a real, integer or complex dtype (bool, int8-64, uint8-64, float16-64;
        complex64/128 with ``add``, complex64 with ``mul``). A tuple of 1 to 4 arrays
        of one kind and shape (and ``jitscan.index``, the element's position) holds
        tuple values, which ``op`` must be a :func:`jitscan.operator` for; the
        result is then a tuple of arrays, one per field (see ``output``). Without
        ``axis`` N-D arrays are scanned flattened in C order (as NumPy's
        ``axis=None``); a 0-d array or a Python scalar is one element. Device arrays
        stay on the device and the result is a device array of the same kind. A Dask
        array (NumPy or CuPy chunks) gives a lazy Dask array of the same chunks, each
        chunk scanned from the carry of those before it (the user guide's "Dask arrays").
    op : {"add", "mul", "min", "max", "and", "or", "xor"}, Monoid or Operator
        A built-in, a C expression (:class:`Monoid`) or a Python function
        (:func:`jitscan.operator`).
    kind : {"inclusive", "exclusive", "reduce"}
        ``exclusive`` puts the identity first; ``reduce`` returns the total only.
    variant : {"fallback", "lookback", "rts", "memcpy"}, optional
        Algorithm; default ``"fallback"``, which is safe on every device.
    backend : {"cupy", "opencl"}, optional
        Default: the input's own backend, else ``$JITSCAN_BACKEND``, else the fastest
        available.
    dtype : dtype, optional
        Type of the result and of the arithmetic; default ``x.dtype`` (no promotion).
        bool, 8- and 16-bit integers are scanned in 32 bits and float16 in float32, then
        converted back.
    out : array, optional
        Where to write the result: shape ``(x.size,)`` (``x.shape`` with ``axis``;
        ``(1,)`` for ``kind="reduce"``, which then returns ``out``), the input's array
        type, and a dtype the result casts to under NumPy's ``same_kind`` rule.
    stats : dict, optional
        Chained variants only: filled with the look-back counters of this run
        (``spins``, ``lookback_steps``, ``fallbacks``, ``insertions``, ``tiles``).
    axis : int, optional
        Scan every 1-D lane along ``axis`` independently (a batched, segmented scan in
        one pass); the result has the shape of ``x``. Default: the flattened array.
    initial : scalar or one-element array, optional
        Scan from this value: it goes on the left of every element, and is the first
        element of an exclusive scan (``kind="reduce"``: the result for no elements).
        A chained variant, not deterministic, without ``axis``. A device array of the
        input's backend (``y[-1:]`` of another scan) is read on the device, in queue
        order, without the host waiting for it: a PyOpenCL array of another queue is
        waited for there; a CuPy array must be ready in the scan's stream, as the input
        must (CuPy arrays do not say which stream wrote them). It casts as NumPy's
        ``same_kind`` (no float into an integer scan). A Dask array's chunks are scanned
        from their carries this way.
    output : int or tuple of int, optional
        Tuple values only: the fields written and returned, an array for an int, a
        tuple for a tuple (in increasing order); default every field, as a tuple. Fields
        not asked for are never stored.
    **knobs
        Tuning knobs:"""
    + KNOBS_DOC
    + """

    Returns
    -------
    array
        The scan: 1-D (the shape of ``x`` with ``axis``), the array type of the input
        (NumPy for array_like input). A reduction returns a NumPy scalar, or a 0-d
        device array.

    Raises
    ------
    TypeError
        Unsupported dtype (object, strings, dates; complex with an op other than add,
        or mul in complex64), an op that does not apply to it, an ``out=`` it cannot
        cast to, or an unknown knob.
    ValueError
        Unknown op / kind / variant / backend, bad ``out=`` shape or knob value.
    numpy.exceptions.AxisError
        ``axis`` out of range (a ValueError and an IndexError too).
    CompileError
        A user-defined monoid whose expression does not compile.
    DeadlockError
        ``variant="lookback"`` on a device that starved a predecessor.

    See Also
    --------
    plan : Prepare a scan once and call it in a loop.
    cumsum : The NumPy-named function, with NumPy's dtype promotion.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> jitscan.scan(np.array([3, 1, 4, 1, 5], dtype=np.int32), "max")
    array([3, 3, 4, 4, 5], dtype=int32)
    >>> jitscan.scan(np.array([1, 2, 3], dtype=np.int32), kind="exclusive")
    array([0, 1, 3], dtype=int32)
    """
)


def reduce(
    x: Any,
    op: str | Monoid = "add",
    *,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool = False,
    variant: str | None = None,
    backend: str | None = None,
    dtype: Any = None,
    stats: dict | None = None,
    output: Any = None,
    initial: Any = None,
    out: Any = None,
    **knobs: Any,
) -> Any:
    """Combine the elements of ``x`` with ``op``: all of them, or along ``axis``.

    Parameters
    ----------
    x : array_like, cupy.ndarray or pyopencl.array.Array, or a tuple of them
        A tuple holds tuple values, as in :func:`scan` (then ``axis`` is one int or None,
        and there is no ``keepdims``).
    op : str, Monoid or Operator
        As in :func:`scan`.
    output : int or tuple of int, optional
        Tuple values only: the fields returned, as in :func:`scan`.
    axis : int or tuple of int, optional
        Reduce along these axes (every other axis stays); default all of them.
    keepdims : bool
        Keep the reduced axes as axes of length one, as NumPy does.
    variant, backend, dtype, stats
        As in :func:`scan`: the result keeps ``x``'s dtype unless ``dtype=`` is given
        (``numpy.sum`` would promote narrow integers); ``stats`` only without ``axis``.
        Along an axis the default variant is ``"rts"`` (see :func:`segmented_reduce`);
        so it is on GPUs for a whole array over ``tuning.RTS_REDUCE_BYTES`` (4 MiB of the
        result's dtype), where its two passes beat the single-pass scan (and are
        deterministic as they are), unless ``initial=``, ``stats=`` or a knob of the
        chained scan (all but ``deterministic``) asks for the chained scan.
    initial : scalar or one-element array, optional
        Start from this value, as NumPy's ``ufunc.reduce(..., initial=)``: the result
        is ``initial`` combined with every element (``initial`` alone for no elements).
        A whole-array reduction by a chained variant. A device array is read on the
        device, as in :func:`scan`.
    out : array, optional
        Where the result goes, as NumPy's ``out=`` of a reduction: an array of the
        result's shape (0-d for a whole array; with ``keepdims`` the ones kept) and of the
        input's kind (NumPy for host input), its dtype one the result casts to by the
        ``same_kind`` rule; ``out`` is returned. Along the last axis of a device array,
        an ``out`` of the result's dtype is written by the kernels themselves. Not for
        tuple values or Dask arrays.
    **knobs
        Tuning knobs as in :func:`scan`: ``tile_state``, ``spin_limit``,
        ``simulate_blocking``, ``lookback_width``, ``threads``, ``vectors``,
        ``vector_width``, ``min_blocks``.

    Returns
    -------
    scalar or array
        Without ``axis`` and ``keepdims``: a NumPy scalar for host input, a 0-d device
        array for device input (the identity for an empty array). Otherwise an array of
        ``x``'s shape without (or with length-one) reduced axes.

    Raises
    ------
    numpy.exceptions.AxisError
        An axis out of range.
    TypeError, ValueError
        As in :func:`scan`.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> x = np.arange(6, dtype=np.int32).reshape(2, 3)
    >>> int(jitscan.reduce(x))
    15
    >>> jitscan.reduce(x, "max", axis=0)
    array([3, 4, 5], dtype=int32)
    >>> jitscan.reduce(x, axis=1, keepdims=True)
    array([[ 3],
           [12]], dtype=int32)
    """
    # the warm call: one lookup, as scan()'s
    ndim = getattr(x, "ndim", None)
    key = call_key(
        x,
        out,
        knobs,
        op,
        variant,
        backend,
        dtype,
        axis,
        keepdims,
        ndim,
        output,
        initial is None,
        stats is None,
        out is None,
    )
    try:
        go = _REDUCE_SHORTCUTS[key]
    except (KeyError, TypeError):
        go = None
    if go is not None:
        return go(x, out, None, None, initial)
    call = Call(
        "reduce",
        op,
        "reduce",
        variant,
        backend,
        dtype,
        out,
        stats,
        axis,
        keepdims,
        output,
        initial,
        knobs=knobs,
    )
    return first(_REDUCE_SHORTCUTS, key, x, call)


#: the warm calls of reduce() (None: that call takes the long way)
_REDUCE_SHORTCUTS = shortcut()


def memcpy(x: Any, out: Any = None, *, backend: str | None = None, **knobs: Any) -> Any:
    """Copy ``x`` through the scan machinery's loads and stores: the speed-of-light baseline."""
    return scan(x, "add", variant=variants.names("copy")[0], backend=backend, out=out, **knobs)


def source(
    dtype: Any = "int32",
    op: str | Monoid = "add",
    *,
    kind: str = "inclusive",
    variant: str | None = None,
    backend: str | None = None,
    segmented: str = "",
    device: str | None = None,
    **knobs: Any,
) -> str:
    """The generated kernel source for a scan of large inputs, as the backend would compile it.

    For a backend that cannot run here the source is rendered for a typical device
    of that backend (a 32-lane GPU for CUDA, a CPU for OpenCL). The launch arguments
    (kind, spin limit, simulated blocking) head the text as comments. ``segmented``
    ("flags", "offsets" or "rows", as in :func:`jitscan.plan`) gives a segmented scan's.
    ``device`` names a GPU target to render for instead, as its compiler names it:
    "gfx90a", "gfx942", "gfx1100" (AMD, for ROCm's HIP), "sm_80", "sm_90", "sm_100"
    (NVIDIA); the backend is then "cupy" (CUDA C, which is also HIP). The program
    stops its own compile for a target of another subgroup width.
    """
    check_knobs(knobs)
    check_choice("kind", kind, KINDS)
    if segmented:
        check_choice("segmented", segmented, tuple(m for m in SEGMENTED if m))
    v = variants.require(variant)
    check_form(kind, v.name, segmented)  # what plan() refuses has no source either
    monoid = resolve(op)
    if device is not None:
        if backend not in (None, "cupy"):
            raise ValueError(f"device={device!r} is a CUDA or HIP target: its programs are backend='cupy''s")
        b = backends.get("cupy")
        info = targets.target(device)
    else:
        b = backends.get(backend) if backend is not None else backends.default()
        info = b.device_info(b.queue_for(None)) if b.available() else backends.typical_device(b.name)
    program_knobs = {k: val for k, val in knobs.items() if k not in LAUNCH_KNOBS}
    spec = tuning.spec_for(
        info,
        variant=v.name,
        kind=kind,
        dtype=lookup(dtype),
        monoid=monoid,
        segmented=segmented,
        **program_knobs,
    )
    v.check(spec)
    launch = tuning.launch_for(
        info,
        variant=v.name,
        kind=kind,
        spin_limit=knobs.get("spin_limit"),
        simulate_blocking=knobs.get("simulate_blocking"),
        spin_timeout=knobs.get("spin_timeout"),
    )
    head = "".join(
        f"/* launch argument {k} = {val} */\n"
        for k, val in (
            ("kind", launch.kind_code),
            ("spin_limit", launch.spin_limit),
            ("wait_limit", launch.wait_limit),
            ("block_every", launch.block_every),
            ("row_tiles", 0),
        )
    )
    return head + v.source(spec, b.dialect)
