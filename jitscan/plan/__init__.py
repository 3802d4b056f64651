"""Prepared scans: everything but the array bound once (op, kind, variant, dtype, knobs, device).

``tuning`` picks tile shapes and knobs per device and size class; ``arrays`` moves
arrays in and out; ``prepared`` holds :class:`PreparedScan` and :func:`plan`.
"""

from __future__ import annotations

from . import arrays, tuning
from .knobs import KNOBS, check_knobs
from .prepared import PreparedScan, plan

__all__ = ["KNOBS", "PreparedScan", "arrays", "check_knobs", "plan", "tuning"]
