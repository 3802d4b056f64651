"""What a variant is: its kernel sources, entry points, argument signatures and launch sequence.

A variant turns a validated :class:`~jitscan.kernels.spec.ScanSpec` into a
:class:`~jitscan.backends.Build` (what a backend compiles) and runs a compiled
program over contiguous device arrays (:meth:`Variant.run`). Variants are found by
name through the registry in ``jitscan.variants``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..backends.base import Backend, Build, DeviceInfo, Program
from ..backends.launch import LaunchPlan
from ..kernels import render
from ..kernels.spec import SEGMENTED, LaunchArgs, ScanSpec
from . import segments

#: every segmented mode ("flags", "rows", "offsets")
ALL_MODES = frozenset(m for m in SEGMENTED if m)


@dataclass(slots=True)
class Fields:
    """A tuple value's arrays, as kernels take them: one device array per field.

    ``arrays[k]`` is None where field k is not in memory: an index field of the input,
    or a field the scan does not write. ``sized``: each array goes with its length too (a
    transform's arrays, ``kernels/transform.py``). Made on every call of those forms, and
    read only: not frozen, whose ``__init__`` costs three times as much.
    """

    arrays: tuple[Any, ...]
    sized: bool = False

    @property
    def first(self) -> Any:
        return next(a for a in self.arrays if a is not None)


def operands(backend: Backend, x: Any) -> list[Any]:
    """The kernel arguments of an input or output: (buffer, offset) per array."""
    if isinstance(x, Fields):
        if x.sized:
            return [v for a in x.arrays for v in (*backend.buffer(a), int(a.size))]
        return [v for a in x.arrays if a is not None for v in backend.buffer(a)]
    return list(backend.buffer(x))


def expand(spec: ScanSpec, kinds: tuple[str, ...]) -> tuple[str, ...]:
    """Argument kinds with "src" / "dst" spelled out: a buffer and an offset per array."""
    each = ("buf", "size")
    if spec.transform is not None:  # each array with its length
        each = ("buf", "size", "size")
        arrays = {"src": len(spec.transform.reads), "dst": len(spec.transform.writes)}
    elif spec.record:
        arrays = {"src": len(spec.dtype_info.fields) - len(spec.index_fields), "dst": len(spec.outputs)}
    else:
        arrays = {"src": 1, "dst": 1}
    out: list[str] = []
    for kind in kinds:
        out += list(each) * arrays[kind] if kind in arrays else [kind]
    return tuple(out)


@dataclass(frozen=True)
class Capabilities:
    """What a variant can do, stated by the variant: the rest of jitscan asks this record
    (through :meth:`Variant.supports` and the registry), never the variant's name.

    Attributes
    ----------
    copies : bool
        It copies and does not scan (the speed-of-light baseline): the cumulative
        functions, segmented and axis scans refuse it; it neither reduces nor segments.
    reduces : bool
        Whole-array reductions (``kind="reduce"``); with "offsets" in ``segmented`` also
        segmented reductions and reductions along axes.
    segmented : frozenset of {"flags", "rows", "offsets"}
        Its segmented modes. "rows" is what scans along an axis run.
    carry : bool
        A scan may start from a carry: ``initial=``, a Dask array's chunks, and NumPy
        inputs past the device's largest allocation, scanned in pieces.
    tile_state : bool
        One pass whose tiles pass their aggregates on through tile state (look-back): it
        takes ``tile_state=``, ``lookback_width=``, ``spin_limit=``, ``stats`` and the
        tuned tables, and its programs scan rows of whole tiles (``row_tiles``).
    watchdog : bool
        It waits on a predecessor that has not posted rather than doing its work: its spin
        limit (and, where the device has one, a clock: ``spin_timeout=``) bounds the wait
        and raises :class:`~jitscan.DeadlockError`. Such a variant refuses simulated blocking.
    blocking : bool
        It takes ``simulate_blocking=`` (tiles that never post): it must not wait on them.
    deterministic : {"always", "form", ""}
        "always": the same bits on every run as it is (``deterministic=True`` changes
        nothing); "form": a deterministic form compiled on request (which takes no carry);
        "": neither, and ``deterministic=True`` is refused.
    reductions : bool
        Picked for a reduction given no variant: segmented reductions and reductions along
        axes, and whole-array reductions of large inputs on GPUs (``tuning.RTS_REDUCE_BYTES``).
        The first registered variant that states it is picked.
    """

    copies: bool = False
    reduces: bool = True
    segmented: frozenset[str] = ALL_MODES
    carry: bool = False
    tile_state: bool = False
    watchdog: bool = False
    blocking: bool = False
    deterministic: Literal["always", "form", ""] = ""
    reductions: bool = False

    def __post_init__(self) -> None:
        # refused here, where a variant states itself, not at the call that would find out
        if not self.segmented <= ALL_MODES:
            raise ValueError(f"segmented modes are {sorted(ALL_MODES)}, not {sorted(self.segmented)}")
        if self.copies and (self.reduces or self.segmented or self.carry or self.reductions):
            raise ValueError("a variant that copies neither reduces, segments nor takes a carry")
        if (self.watchdog or self.blocking) and not self.tile_state:
            raise ValueError("a watchdog and simulated blocking are for variants with tile state")
        if self.watchdog and self.blocking:
            raise ValueError("a variant with a watchdog would deadlock under simulated blocking")
        if self.deterministic not in ("always", "form", ""):
            raise ValueError(f"deterministic is 'always', 'form' or '', not {self.deterministic!r}")
        if self.reductions and not self.reduces:
            raise ValueError("a variant picked for reductions must reduce")


#: what a call may need of a variant (Variant.supports): how a refusal says the variant
#: lacks it, and what in the call needs it
NEEDS: dict[str, tuple[str, str]] = {
    "scan": ("copies; it does not scan", "a scan"),
    "copy": ("does not copy", "a copy"),
    "reduce": ("does not reduce", "kind='reduce'"),
    "segmented": ("has no segmented form", "a segmented scan"),
    "flags": ("has no segmented form by flags", "flags="),
    "offsets": ("has no segmented form by offsets", "offsets="),
    "rows": ("has no segmented form by rows", "a scan along an axis"),
    "carry": ("takes no carry", "initial=, by which a Dask array's chunks are scanned from their carries,"),
    "deterministic": ("has no deterministic form", "deterministic=True"),
    "blocking": ("takes no simulated blocking", "simulate_blocking="),
}


@dataclass(frozen=True)
class Bound:
    """A variant's compiled program on one backend: what a launch needs besides its arrays.

    ``state`` is what the variant derives from the spec once rather than per launch
    (the chained variants' tile state); ``plan`` the description of its plain launch,
    where it has one (the chained variants': :class:`~jitscan.backends.launch.LaunchPlan`).
    """

    spec: ScanSpec
    backend: Backend
    program: Program
    variant: Variant
    state: Any = None
    plan: LaunchPlan | None = None


class Variant(ABC):
    """One scan algorithm.

    Subclasses set ``name``, ``files`` (the sources of ``kernels/src`` that make up its
    program, in order), ``signatures`` (argument kinds of its own entry points, as
    declared in those sources) and ``caps`` (what it can do), and implement :meth:`run`;
    :meth:`spin_limit` and :meth:`shape` give its own defaults where it has them.
    """

    name: str
    #: what it can do (Capabilities): asked by every layer above, instead of its name
    caps: Capabilities = Capabilities()
    files: tuple[str, ...]
    #: entry point -> argument kinds ("buf", "size", "u32"; "src" and "dst": the input's and
    #: the output's arrays, see :func:`expand`), before any segment arguments
    signatures: dict[str, tuple[str, ...]]
    #: entry points launched as one workgroup (declared JS_KERNEL_SINGLE)
    single: frozenset[str] = frozenset()
    #: entry points that take the segmented mode's arguments last
    segmented_entries: tuple[str, ...] = ()
    #: whether it scans independent rows of whole tiles (ScanSpec.row_tiles)
    rows_ok: bool = False
    #: whether its one-thread tiles may hold their vectors as lanes (ScanSpec.lane_tiles)
    lane_tiles: bool = False
    #: whether its kernels stage values in the workgroup's local memory (ScanSpec.local_bytes)
    local_memory: bool = True
    #: seconds a watchdog waits on one predecessor by the device's clock, where it has one
    #: and the call gives no spin_timeout (Capabilities.watchdog)
    spin_timeout: float = 0.0
    #: C defines the variant adds to the common prelude
    defines: tuple[str, ...] = ()

    @property
    def segments_ok(self) -> bool:
        """Whether the variant has segmented forms."""
        return bool(self.caps.segmented)

    def supports(self, need: str) -> bool:
        """Whether the variant has what a call needs (a key of :data:`NEEDS`)."""
        c = self.caps
        # a chain, not a table built per call: the cumulative functions ask on every call
        # that names a variant
        if need == "scan":
            return not c.copies
        if need in ALL_MODES:
            return need in c.segmented
        if need == "reduce":
            return c.reduces
        if need == "segmented":
            return bool(c.segmented)
        if need == "carry":
            return c.carry
        if need == "deterministic":
            return bool(c.deterministic)
        if need == "blocking":
            return c.blocking
        if need == "copy":
            return c.copies
        raise ValueError(f"unknown need {need!r}; needs: {', '.join(NEEDS)}")

    def takes_carry(self, deterministic: bool = False) -> bool:
        """Whether a scan by this variant may start from a carry (a deterministic form takes none)."""
        return self.caps.carry and not (deterministic and self.caps.deterministic == "form")

    def spin_limit(self, info: DeviceInfo) -> int:
        """The spin limit on ``info``'s device where the call gives none (variants with tile state)."""
        return 0

    def shape(self, info: DeviceInfo, segmented: str, kind: str) -> dict[str, int]:
        """The variant's own tile shape for a kind of call on ``info``'s device, where it
        differs from the shared defaults of ``tuning.geometry``: some of threads, vectors
        and min_blocks. Empty: the shared defaults."""
        return {}

    def check(self, spec: ScanSpec) -> None:
        """Raise ValueError for what the spec asks and this variant cannot do."""
        if spec.segmented and spec.segmented not in self.caps.segmented:
            raise ValueError(f"variant {self.name!r} has no segmented form by {spec.segmented}")
        if spec.row_tiles and not self.rows_ok:
            raise ValueError(f"row_tiles applies to chained variants, not {self.name!r}")
        if spec.clock and not self.caps.watchdog:
            raise ValueError(f"only a watchdog reads a clock; variant {self.name!r} has none")
        if spec.deterministic and self.caps.deterministic != "form":
            raise ValueError(f"variant {self.name!r} has no deterministic form")
        if spec.chained != self.caps.tile_state or spec.lane_tiles != self.lane_tiles:
            raise ValueError(f"the spec of a {spec.variant!r} scan does not match variant {self.name!r}")

    def entries(self, spec: ScanSpec) -> dict[str, tuple[str, ...]]:
        """Every kernel entry point compiled for ``spec``, with its argument kinds."""
        extra = segments.PARAMS[spec.segmented]
        out = {
            name: expand(spec, sig + extra if name in self.segmented_entries else sig)
            for name, sig in self.signatures.items()
        }
        out.update(segments.ENTRIES[spec.segmented])
        return out

    def source(self, spec: ScanSpec, dialect: str) -> str:
        """The program's source text in ``dialect``."""
        return render(spec, dialect, self.files, self.defines)

    def build(self, spec: ScanSpec) -> Build:
        """What a backend compiles for ``spec``."""
        self.check(spec)
        return Build(
            key=spec,
            what=f"{spec.variant} kernel for op {spec.monoid.name!r} ({spec.dtype})",
            source=lambda dialect: self.source(spec, dialect),
            entries=self.entries(spec),
            threads=spec.threads,
            min_blocks=spec.min_blocks,
            single=self.single,
        )

    def bind(self, spec: ScanSpec, backend: Backend, queue: Any) -> Bound:
        """Compile (or fetch) ``spec``'s program for the queue's device."""
        return Bound(spec, backend, backend.program(self.build(spec), queue), self)

    def plain_launcher(self, bound: Bound, queue: Any, launch: LaunchArgs) -> Callable[..., None]:
        """``go(src, dst, n, carry=None)``: :meth:`run` of a plain scan (no segments, checked)
        on one queue, from ``carry`` where given (bytes or a device array, as
        :meth:`LaunchArgs.carrying` takes it).

        Made once per program and queue, then called on every common call, from any
        thread. Variants override it where a plain launch can be set up ahead.
        """
        run, none = self.run, segments.NONE

        def go(src: Any, dst: Any, n: int, carry: Any = None) -> None:
            run(bound, queue, launch if carry is None else launch.carrying(carry), src, dst, n, none, True)

        return go

    def form_launcher(self, bound: Bound, queue: Any, launch: LaunchArgs) -> Callable[..., None]:
        """``go(src, dst, n, seg_array=None, row_len=0, carry=None)``: :meth:`run` of any
        other form on one queue, made once as :meth:`plain_launcher` is.

        The form is ``bound``'s: a tuple value (``src`` and ``dst`` as
        :class:`Fields`), segments of its spec's mode (``seg_array``: the head flags or
        offsets, as :class:`segments.Segments` takes them; ``row_len``: the rows'
        length), or of none, rows of whole tiles where ``row_len`` is given (a plain
        program, which restarts at each row). ``carry`` as :meth:`plain_launcher` takes it.
        """
        run, mode, tile = self.run, bound.spec.segmented, bound.spec.tile

        def go(
            src: Any, dst: Any, n: int, seg_array: Any = None, row_len: int = 0, carry: Any = None
        ) -> None:
            if mode == "offsets":
                seg = segments.Segments(offsets=seg_array)
            elif mode == "flags":
                seg = segments.Segments(heads=seg_array)
            elif mode == "rows":
                seg = segments.Segments(row_len=row_len)
            else:
                seg = segments.Segments(row_tiles=row_len // tile) if row_len else segments.NONE
            run(bound, queue, launch if carry is None else launch.carrying(carry), src, dst, n, seg, True)

        return go

    @abstractmethod
    def run(
        self,
        bound: Bound,
        queue: Any,
        launch: LaunchArgs,
        src: Any,
        dst: Any,
        n: int,
        seg: segments.Segments,
        check: bool = True,
    ) -> dict[str, int] | None:
        """Scan ``n > 0`` elements of contiguous, aligned ``src`` into ``dst``.

        ``dst`` holds ``n`` elements, one for a reduction, or one per segment for a
        segmented reduction. ``seg`` says where segments start (``segments.NONE`` for a
        plain scan). Returns the instrumentation counters when the spec counts them.
        """
