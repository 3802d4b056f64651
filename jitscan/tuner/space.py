"""The knobs a tuning run searches, per kind of device, and the cases it tunes.

The values of each knob (``jitscan.plan.tuned.TUNABLES`` documents them) are narrowed to
what the device can run: workgroup limits here, registers and local memory by
``tuning.spec_for`` itself, which refuses a candidate that does not fit (the search then
reports and skips it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import variants
from ..backends.base import DeviceInfo
from ..dtypes import lookup
from ..operators import Monoid, resolve
from ..plan import tuning

#: the custom op class's stand-in: a forward fill, which does not commute
FORWARD_FILL = Monoid("tune_ffill", combine="b != 0 ? b : a", identity=0)
#: op names a run takes: the built-in sum, and the custom class's stand-in
OPS: dict[str, str | Monoid] = {"add": "add", "custom": FORWARD_FILL}
#: segmented modes a run takes
SEGMENTED = ("", "flags")
#: the order the search walks the knobs in (the tile first: it matters most)
ORDER = ("vectors", "threads", "min_blocks", "lookback_width", "tile_state", "vector_width")


def axes(info: DeviceInfo, itemsize: int) -> dict[str, list[Any]]:
    """Every knob's candidate values on ``info``'s device for elements of ``itemsize`` bytes."""
    width = max(1, 16 // itemsize)
    if info.is_gpu and info.shuffle_width:
        threads = [t for t in (64, 128, 256, 512) if t <= info.max_threads]
        return {
            "vectors": [2, 4, 8, 16, 32],
            "threads": threads,
            "min_blocks": [0, 1, 2, 3, 4, 8],
            "lookback_width": [w for w in (32, 64, 128, 256) if w <= max(threads)],
            "tile_state": ["packed", "split"],
            "vector_width": sorted({width, max(1, width // 2)}),
        }
    if info.is_gpu:
        return {
            "vectors": [2, 4, 8, 16],
            "threads": [t for t in (64, 128, 256) if t <= info.max_threads],
            "tile_state": ["packed", "split"] if info.int64_atomics else ["split"],
        }
    return {  # CPUs: one long row per work-item (tuning.geometry), or short unrolled ones
        "vectors": [64, 128, 256, 512, 1024, 2048],
        "threads": [t for t in (1, 2, 4) if t <= info.max_threads],
        "tile_state": ["packed", "split"] if info.int64_atomics else ["split"],
    }


def fit(info: DeviceInfo, knobs: dict[str, Any]) -> dict[str, Any]:
    """``knobs`` made to fit where one knob's move takes another out of range: a CPU
    workgroup of several threads holds at most ``tuning.CPU_UNROLLED_ITEMS`` items a thread,
    and a look-back window is at most the workgroup."""
    knobs = dict(knobs)
    if not info.is_gpu and knobs.get("threads", 1) > 1:
        most = max(1, tuning.CPU_UNROLLED_ITEMS // knobs.get("vector_width", 1))
        knobs["vectors"] = min(knobs.get("vectors", most), most)
    if info.shuffle_width and "lookback_width" in knobs and "threads" in knobs:
        knobs["lookback_width"] = min(knobs["lookback_width"], knobs["threads"])
    return knobs


def defaults(info: DeviceInfo, dtype: str, segmented: str, n: int) -> dict[str, Any]:
    """The built-in knobs of a case at size ``n`` (where the search starts)."""
    d = lookup(np.dtype(dtype))
    geo = tuning.geometry(info, d, n, segmented, variants.default().name, "inclusive")
    return geo | {"tile_state": "packed" if info.int64_atomics else "split"}


@dataclass
class Case:
    """One case a run tunes: a dtype class, op class, segmented mode and size class.

    ``points`` are the (dtype, n) the search times candidates at: the run's dtypes of that
    class, each at the smallest, middle and largest power of two of that class within the
    run's range of sizes. ``confirm`` are those the winner is confirmed at: every power of
    two of the class in that range (a shape may win at both ends and lose between them).
    """

    itemsize: int
    op: str
    segmented: str
    size_class: int
    points: list[tuple[str, int]] = field(default_factory=list)
    confirm: list[tuple[str, int]] = field(default_factory=list)

    @property
    def name(self) -> str:
        from ..plan.tuned import case

        dtype = lookup(np.dtype(self.points[0][0]))
        return case(dtype, resolve(OPS[self.op]), self.segmented, self.size_class)


def cases(dtypes: list[str], ops: list[str], segmented: list[str], sizes: list[int]) -> list[Case]:
    """The cases of a run: every dtype class, op, segmented mode and size class its sizes meet.

    A segmented case is tuned with the built-in op only (its op class is the same).
    """
    found: dict[tuple, Case] = {}
    for dtype in dtypes:
        item = lookup(np.dtype(dtype)).packed_bytes
        for op in ops:
            for seg in segmented:
                if seg and op != "add":
                    continue
                # every power of two from the run's smallest size to its largest, so
                # that a class is timed at both of its ends even where the run's sizes
                # step over one (its knobs then hold across the whole class)
                lo, hi = min(sizes).bit_length() - 1, max(sizes).bit_length() - 1
                by_class: dict[int, list[int]] = {}
                for e in range(lo, hi + 1):
                    by_class.setdefault(tuning.size_class((1 << e) * item), []).append(1 << e)
                for cls, ns in by_class.items():
                    c = found.setdefault((item, op, seg, cls), Case(item, op, seg, cls))
                    # searched at both ends and the middle; confirmed at every size
                    c.points += [(dtype, n) for n in sorted({ns[0], ns[len(ns) // 2], ns[-1]})]
                    c.confirm += [(dtype, n) for n in ns]
    return list(found.values())
