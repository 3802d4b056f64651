"""The NumPy-named running functions (``cumsum`` and its kin) and the Array API's.

Each is a scan with NumPy's rules (``conventions.py``) and warm calls (``warm.py``): one
lookup keyed on what can differ between such calls, then the prepared scan.
"""

from __future__ import annotations

from typing import Any

from numpy import ndarray

from . import conventions
from .cache import as_array, host_tag, shortcut
from .call import Call
from .dispatch import first
from .flat import KNOBS_DOC


def _running(op: str, name: str, rule: str, summary: str, example: str, nan: float | None = None) -> Any:
    """A cumsum-like function for a built-in op."""

    def running(
        x: Any,
        axis: int | None = None,
        dtype: Any = None,
        out: Any = None,
        *,
        exclusive: bool = False,
        include_initial: bool = False,
        backend: str | None = None,
        variant: str | None = None,
        stats: dict | None = None,
        **knobs: Any,
    ) -> Any:
        # the warm call: one lookup, keyed on what can differ between such calls (warm.py)
        t = type(x)
        # (an out= that is no array keys apart from none given: the long way refuses it)
        to = getattr(out, "dtype", None if out is None else type(out))
        key = (t, getattr(x, "dtype", None), dtype, exclusive, to, axis)
        if t is ndarray:  # host_tag adds nothing for device arrays: not called for them
            key += host_tag(x)
        if axis is not None or include_initial or stats is not None:
            key += (getattr(x, "ndim", None), include_initial, stats is None)
        if knobs or variant is not None or backend is not None:
            key += (variant, backend, *knobs.items())
        try:
            go = mine[key]
        except (KeyError, TypeError):
            go = None
        if go is not None:
            return go(x, out, None, None, None)
        kind = "exclusive" if exclusive else "inclusive"
        options = {"rule": rule, "include_initial": include_initial, "nan": nan, "knobs": knobs}
        return first(mine, key, x, Call(name, op, kind, variant, backend, dtype, out, stats, axis, **options))

    #: the warm calls of this function (None: that call takes the long way)
    mine = shortcut()

    running.__name__ = running.__qualname__ = name
    running.__doc__ = _running_doc(name, rule, summary, example, nan)
    return running


def _running_doc(name: str, rule: str, summary: str, example: str, nan: float | None) -> str:
    if rule == "numpy":
        promote = (
            "NumPy's: bool and integers narrower than 64 bits become int64 (unsigned: "
            "uint64), floats keep their type (float16 is accumulated in float32 and "
            "rounded once)"
        )
    else:
        promote = (
            "the input's (bool, 8- and 16-bit integers are scanned in 32 bits, float16 in "
            "float32, then converted back)"
        )
    nan_line = ""
    if nan is not None:
        nan_line = f"\n\n    NaN inputs count as {nan:g}, as in ``numpy.{name}``."
    return (
        summary
        + nan_line
        + """

    Parameters
    ----------
    x : array_like, cupy.ndarray, pyopencl.array.Array or dask.array.Array
        Input; N-D input is flattened unless ``axis`` is given; a 0-d input or a Python
        scalar is one element. Device arrays stay on their device; a Dask array gives a
        lazy Dask array of the same chunks.
    axis : int, optional
        Scan every 1-D lane along this axis (one pass, rows as segments).
    dtype : dtype, optional
        The type of the arithmetic and of the result. Default: """
        + promote
        + """. ``dtype=x.dtype`` keeps 32-bit integers in 32 bits (the fast scan).
    out : array, optional
        Where to put the result: the result's shape, the input's array type, a dtype the
        result casts to under NumPy's ``same_kind`` rule (any byte order on the host).
        An integer ``out`` of a scanned dtype takes the scan in its own dtype, which
        gives the bits of the promoted scan cast to it.
    exclusive : bool
        Start from the identity instead of the first element (not in NumPy: the result
        has ``x.size`` elements and leaves out the total). A float sum's identity is
        -0.0, the one that adds to every value exactly, so it starts at -0.0 (equal to
        0; ``include_initial=True`` puts +0.0 first, as the Array API asks).
    include_initial : bool
        As the Array API: the op's zero first, then every prefix (``x.size + 1``
        elements).
    backend : {"cupy", "opencl"}, optional
        Default: the input's own backend, else ``$JITSCAN_BACKEND``, else the fastest.
    variant : {"fallback", "lookback", "rts"}, optional
        The algorithm (default ``"fallback"``).
    stats : dict, optional
        Filled with the look-back counters (chained variants).
    **knobs
        Tuning knobs:"""
        + KNOBS_DOC
        + """

    Returns
    -------
    array
        1-D (the shape of ``x`` with ``axis``), NumPy for host input, a device array of
        the input's kind otherwise.

    Raises
    ------
    TypeError
        A dtype jitscan does not scan (object, strings; complex128 products), an
        ``out=`` dtype the result cannot be cast to, an unknown knob.
    numpy.exceptions.AxisError
        ``axis`` out of range.

    See Also
    --------
    scan : Any op, no promotion.
    plan : Prepare once, call in a loop.

    Examples
    --------
    >>> import numpy as np, jitscan
"""
        + example
        + "\n    "
    )


cumsum = _running(
    "add",
    "cumsum",
    "numpy",
    "Cumulative sum, as ``numpy.cumsum``.",
    """    >>> jitscan.cumsum(np.array([2**30, 2**30, 5], dtype=np.int32))
    array([1073741824, 2147483648, 2147483653])
    >>> jitscan.cumsum(np.array([1, 2, 3], dtype=np.int32), dtype=np.int32, exclusive=True)
    array([0, 1, 3], dtype=int32)""",
)
cumprod = _running(
    "mul",
    "cumprod",
    "numpy",
    "Cumulative product, as ``numpy.cumprod``.",
    """    >>> jitscan.cumprod(np.array([1, 2, 3, 4], dtype=np.uint8))
    array([ 1,  2,  6, 24], dtype=uint64)""",
)
cummax = _running(
    "max",
    "cummax",
    "keep",
    "Running maximum, as ``numpy.maximum.accumulate`` (NaN propagates).",
    """    >>> jitscan.cummax(np.array([1.0, 3.0, 2.0, 5.0], dtype=np.float32))
    array([1., 3., 3., 5.], dtype=float32)""",
)
cummin = _running(
    "min",
    "cummin",
    "keep",
    "Running minimum, as ``numpy.minimum.accumulate`` (NaN propagates).",
    """    >>> jitscan.cummin(np.array([4, 2, 3, 1], dtype=np.int16))
    array([4, 2, 2, 1], dtype=int16)""",
)
nancumsum = _running(
    "add",
    "nancumsum",
    "numpy",
    "Cumulative sum treating NaN as zero, as ``numpy.nancumsum``.",
    """    >>> jitscan.nancumsum(np.array([np.nan, 1.0, np.nan, 2.0]))
    array([0., 1., 1., 3.])""",
    nan=0.0,
)
nancumprod = _running(
    "mul",
    "nancumprod",
    "numpy",
    "Cumulative product treating NaN as one, as ``numpy.nancumprod``.",
    """    >>> jitscan.nancumprod(np.array([2.0, np.nan, 3.0]))
    array([2., 2., 6.])""",
    nan=1.0,
)


def cumulative_sum(
    x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False, **kwargs: Any
) -> Any:
    """Cumulative sum as the Array API standard's ``cumulative_sum``.

    Parameters
    ----------
    x : array
        A 0-d array scans as one of one element (as NumPy's ``cumulative_sum``).
    axis : int, optional
        Required when ``x`` has more than one dimension.
    dtype : dtype, optional
        As :func:`cumsum`: bool and narrow integers become the default integer.
    include_initial : bool
        Put 0 first: ``x.shape[axis] + 1`` elements along the axis.
    **kwargs
        ``out``, ``backend``, ``variant`` and the knobs of :func:`cumsum`.

    Returns
    -------
    array
        As :func:`cumsum`.

    Raises
    ------
    ValueError
        N-D input without ``axis``.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> jitscan.cumulative_sum(np.array([1, 2, 3], dtype=np.int32), include_initial=True)
    array([0, 1, 3, 6])
    """
    return _cumulative(cumsum, x, axis, dtype, include_initial, kwargs)


def cumulative_prod(
    x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False, **kwargs: Any
) -> Any:
    """Cumulative product as the Array API standard's ``cumulative_prod``.

    Arguments, result and errors as :func:`cumulative_sum` (the initial value is 1).

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> jitscan.cumulative_prod(np.array([1.0, 2.0, 3.0]), include_initial=True)
    array([1., 1., 2., 6.])
    """
    return _cumulative(cumprod, x, axis, dtype, include_initial, kwargs)


def _cumulative(fn: Any, x: Any, axis: int | None, dtype: Any, include_initial: bool, kwargs: dict) -> Any:
    x = as_array(x)
    ndim = len(x.shape)
    if ndim == 0:  # as NumPy: a 0-d array scans as one element
        x, ndim = x.reshape(1), 1
    if axis is None:
        if ndim > 1:
            raise ValueError("for arrays of more than one dimension, axis= is required")
    elif ndim == 1:
        conventions.normalize_axis(axis, 1)
        axis = None
    return fn(x, axis, dtype, include_initial=include_initial, **kwargs)
