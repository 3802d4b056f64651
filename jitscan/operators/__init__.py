"""Operators: what a scan combines with.

:class:`Monoid` is written in C (the built-ins and user expressions);
:class:`Operator` is written in Python, typed by Numba and lowered to C by jitscan.
"""

from .monoid import BUILTIN, CMUL64, Monoid, empty_value, resolve
from .python import Operator, operator

__all__ = ["BUILTIN", "CMUL64", "Monoid", "Operator", "empty_value", "operator", "resolve"]
