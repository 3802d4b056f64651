"""One prepared scan per call signature, so that a plain ``jitscan.cumsum(x)`` in a loop is fast.

The key is what the call binds: the input's array type and dtype, the op, kind,
variant, backend, result dtype, segmented mode, knobs, and whether it counts. Host
inputs (always ``numpy.ndarray`` here: see :func:`as_array`) also key on
``$JITSCAN_BACKEND``, which picks their backend (:func:`host_tag`; the shortcuts of
single functions key on it too). A device array's prepared scan is made
on that array's device; it then scans arrays of any device of its backend.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .. import backends
from ..dtypes import loaded_as
from ..operators import Monoid
from ..plan import PreparedScan, arrays, check_knobs
from . import conventions

#: prepared scans kept (the oldest is dropped beyond this)
LIMIT = 256
_PREPARED: dict[tuple, PreparedScan] = {}
#: the small caches of single functions' common calls (cumsum and its kin)
_SHORTCUTS: list[dict] = []


#: common calls each function remembers (in its shortcut())
SHORTCUT_LIMIT = 64


def remember(cache: dict, key: tuple, p: Any) -> None:
    """Keep a common call's prepared scan (or None), up to SHORTCUT_LIMIT of them per function."""
    if len(cache) < SHORTCUT_LIMIT:
        try:
            cache[key] = p
        except TypeError:  # an unhashable argument (a dtype= of a kind that is no key)
            pass


def shortcut() -> dict:
    """A cache for one function's common call, emptied with the others by :func:`clear`."""
    mine: dict = {}
    _SHORTCUTS.append(mine)
    return mine


def prepared(
    x: Any,
    op: str | Monoid,
    kind: str,
    variant: str | None,
    backend: str | None,
    dtype: Any,
    stats: bool,
    knobs: dict[str, Any],
    segmented: str = "",
) -> PreparedScan:
    """The prepared scan for a call on ``x`` (an array with a dtype), made on first use."""
    key: tuple = (type(x), x.dtype, op, kind, variant, backend, dtype, stats, segmented, *knobs.items())
    key += host_tag(x)
    try:
        return _PREPARED[key]
    except (KeyError, TypeError) as miss:
        keep = isinstance(miss, KeyError)  # TypeError: an unhashable argument, prepare without keeping
    check_knobs(knobs)  # only knobs: not the prepared scan's own arguments (device=, kind=, ...)
    b, on_device = arrays.pick_backend(x, backend)
    p = PreparedScan(
        arrays.result_dtype(np.dtype(x.dtype), dtype).name,
        op,
        kind=kind,
        variant=variant,
        backend=b.name,
        device=b.device_of(x) if on_device else None,
        segmented=segmented,
        stats=stats,
        **knobs,
    )
    if keep:
        if len(_PREPARED) >= LIMIT:
            del _PREPARED[next(iter(_PREPARED))]
        _PREPARED[key] = p
    return p


def call_key(x: Any, out: Any, knobs: dict[str, Any], *parts: Any) -> tuple:
    """A common call's key in a function's shortcut cache: the input's type and dtype,
    ``parts`` (the call's other arguments that pick its prepared scan), ``out``'s dtype,
    the knobs, and :func:`host_tag`. Tuple values key on each field's type and dtype and,
    where a field holds NumPy values (which sends them all to its backend), on
    ``$JITSCAN_BACKEND``."""
    t = type(x)
    if t is tuple:
        # a loop, not comprehensions: on Python 3.11 each comprehension is a frame more
        fields = []
        host = ()
        for f in x:
            k = type(f)
            fields.append((k, getattr(f, "dtype", None)))
            if k is np.ndarray:
                host = (os.environ.get("JITSCAN_BACKEND"),)
        return (t, tuple(fields), *parts, *knobs.items(), *host)
    return (
        t,
        getattr(x, "dtype", None),
        *parts,
        # an out= that is no array keys apart from none given (the long way refuses it)
        getattr(out, "dtype", None if out is None else type(out)),
        *knobs.items(),
        # host_tag(x), written out: a frame less on every warm call
        *((os.environ.get("JITSCAN_BACKEND"),) if t is np.ndarray else ()),
    )


def host_tag(x: Any) -> tuple:
    """What a key adds for host input: ``$JITSCAN_BACKEND``, which picks the backend it goes to."""
    return (os.environ.get("JITSCAN_BACKEND"),) if type(x) is np.ndarray else ()


def as_array(x: Any) -> Any:
    """``x`` itself if it is a ``numpy.ndarray`` or a backend's array, else ``numpy.asarray(x)``.

    Subclasses of ndarray (memmap, masked arrays) and other array-likes (a CPU tensor)
    become plain ndarrays, so that the cache keys see one host type.
    """
    if type(x) is np.ndarray or backends.for_array(x) is not None:
        return x
    return np.asarray(x)


def is_device_type(t: type) -> bool:
    """Whether ``t`` is the array type of one of jitscan's backends."""
    return backends.owner_of(t) is not None


def clear() -> None:
    """Forget every prepared scan (their compiled programs stay cached by the backends)."""
    _PREPARED.clear()
    for mine in _SHORTCUTS:
        mine.clear()


def shortcut_for(
    x: Any,
    op: str | Monoid,
    kind: str,
    rule: str,
    dtype: Any,
    out: Any,
    variant: str | None = None,
    backend: str | None = None,
    knobs: dict[str, Any] | None = None,
    segmented: str = "",
) -> Any:
    """The prepared scan that does the whole call on ``x``'s kind of input, or None.

    For NumPy arrays, and device arrays whose dtype is the scan's or one its kernels
    convert as they load (``dtypes.loaded_as``), when the result is the scan's (and
    ``out`` takes it as it is): the prepared scan converts such input itself, others
    convert beforehand. Keys of host input hold ``host_tag``.
    """
    host = type(x) is np.ndarray
    if not host and not is_device_type(type(x)):
        return None
    try:
        if out is not None:  # run() checks this first
            conventions.check_out_cast(conventions.types(conventions.input_dtype(x), dtype, rule).result, out)
        t = conventions.call_types(x, op, rule, dtype, out)
    except TypeError:
        return None
    loads = host or t.scan.numpy == x.dtype or loaded_as(np.dtype(x.dtype), t.scan) is not None
    if t.converted or not loads or (out is not None and not t.takes(out)):
        return None
    return prepared(x, op, kind, variant, backend, t.scan.name, False, knobs or {}, segmented)
