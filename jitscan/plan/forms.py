"""The common call of every other form: segmented scans and reductions, and tuple values.

A mixin of :class:`~jitscan.plan.prepared.PreparedScan`. Where the arrays of a call are
device arrays the kernels take as they are (C-contiguous, aligned, of a dtype the
kernels load; flags of one byte, offsets of 8-byte integers, each at the start of its
buffer; ``out`` a 1-D array of the result's length apart from every input), the call
does what a plain scan's common call does: find the launch function of its queue and
size class (made on first use, then kept) and launch. It never waits for the device.

Device offsets are checked by the kernels, not the host (``variants.segments``): a bad
offset raises the queue's alarm (``backends.Alarm``), no kernel then reads the offsets
past it, and the host learns of it at a call by offsets on that queue once the flag has
reached it (the next one, or on an OpenCL GPU, whose flag is copied back at most once an
interval, a later one in a loop), which
raises the error (or at that call, with the knob ``check="now"``, which waits for the
check). Every other call returns None, having done nothing, and takes the general path.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections.abc import Callable
from typing import Any

import numpy as np

from ..variants.base import Fields
from ..variants.segments import Segments, offsets_error
from . import arrays
from .programs import make_room

#: the dtypes of offsets the kernels read as they are (as uint64: a negative int64 reads
#: huge, which the check finds)
_OFFSET_TYPES = (np.dtype(np.int64), np.dtype(np.uint64))


def heed_alarm(backend: Any, queue: Any, n: int) -> Any:
    """The queue's alarm, after raising what it holds: the error of an earlier call's bad
    offsets (read on its word once the flag is seen; both are then cleared)."""
    alarm = backend.alarm(queue)
    if alarm.rung():
        raise_alarm(backend, queue, alarm, n, True)
    return alarm


def raise_alarm(backend: Any, queue: Any, alarm: Any, n: int, earlier: bool, offsets: Any = None) -> None:
    """Raise the word's error where it is set (waits for the queue); clear the alarm.

    ``offsets``: the call's own (``check="now"``), read back to say what is wrong with
    them in the host check's words, values included.
    """
    with backend.lock(queue):  # two threads that saw the flag: one reads and clears it
        word = int(backend.read_u32(alarm.word, 1, queue)[0])
        alarm.clear()
    if word:
        if offsets is not None:
            arrays.check_offsets(offsets, n)  # raises, naming the first bad index and its value
            earlier = True  # these are good: an earlier call's were not (its flag unseen till now)
        raise offsets_error(word, n, earlier)


class FormCalls:
    """The common call of segmented forms and tuple values (see the module text).

    It reads the prepared scan's ``backend``, ``segmented``, ``dtype``, ``outputs``,
    ``index_fields``, ``head_keys``, ``launch_args``, ``knobs`` and its ``_loads``, ``_np``, ``_record``,
    ``_plain``, ``_reduce``, ``_class_sizes``, ``_variant``, and calls ``bound``, ``spec``,
    ``launch`` and ``_host_queue_for``.
    """

    def _form_calls(self) -> None:
        """Sets ``_form_common``, the other forms' common call: compiled where the backend
        compiles one (Backend.form_call: not for offsets checked at the call), which
        ``_form_remember`` tells what the Python call launched; else :meth:`_form_python`
        itself."""
        self._form_common: Any = self._form_python
        self._form_remember: Any = None
        self._key_dtype = np.dtype(self.head_keys) if self.head_keys else None
        #: a tuple value's fields as a call checks them: each one's dtype (None: an index
        #: field, not in memory), and the written ones' (place, dtype)
        self._field_kinds: tuple[Any, ...] = ()
        self._out_kinds: tuple[tuple[int, Any], ...] = ()
        if self._record:
            index, fields = self.index_fields, self.dtype.fields
            self._field_kinds = tuple(None if k in index else f.numpy for k, f in enumerate(fields))
            self._out_kinds = tuple((k, fields[k].numpy) for k in self.outputs)
        if not self._plain and self.knobs.get("check") != "now":
            values: dict[str, Any] = {}
            if self._record:  # each field's dtype (None: an index field), the written ones'
                values = {"fields": self._field_kinds, "outputs": tuple(d for _, d in self._out_kinds)}
            self._form_common, self._form_remember = self.backend.form_call(
                self._form_python, self._np, self._reduce, self._loads, **values
            )

    def _host_segmented(self, x: np.ndarray, out: Any, offsets: np.ndarray) -> np.ndarray | None:
        """The common segmented call on a CPU device: a scan by offsets of NumPy arrays the
        kernels read and write in place, without the general path's moves; None where
        ``x`` or ``out`` are not such arrays (the general path then takes the call)."""
        loads = self._loads
        if x.dtype not in loads:
            return None
        n = x.size
        queue = self._host_queue_for(n)
        common = self.backend.host_operands(x, out, self._np, False, queue, loads) if n else None
        if common is None:
            return None
        src, dst, result = common
        # checked on the host and read in place, as the general path's offsets
        inp = arrays.Input(self.backend, queue, False, src, n, self.dtype, x)
        dev, _ = arrays.device_offsets(offsets, inp)
        heed_alarm(self.backend, queue, n)  # an earlier call's bad device offsets, on this queue
        self.launch(src, dst, n, Segments(offsets=dev, checked=True), queue=queue, loads=loads[x.dtype])
        self.backend.host_done(dst, queue, x.nbytes)
        return result

    def _form_python(self, x: Any, out: Any, flags: Any, offsets: Any, row_len: Any, carry: Any) -> Any:
        """The call on device arrays the kernels take as they are, or None (see the module
        text): ``_form_common`` where the backend compiles none (Backend.form_call), else
        what the compiled one leaves to Python, which it then tells what the call launched."""
        b = self.backend
        t = b.array_type
        if self._record:
            given = self._given_fields(x, t)
            if given is None:
                return None
            first, n, arrays = given
            src: Any = Fields(arrays)
        else:
            # of any shape, read in C order as the general path flattens it (an axis's lanes)
            if type(x) is not t or x.dtype not in self._loads or not x.size or not b.ready(x):
                return None
            first, n, src = x, x.size, x
        mode = self.segmented
        length = n
        seg_array = None
        if mode == "offsets":
            if flags is not None or row_len or not _device_words(offsets, t, b):
                return None
            seg_array = offsets
            if self._reduce:
                length = offsets.size - 1
        elif mode == "flags":
            if offsets is not None or row_len:
                return None
            if self.head_keys:  # keys, read in place of flags (scan_by_key)
                if not _device_keys(flags, t, b, n, self._key_dtype):
                    return None
            elif not _device_bytes(flags, t, b, n):
                return None
            seg_array = flags
        elif mode == "rows":
            if flags is not None or offsets is not None or type(row_len) is not int or row_len <= 0:
                return None
            if n % row_len:
                return None
        elif flags is not None or offsets is not None or row_len:
            return None
        elif self._reduce:
            length = 1
        if not length:
            return None
        queue = b.queue_of(first)
        if self._record:
            dst = self._field_dsts(out, t, length, src, seg_array, queue)
        else:
            # a scan of rows writes the input's shape (an axis scan's result as it is)
            shape = x.shape if mode == "rows" else (length,)
            dst = _dst(b, out, t, self._np, shape, x, seg_array, queue)
        if dst is None:
            return None
        load = "" if self._record else self._loads[x.dtype]
        cls = bisect_left(self._class_sizes, n)
        go = self._form_launchers.get((queue, cls, load))
        if go is None:
            go = self._form_launcher(queue, n, load)
        go(src, dst, n, seg_array, row_len, carry)
        if self._form_remember is not None and (carry is None or type(carry) is bytes):
            # the compiled call takes a tuple value's plain scans ("fields"), not its segments
            form = ("fields" if not mode else "") if self._record else mode
            sizes = self._class_sizes
            lo, hi = sizes[cls - 1] if cls else 0, sizes[cls] if cls < len(sizes) else sys.maxsize
            self._form_remember(queue, lo, hi, load, form, *go.which(row_len))
        if self._record:
            res = tuple(dst.arrays[k] for k in self.outputs)
            if self._reduce and not mode and out is None:
                res = tuple(b.scalar(r) for r in res)
            return res
        return b.scalar(dst) if self._reduce and not mode and out is None else dst

    def _given_fields(self, xs: Any, t: type) -> tuple[Any, int, tuple[Any, ...]] | None:
        """(an array of the tuple value, its length, the arrays as kernels take them: None at
        index fields) where every field's array is as the kernels take it; else None."""
        kinds = self._field_kinds
        if type(xs) is not tuple or len(xs) != len(kinds):
            return None
        ready = self.backend.ready
        first, n = None, -1
        arrays: list[Any] = []
        for a, d in zip(xs, kinds, strict=True):
            if d is None:  # a position, not an array (jitscan.index)
                arrays.append(None)
                continue
            # (a dtype is most often the very object: "is" before NumPy's comparison)
            if type(a) is not t or (a.dtype is not d and a.dtype != d) or a.ndim != 1 or not ready(a):
                return None
            if n < 0:
                first, n = a, a.size
            elif a.size != n:
                return None
            arrays.append(a)
        return (first, n, tuple(arrays)) if n > 0 else None

    def _field_dsts(self, out: Any, t: type, length: int, xs: Fields, seg_array: Any, queue: Any) -> Any:
        """The result arrays of a tuple value (Fields: one per written field), or None: a
        given one must be 1-D of ``length``, as the kernels take it and apart from every
        input."""
        b = self.backend
        outs: list[Any] = [None] * len(self._field_kinds)
        if out is None:
            for k, d in self._out_kinds:
                outs[k] = b.empty((length,), d, queue)
            return Fields(tuple(outs))
        given = out if type(out) is tuple else (out,)
        if len(given) != len(self._out_kinds):
            return None
        ready, shares = b.ready, b.shares_memory
        inputs = [a for a in xs.arrays if a is not None]
        if seg_array is not None:
            inputs.append(seg_array)
        for (k, d), o in zip(self._out_kinds, given, strict=True):
            if type(o) is not t or (o.dtype is not d and o.dtype != d) or o.ndim != 1 or o.size != length:
                return None
            if not ready(o):
                return None
            for a in inputs:
                if shares(o, a):
                    return None
            outs[k] = o
        return Fields(tuple(outs))

    def _form_launcher(self, queue: Any, n: int, load: str) -> Callable[..., None]:
        """``go(src, dst, n, seg_array, row_len, carry)`` for ``n`` elements on ``queue``:
        made once per queue, size class and load, then kept (the variant's form launcher,
        Variant.form_launcher, behind the alarm of calls by offsets)."""
        cls = bisect_left(self._class_sizes, n)
        base, mode, b = self.launch_args, self.segmented, self.backend
        now = self.knobs.get("check") == "now"
        # the programs, compiled on first use: rows of whole tiles run the plain chained
        # program, which restarts at each row (the one by row length may never be needed)
        made: dict[bool, Any] = {}

        def launcher_of(rows: bool) -> Any:
            got = made.get(rows)
            if got is None:
                if rows and not self._variant.rows_ok:
                    got = (None, None)
                else:
                    bound = self.bound(queue, n, rows, load)
                    got = (bound.spec.tile, bound.variant.form_launcher(bound, queue, base))
                made[rows] = got
            return got

        def which(row_len: int) -> tuple[bool, int, Any]:
            """What a call without a carry of ``row_len`` launches: whether rows of whole
            tiles, their program's tile (0: none), the launch function (compiled calls)."""
            if mode == "rows":
                tile, whole = launcher_of(True)
                if whole is not None:
                    if row_len % tile == 0:
                        return True, tile, whole
                    return False, tile, launcher_of(False)[1]
            return False, 0, launcher_of(False)[1]

        if mode == "offsets":
            alarm = b.alarm(queue)
            rung = alarm.rung

            def go(src: Any, dst: Any, n: int, seg_array: Any, row_len: int, carry: Any) -> None:
                if rung():
                    raise_alarm(b, queue, alarm, n, True)  # an earlier call's bad offsets
                launcher_of(False)[1](src, dst, n, seg_array, 0, carry)
                if now:
                    raise_alarm(b, queue, alarm, n, False, seg_array)

        elif mode == "rows":

            def go(src: Any, dst: Any, n: int, seg_array: Any, row_len: int, carry: Any) -> None:
                if carry is None:  # the plain program of whole rows takes no carry
                    whole, _, launch = which(row_len)
                    if whole:
                        return launch(src, dst, n, None, row_len, None)
                launcher_of(False)[1](src, dst, n, None, row_len, carry)

        else:

            def go(src: Any, dst: Any, n: int, seg_array: Any, row_len: int, carry: Any) -> None:
                launcher_of(False)[1](src, dst, n, seg_array, row_len, carry)

        go.which = which  # type: ignore[attr-defined]
        make_room(self._form_launchers)
        self._form_launchers[(queue, cls, load)] = go
        return go


def _device_words(offsets: Any, t: type, b: Any) -> bool:
    """Whether ``offsets`` are device offsets the kernels read as they are."""
    return (
        type(offsets) is t
        and offsets.ndim == 1
        and offsets.size > 0
        and offsets.dtype in _OFFSET_TYPES
        and b.whole(offsets)
    )


def _device_bytes(flags: Any, t: type, b: Any, n: int) -> bool:
    """Whether ``flags`` are device head flags the kernels read as they are (one byte each)."""
    return (
        type(flags) is t
        and flags.size == n
        and flags.dtype.itemsize == 1
        and flags.dtype.kind in "biu"
        and b.whole(flags)
    )


def _device_keys(keys: Any, t: type, b: Any, n: int, dtype: np.dtype) -> bool:
    """Whether ``keys`` are device keys the kernels read in place of flags as they are (a
    new segment where a key differs from the one before it): ``n`` of ``dtype``, contiguous,
    aligned, at the start of their buffer."""
    return (
        type(keys) is t and keys.size == n and keys.dtype.name == dtype and b.whole(keys) and b.aligned(keys)
    )


def _dst(
    b: Any, out: Any, t: type, dtype: np.dtype, shape: tuple[int, ...], x: Any, seg_array: Any, queue: Any
) -> Any:
    """``out`` where the kernels write it as it is (a new array of ``shape`` for None; a
    given one of that shape, or flat), else None."""
    if out is None:
        return b.empty(shape, dtype, queue)
    if (
        type(out) is not t
        or out.dtype != dtype
        or (out.shape != shape and (out.ndim != 1 or out.size != x.size or len(shape) == 1))
        or not b.ready(out)
        or (x is not None and b.shares_memory(out, x))
        or (seg_array is not None and b.shares_memory(out, seg_array))
    ):
        return None
    return out
