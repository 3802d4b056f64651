"""The knobs every scan accepts, and their check before anything reaches a compiler."""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from . import tuning

#: keyword-only tuning knobs every scan accepts (see :func:`jitscan.scan`)
KNOBS = (
    "tile_state",
    "spin_limit",
    "spin_timeout",
    "simulate_blocking",
    "lookback_width",
    "threads",
    "vectors",
    "vector_width",
    "min_blocks",
    "deterministic",
    "check",
)
#: knobs that are launch arguments, or say how a call runs; the rest shape the compiled program
LAUNCH_KNOBS = ("spin_limit", "spin_timeout", "simulate_blocking", "check")
#: when device offsets found bad raise (plan.forms): at the next call by offsets on the
#: queue (the call does not wait), or at the call itself ("now": it waits for the check)
CHECKS = ("deferred", "now")


#: knobs that take an integer (None: the default)
INTEGER_KNOBS = tuple(k for k in KNOBS if k not in ("tile_state", "deterministic", "spin_timeout", "check"))


def check_knobs(knobs: dict[str, Any]) -> None:
    """Refuse unknown knobs, and knob values of the wrong type (before anything reaches a compiler)."""
    unknown = set(knobs) - set(KNOBS)
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {sorted(unknown)}; tuning knobs: {', '.join(KNOBS)}")
    for name, value in knobs.items():
        if value is None:
            continue
        if name in INTEGER_KNOBS and (isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral)):
            raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
        if name in INTEGER_KNOBS and value < 0:
            raise ValueError(f"{name} must not be negative, got {value}")
        if name == "spin_timeout":
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
                raise TypeError(
                    f"spin_timeout must be a number of seconds, got {value!r} ({type(value).__name__})"
                )
            if not 0 < value <= tuning.MAX_SPIN_TIMEOUT:
                raise ValueError(
                    f"spin_timeout must be more than 0 and at most {tuning.MAX_SPIN_TIMEOUT:g} seconds, "
                    f"got {value}"
                )
        if name == "check" and value not in CHECKS:
            raise ValueError(f"check must be one of {', '.join(map(repr, CHECKS))}, got {value!r}")
        if name == "tile_state" and not isinstance(value, str):
            raise TypeError(f"tile_state must be a str ('packed' or 'split'), got {value!r}")
