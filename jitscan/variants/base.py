"""What a variant is: its kernel sources, entry points, argument signatures and launch sequence.

A variant turns a validated :class:`~jitscan.kernels.spec.ScanSpec` into a
:class:`~jitscan.backends.Build` (what a backend compiles) and runs a compiled
program over contiguous device arrays (:meth:`Variant.run`). Variants are found by
name through the registry in ``jitscan.variants``.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..backends.base import Backend, Build, Program
from ..kernels import render
from ..kernels.spec import LaunchArgs, ScanSpec
from . import segments

#: held while a launch sequence uses a queue's scratch (chained: from the choice of an epoch
#: to the launch, and through a read-back of its flags; reduce-then-scan: its three
#: launches; the offsets pre-pass and check). Threads sharing a queue share its scratch:
#: another thread's launch in between would overwrite a spine, a tile's first segments or
#: descriptors of the same epoch. Launches are queued, not waited for, so it is held briefly
#: (a read-back waits, and only look-back and counting scans read back). Reentrant: a
#: variant's run holds it around helpers that take it too.
LOCK = threading.RLock()


@dataclass(frozen=True)
class Fields:
    """A tuple value's arrays, as kernels take them: one device array per field.

    ``arrays[k]`` is None where field k is not in memory: an index field of the input,
    or a field the scan does not write.
    """

    arrays: tuple[Any, ...]

    @property
    def first(self) -> Any:
        return next(a for a in self.arrays if a is not None)


def operands(backend: Backend, x: Any) -> list[Any]:
    """The kernel arguments of an input or output: (buffer, offset) per array."""
    if isinstance(x, Fields):
        return [v for a in x.arrays if a is not None for v in backend.buffer(a)]
    return list(backend.buffer(x))


def expand(spec: ScanSpec, kinds: tuple[str, ...]) -> tuple[str, ...]:
    """Argument kinds with "src" / "dst" spelled out: a buffer and an offset per array."""
    if spec.record:
        arrays = {"src": len(spec.dtype_info.fields) - len(spec.index_fields), "dst": len(spec.outputs)}
    else:
        arrays = {"src": 1, "dst": 1}
    out: list[str] = []
    for kind in kinds:
        out += ["buf", "size"] * arrays[kind] if kind in arrays else [kind]
    return tuple(out)


@dataclass(frozen=True)
class Bound:
    """A variant's compiled program on one backend: what a launch needs besides its arrays.

    ``state`` is what the variant derives from the spec once rather than per launch
    (the chained variants' tile state).
    """

    spec: ScanSpec
    backend: Backend
    program: Program
    variant: Variant
    state: Any = None


class Variant(ABC):
    """One scan algorithm.

    Subclasses set ``name``, ``files`` (the sources of ``kernels/src`` that make up its
    program, in order) and ``signatures`` (argument kinds of its own entry points, as
    declared in those sources), and implement :meth:`run`.
    """

    name: str
    files: tuple[str, ...]
    #: entry point -> argument kinds ("buf", "size", "u32"; "src" and "dst": the input's and
    #: the output's arrays, see :func:`expand`), before any segment arguments
    signatures: dict[str, tuple[str, ...]]
    #: entry points launched as one workgroup (declared JS_KERNEL_SINGLE)
    single: frozenset[str] = frozenset()
    #: entry points that take the segmented mode's arguments last
    segmented_entries: tuple[str, ...] = ()
    #: whether the variant has segmented forms
    segments_ok: bool = True
    #: whether it scans independent rows of whole tiles (ScanSpec.row_tiles)
    rows_ok: bool = False
    #: C defines the variant adds to the common prelude
    defines: tuple[str, ...] = ()

    def check(self, spec: ScanSpec) -> None:
        """Raise ValueError for what the spec asks and this variant cannot do."""
        if spec.segmented and not self.segments_ok:
            raise ValueError(f"{self.name} has no segmented form")
        if spec.row_tiles and not self.rows_ok:
            raise ValueError(f"row_tiles applies to chained variants, not {self.name!r}")

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
