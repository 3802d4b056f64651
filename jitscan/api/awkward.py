"""Awkward Arrays of lists in and out of the segmented functions (optional: ``jitscan[awkward]``)."""

from __future__ import annotations

from typing import Any

import numpy as np


def module_of(values: Any) -> Any:
    """The awkward module if ``values`` is an Awkward Array, else None."""
    if not type(values).__module__.startswith("awkward"):
        return None
    import awkward as ak

    return ak


def flatten(ak: Any, values: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The flat values, the list lengths and the CSR offsets of an Awkward Array of lists."""
    if values.ndim != 2:
        raise ValueError(f"jitscan takes Awkward Arrays of lists of numbers (ndim 2), got ndim {values.ndim}")
    counts = np.asarray(ak.num(values, axis=1), dtype=np.int64)
    flat = np.asarray(ak.to_numpy(ak.flatten(values, axis=1)))
    return flat, counts, np.concatenate([[0], np.cumsum(counts)])


def unflatten(ak: Any, flat: Any, counts: np.ndarray) -> Any:
    """``flat`` with the list structure of ``counts``."""
    return ak.unflatten(flat, counts)
