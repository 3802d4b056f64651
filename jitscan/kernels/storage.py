"""The kernels' shared memory (OpenCL's local memory), header by header.

Each header of ``src/`` that keeps shared memory owns one storage struct, and a kernel's
storage is the struct of its parts' (``js_chained_storage``, ``js_rts_storage``). This
module is the one account of their sizes: for a spec it lists each struct's members as
the header declares them and lays them out as a C compiler does (NumPy's aligned
structs follow the same rules). The host reads the sizes before anything is compiled
(:attr:`ScanSpec.local_bytes`, the parked vectors' budget, the staged tile's limit), and
the dialect renders them into every program as ``JS_<NAME>_STORAGE_BYTES``, which each
header checks its struct against with ``JS_STATIC_ASSERT``: a member added in C and not
here, or here and not in C, stops the compile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

#: a kernels.spec.ScanSpec (not imported: spec.py imports this module)
ScanSpec = Any

#: (member, C element type, array shape): shape () is a single element
Member = tuple[str, np.dtype, tuple[int, ...]]

_U32, _I64 = np.dtype(np.uint32), np.dtype(np.int64)


def value(spec: ScanSpec) -> np.dtype:
    """``js_val``: a value, or a tuple value's struct."""
    return np.dtype(spec.dtype_info.numpy)


def element(spec: ScanSpec) -> np.dtype:
    """``T``: what a tile scans, a segmented scan's ``struct { js_val v; js_u32 h; }``."""
    if spec.segmented:
        return np.dtype([("v", value(spec)), ("h", _U32)], align=True)
    return value(spec)


def layout(members: list[Member]) -> np.dtype:
    """A C struct of ``members``: natural alignment, padded to its largest member's."""
    return np.dtype([(name, d, shape) if shape else (name, d) for name, d, shape in members], align=True)


def scan(spec: ScanSpec) -> np.dtype:
    """``js_scan_storage`` (scan.h): rows and subgroup aggregates crossing the workgroup."""
    t, nsg = element(spec), spec.threads // spec.subgroup
    members: list[Member] = []
    if not spec.shuffle and spec.threads > 1:
        members.append(("rows", t, (spec.vectors, spec.threads)))
    if spec.rows_in_smem:
        members.append(("sg_rows", t, (nsg, spec.subgroup * (spec.vectors + 1))))
    return layout([*members, ("sg_total", t, (nsg,)), ("tile_total", t, ())])


def seg(spec: ScanSpec) -> np.dtype | None:
    """``js_seg_storage`` (segments.h): the heads marked from offsets, a reduction's staged tile."""
    if spec.segmented != "offsets":
        return None
    members: list[Member] = [("head_bits", _U32, ((spec.tile + 31) // 32,))]
    if spec.searches_segments and spec.threads > 1:
        members.append(("below", _U32, ()))
    if spec.stages_tile:
        members.append(("stage", value(spec), (spec.tile + 1,)))
    return layout(members)


def lookback(spec: ScanSpec) -> np.dtype:
    """``js_lookback_storage`` (lookback.h): the window where it is not one subgroup's registers,
    the walk's prefix and position."""
    t, w, sg = element(spec), spec.lookback_width, spec.subgroup
    members: list[Member] = []
    if spec.shuffle and w > sg:
        members += [("key", _U32, (w // sg,)), ("part", t, (w // sg,))]
    elif not (spec.shuffle and w == sg):
        members += [("val", t, (w,)), ("flag", _U32, (w,))]
    return layout([*members, ("prefix", t, ()), ("cur", _I64, ())])


def det(spec: ScanSpec) -> np.dtype | None:
    """``js_det_storage`` (deterministic.h): the anchor's prefix and the tile looked at."""
    if not spec.deterministic:
        return None
    return layout([("anchor", element(spec), ()), ("target", _I64, ())])


def park_bytes(spec: ScanSpec, vectors: int) -> int:
    """The two arrays of ``vectors`` parked vectors (chained.c's ``park``, ``park_left``): their
    items and left sums, every thread's. Declared beside the kernel's storage, not in it."""
    v, t = spec.vector_width, spec.threads
    return vectors * t * (v * value(spec).itemsize + element(spec).itemsize)


def parked_vector_bytes(spec: ScanSpec) -> int:
    """Shared memory one more parked vector takes."""
    return park_bytes(spec, 1)


def stage_bytes(spec: ScanSpec) -> int:
    """The staged tile of a segmented reduction by offsets: ``tile + 1`` values."""
    return (spec.tile + 1) * value(spec).itemsize


def _parts(*parts: tuple[str, np.dtype | None]) -> list[Member]:
    """The parts a kernel's storage holds, each a member (those a spec has)."""
    return [(name, d, ()) for name, d in parts if d is not None]


def chained(spec: ScanSpec) -> np.dtype:
    """``js_chained_storage`` (chained.c): its parts' storage and the protocol's words."""
    members = _parts(("scan", scan(spec)), ("lb", lookback(spec)), ("det", det(spec)), ("seg", seg(spec)))
    return layout([*members, ("lb_ctrl", _U32, (2,)), ("tile", _U32, ())])


def rts(spec: ScanSpec) -> np.dtype:
    """``js_rts_storage`` (rts.c): the tile kernels' (the spine's is scan storage alone)."""
    return layout(_parts(("scan", scan(spec)), ("seg", seg(spec))))


#: every storage struct, by the name its size takes in the kernels (JS_<name>_STORAGE_BYTES)
STORAGES: dict[str, Callable[[ScanSpec], np.dtype | None]] = {
    "SCAN": scan,
    "SEG": seg,
    "LOOKBACK": lookback,
    "DET": det,
    "CHAINED": chained,
    "RTS": rts,
}


def sizes(spec: ScanSpec) -> dict[str, int]:
    """Bytes of each storage struct a program of ``spec`` may declare (absent: it has none)."""
    return {name: d.itemsize for name, of in STORAGES.items() if (d := of(spec)) is not None}


def workgroup_bytes(spec: ScanSpec) -> int:
    """The shared memory of the largest workgroup of ``spec``'s program: its kernel's storage
    (and a chained kernel's parked vectors)."""
    if spec.chained:
        return chained(spec).itemsize + park_bytes(spec, spec.parked_vectors)
    return rts(spec).itemsize


def defines(spec: ScanSpec) -> list[str]:
    """``JS_STATIC_ASSERT`` and each storage's size, as the headers check them (``#define`` lines)."""
    return [
        "/* a compile-time check: the size of an array of -1 chars is an error */",
        "#define JS_STATIC_ASSERT(name, cond) typedef char name[(cond) ? 1 : -1]",
        "/* shared memory by storage struct, in bytes (kernels/storage.py); each header checks its own */",
        *(f"#define JS_{name}_STORAGE_BYTES {n}" for name, n in sizes(spec).items()),
        f"#define JS_PARK_BYTES {park_bytes(spec, spec.parked_vectors)}",
    ]
