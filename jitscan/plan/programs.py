"""The programs of a prepared scan: its size classes, the variant and spec of each, and
the compiled programs by queue.

A mixin of :class:`~jitscan.plan.prepared.PreparedScan`. Size classes are
``tuning.SIZE_BOUNDS``'s, and one more for a whole-array reduction given no variant on a
GPU, whose inputs over ``tuning.RTS_REDUCE_BYTES`` run ``rts``.
"""

from __future__ import annotations

import functools
import warnings
from bisect import bisect_left
from dataclasses import replace
from typing import Any

from .. import variants
from ..backends.base import DeviceInfo
from ..kernels.spec import ScanSpec
from . import tuned, tuning

#: programs and launch functions a prepared scan keeps (per queue and size class)
QUEUE_ENTRIES = 64


def make_room(cache: dict) -> None:
    """Drop the oldest entries of a per-queue cache that is full (the backend keeps the program)."""
    while len(cache) >= QUEUE_ENTRIES:
        del cache[next(iter(cache))]


class Programs:
    """The program part of a prepared scan (see the module text).

    It reads the prepared scan's ``backend``, ``kind``, ``dtype``, ``monoid``, ``stats``,
    ``segmented``, ``index_fields``, ``outputs`` and its ``_variant``, ``_program_knobs``,
    ``_tunable``, ``_itemsize``, ``_queue``.
    """

    def _size_classes(self, info: DeviceInfo, auto_rts: bool, det_segmented: bool = False) -> None:
        """Sets the size classes; ``auto_rts``: a reduction (plain or by offsets) given no
        variant or chained knob, which runs rts on GPUs over RTS_REDUCE_BYTES (by offsets:
        RTS_SEG_REDUCE_BYTES; no tile
        waits on another, and the total is deterministic as it is; below, the chained
        scan's one pass, or pre-pass and pass, cost fewer launches: experiments/
        seg_reduce_small.py), and by offsets on CPUs at every size. Classes from
        ``_rts_class`` on run rts; a carry, which rts does not take, runs the chained one.
        ``det_segmented``: a deterministic segmented scan, whose tile on GPUs changes
        inside tuning's 2-16 MiB class (tuning.DET_SEGMENTED_SHAPES)."""
        bounds = tuning.SIZE_BOUNDS
        if det_segmented and info.is_gpu and not self._record:
            bounds = tuple(sorted({*bounds, *tuning.det_segmented_bounds(self.dtype, info)}))
        self._rts_class = len(bounds) + 1
        #: the variant a reduction of a large input on a GPU runs where none was asked for
        #: (tuning.RTS_REDUCE_BYTES): the one the registry picks for reductions
        self._reducer = variants.for_reductions()
        if auto_rts and info.is_gpu:
            split = tuning.RTS_SEG_REDUCE_BYTES if self.segmented else tuning.RTS_REDUCE_BYTES
            bounds = tuple(sorted({*bounds, split}))
            self._rts_class = bounds.index(split) + 1
        elif auto_rts and self.segmented:
            # a reduction by offsets on a CPU: rts at every size (its tiles store whole
            # segments without waiting on another)
            self._rts_class = 0
        #: tuning's size class (tuning.size_class) of each of this scan's classes
        self._tuning_class = tuple(tuning.size_class(b) for b in bounds) + (len(tuning.SIZE_BOUNDS),)
        #: the class bounds in elements: bisect_left(self._class_sizes, n) is n's class
        self._class_sizes = tuple(bound // self._itemsize for bound in bounds)

    def _variant_of(self, cls: int, chained: bool = False) -> variants.Variant:
        """The variant that runs size class ``cls`` (``chained``: a call with a carry)."""
        return self._reducer if cls >= self._rts_class and not chained else self._variant

    def spec(
        self, info: DeviceInfo, cls: int, row_tiles: bool = False, loads: str = "", chained: bool = False
    ) -> ScanSpec:
        """The program of size class ``cls`` (``size_class``) on a device.

        ``row_tiles``: plain scans of whole-tile rows; ``loads``: the input dtype the
        kernels convert as they load (empty: this scan's); ``chained``: the chained
        variant's program where the class would run rts (a call with a carry).
        """
        v = self._variant_of(cls, chained)
        variant = v.name
        key = (info, cls, row_tiles, loads, variant)
        spec = self._specs.get(key)
        if spec is None:
            segmented = "" if row_tiles else self.segmented
            tcls = self._tuning_class[cls]
            knobs = self._program_knobs
            if v.caps.deterministic == "always":  # the same bits as it is (rts)
                knobs = {k: v for k, v in knobs.items() if k != "deterministic"}
            made = functools.partial(
                tuning.spec_for,
                info,
                variant=variant,
                kind=self.kind,
                dtype=self.dtype,
                monoid=self.monoid,
                stats=self.stats,
                # the class's largest size (None: the unbounded class)
                n=self._class_sizes[cls] if cls < len(self._class_sizes) else None,
                segmented=segmented,
                row_tiles=row_tiles,
                in_dtype=loads,
                index_fields=self.index_fields,
                outputs=self.outputs,
            )
            tunable = self._tunable and v.caps.tile_state
            found = tuned.knobs_for(info, self.dtype, self.monoid, segmented, tcls) if tunable else {}
            spec = None
            if found:
                try:
                    spec = made(**(found | knobs))
                except (ValueError, TypeError) as exc:  # a table that no longer fits: the defaults
                    note = f"jitscan: tuned knobs {found} do not apply here ({exc}); ignored"
                    warnings.warn(note, stacklevel=2)
            if spec is None:
                spec = made(**knobs)
            if getattr(self, "head_keys", "") and spec.segmented == "flags":
                spec = replace(spec, head_keys=self.head_keys)
            self._specs[key] = spec
        return spec

    def bound(
        self, queue: Any, n: int, row_tiles: bool = False, loads: str = "", chained: bool = False
    ) -> variants.Bound:
        """The compiled program for ``n`` elements on ``queue``'s device (compiled on first use).

        ``chained``: the chained variant's, where ``n`` would run rts (a call with a carry).
        """
        cls = self.size_class(n)
        variant = self._variant_of(cls, chained)
        key = (queue, cls, row_tiles, loads, variant.name)
        bound = self._bounds.get(key)
        if bound is None:
            spec = self.spec(self.backend.device_info(queue), cls, row_tiles, loads, chained)
            make_room(self._bounds)
            bound = self._bounds[key] = variant.bind(spec, self.backend, queue)
        return bound

    def size_class(self, n: int) -> int:
        """The size class of ``n`` elements of this scan's dtype: ``tuning.size_class``'s, but
        for a reduction that runs rts from ``tuning.RTS_REDUCE_BYTES`` (one class more)."""
        return bisect_left(self._class_sizes, n)

    def variant_for(self, n: int, initial: bool = False) -> str:
        """The variant that runs a call of ``n`` elements (``initial``: one with ``initial=``)."""
        return self._variant_of(self.size_class(n), initial).name

    def source(self, n: int | None = None) -> str:
        """The generated source of the program that scans ``n`` elements (default: large inputs)."""
        cls = len(self._class_sizes) if n is None else self.size_class(n)
        spec = self.spec(self.backend.device_info(self._queue), cls)
        return self._variant_of(cls).source(spec, self.backend.dialect)
