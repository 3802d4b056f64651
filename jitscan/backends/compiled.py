"""The Python side of the compiled common call (``_common_call.c``): the extension, if it is
built and of this tree's record, and the records its ``remember()`` takes, made from a
launch function's description of its last launch (``go.launch_state``, ``go.stages_state``).

A backend's launcher says what a compiled call launches as it does in ``fire.native``:
``(codes, function, params, slots, queue, threads)``, the slot codes of its arguments
(:func:`arg_codes`), the kernel, what the API launches it with (CUDA: the argument block's
addresses; OpenCL: the kernel's table, :func:`kernel_table`), the values' block, the
queue's handle and the workgroup's threads. CuPy's and PyOpenCL's backends read it alike.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from .launch import (
    ARG_CONST,
    ARG_DST,
    ARG_LEN,
    ARG_SEGN,
    ARG_SLOTS,
    ARG_SRC,
    GROUPS_TILES,
    LaunchPlan,
    Scratch,
)

#: the record ``remember()`` takes, as this tree makes it (the extension's LAYOUT)
LAYOUT = 8
#: the APIs ``CommonCall(api=)`` launches through
API_CUDA, API_OPENCL = 0, 1

try:  # the common call compiled (setup.py builds it where a C compiler is; optional)
    if not getattr(sys, "_is_gil_enabled", lambda: True)():
        # it relies on the GIL: loading it would turn a free-threaded Python's back on
        raise ImportError("a free-threaded Python")
    from . import _common_call

    # a build of another record or other slot codes (an editable install's stale build) is
    # left unused
    _same = getattr(_common_call, "LAYOUT", 0) == LAYOUT and getattr(_common_call, "SLOTS", ()) == ARG_SLOTS
    CommonCall: Any = _common_call.CommonCall if _same else None
except ImportError:  # pragma: no cover - depends on the install
    CommonCall = None
if os.environ.get("JITSCAN_NO_EXTENSION", "0") not in ("", "0"):  # the Python path alone
    CommonCall = None


#: marks an argument of a kernel table that is a memory object (kernel_table)
MEMORY_BIT = 1 << 63


def kernel_table(sizes: Sequence[int], memory: Sequence[bool]) -> np.ndarray:
    """An OpenCL kernel object's table as the compiled call keeps it: how many arguments,
    each one's bytes (``MEMORY_BIT`` set where ``memory`` says it is a memory object), the
    values last set, and whether they are (none yet). It belongs to one kernel object,
    whose arguments only the compiled call sets.

    The compiled call sets an argument again only where its value changed, but a memory
    object's always: a buffer released and another made at its handle's address is another
    object with the same handle, and a driver that resolved the first one's memory when it
    was set (Oclgrind does) would read freed memory."""
    table = np.zeros(2 + 2 * len(sizes), np.uint64)
    table[0] = len(sizes)
    marks = [MEMORY_BIT if m else 0 for m in memory]
    table[1 : 1 + len(sizes)] = [int(b) | m for b, m in zip(sizes, marks, strict=True)]
    return table


def arg_codes(plan: LaunchPlan, nsrc: int = 1, ndst: int = 1, sized: bool = False) -> bytes:
    """What each 8-byte slot of the plan's argument block holds, as ``_common_call.c`` reads
    it: ``plan.slots`` with each array as the two arguments a backend passes it as (its
    ``buffer()``): the device pointer (CUDA) or buffer (OpenCL), then its offset, a
    constant 0 on CUDA that the compiled call fills in on OpenCL; a tuple value's ``nsrc``
    arrays in and ``ndst`` out, each so, in field order; with ``sized`` (a transform's
    arrays, ``variants.base.operands``) each followed by its length."""
    codes: list[int] = []
    each = (ARG_CONST, ARG_LEN) if sized else (ARG_CONST,)
    for slot in plan.slots:
        if slot in (ARG_SRC, ARG_DST):
            codes += (slot, *each) * (nsrc if slot == ARG_SRC else ndst)
        else:
            codes.append(slot)
    return bytes(codes)


def launch_record(stream: Any, lo: int, hi: int, load: str, go: Any) -> tuple | None:
    """What a compiled common call reuses of this call's launch (see _common_call.c's
    remember()), or None where ``go`` is not a launch it can make.

    ``go.launch_state()`` gives the queue's lock, the scratch, the LaunchPlan, the launch's
    code and the elements from which it is ``code | plan.stream_bit``, and the launcher.
    """
    state = getattr(go, "launch_state", None)
    if state is None:
        return None
    lock, scratch, plan, code, stream_from, fire = state()
    native = getattr(fire, "native", None)  # codes, function, arguments' block, stream, threads
    if native is None:
        return None
    return record_of(stream, lo, hi, load, lock, scratch, plan, code, stream_from, native, fire)


def record_of(
    stream: Any,
    lo: int,
    hi: int,
    load: str,
    lock: Any,
    scratch: Scratch,
    plan: LaunchPlan,
    code: int,
    stream_from: float,
    native: tuple,
    keep: Any,
) -> tuple:
    """remember()'s record of a launch: ``native`` its launcher's ``fire.native`` (codes,
    function, params, slots, queue, threads), ``keep`` what the addresses point into; the bits a carry in the
    launch's words sets (0: the plan takes none there)."""
    carry = plan.carry_bit | plan.carry_args_bit if plan.ncarry else 0
    return (
        (stream, lo, hi, load, lock.acquire, lock.release, scratch)
        + (plan.tile, plan.header, plan.per_tile, plan.epoch_limit, code, code | plan.stream_bit)
        + (min(stream_from, sys.maxsize), *native, carry, keep)  # inf: never
    )


#: the segments' modes as _common_call.c numbers them (MODE_*; "stages": a reduction by
#: offsets of several launches, which form_record finds by its launch function)
MODES = {"flags": 1, "rows": 2, "offsets": 3, "fields": 4, "stages": 5, "transform": 6}
#: the dtypes of flags and offsets the kernels read as they are (plan/forms.py's rules)
FLAG_TYPES = (np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.uint8))
OFFSET_TYPES = (np.dtype(np.int64), np.dtype(np.uint64))


def form_arrays(
    fields: tuple | None, outputs: tuple, transform: tuple | None
) -> tuple[tuple[int, int], dict[str, Any]]:
    """A form call's arrays in and out (what :func:`form_record` counts slots of) and the
    CommonCall's keywords saying what they are: a transform's (``transform``: the dtypes it
    reads and writes), a tuple value's (its fields' dtypes, None at an index field, and the
    written ones'), else one array each way."""
    if transform is not None:
        reads, writes = tuple(transform[0]), tuple(transform[1])
        return (len(reads), len(writes)), {"transform": (reads, writes)}
    if fields is not None:
        arrays = (sum(f is not None for f in fields), len(outputs))
        return arrays, {"fields": tuple(fields), "outputs": tuple(outputs)}
    return (1, 1), {}


def form_record(
    stream: Any,
    lo: int,
    hi: int,
    load: str,
    mode: str,
    whole: bool,
    rows_tile: int,
    go: Any,
    arrays: tuple[int, int] = (1, 1),
    hstream: int = 0,
    watch: tuple | None = None,
) -> tuple | None:
    """What a compiled form call reuses of this call's launch (_common_call.c's remember()
    with a form's part), or None where ``go`` is not a launch it can make.

    ``go.launch_state()`` gives :func:`launch_record`'s state, then the offsets' pre-pass
    (variants.segments.Prepass, or None). A launch of rows of whole tiles passes the
    row's tiles in the plain program's last constant: the count slot here. A reduction
    by offsets in stages (``go.stages_state``) is :func:`stages_record`'s. ``watch``: by
    offsets on OpenCL, how the alarm's flag comes back to the host after a launch (the
    read's entry point, the flag's buffer, ``Prepass.copy_due``: whether a launch copies it).
    """
    stages = getattr(go, "stages_state", None)
    if stages is not None:
        return stages_record(stream, hstream, lo, hi, load, mode, stages(), watch)
    state = getattr(go, "launch_state", None)
    if state is None or mode not in MODES:
        return None
    lock, scratch, plan, code, stream_from, fire, pre = state()
    native = getattr(fire, "native", None)
    if native is None:
        return None
    codes = native[0]
    if mode in ("fields", "transform"):  # a tuple value's arrays, each its two slots; a transform's three
        codes = arg_codes(plan, *arrays, sized=mode == "transform")
    if codes is None:  # a launcher of another count of arrays
        return None
    if whole:  # row_tiles, the plain program's last constant
        at = codes.rfind(bytes([ARG_CONST]))
        if at < 0:
            return None
        codes = codes[:at] + bytes([ARG_SEGN]) + codes[at + 1 :]
    form: tuple = (MODES[mode], whole, rows_tile, None, 0, 0, 0, 0, 0, 0)
    if mode == "offsets":
        pre_native = getattr(getattr(pre, "fire", None), "native", None)
        if pre_native is None or (pre.searches and getattr(pre, "check", None) is not None):
            return None  # (beside one-thread tiles that search, a check of its own: Python's)
        # up to how many tiles the tiles search: every launch of a program that searches
        search_tiles = sys.maxsize if pre.searches else 0
        form = (
            MODES[mode],
            False,
            0,
            pre.first,
            *pre_native,
            pre.alarm.seen,
            search_tiles,
            None,
            0,
            None,
            watch,
        )
    native = (codes, *native[1:])
    record = record_of(stream, lo, hi, load, lock, scratch, plan, code, stream_from, native, (fire, pre))
    return record + (form,)


def stages_record(
    stream: Any,
    hstream: int,
    lo: int,
    hi: int,
    load: str,
    mode: str,
    state: tuple,
    watch: tuple | None = None,
) -> tuple | None:
    """remember()'s record of a reduction by offsets in stages (MODE_STAGES), from the
    launch function's ``stages_state()``: the queue's lock, the spine's and the open
    segments' Scratch and their bytes a tile, each launch's (launcher, workgroups rule,
    slot codes), and the pre-pass; None where a launcher is not one a compiled call makes
    (or the first launch is not of a workgroup a tile, as the compiled call makes it)."""
    lock, spine, open_, tile, spine_bytes, open_bytes, fires, pre = state
    pre_native = getattr(getattr(pre, "fire", None), "native", None)
    natives = [getattr(fire, "native", None) for fire, _, _ in fires]
    if mode != "offsets" or pre_native is None or None in natives or pre.searches or not fires:
        return None
    if fires[0][1] != GROUPS_TILES or len(fires) - 1 > 2:  # the first: a workgroup a tile
        return None
    (function, params, slots, threads), codes = natives[0], fires[0][2]
    rest = tuple((*native, groups, c) for native, (_, groups, c) in zip(natives[1:], fires[1:], strict=True))
    # a spine has no header, epoch, code or carry: those fields are the plain launch's
    record = (stream, lo, hi, load, lock.acquire, lock.release, spine, tile, 0, spine_bytes)
    record += (0, 0, 0, sys.maxsize, codes, function, params, slots, hstream, threads, 0, (fires, pre))
    form = (
        MODES["stages"],
        False,
        0,
        pre.first,
        *pre_native,
        pre.alarm.seen,
        0,
        open_,
        open_bytes,
        rest,
        watch,
    )
    return record + (form,)
