"""Calls of a prepared scan of tuple values: a tuple of arrays in, one array per output out.

A mixin of :class:`~jitscan.plan.prepared.PreparedScan` (its ``_call`` hands tuple values
here): the fields' arrays put where the kernels read them (index fields are not arrays),
one result per field of ``outputs``, the identities of empty inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends.base import Backend
from ..variants.base import Fields
from ..variants.segments import NONE
from . import arrays
from .forms import heed_alarm, raise_alarm


class FieldCalls:
    """The tuple-value part of a prepared scan (see the module text).

    It reads the prepared scan's ``backend``, ``dtype`` (a ``Record``), ``monoid``,
    ``segmented``, ``index_fields``, ``outputs`` and its ``_reduce`` / ``_device``, and calls
    its ``_segments``, ``bound``, ``_whole_rows`` and ``launch``.
    """

    def _call_fields(
        self, xs: Any, out: Any, flags: Any, offsets: Any, row_len: int, stats: dict | None
    ) -> tuple[Any, ...]:
        """A scan of tuple values: an array per field in (None at index fields), per output out.

        Returns one result per field of ``outputs``: arrays of ``x``'s kind, or for a plain
        reduction NumPy scalars (host input) or 0-d device arrays.
        """
        fields = self.dtype.fields
        if not isinstance(xs, (tuple, list)) or len(xs) != len(fields):
            raise TypeError(f"a scan of {self.dtype.name} values takes a tuple of {len(fields)} arrays")
        b = self.backend
        given = [x for k, x in enumerate(xs) if k not in self.index_fields]
        _, on_device = arrays.pick_backend(given[0], b.name)
        if any(b.owns(x) != on_device for x in given[1:]):
            raise TypeError("the arrays of a tuple value must all be device arrays or all host arrays")
        shapes = {tuple(np.shape(x)) if not hasattr(x, "shape") else tuple(x.shape) for x in given}
        if len(shapes) > 1:
            raise ValueError(f"the arrays of a tuple value differ in shape: {sorted(shapes)}")
        queue = b.queue_of(given[0]) if on_device else b.queue_for(self._device)
        data: list[Any] = []
        first: arrays.Input | None = None
        n = -1
        for k, (x, d) in enumerate(zip(xs, fields, strict=True)):
            if k in self.index_fields:
                data.append(None)
                continue
            flat = on_device and len(x.shape) == 1 and x.flags.c_contiguous
            if flat and x.dtype == d.numpy and b.aligned(x):
                m, arr = int(x.shape[0]), x  # as the kernels take it: no view to make
            else:
                inp = arrays.to_input(x, b, on_device, d, queue)
                m, arr = inp.n, inp.data
                first = first or inp
            if n >= 0 and m != n:
                raise ValueError(f"the arrays of a tuple value differ in size: {n} and {m}")
            n = m
            data.append(arr)
        if self.segmented and first is None:  # what _segments reads the call's side from
            first = arrays.Input(b, queue, on_device, given[0], n, fields[0])
        if first is None:
            seg, length = NONE, 1 if self._reduce else n
        else:
            seg, length = self._segments(first, flags, offsets, row_len)
        reduce = self._reduce
        shape = (1,) if reduce and not self.segmented else (length,)
        outs = self._field_outs(out, b, on_device, shape)
        if n == 0 or length == 0:
            # nothing to scan: empty results, or the identity for every (empty) reduction
            ident = self.monoid.identity_for(fields)
            res = []
            for k, o in zip(self.outputs, outs, strict=True):
                host = np.full(shape if reduce else (0,), ident[k] if reduce else 0, fields[k].numpy)
                if o is not None:
                    if on_device:
                        b.copy(o, b.to_device(host, queue))
                    else:
                        o[...] = host
                    res.append(o)
                else:
                    res.append(b.to_device(host, queue) if on_device else host)
            return self._field_results(res, on_device, out)
        alarm = heed_alarm(b, queue, n) if self.segmented == "offsets" else None
        seg = self._whole_rows(seg, queue, n)
        dsts = [None] * len(fields)
        for k, o in zip(self.outputs, outs, strict=True):
            ok = (
                o is not None
                and on_device
                and b.aligned(o)
                and not any(b.shares_memory(o, a) for a in data if a is not None)
            )
            dsts[k] = o if ok else b.empty(shape, fields[k].numpy, queue)
        counters = self.launch(Fields(tuple(data)), Fields(tuple(dsts)), n, seg, queue=queue)
        if alarm is not None and not seg.checked and self.knobs.get("check") == "now":
            raise_alarm(b, queue, alarm, n, False, offsets)
        res = []
        for k, o in zip(self.outputs, outs, strict=True):
            r = dsts[k] if on_device else b.to_host(dsts[k])
            if o is not None and r is not o:
                if on_device:
                    b.copy(o, r)
                else:
                    o[...] = r
                r = o
            res.append(r)
        if stats is not None and counters is not None:
            stats.clear()
            stats.update(counters)
        return self._field_results(res, on_device, out)

    def _field_outs(self, out: Any, b: Backend, on_device: bool, shape: tuple[int, ...]) -> list[Any]:
        """``out=`` of a tuple scan: an array per output field (or None each)."""
        if out is None:
            return [None] * len(self.outputs)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outs) != len(self.outputs):
            raise ValueError(f"out= takes {len(self.outputs)} arrays, one per output field, not {len(outs)}")
        for k, o in zip(self.outputs, outs, strict=True):
            arrays.check_out(o, b, on_device, self.dtype.fields[k], shape)
        return outs

    def _field_results(self, res: list[Any], on_device: bool, out: Any) -> tuple[Any, ...]:
        if self._reduce and not self.segmented and out is None:
            res = [self.backend.scalar(r) if on_device else r[0] for r in res]
        return tuple(res)
