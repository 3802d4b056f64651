"""Scans and reductions of whole arrays: ``scan``, ``reduce``, ``memcpy``, ``source``.

``run`` is the scan every public function makes (``running.py`` holds ``cumsum`` and its
kin; ``complexes.py`` complex input).

The public functions follow NumPy's and the Array API's conventions (``conventions.py``):
result dtypes, 0-d input, ``AxisError``, ``out=`` cast under ``same_kind``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import backends, variants
from ..dtypes import lookup
from ..kernels.spec import KINDS, SEGMENTED, check_choice
from ..operators import Monoid, resolve
from ..plan import arrays, check_knobs, tuning
from ..plan.knobs import LAUNCH_KNOBS
from ..plan.prepared import check_form
from . import axis as _axis
from . import chunked, complexes, conventions, tuples
from .cache import as_array, call_key, prepared, remember, shortcut, shortcut_for

#: the tuning knobs every scan takes, documented once and quoted by each docstring
KNOBS_DOC = """
        ``tile_state`` ("packed" or "split"), ``spin_limit`` (spins before a fallback,
        or the look-back deadlock watchdog), ``spin_timeout`` (seconds a look-back waits
        on one predecessor before its watchdog fires, where the device has a clock;
        default 1), ``simulate_blocking`` (k in 2..512: 1 in k
        tiles withholds its postings; fallback only), ``lookback_width``, ``threads``,
        ``vectors``, ``vector_width`` (elements per vector access, at most 16 bytes),
        ``min_blocks`` (CUDA occupancy hint), ``deterministic`` (True: the same bits on
        every run, see the README; integers are exact anyway). Unknown names raise
        TypeError."""


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
    if type(x) is tuple:
        tuples.refuse_initial(initial)
        return tuples.scan(
            x,
            op,
            kind=kind,
            variant=variant,
            backend=backend,
            dtype=dtype,
            out=out,
            stats=stats,
            axis=axis,
            output=output,
            knobs=knobs,
        )
    if output is not None:
        raise TypeError("output= selects fields of a tuple value; x is one array")
    if initial is not None:
        return run(x, op, kind, "keep", variant, backend, dtype, out, stats, axis, knobs, initial=initial)
    if axis is None and stats is None:
        # the common call: one lookup, keyed on what can differ between such calls
        key = call_key(x, out, knobs, op, kind, variant, backend, dtype)
        try:
            p = _SCAN_SHORTCUTS[key]
        except (KeyError, TypeError):
            p = shortcut_for(x, op, kind, "keep", dtype, out, variant, backend, knobs)
            remember(_SCAN_SHORTCUTS, key, p)
        if p is not None:
            # device arrays: the whole call in one function; NumPy input takes p's host path
            try:
                result = None if type(x) is np.ndarray else p.common(x, out, None)
            except Exception as exc:  # an allocation that failed, named (free until it catches)
                p.reraise(exc, x)
            return p(x, out) if result is None else result
    return run(x, op, kind, "keep", variant, backend, dtype, out, stats, axis, knobs)


#: prepared scans of scan()'s common calls (None: that call takes the long way)
_SCAN_SHORTCUTS = shortcut()


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
        chunk scanned from the carry of those before it (README, "Dask arrays").
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


def run(
    x: Any,
    op: str | Monoid,
    kind: str,
    rule: str,
    variant: str | None,
    backend: str | None,
    dtype: Any,
    out: Any,
    stats: dict | None,
    axis: int | None,
    knobs: dict[str, Any],
    include_initial: bool = False,
    nan: float | None = None,
    initial: Any = None,
) -> Any:
    """A scan as the public functions define it: dtypes, 0-d input, axis, ``out=`` casts.

    ``rule`` chooses the result dtype (``conventions.types``); ``include_initial`` puts
    the op's zero first; ``nan`` replaces NaN inputs first (``nancumsum``); ``initial``
    is the value the scan starts from (see :meth:`PreparedScan.__call__`).
    """
    if kind == "reduce" and axis is not None:
        raise ValueError("kind='reduce' with axis= is reduce(x, op, axis=...)")
    if chunked.is_dask(x):
        calls = chunked.Calls(op, kind, rule, variant, backend, dtype, knobs, include_initial, nan)
        return chunked.scan(x, calls, out, stats, axis, initial)
    if initial is not None and axis is not None:
        raise ValueError("initial= is one value for the whole (flattened) array; it takes no axis=")
    x = as_array(x)
    if len(x.shape) == 0:
        x = x.reshape((1,))  # as NumPy: a 0-d input is one element
    if initial is not None and complexes.is_complex(x, dtype):
        raise ValueError("initial= takes a real number: complex scans do not take one yet")
    if complexes.is_complex(x, dtype):
        return _complex(x, op, kind, variant, backend, dtype, out, stats, axis, knobs, include_initial, nan)
    conventions.check_out_cast(conventions.types(conventions.input_dtype(x), dtype, rule).result, out)
    t = conventions.call_types(x, op, rule, dtype, out)
    if initial is not None:
        arrays.check_initial(initial, t.result)  # in the result's range (a narrow int)
    if nan is not None and x.dtype.kind == "f":
        x = conventions.replace_nan(x, nan)
    x, op = conventions.narrowed(x, op, t)
    if axis is not None:
        ax = conventions.normalize_axis(axis, len(x.shape))
        direct = t.takes(out) and not include_initial
        res = _axis.scan_along_axis(
            x, op, ax, kind, variant, backend, t.scan.name, out if direct else None, stats, knobs
        )
        if direct:
            return res
        res = t.finish(res)
        if include_initial:
            res = _with_initial(res, resolve(op).identity_for(t.scan), t.result, ax)
        return res if out is None else conventions.put(out, res)
    # (a float sum's total comes with NumPy's zero: ScanSpec.positive_zero, empty_value)
    direct = t.takes(out) and not include_initial
    p = prepared(x, op, kind, variant, backend, t.scan.name, stats is not None, knobs)
    res = p(x, out if direct else None, stats=stats, initial=initial)
    if direct:
        return res
    res = t.finish(res)
    if include_initial:
        res = _with_initial(res, p.monoid.identity_for(lookup(t.scan.name)), t.result)
    if out is not None and kind == "reduce":
        res = res.reshape((1,))  # out= of a reduction has one element
    return res if out is None else conventions.put(out, res)


def _complex(
    x: Any,
    op: str | Monoid,
    kind: str,
    variant: str | None,
    backend: str | None,
    dtype: Any,
    out: Any,
    stats: dict | None,
    axis: int | None,
    knobs: dict[str, Any],
    include_initial: bool,
    nan: float | None,
) -> Any:
    """A complex scan: sums as two real ones, complex64 products on 64-bit words (see :func:`_by_parts`)."""

    def each(part: Any, part_op: str | Monoid, part_dtype: np.dtype) -> Any:
        args = (variant, backend, part_dtype, None, stats, axis, knobs, include_initial)
        return run(part, part_op, kind, "keep", *args)

    return complexes.by_parts(x, op, dtype, out, nan, each)


def _with_initial(res: Any, identity: Any, dtype: np.dtype, axis: int = 0) -> Any:
    """The identity before ``res`` along ``axis`` (a zero of ``dtype``: +0.0 for sums, as the Array API)."""
    zero = dtype.type(0) if identity == 0 else dtype.type(identity)
    shape = list(res.shape)
    shape[axis] = 1
    head = np.full(shape, zero, dtype)
    if isinstance(res, np.ndarray):
        return np.concatenate([head, res], axis=axis)
    b = backends.for_array(res)
    return b.concatenate([b.to_device(head, b.queue_of(res)), res], axis)


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
    if type(x) is tuple:
        tuples.refuse_initial(initial)
        if keepdims or isinstance(axis, tuple):
            raise ValueError("a reduction of tuple values takes one axis (an int) and no keepdims")
        kw = {"variant": variant, "backend": backend, "dtype": dtype, "stats": stats, "axis": axis}
        return tuples.scan(x, op, kind="reduce", out=None, output=output, knobs=knobs, **kw)
    if output is not None:
        raise TypeError("output= selects fields of a tuple value; x is one array")
    if axis is None and not keepdims and stats is None and initial is None:
        # the common call: one lookup, as scan()'s; the kernels write NumPy's +0.0 for a
        # float sum of negative zeros (ScanSpec.positive_zero), so the result is final
        key = call_key(x, None, knobs, op, variant, backend, dtype)
        try:
            p = _REDUCE_SHORTCUTS[key]
        except (KeyError, TypeError):
            p = shortcut_for(x, op, "reduce", "keep", dtype, None, variant, backend, knobs)
            remember(_REDUCE_SHORTCUTS, key, p)
        if p is not None and x.ndim:
            return p(x)
    if chunked.is_dask(x):
        if stats is not None:
            raise ValueError("stats= does not apply to a Dask array: its chunks run as separate tasks")
        return chunked.reduce(x, op, axis, keepdims, variant, backend, dtype, knobs, initial)
    x = as_array(x)
    shape = tuple(x.shape)
    whole = axis is None or (isinstance(axis, tuple) and len(set(axis)) == len(shape))
    if initial is not None and (not whole or complexes.is_complex(x, dtype)):
        raise ValueError("initial= takes a real number and reduces the whole array (no axis=)")
    if complexes.is_complex(x, dtype):
        if stats is not None:
            raise ValueError("stats= is not available for complex input (it runs as several scans)")

        def each(part: Any, part_op: str | Monoid, part_dtype: np.dtype) -> Any:
            kw = {"axis": axis, "keepdims": keepdims, "variant": variant, "backend": backend}
            return reduce(part, part_op, dtype=part_dtype, **kw, **knobs)

        return complexes.by_parts(x, op, dtype, None, None, each)
    t = conventions.types(conventions.input_dtype(x), dtype, "keep")
    if initial is not None:
        arrays.check_initial(initial, t.result)  # in the result's range (a narrow int)
    x, op = conventions.narrowed(x, op, t)
    if axis == ():
        return arrays.astype(x if shape else x.reshape(()), t.result)  # nothing to reduce
    if axis is None:
        axes = tuple(range(len(shape)))
    elif not shape:
        raise conventions.AxisError(axis if not isinstance(axis, tuple) else axis[0], 0)
    else:
        axes = conventions.normalize_axes(axis, len(shape))
    kept = tuple(s for i, s in enumerate(shape) if i not in axes)
    full = tuple(1 if i in axes else s for i, s in enumerate(shape))
    if len(axes) == len(shape):
        flat = x.reshape((1,)) if not shape else x
        p = prepared(flat, op, "reduce", variant, backend, t.scan.name, stats is not None, knobs)
        res = p(flat, stats=stats, initial=initial)  # NumPy's zero included (ScanSpec.positive_zero)
        res = t.finish(res)
        return res.reshape(full) if keepdims else res
    if stats is not None:
        raise ValueError("stats= applies to a reduction of the whole array (no axis=)")
    res = _axis.reduce_along_axes(x, op, axes, variant, backend, t.scan.name, knobs)
    res = conventions.numpy_sum_zero(res, op, t.scan.numpy)
    return t.finish(res).reshape(full if keepdims else kept)


#: prepared scans of reduce()'s common calls (None: that call takes the long way)
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
    **knobs: Any,
) -> str:
    """The generated kernel source for a scan of large inputs, as the backend would compile it.

    For a backend that cannot run here the source is rendered for a typical device
    of that backend (a 32-lane GPU for CUDA, a CPU for OpenCL). The launch arguments
    (kind, spin limit, simulated blocking) head the text as comments. ``segmented``
    ("flags", "offsets" or "rows", as in :func:`jitscan.plan`) gives a segmented scan's.
    """
    check_knobs(knobs)
    check_choice("kind", kind, KINDS)
    if segmented:
        check_choice("segmented", segmented, tuple(m for m in SEGMENTED if m))
    v = variants.require(variant)
    check_form(kind, v.name, segmented)  # what plan() refuses has no source either
    monoid = resolve(op)
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
