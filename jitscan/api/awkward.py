"""Awkward Arrays of lists in and out of the segmented functions (optional: ``jitscan[awkward]``).

jitscan takes lists of numbers (``var * T`` and ``N * T``, T a real or integer type),
with missing values: ``None`` inside a list is skipped, as Awkward's reducers skip it
(the scan goes on past it and leaves ``None`` in its place), and a missing list stays
missing. Records, strings and deeper nesting are refused with a TypeError.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

SUPPORTED = "Awkward Arrays of lists of numbers (None allowed inside the lists and for whole lists)"


def module_of(values: Any) -> Any:
    """The awkward module if ``values`` is an Awkward Array, else None."""
    if not type(values).__module__.startswith("awkward"):
        return None
    import awkward as ak

    return ak


@dataclass
class Lists:
    """An Awkward Array of lists taken apart: flat values, list lengths, CSR offsets, what is missing."""

    flat: np.ndarray
    counts: np.ndarray
    offsets: np.ndarray
    #: per flat value, whether it was None (None when nothing was)
    missing_values: np.ndarray | None
    #: per list, whether the list was None (None when none was)
    missing_lists: np.ndarray | None

    def fill(self, value: Any) -> np.ndarray:
        """The flat values with ``value`` (the op's identity) where a value was None."""
        if self.missing_values is None:
            return self.flat
        return np.where(self.missing_values, np.asarray(value, self.flat.dtype), self.flat)


def flatten(ak: Any, values: Any) -> Lists:
    """Take apart an Awkward Array of lists of numbers; TypeError for anything else."""
    if ak.fields(values):
        raise TypeError(f"jitscan takes {SUPPORTED}; got records with fields {ak.fields(values)}")
    if values.ndim != 2:
        raise TypeError(f"jitscan takes {SUPPORTED}, of ndim 2; got ndim {values.ndim} ({ak.type(values)})")
    missing_lists = np.asarray(ak.is_none(values, axis=0))
    if missing_lists.any():
        values = ak.fill_none(values, [], axis=0)
    else:
        missing_lists = None
    counts = np.asarray(ak.num(values, axis=1), dtype=np.int64)
    inner = ak.flatten(values, axis=1)
    try:
        # a masked array where values are missing: its data keeps the values' dtype
        # (ak.fill_none would promote uint8 or float32 to 64 bits)
        got = ak.to_numpy(inner, allow_missing=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"jitscan takes {SUPPORTED}; got {ak.type(values)}") from exc
    missing_values = np.ma.getmaskarray(got) if np.ma.isMaskedArray(got) else None
    if missing_values is not None and not missing_values.any():
        missing_values = None
    flat = np.asarray(np.ma.getdata(got))
    if flat.ndim != 1 or flat.dtype.kind not in "biuf":
        raise TypeError(f"jitscan takes {SUPPORTED}; got {ak.type(values)}")
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return Lists(flat, counts, offsets, missing_values, missing_lists)


def unflatten(ak: Any, flat: Any, lists: Lists) -> Any:
    """A scan's flat result with the lists' structure, None where the input had None."""
    out = ak.Array(np.asarray(flat))
    if lists.missing_values is not None:
        out = ak.mask(out, ~lists.missing_values)
    out = ak.unflatten(out, lists.counts)
    if lists.missing_lists is not None:
        out = ak.mask(out, ~lists.missing_lists)
    return out


#: ops whose reduction of no value Awkward gives as None (its reducers' mask_identity)
MASKED_WHEN_EMPTY = ("min", "max")


def per_list(ak: Any, totals: Any, lists: Lists, op: Any = None) -> Any:
    """A reduction's result: one value per list (NumPy when none is None).

    None for a missing list, and, as ``ak.min``/``ak.max`` give it, for a list with no
    value of min or max; sums and products of no value are the identity, as ``ak.sum``.
    """
    totals = np.asarray(totals)
    missing = lists.missing_lists
    if op in MASKED_WHEN_EMPTY:
        present = lists.counts.copy()
        if lists.missing_values is not None:
            seen = np.concatenate([[0], np.cumsum(lists.missing_values, dtype=np.int64)])
            present -= seen[lists.offsets[1:]] - seen[lists.offsets[:-1]]
        empty = present == 0
        missing = empty if missing is None else (missing | empty)
    if missing is None or not missing.any():
        return totals
    return ak.mask(ak.Array(totals), ~missing)
