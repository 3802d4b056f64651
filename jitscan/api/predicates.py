"""Predicates of compaction and partition: a C expression over the element, or a Python
function of it, typed by Numba for the array's dtype and lowered to C (made once per
function, what it reads from outside, dtype and name)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..operators import expression

#: a predicate's names besides x: the element's index and the element count
PREDICATE_NAMES = ("x", "i", "n")
#: what a Python predicate is called in its program
PREDICATE_FUNCTION = "js_pred"
#: the C of each Python predicate on each array dtype, lowered once
_LOWERED: dict[tuple[Any, str], str] = {}


@dataclass(frozen=True)
class Predicate:
    """A predicate as a transform takes it: the expression, and the C functions it calls."""

    text: str
    functions: str = ""
    calls: tuple[tuple[str, int], ...] = ()


def _predicate(fn: str, predicate: Any, dtype: str, k: int = 0) -> Predicate:
    """A predicate on elements of ``dtype``: a C expression over ``x`` (the element), ``i``
    and ``n``, or a Python function of the element, typed by Numba and lowered to C (the
    ``k``-th of a call's: its C function's name)."""
    if callable(predicate):
        name = f"{PREDICATE_FUNCTION}{k or ''}"
        return Predicate(f"{name}(x)", _lowered(fn, predicate, dtype, name), ((name, 1),))
    if not isinstance(predicate, str):
        raise TypeError(
            f"jitscan.{fn}: a predicate is a C expression over x, i and n, or a Python function of x; "
            f"not {predicate!r}"
        )
    return _checked(fn, predicate)


@functools.lru_cache(maxsize=256)
def _checked(fn: str, predicate: str) -> Predicate:
    """A C expression's predicate, parsed once (a parse costs a call microseconds), so that a
    bad one is refused by name before anything is compiled (an error is not kept)."""
    expression.render(fn, predicate, PREDICATE_NAMES, ("x",), f"jitscan.{fn}: predicate")
    return Predicate(predicate)


def _function_key(fn: Any) -> Any:
    """What makes two predicates one: their code with the values they read from outside (a
    closure's cells, defaults and the globals they name, typed: 1 and 1.0 type a function
    apart; Numba takes them as constants), or the function itself where those cannot be
    compared."""
    code = getattr(fn, "__code__", None)
    try:
        cells = tuple(
            (type(c.cell_contents), c.cell_contents) for c in (getattr(fn, "__closure__", None) or ())
        )
        defaults = tuple((type(v), v) for v in (getattr(fn, "__defaults__", None) or ()))
        env = getattr(fn, "__globals__", {})
        named = tuple((k, type(env[k]), env[k]) for k in getattr(code, "co_names", ()) if k in env)
        key = ("code", code, cells, defaults, named)
        hash(key)
    except (TypeError, ValueError):  # unhashable or empty cells
        return ("id", id(fn), fn)
    return key if code is not None else ("id", id(fn), fn)


def _lowered(fn: str, predicate: Any, dtype: str, c_name: str = PREDICATE_FUNCTION) -> str:
    """The C function ``c_name(x)`` of a Python predicate on ``dtype`` (made once per pair)."""
    key = (_function_key(predicate), dtype, c_name)
    done = _LOWERED.get(key)
    if done is not None:
        return done
    from ..operators.lower import UnsupportedOperator, lower_predicate
    from ..operators.python import _numba

    numba = _numba()
    arg = numba.from_dtype(np.dtype(dtype))
    name = re.sub(r"[^A-Za-z0-9_]", "_", str(getattr(predicate, "__name__", "predicate")))[:64]
    try:
        dispatcher = numba.njit((arg,), error_model="numpy")(predicate)
    except numba.core.errors.NumbaError as exc:
        raise TypeError(f"jitscan.{fn}: Numba cannot type predicate {name!r} on {dtype}:\n{exc}") from None
    except TypeError as exc:  # not a Python function Numba can compile (a builtin, a class)
        raise TypeError(f"jitscan.{fn}: predicate {name!r} is not a Python function of x: {exc}") from None
    ret = dispatcher.overloads[(arg,)].signature.return_type
    if not isinstance(ret, (numba.types.Boolean, numba.types.Integer)):
        raise TypeError(
            f"jitscan.{fn}: predicate {name!r} returns {ret} on {dtype}, not a bool: it is no predicate"
        )
    try:
        text = lower_predicate(predicate, dispatcher.overloads[(arg,)], arg, name, c_name).text
    except UnsupportedOperator as exc:
        raise TypeError(f"jitscan.{fn}: {exc}") from None
    if len(_LOWERED) > 256:
        _LOWERED.clear()
    _LOWERED[key] = text
    return text


__all__ = ["PREDICATE_FUNCTION", "PREDICATE_NAMES", "Predicate", "_predicate"]
