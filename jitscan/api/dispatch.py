"""The dispatch: every public function's call, by the kind of its input, in one place.

A public function first looks its call up among its warm calls (``warm.py``); on a
miss it describes the call as a :class:`~jitscan.api.call.Call` and comes here.
:func:`dispatch` picks the input's kind once (``call.kind_of``), refuses what that kind
does not take (``call.refuse``, one table for every function), and hands the call to
the kind's handler: tuple values (``tuples.py``), Dask arrays (``chunked/``, which sits
above the runner and calls down into it for its chunks), Awkward Arrays (taken apart
into values and offsets, here), and arrays in memory (``runner.py``: complex, along an
axis, plain). The functions built on transforms (``selection.py``, ``runs.py``) take no
Call; they reach Dask's forms of themselves here too (:func:`lazy`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..operators import resolve
from . import awkward, chunked, conventions, runner, tuples, warm
from .call import AWKWARD, DASK, TUPLE, Call, kind_of, refuse
from .chunked import selection as _lazy_selection


def lazy() -> Any:
    """Dask's compaction, partition and runs (``chunked/selection.py``): what selection.py
    and runs.py hand a Dask array to, through here as every Dask call goes."""
    return _lazy_selection


def dispatch(x: Any, call: Call) -> Any:
    """``call`` on ``x``: its kind picked once, refused or run by that kind's handler."""
    kind, x = kind_of(x, call)
    refuse(call, kind, x)
    out = call.out
    if out is None or not call.reduces:
        return HANDLERS[kind](x, call)
    # a reduction's out= is its result put there, for every kind of input that takes one
    # (the warm calls of device arrays have the kernels write it where they can)
    return conventions.put_reduction(out, HANDLERS[kind](x, replace(call, out=None)))


def first(cache: dict, key: tuple, x: Any, call: Call) -> Any:
    """A public function's call that found no warm call under ``key``: made (where the key
    is new) and remembered, then the call, warm or through :func:`dispatch`."""
    return warm.through(cache, key, x, call, dispatch)


def _awkward(values: Any, call: Call) -> Any:
    """An Awkward Array of lists: its flat values scanned or reduced by its offsets, and the
    result given the lists' structure again (a missing value counts as the op's identity)."""
    ak = awkward.module_of(values)
    lists = awkward.flatten(ak, values)
    t = conventions.types(conventions.input_dtype(lists.flat), call.dtype, "keep")
    flat = lists.fill(resolve(call.op).identity_for(t.scan))
    res = runner.run(flat, replace(call, offsets=lists.offsets))
    if call.form == "segmented_reduce":
        return awkward.per_list(ak, res, lists, call.op)
    return awkward.unflatten(ak, res, lists)


#: the handler of each kind of input
HANDLERS = {TUPLE: tuples.run, DASK: chunked.run, AWKWARD: _awkward, **runner.HANDLERS}
