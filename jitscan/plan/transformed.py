"""A transform's scan, bound once: its program per size class and queue, and its launch.

:class:`TransformScan` is the prepared scan of a :class:`~jitscan.kernels.transform.Transform`:
the chained variant's spec of each size class (``tuning.spec_for``, the device's defaults)
with the transform in it, compiled on first use per queue, and one launch over the
transform's arrays, in the order its ``reads`` and ``writes`` name them. It moves nothing:
the callers (``api/selection.py``, ``api/runs.py``, ``api/kernel.py``) hand it device arrays.

Its call is compiled where the backend compiles the other forms' (``Backend.form_call``
with ``transform=``, ``_common_call.c``'s MODE_TRANSFORM): a call like the last one the
Python call launched (arrays of the transform's dtypes, contiguous, on the same queue and in
the same size class) launches without the interpreter; every other goes to Python, which
then tells the compiled call what it launched.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import replace
from typing import Any

import numpy as np

from .. import variants
from ..backends.base import Backend
from ..dtypes import lookup
from ..kernels.spec import KINDS, check_choice
from ..kernels.transform import Transform
from ..operators import Monoid
from ..operators.monoid import resolve
from ..variants.base import Fields
from . import tuning

#: the most vectors a thread of a GPU tile holds in a transform: its rules run once every
#: element's reads are loaded (tile.h), which holds them beside the scanned values. At the
#: flat scan's 16 vectors int32 compaction spills (sm_90: 804 bytes); on the H200 (int32,
#: 2^24 and 2^28, experiments/transform_tiles.py) 8 ran compaction 1.14-1.17x and unique
#: runs 1.05-1.08x faster than 4, and 2.3x and 1.5x faster than 16
GPU_VECTORS = 8


#: the workgroups an NVIDIA GPU's core is to hold of a transform (its launch bounds: at most
#: 128 registers a thread at 128 threads): on the H200, 8 vectors at 4 ran compaction of int32
#: 1.16-1.20x faster than at the flat scan's 3 (2^24, 2^28; experiments/transform_profile.py)
GPU_MIN_BLOCKS = 4


def vectors_for(spec: Any) -> int:
    """The vectors a thread of ``spec``'s tile holds in a transform (one-thread CPU tiles keep
    the device's)."""
    return spec.vectors if spec.threads == 1 else min(spec.vectors, GPU_VECTORS)


class TransformScan:
    """A scan of ``transform`` in ``dtype`` by ``op`` (``kind`` inclusive or exclusive).

    Parameters
    ----------
    transform : Transform
    dtype : str
        The scanned values' type (one of the scans' dtypes).
    op : str or Monoid
    kind : {"inclusive", "exclusive"}
        What ``v`` is in the rules: the element's scan with or without itself.
    backend : Backend
    variant : str, optional
        A chained variant (default ``fallback``).
    simulate_blocking : int, optional
        As :func:`jitscan.plan` takes it (tests: tiles that never post).
    threads, vectors, min_blocks : int, optional
        The tile's shape and the workgroups a GPU's core is to hold, as :func:`jitscan.plan`
        takes them (tests: small tiles); by default the device's, with at most
        ``GPU_VECTORS`` vectors on GPUs.
    """

    def __init__(
        self,
        transform: Transform,
        dtype: str,
        op: str | Monoid,
        kind: str,
        backend: Backend,
        variant: str | None = None,
        simulate_blocking: int | None = None,
        threads: int | None = None,
        vectors: int | None = None,
        min_blocks: int | None = None,
    ) -> None:
        if not isinstance(transform, Transform):
            raise TypeError(f"a transform scan takes a jitscan Transform, got {transform!r}")
        check_choice("kind", kind, KINDS)
        if kind == "reduce":
            raise ValueError("a transform writes through its rules: kind is 'inclusive' or 'exclusive'")
        self.transform, self.kind, self.backend = transform, kind, backend
        self.dtype = lookup(dtype)
        self.monoid = resolve(op)
        self.monoid.check_dtype(self.dtype)
        # by default the registry's default, which needs no forward-progress guarantee
        self.variant = variants.get(variant) if variant else variants.default()
        if not self.variant.caps.tile_state:
            raise ValueError(
                f"a transform runs in one pass of a chained scan, not variant {self.variant.name!r}; use "
                f"{variants.either(variants.names('blocking'))}"
            )
        self.simulate_blocking = simulate_blocking
        self.threads, self.vectors, self.min_blocks = threads, vectors, min_blocks
        self._bounds: dict[tuple[Any, int], tuple[Any, Any, Any]] = {}
        self._lock = threading.Lock()
        reads = tuple(np.dtype(d) for _, d in transform.reads)
        writes = tuple(np.dtype(d) for _, d in transform.writes)
        #: ``call(reads, writes, n, queue)``: compiled where the backend compiles one, which
        #: ``_remember`` tells what the Python call (``_python``) launched
        self.call: Any
        self.call, self._remember = backend.form_call(
            self._python, writes[0], False, {}, transform=(reads, writes)
        )

    def _bound(self, queue: Any, n: int) -> tuple[Any, Any, Any]:
        """(bound program, launch arguments, the variant's form launcher) of ``n`` elements
        on ``queue``, made once per size class: the launcher looks up once what a launch
        does not take from its arrays (Variant.form_launcher)."""
        cls = tuning.size_class(n * self.dtype.itemsize)
        key = (queue, cls)
        held = self._bounds.get(key)
        if held is None:
            with self._lock:
                held = self._bounds.get(key)
                if held is None:
                    info = self.backend.device_info(queue)
                    blocks = GPU_MIN_BLOCKS if info.is_gpu and not info.amd else None
                    bounds = tuning.SIZE_BOUNDS
                    top = bounds[cls] // self.dtype.itemsize if cls < len(bounds) else None
                    spec = tuning.spec_for(
                        info,
                        variant=self.variant.name,
                        dtype=self.dtype,
                        monoid=self.monoid,
                        n=top,
                        kind=self.kind,
                        threads=self.threads,
                        vectors=self.vectors,
                        min_blocks=self.min_blocks or blocks,
                    )
                    shape = self.vectors or vectors_for(spec)
                    spec = replace(spec, transform=self.transform, vectors=shape)
                    tuning.check_registers(info, spec)
                    launch = tuning.launch_for(
                        info,
                        variant=self.variant.name,
                        kind=self.kind,
                        simulate_blocking=self.simulate_blocking,
                    )
                    bound = self.variant.bind(spec, self.backend, queue)
                    go = self.variant.form_launcher(bound, queue, launch)
                    held = self._bounds[key] = (bound, launch, go)
        return held

    def source(self, queue: Any, n: int) -> str:
        """The program that scans ``n`` elements on ``queue``'s device."""
        bound, _, _ = self._bound(queue, n)
        return self.variant.source(bound.spec, self.backend.dialect)

    def __call__(self, reads: list[Any], writes: list[Any], n: int, queue: Any) -> None:
        """Scan ``n`` elements over device arrays ``reads`` and ``writes`` (the transform's,
        in its order; contiguous, of their dtypes), on ``queue``. Nothing waits. (A caller
        in a loop calls :attr:`call` itself, one Python frame less.)"""
        self.call(reads, writes, n, queue)

    def _python(self, reads: list[Any], writes: list[Any], n: int, queue: Any) -> None:
        """The call in Python: every call the compiled one leaves (the first of a queue and
        size class, a scratch buffer to grow), and all of them where there is none."""
        t = self.transform
        if len(reads) != len(t.reads) or len(writes) != len(t.writes):
            raise ValueError(
                f"transform {t.name!r} reads {len(t.reads)} and writes {len(t.writes)} arrays, "
                f"not {len(reads)} and {len(writes)}"
            )
        if n <= 0:
            return
        go = self._bound(queue, n)[2]
        go(Fields(tuple(reads), True), Fields(tuple(writes), True), n)
        if self._remember is not None:  # the size class as the compiled call bounds it: lo < n <= hi
            size, bounds = self.dtype.itemsize, tuning.SIZE_BOUNDS
            cls = tuning.size_class(n * size)
            lo = bounds[cls - 1] // size if cls else 0
            hi = bounds[cls] // size if cls < len(bounds) else sys.maxsize
            self._remember(queue, lo, hi, "", "transform", False, 0, go)


__all__ = ["TransformScan"]
