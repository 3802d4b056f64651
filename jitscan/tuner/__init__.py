"""Tuning on the user's own device: what ``jitscan.tune()`` and ``python -m jitscan tune`` run.

The search (``search``) times candidate tile shapes of the chained scan for each case
(dtype class, op class, segmented mode, size class; ``space``), keeps the fastest that
beat the built-in knobs, and writes them where every later scan on this device finds
them (``jitscan.plan.tuned``). ``compare`` times the built-in knobs against the table in
use.
"""

from __future__ import annotations

from .search import Outcome, Report, compare, tune

__all__ = ["Outcome", "Report", "compare", "tune"]
