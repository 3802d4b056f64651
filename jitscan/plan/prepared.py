"""PreparedScan: a scan with everything but the array bound once.

Making one validates the op, dtype, variant, kind, segmented mode and knobs against
the device and settles the launch arguments. Calling one only sizes the input, picks
the program of its size class (compiled on first use, then kept), allocates the result
when no ``out`` is given, and launches. The public functions (``jitscan.cumsum`` and
the rest) keep one prepared scan per call signature, so a plain call in a loop takes
the same path.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

import numpy as np

from .. import backends, variants
from ..backends.base import Backend
from ..dtypes import INPUTS, Record, loaded_as, value_type
from ..kernels.spec import KINDS, SEGMENTED, LaunchArgs, ScanSpec, check_choice
from ..operators import Monoid, Operator, empty_value, resolve
from ..variants.segments import NONE, Segments
from . import arrays, pieces, tuned, tuning
from .carries import Carries
from .fields import FieldCalls
from .forms import FormCalls, heed_alarm, raise_alarm
from .knobs import KNOBS, LAUNCH_KNOBS, check_knobs
from .programs import QUEUE_ENTRIES, Programs, make_room


def check_form(kind: str, variant: str, segmented: str) -> None:
    """Raise ValueError for a kind, variant and segmented mode that make no scan together."""
    if kind == "reduce" and segmented not in ("", "offsets"):
        raise ValueError(f"kind='reduce' takes segments as offsets, not {segmented!r}")
    # the variant's refusals (variants.lacking), the same as every public function's
    variants.require(variant, *(["reduce"] if kind == "reduce" else []), *([segmented] if segmented else []))


def _long_way(x: Any, out: Any, carry: Any) -> None:
    """No plain common call: other forms take FormCalls', a Python operator is checked first."""


def _no_form(x: Any, out: Any, flags: Any, offsets: Any, row_len: int, carry: Any) -> None:
    """No common call of another form: a plain scan has its own, a Python operator is checked first."""


class PreparedScan(Programs, FieldCalls, FormCalls, Carries):
    """A reusable scan: op, kind, variant, dtype, segmented mode, knobs and backend bound once.

    Make one with :func:`jitscan.plan`. Call it with an array of any size (CuPy and
    PyOpenCL arrays stay on their device; NumPy input goes to the device and back)::

        scan = jitscan.plan("float32", "add", backend="cupy")
        for x in batches:
            y = scan(x)             # a new result array
            scan(x, out=y)          # or into one you keep

    Attributes
    ----------
    backend : Backend
    dtype : DType
        The scan's element type; inputs of other types are converted on the device,
        most of them by the kernels as they load (``dtypes.loaded_as``).
    monoid : Monoid
    variant, kind, segmented : str
        ``variant``: the one asked for, or the default chained one; a reduction given
        none runs ``rts`` for large inputs on GPUs (``variant_for`` says which runs).
    launch_args : LaunchArgs
        Kind, spin limit and simulated blocking, passed to every launch.
    common : callable
        ``common(x, out, None)`` is ``scan(x, out)`` where both are device arrays the
        kernels take as they are, in one function (compiled on CUDA where the extension
        is built: Backend.common_call); for any other call it returns None, having done
        nothing.
    """

    def __init__(
        self,
        dtype: Any,
        op: str | Monoid = "add",
        *,
        kind: str = "inclusive",
        variant: str | None = None,
        backend: str | None = None,
        device: Any = None,
        segmented: str = "",
        stats: bool = False,
        index_fields: tuple[int, ...] = (),
        outputs: tuple[int, ...] = (),
        head_keys: str = "",
        **knobs: Any,
    ) -> None:
        check_knobs(knobs)
        #: a scan by flags whose flags are keys of this dtype, a head where one changes
        #: (ScanSpec.head_keys: scan_by_key); empty: flags
        self.head_keys = head_keys
        if head_keys and segmented != "flags":
            raise ValueError("head_keys= is for a scan segmented by flags")
        self.kind = check_choice("kind", kind, KINDS)
        asked = variant
        if (
            variant is None
            and kind == "reduce"
            and segmented == "offsets"
            and isinstance(value_type(dtype), Record)
        ):
            variant = variants.for_reductions().name
        self.variant = variant = variants.default().name if variant is None else variant
        self._variant = variants.get(variant)
        self.segmented = check_choice("segmented mode", segmented, SEGMENTED)
        self.monoid = resolve(op)
        self.dtype = value_type(dtype)
        #: a tuple value (dtypes.Record): which fields are the index, which are written
        self._record = isinstance(self.dtype, Record)
        if self._record and not isinstance(self.monoid, Operator):
            raise TypeError("tuple values are combined by an operator written in Python (jitscan.operator)")
        self.index_fields = tuple(index_fields)
        self.outputs = tuple(outputs) or (tuple(range(len(self.dtype.fields))) if self._record else ())
        self.stats = bool(stats)
        self.knobs = dict(knobs)
        check_form(kind, variant, segmented)
        self.backend: Backend = backends.require(backend) if backend is not None else backends.default()
        self._device = device
        self._queue = self.backend.queue_for(device)
        info = self.backend.device_info(self._queue)
        self.launch_args: LaunchArgs = tuning.launch_for(
            info,
            variant=variant,
            kind=kind,
            spin_limit=knobs.get("spin_limit"),
            simulate_blocking=knobs.get("simulate_blocking"),
            spin_timeout=knobs.get("spin_timeout"),
        )
        self._program_knobs = {k: v for k, v in knobs.items() if k not in LAUNCH_KNOBS}
        #: whether tuned tables apply (plan.tuned): chained scans of scalar values, not
        #: deterministic ones, and no tile-shape knob given by the caller
        self._tunable = (
            self._variant.caps.tile_state
            and not isinstance(self.dtype, Record)
            and not knobs.get("deterministic")
            and not (set(self._program_knobs) & tuned.SHAPE_KNOBS)
        )
        self._itemsize = self.dtype.packed_bytes
        # a reduction (whole, or by offsets) given no variant runs by size (_size_classes);
        # one of tuple values by offsets runs the variant picked for reductions
        auto_rts = asked is None and kind == "reduce" and segmented in ("", "offsets") and not self._record
        self._size_classes(
            info,
            auto_rts and not stats and not set(knobs) - {"deterministic", "check"},
            bool(segmented) and bool(knobs.get("deterministic")),
        )
        self._specs: dict[tuple, ScanSpec] = {}
        #: compiled programs and launch functions by queue (and size class): at most
        #: QUEUE_ENTRIES, the oldest dropped first, so that queue after queue stays bounded
        self._bounds: dict[tuple, variants.Bound] = {}
        #: the common call's launch functions (Variant.plain_launcher), by queue and size class
        self._plain_launchers: dict[tuple, Any] = {}
        #: the other forms' common launch functions (FormCalls), by queue and size class
        self._form_launchers: dict[tuple, Any] = {}
        # validate now, on the plan's device, every size class: calls then check nothing
        for cls in range(len(self._tuning_class)):
            self._variant_of(cls).check(self.spec(info, cls))
        self._np = self.dtype.numpy
        #: the input dtypes the kernels take as they are: this scan's, and those they
        #: convert as they load, each with the name of its programs' ``in_dtype``
        self._loads = (
            {}
            if self._record
            else {self._np: ""}
            | {np.dtype(name): name for name in INPUTS if loaded_as(np.dtype(name), self.dtype) is not None}
        )
        self._plain = not segmented and not self._record
        self._reduce = kind == "reduce"
        #: where NumPy arrays are scanned in place (a CPU device), else None
        self._host_queue = None if info.is_gpu else self._queue
        #: whether a scan by offsets of NumPy arrays there has a path of its own (_host_segmented)
        self._host_offsets = self._host_queue is not None and segmented == "offsets" and not self._reduce
        #: where small ones are, on the default device: a device of the same CPU that runs
        #: kernels in the calling thread (Backend.host_sibling), up to _near_items elements
        near = not info.is_gpu and device is None
        self._near_queue = self.backend.host_sibling(self._queue) if near else None
        self._near_items = tuning.CPU_IN_THREAD_BYTES // self._itemsize
        #: a Python operator not yet checked on this dtype (Operator.verify, first call)
        self._unverified = isinstance(self.monoid, Operator) and self.monoid.check
        self._common = (
            self.backend.common_call(
                self._np, self._reduce, self._loads, self._plain_launchers, self._class_sizes, self._launcher
            )
            if self._plain
            else _long_way
        )
        #: the common call (Backend.common_call), once a Python operator is verified
        self.common = _long_way if self._unverified else self._common
        self._form_calls()  # the other forms' common call (FormCalls)
        #: the other forms' common call, once a Python operator is verified
        self.form_common = _no_form if self._unverified or self._plain else self._form_common
        #: the device's largest buffer (0: none but its memory): host inputs past it go in pieces
        self._largest = self.backend.largest_buffer(self._queue)
        self._reduction: PreparedScan | None = None  # the carries of an exclusive scan in pieces
        self._carries: dict[tuple, bytes] = {}  # initial= of Python numbers as bytes (plan.carries)

    # -- calls -----------------------------------------------------------------------
    def launch(
        self,
        src: Any,
        dst: Any,
        n: int,
        seg: Segments = NONE,
        *,
        check: bool = True,
        queue: Any = None,
        loads: str = "",
        launch_args: LaunchArgs | None = None,
    ) -> dict[str, int] | None:
        """The bare launch: ``n > 0`` elements of ``src`` into ``dst``, no checks.

        Both are contiguous, vector-aligned device arrays of this scan's dtype (``dst``
        of one element for a reduction, one per segment for a segmented one), not
        overlapping; ``src`` is of dtype ``loads`` where that is given. ``check=False``
        keeps a look-back launch from reading back its deadlock flag (benchmarks:
        launches stay back to back). ``launch_args`` replaces the scan's own (a carry).
        Returns the counters of a counting scan.
        """
        if queue is None:
            queue = self.backend.queue_of(src)
        bound = self.bound(queue, n, seg.row_tiles > 0, loads, launch_args is not None)
        launch = self.launch_args if launch_args is None else launch_args
        return bound.variant.run(bound, queue, launch, src, dst, n, seg, check)

    def __call__(
        self,
        x: Any,
        out: Any = None,
        *,
        flags: Any = None,
        offsets: Any = None,
        row_len: int = 0,
        stats: dict | None = None,
        initial: Any = None,
    ) -> Any:
        """Scan ``x`` (flattened in C order); see :class:`PreparedScan`.

        Parameters
        ----------
        x : array
            A device array of this scan's backend, or anything NumPy accepts.
        out : array, optional
            Where the result goes: shape ``(x.size,)`` (one element for a reduction, one
            per segment for a segmented reduction), this scan's dtype and the input's
            array type; ``out=x`` is allowed.
        flags, offsets : array, optional
            Segments of a segmented scan (``segmented="flags"`` / ``"offsets"``).
        row_len : int, optional
            Segments of a scan with ``segmented="rows"``: rows of this length.
        stats : dict, optional
            Filled with the look-back counters (a scan made with ``stats=True``).
        initial : scalar or one-element array, optional
            Scan from this value: it goes on the left of every element (of a segmented
            scan, up to the first segment head), and it is the first element of an
            exclusive scan and the result of a reduction of nothing. Chained variants
            (``fallback``, ``lookback``), not deterministic ones. A device array of this
            scan's backend is copied into the kernel's carry on the device, in queue
            order (the host does not wait for it).
        """
        try:  # free until it catches: a driver's allocation failure becomes DeviceMemoryError
            if type(x) is np.ndarray and self._largest and self._plain and stats is None:
                if x.size * max(self._itemsize, x.dtype.itemsize) > self._largest:
                    result = self._in_pieces(x, out, initial)
                    if result is not None:
                        return result
            if self._unverified:
                self.verify(x)
            carry = None
            if self._plain and stats is None and flags is None and offsets is None and not row_len:
                carry = None if initial is None else self._carry_of(initial)
                result = self._common(x, out, carry)
                if result is not None:  # device arrays as the kernels take them
                    return result
                if self._host_queue is not None:  # a CPU device: NumPy arrays scanned in place
                    loads = self._loads
                    t = getattr(x, "dtype", None)
                    if type(x) is np.ndarray and t not in loads and t.kind in "biuf":
                        x = x.astype(self._np)  # narrowing, float to integer, float16
                    on_device = carry is not None and not isinstance(carry, bytes)
                    queue = self._host_queue_for(getattr(x, "size", 0), on_device)
                    common = self.backend.host_operands(x, out, self._np, self._reduce, queue, loads)
                    if common is not None:
                        src, dst, result = common
                        n = x.size
                        self._launcher(queue, n, loads[x.dtype])(src, dst, n, carry)
                        self.backend.host_done(dst, queue, x.nbytes)
                        return result[0] if self._reduce and out is None else result
            elif stats is None and not self._unverified:
                carry = None if initial is None else self._carry_of(initial)
                result = self._form_common(x, out, flags, offsets, row_len, carry)
                if result is not None:  # device arrays as the kernels take them (plan.forms)
                    return result
            if (
                self._host_offsets
                and type(x) is np.ndarray
                and type(offsets) is np.ndarray
                and flags is None
                and not row_len
                and stats is None
                and initial is None
            ):
                result = self._host_segmented(x, out, offsets)
                if result is not None:
                    return result
            return self._call(x, out, flags, offsets, row_len, stats, initial, carry)
        except Exception as exc:
            self.reraise(exc, x)

    def _in_pieces(self, x: np.ndarray, out: Any, initial: Any) -> Any:
        """A NumPy input past the device's largest buffer, in pieces (plan.pieces)."""
        return pieces.in_pieces(self, x, out, initial)

    def reraise(self, exc: Exception, x: Any) -> None:
        """Raise ``exc`` again, as a DeviceMemoryError where an allocation failed (also for
        the callers of ``common``, which bypass ``__call__``)."""
        error = pieces.memory_error(self, exc, x)
        if error is None:
            raise exc
        raise error from exc

    def verify(self, x: Any) -> None:
        """Check a Python operator's identity and associativity on values of ``x``.

        ``x`` is a tuple of arrays for a tuple value; its index fields are sampled as the
        positions they stand for.
        """
        if self._record:
            n = next(int(np.prod(a.shape)) for k, a in enumerate(x) if k not in self.index_fields)
            runs = arrays.sample_runs(n)
            at = np.concatenate([np.arange(a, b) for a, b in runs]) if runs else np.zeros(0, np.int64)
            samples = tuple(at if k in self.index_fields else arrays.sample(a, runs) for k, a in enumerate(x))
            self.monoid.verify(self.dtype.fields, samples)  # type: ignore[attr-defined]
        else:
            n = int(np.prod(getattr(x, "shape", np.shape(x))))
            self.monoid.verify(self.dtype, (arrays.sample(x, arrays.sample_runs(n)),))  # type: ignore[attr-defined]
        self._unverified = False
        self.common = self._common
        self.form_common = _no_form if self._plain else self._form_common

    def _host_queue_for(self, n: int, device_carry: bool = False) -> Any:
        """The queue a host call of ``n`` elements runs on, on a CPU device (a carry in a
        device array keeps the call in its own queue's context)."""
        near = self._near_queue
        return near if near is not None and n <= self._near_items and not device_carry else self._host_queue

    def _launcher(self, queue: Any, n: int, loads: str = "") -> Any:
        """The common call's launch function for ``n`` elements on ``queue`` (made on first use)."""
        cls = bisect_left(self._class_sizes, n)
        key = (queue, cls, loads)
        go = self._plain_launchers.get(key)
        if go is None:
            make_room(self._plain_launchers)
            bound = self.bound(queue, n, False, loads)
            go = bound.variant.plain_launcher(bound, queue, self.launch_args)
            if cls >= self._rts_class:
                go = self._carry_to_chained(go, queue, n, loads)
            self._plain_launchers[key] = go
        return go

    def _carry_to_chained(self, go: Any, queue: Any, n: int, loads: str) -> Any:
        """``go`` (rts), but a call with a carry runs the chained variant (compiled on first use)."""
        chained: list[Any] = []

        def launch(src: Any, dst: Any, n: int, carry: Any) -> None:
            if carry is None:
                return go(src, dst, n, carry)
            if not chained:
                bound = self.bound(queue, n, False, loads, chained=True)
                chained.append(self._variant.plain_launcher(bound, queue, self.launch_args))
            return chained[0](src, dst, n, carry)

        return launch

    def _call(
        self,
        x: Any,
        out: Any,
        flags: Any,
        offsets: Any,
        row_len: int,
        stats: dict | None,
        initial: Any = None,
        carry: Any = None,
    ) -> Any:
        """Every other call: host input, conversions, segments, in-place, counters, a carry
        (``carry``: ``initial`` as ``_carry_of`` made it already, or None)."""
        if stats is not None and not self.stats:
            raise ValueError("stats= needs a scan made with stats=True")
        if row_len and getattr(out, "ndim", 1) > 1 and out.size == np.size(x) and out.flags.c_contiguous:
            out = out.reshape(-1)  # rows written in the input's shape (the common call's too): a view
        if initial is None:
            launch = None
        else:
            launch = self.launch_args.carrying(self._carry_of(initial) if carry is None else carry)
        if self._record:
            return self._call_fields(x, out, flags, offsets, row_len, stats)
        b = self.backend
        _, on_device = arrays.pick_backend(x, b.name)  # raises for another backend's array
        if on_device:
            queue = None
        elif self._host_queue is not None:
            carried = launch is not None and launch.carry_from is not None
            queue = self._host_queue_for(int(np.size(x)), carried)
        else:
            queue = b.queue_for(self._device)
        inp = arrays.to_input(x, b, on_device, self.dtype, queue, self._loads)
        seg, length = self._segments(inp, flags, offsets, row_len)
        reduce = self._reduce
        if reduce and not self.segmented:
            if out is not None:
                arrays.check_out(out, b, inp.on_device, self.dtype, (1,))
            if inp.n == 0:
                ident = empty_value(self.monoid, self.dtype) if launch is None else self._carried(launch)
                return arrays.identity_result(inp, ident, None if out is None else 1, out)
        else:
            arrays.check_out(out, b, inp.on_device, self.dtype, (length,))
            if inp.n == 0 or length == 0:
                if reduce:  # a segmented reduction: the identity for every (empty) segment
                    return arrays.identity_result(inp, empty_value(self.monoid, self.dtype), length, out)
                return arrays.empty_result(inp, out)
        alarm = heed_alarm(b, inp.queue, inp.n) if self.segmented == "offsets" else None
        result = self._run(inp, seg, length, out, stats, launch)
        if alarm is not None and not seg.checked and self.knobs.get("check") == "now":
            raise_alarm(b, inp.queue, alarm, inp.n, False, offsets)
        if reduce and not self.segmented and out is None:
            return b.scalar(result) if inp.on_device else result[0]
        return result

    def _whole_rows(self, seg: Segments, queue: Any, n: int) -> Segments:
        """Rows of whole tiles need no heads: the plain chained scan restarts at each row."""
        if seg.row_len and self._variant.rows_ok:
            tile = self.spec(self.backend.device_info(queue), self.size_class(n), True).tile
            if seg.row_len % tile == 0:
                return Segments(row_tiles=seg.row_len // tile)
        return seg

    def _segments(self, inp: arrays.Input, flags: Any, offsets: Any, row_len: int) -> tuple[Segments, int]:
        """The call's segments and the result length."""
        mode = self.segmented
        if isinstance(row_len, (bool, np.bool_)) or not isinstance(row_len, (int, np.integer)):
            raise TypeError(f"row_len= takes an integer, got {row_len!r}")
        given = {"flags": flags is not None, "offsets": offsets is not None, "rows": row_len > 0}
        if not mode:
            if any(given.values()):
                raise ValueError("flags=, offsets= and row_len= need a segmented scan (segmented=...)")
            return NONE, 1 if self._reduce else inp.n
        if not given[mode] or sum(given.values()) != 1:
            need = {"flags": "flags= (one per value)", "offsets": "offsets= (CSR, nseg + 1 entries)"}
            raise ValueError(
                f"a scan segmented by {mode} takes {need.get(mode, 'row_len=')} and no other segments"
            )
        if mode == "flags" and self.head_keys:
            return Segments(heads=arrays.heads_from_keys(flags, inp, self.head_keys)), inp.n
        if mode == "flags":
            return Segments(heads=arrays.heads_from_flags(flags, inp)), inp.n
        if mode == "rows":
            if inp.n % row_len:
                raise ValueError(f"row_len={row_len} does not divide {inp.n} values")
            return Segments(row_len=row_len), inp.n
        dev, checked = arrays.device_offsets(offsets, inp)
        length = int(dev.shape[0]) - 1 if self._reduce else inp.n
        return Segments(offsets=dev, checked=checked), length

    def _run(
        self,
        inp: arrays.Input,
        seg: Segments,
        length: int,
        out: Any,
        stats: dict | None,
        launch: LaunchArgs | None = None,
    ) -> Any:
        b, queue = inp.backend, inp.queue
        if launch is None:  # rows of whole tiles restart at each row: no carry there
            seg = self._whole_rows(seg, queue, inp.n)
        if inp.on_device:
            dst = out
            read = [a for a in (inp.data, seg.heads, seg.offsets) if a is not None]
            if dst is None or any(b.shares_memory(dst, a) for a in read) or not b.aligned(dst):
                # in place: a fallback may re-read a tile after its owner wrote it, and
                # tiles read the heads or offsets others may have overwritten
                dst = b.empty((length,), self._np, queue)
            counters = self.launch(
                inp.data, dst, inp.n, seg, queue=queue, loads=inp.loads, launch_args=launch
            )
            if out is not None and dst is not out:
                b.copy(out, dst)
                dst = out
            result = dst
        elif inp.host is not None and (shared := arrays.host_result(inp, length, out)) is not None:
            # a CPU device: the kernels read the NumPy input and write the NumPy result in place
            result, dst, into_out = shared
            counters = self.launch(
                inp.data, dst, inp.n, seg, queue=queue, loads=inp.loads, launch_args=launch
            )
            b.settle(dst, inp.n * self._np.itemsize)
            if out is not None:
                if not into_out:
                    out[...] = result
                result = out
        else:
            dst = b.empty((length,), self._np, queue)
            counters = self.launch(
                inp.data, dst, inp.n, seg, queue=queue, loads=inp.loads, launch_args=launch
            )
            result = b.to_host(dst)
            if out is not None:
                out[...] = result
                result = out
        if stats is not None and counters is not None:
            stats.clear()
            stats.update(counters)
        return result

    def __repr__(self) -> str:
        seg = f", segmented={self.segmented!r}" if self.segmented else ""
        knobs = "".join(f", {k}={v!r}" for k, v in self.knobs.items())
        return (
            f"jitscan.plan({self.dtype.name!r}, {self.monoid.name!r}, kind={self.kind!r}, "
            f"variant={self.variant!r}, backend={self.backend.name!r}{seg}"
            f"{', stats=True' if self.stats else ''}{knobs})"
        )


def plan(
    dtype: Any,
    op: str | Monoid = "add",
    *,
    kind: str = "inclusive",
    variant: str | None = None,
    backend: str | None = None,
    device: Any = None,
    segmented: str = "",
    stats: bool = False,
    **knobs: Any,
) -> PreparedScan:
    """Prepare a scan once and call it many times: the way to scan in a loop.

    Parameters
    ----------
    dtype : {"int32", "uint32", "int64", "uint64", "float32", "float64"}
        Element type of the scan and its result (inputs of other real or integer types
        are converted on the device). A prepared scan applies no promotion rule: it is
        the scan ``jitscan.scan(x, dtype=dtype)`` would run.
    op : {"add", "mul", "min", "max", "and", "or", "xor"} or Monoid
    kind : {"inclusive", "exclusive", "reduce"}
    variant : {"fallback", "lookback", "rts", "memcpy"}, optional
        Default ``"fallback"``; a reduction given none runs ``"rts"`` on GPUs for inputs
        over ``tuning.RTS_REDUCE_BYTES`` (4 MiB), but for a call with ``initial=``, and
        unless ``stats`` or a knob of the chained scan (all but ``deterministic``) is given.
        The scan's ``variant`` attribute then still names the chained variant.
    backend : {"cupy", "opencl"}, optional
        Default: ``$JITSCAN_BACKEND``, else the fastest available. Device arrays must
        belong to it.
    device : optional
        Where NumPy inputs go: a CUDA device number (``cupy``) or a
        ``pyopencl.CommandQueue`` (``opencl``); default the backend's current device.
        Device arrays are scanned where they are.
    segmented : {"", "flags", "offsets", "rows"}
        A segmented scan, its segments given per call (``flags=``, ``offsets=``,
        ``row_len=``).
    stats : bool
        Count look-back events; each call then takes ``stats={}`` to fill.
    **knobs
        As in :func:`jitscan.scan`.

    Returns
    -------
    PreparedScan
        Callable as ``scan(x, out=None, *, flags=None, offsets=None, row_len=0, stats=None)``.

    Raises
    ------
    TypeError, ValueError
        Everything a call could be refused for, except the array itself, is checked here.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> scan = jitscan.plan("int64", "add", kind="exclusive")
    >>> scan(np.array([1, 2, 3, 4]))
    array([0, 1, 3, 6])
    >>> scan(np.array([5, 5]))
    array([0, 5])
    """
    return PreparedScan(
        dtype,
        op,
        kind=kind,
        variant=variant,
        backend=backend,
        device=device,
        segmented=segmented,
        stats=stats,
        **knobs,
    )


__all__ = ["KNOBS", "QUEUE_ENTRIES", "PreparedScan", "check_knobs", "plan"]
