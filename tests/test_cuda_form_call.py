"""The compiled form call on CUDA (_common_call.c with ``form=True``), on any machine.

Segmented scans by flags, by offsets (the pre-pass, then the scan; or the scan alone, its
tiles searching the offsets) and of rows launch as
the Python form call (plan/forms.py) would have, or leave the call to it. As in
test_cuda_call.py, arrays are stand-ins with CuPy's fields and the launch records what it
was given; tests/test_segmented.py and test_api.py run the real thing on a GPU.
"""

from __future__ import annotations

import ctypes
import math
import threading

import numpy as np
import pytest

from jitscan.backends.launch import (
    ARG_CODE,
    ARG_CONST,
    ARG_DST,
    ARG_EPOCH,
    ARG_FIRST,
    ARG_FLAG,
    ARG_LEN,
    ARG_N,
    ARG_SCRATCH,
    ARG_SEG,
    ARG_SEGN,
    ARG_SRC,
    ARG_WORD,
    Scratch,
)

_common_call = pytest.importorskip("jitscan.backends._common_call", reason="the extension is not built here")
from test_cuda_call import _PROTOTYPE, _Memory  # noqa: E402 - the plain call's stand-ins, after the skip

TILE, HEADER, PER_TILE, LIMIT, THREADS, PRE_THREADS = 512, 64, 16, 1000, 256, 128
KIND, STREAM_BIT = 3, 1 << 8
MAIN, PRE = 0xF00, 0xBEE  # the kernels' function handles
MAIN_2 = 0xF02  # the scan of another size class: another program
SCRATCH, FIRST, NEW = 0xABC000, 0xF1F000, 0x700000
#: the chained kernel's block: the arrays (pointer, offset), n, scratch, code, epoch, four constants
HEAD = bytes([ARG_SRC, ARG_CONST, ARG_DST, ARG_CONST, ARG_N, ARG_SCRATCH, ARG_CODE, ARG_EPOCH]) + bytes(
    [ARG_CONST] * 4
)
TAILS = {
    "flags": bytes([ARG_SEG, ARG_SEGN]),
    "offsets": bytes([ARG_SEG, ARG_FIRST, ARG_SEGN, ARG_WORD, ARG_FLAG]),
    "rows": bytes([ARG_SEG, ARG_SEGN]),
}
MODES = {"flags": 1, "rows": 2, "offsets": 3}
CONSTS = [11, 12, 13, 14]  # what the launcher packed once
ALARM = [0xA1, 0xA2]  # the queue's alarm in a launch by offsets, as the launcher packed it


class Arr:
    """What the compiled call reads of a cupy.ndarray; ``Arr(shape, dtype)`` is a new one
    (at ``NEW``), as the call makes a result."""

    def __init__(self, ptr, size=None, dtype="int32", contiguous: bool = True, shape=None):
        if isinstance(ptr, tuple):  # the constructor's (shape, dtype)
            ptr, shape, dtype = NEW, ptr, size
            size = math.prod(shape)
        self.shape = tuple(shape) if shape is not None else (size,)
        self.data = _Memory(ptr)
        self.size = size
        self.dtype = np.dtype(dtype)
        self._c_contiguous = contiguous
        self.ndim = len(self.shape)
        self.nbytes = size * self.dtype.itemsize


class FormRig:
    """A compiled form call of one mode, a recording launch, and a Python call behind it."""

    def __init__(
        self,
        mode: str,
        one: bool = False,
        whole: bool = False,
        rows_tile: int = 0,
        status=0,
        search_tiles=0,
        graph: GraphDriver | None = None,
    ):
        self.mode, self.whole, self.rows_tile, self.search_tiles = mode, whole, rows_tile, search_tiles
        self.codes = HEAD[:-1] + bytes([ARG_SEGN]) if whole else HEAD + TAILS[mode]
        self.slots = np.zeros(len(self.codes), np.uint64)
        self.slots[8:12] = CONSTS
        if mode == "offsets":
            self.slots[-2:] = ALARM
        self.params = (ctypes.c_void_p * len(self.codes))(
            *(self.slots.ctypes.data + 8 * k for k in range(len(self.codes)))
        )
        self.pre_slots = np.array([0, 0, 0, 0, 0xA1, 0xA2, 1], np.uint64)  # the alarm's words, check
        self.pre_params = (ctypes.c_void_p * 7)(*(self.pre_slots.ctypes.data + 8 * k for k in range(7)))
        self.flag = np.zeros(1, np.uint32)
        self.launches: list[dict] = []
        self.slow_calls: list[tuple] = []
        self.status = status
        self.stream = object()
        self.current = self.stream
        self.lock = threading.RLock()
        self.scratch = Scratch()
        self.scratch.replace(SCRATCH, HEADER + 64 * PER_TILE)
        self.first = Scratch()
        self.first.replace(FIRST, 8 * 65)

        def launch(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            count = 7 if function == PRE else len(self.codes)
            words = [int(ctypes.c_uint64.from_address(params[k]).value) for k in range(count)]
            self.launches.append(dict(function=function, groups=gx, threads=bx, stream=stream, args=words))
            return self.status

        self._launch = _PROTOTYPE(launch)
        self.loads = {np.dtype(np.int32): ""}
        extra = {}
        if graph is not None:  # the driver's graphs, whose launches land in self.launches too
            graph.counts = {MAIN: len(self.codes), MAIN_2: len(self.codes), PRE: 7}
            graph.launches = self.launches
            extra["graph"] = graph.addresses

        def slow(*args):
            self.slow_calls.append(args)
            return "python"

        self.call = _common_call.CommonCall(
            ndarray=Arr,
            dtype=np.dtype(np.int32),
            loads=self.loads,
            stream_of=lambda: self.current,
            slow=slow,
            osize=4,
            align=16,
            one=one,
            launch=ctypes.cast(self._launch, ctypes.c_void_p).value,
            form=True,
            flag_types=(np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.uint8)),
            offset_types=(np.dtype(np.int64), np.dtype(np.uint64)),
            **extra,
        )

    def form(self) -> tuple:
        if self.mode == "offsets":
            pre = (PRE, ctypes.addressof(self.pre_params), self.pre_slots.ctypes.data, PRE_THREADS)
            return (MODES["offsets"], False, 0, self.first, *pre, self.flag.ctypes.data, self.search_tiles)
        return (MODES[self.mode], self.whole, self.rows_tile, None, 0, 0, 0, 0, 0, 0)

    def remember(
        self, lo: int = 0, hi: int = 1 << 20, form: tuple | None = None, function: int = MAIN
    ) -> None:
        self.call.remember(
            (self.stream, lo, hi, "", self.lock.acquire, self.lock.release, self.scratch, TILE, HEADER)
            + (PER_TILE, LIMIT, KIND, KIND | STREAM_BIT, 1 << 30, self.codes, function)
            + (ctypes.addressof(self.params), self.slots.ctypes.data, 0x5EA, THREADS, 0, self.slots)
            + (self.form() if form is None else form,)
        )


def test_a_scan_by_flags_passes_the_flags_and_a_row_length_of_zero_behind_the_constants():
    rig = FormRig("flags")
    rig.remember()
    x, y, f = Arr(0x10000, 3000), Arr(0x20000, 3000), Arr(0x30000, 3000, "uint8")
    rig.scratch.epoch = 4
    assert rig.call(x, y, f, None, 0, None) is y and not rig.slow_calls
    (got,) = rig.launches
    assert (got["function"], got["groups"], got["threads"]) == (MAIN, 6, THREADS)
    assert got["args"] == [0x10000, 0, 0x20000, 0, 3000, SCRATCH, KIND, 5, *CONSTS, 0x30000, 0]


def test_a_scan_by_offsets_runs_the_pre_pass_then_the_scan_with_each_tiles_first_segment():
    rig = FormRig("offsets")
    rig.remember()
    x, o = Arr(0x10000, 3000), Arr(0x40000, 301, "int64")  # 300 segments over 6 tiles
    y = rig.call(x, None, None, o, 0, None)
    assert isinstance(y, Arr) and y.shape == (3000,)
    pre, main = rig.launches
    # every segment or tile (the more of them) a work-item, one more for the check's end
    assert (pre["function"], pre["groups"], pre["threads"]) == (PRE, -(-301 // PRE_THREADS), PRE_THREADS)
    assert pre["args"] == [0x40000, 300, 3000, FIRST, 0xA1, 0xA2, 1]
    assert main["args"] == [0x10000, 0, NEW, 0, 3000, SCRATCH, KIND, 1, *CONSTS, 0x40000, FIRST, 300, *ALARM]


def test_a_scan_by_offsets_with_its_pre_pass_is_one_graph_of_both_launches():
    driver = GraphDriver()
    rig, plain = FormRig("offsets", graph=driver), FormRig("offsets")
    x, o = Arr(0x10000, 3000), Arr(0x40000, 301, "int64")
    for r in (rig, plain):
        r.remember()
        r.call(x, None, None, o, 0, None)
    assert driver.calls == ["create", "add", "add", "instantiate", "launch"]
    assert rig.launches == plain.launches  # what the two launches would have launched
    x2, o2 = Arr(0x20000, 1500), Arr(0x50000, 151, "int64")
    for r in (rig, plain):
        r.launches.clear()
        r.call(x2, None, None, o2, 0, None)
    assert driver.calls[5:] == ["set", "set", "launch"]
    assert rig.launches == plain.launches and rig.launches[1]["groups"] == 3


def test_calls_of_two_programs_in_turn_keep_a_graph_each():
    # two size classes of one prepared scan are two programs: each keeps its graph
    driver = GraphDriver()
    rig = FormRig("offsets", graph=driver)
    x, o = Arr(0x10000, 3000), Arr(0x40000, 301, "int64")
    for function in (MAIN, MAIN_2, MAIN, MAIN_2):
        rig.remember(function=function)
        rig.launches.clear()
        rig.call(x, None, None, o, 0, None)
        assert [launch["function"] for launch in rig.launches] == [PRE, function]
    assert driver.calls.count("create") == 2 and driver.calls.count("launch") == 4


def test_a_scan_by_offsets_of_few_tiles_has_them_search_the_offsets_with_no_pre_pass():
    rig = FormRig("offsets", search_tiles=7)
    rig.remember()
    x, o = Arr(0x10000, 3000), Arr(0x40000, 301, "int64")  # 6 tiles of at most 7: they search
    rig.call(x, None, None, o, 0, None)
    (main,) = rig.launches
    # the offsets in the table's slot (JS_SEARCH_SEGMENTS), the alarm the tiles raise as packed
    assert main["function"] == MAIN
    assert main["args"] == [
        0x10000,
        0,
        NEW,
        0,
        3000,
        SCRATCH,
        KIND,
        1,
        *CONSTS,
        0x40000,
        0x40000,
        300,
        *ALARM,
    ]
    rig.first.replace(FIRST, 8)  # a table too small for 7 tiles: no matter, none is read
    rig.call(Arr(0x10000, 3000 + TILE), None, None, Arr(0x40000, 301, "int64"), 0, None)
    assert len(rig.launches) == 2 and rig.launches[1]["function"] == MAIN
    rig.call(Arr(0x10000, 3000 + 2 * TILE), None, None, Arr(0x40000, 301, "int64"), 0, None)
    assert (
        len(rig.launches) == 2 and len(rig.slow_calls) == 1
    )  # 8 tiles: the pre-pass, whose table is Python's


def test_a_reduction_by_offsets_makes_one_value_a_segment_and_leaves_no_segment_to_python():
    rig = FormRig("offsets", one=True)
    rig.remember()
    x = Arr(0x10000, 3000)
    r = rig.call(x, None, None, Arr(0x40000, 11, "uint64"), 0, None)
    assert isinstance(r, Arr) and r.shape == (10,) and len(rig.launches) == 2
    out = Arr(0x90000, 10)
    assert rig.call(x, out, None, Arr(0x40000, 11, "uint64"), 0, None) is out
    assert rig.call(x, None, None, Arr(0x40000, 1, "int64"), 0, None) == "python"  # no segment
    assert rig.call(x, Arr(0x90000, 3000), None, Arr(0x40000, 11, "int64"), 0, None) == "python"
    assert len(rig.launches) == 4


def test_an_earlier_calls_bad_offsets_leave_the_call_to_python_which_raises_them():
    rig = FormRig("offsets")
    rig.remember()
    rig.flag[0] = 1  # the queue's alarm, as a kernel sets it
    x, o = Arr(0x10000, 3000), Arr(0x40000, 301, "int64")
    assert rig.call(x, None, None, o, 0, None) == "python" and not rig.launches
    rig.flag[0] = 0
    rig.call(x, None, None, o, 0, None)
    assert len(rig.launches) == 2


def test_rows_pass_the_row_length_and_make_a_result_in_the_inputs_shape():
    rig = FormRig("rows", rows_tile=1024)
    rig.remember()
    x = Arr(0x10000, 3000, shape=(10, 300))
    y = rig.call(x, None, None, None, 300, None)
    assert isinstance(y, Arr) and y.shape == (10, 300)
    assert rig.launches[0]["args"][-2:] == [0x10000, 300]
    out2d, flat = Arr(0x20000, 3000, shape=(10, 300)), Arr(0x20000, 3000)
    assert rig.call(x, out2d, None, None, 300, None) is out2d
    assert rig.call(x, flat, None, None, 300, None) is flat
    assert rig.call(x, Arr(0x20000, 3000, shape=(300, 10)), None, None, 300, None) == "python"
    assert rig.call(x, None, None, None, 1024 * 3, None) == "python"  # whole tiles: another launch
    assert len(rig.launches) == 3


def test_rows_of_whole_tiles_pass_the_rows_tiles_in_the_plain_programs_last_constant():
    rig = FormRig("rows", whole=True, rows_tile=TILE)
    rig.remember()
    x = Arr(0x10000, 4 * 2 * TILE, shape=(4, 2 * TILE))
    rig.call(x, None, None, None, 2 * TILE, None)
    (got,) = rig.launches
    assert got["args"][8:] == [*CONSTS[:3], 2]
    assert rig.call(x, None, None, None, 300, None) == "python"  # not whole: another launch


@pytest.mark.parametrize(
    "mode, case",
    [
        ("flags", "flags of another length"),
        ("flags", "flags of four bytes"),
        ("flags", "flags not contiguous"),
        ("flags", "offsets given too"),
        ("flags", "a row length given too"),
        ("flags", "out over the flags"),
        ("flags", "a carry"),
        ("offsets", "offsets of int32"),
        ("offsets", "offsets 2-D"),
        ("offsets", "offsets empty"),
        ("offsets", "flags given too"),
        ("offsets", "first segments' buffer too small"),
        ("offsets", "out over the offsets"),
        ("offsets", "another stream"),
        ("offsets", "pre-pass failed"),
        ("rows", "a row length that does not divide"),
        ("rows", "a row length not an int"),
        ("rows", "a row length of 0"),
        ("rows", "flags given too"),
    ],
)
def test_every_other_form_call_goes_to_python_having_launched_nothing(mode, case):
    rig = FormRig(mode, status=201 if case == "pre-pass failed" else 0)
    rig.remember()
    n = 3000
    x, y = Arr(0x10000, n), Arr(0x20000, n)
    flags = Arr(0x30000, n, "uint8") if mode == "flags" else None
    offsets = Arr(0x40000, 301, "int64") if mode == "offsets" else None
    row_len: object = 300 if mode == "rows" else 0
    carry = None
    if case == "flags of another length":
        flags = Arr(0x30000, n - 1, "uint8")
    elif case == "flags of four bytes":
        flags = Arr(0x30000, n, "int32")
    elif case == "flags not contiguous":
        flags = Arr(0x30000, n, "uint8", contiguous=False)
    elif case == "offsets given too":
        offsets = Arr(0x40000, 301, "int64")
    elif case == "a row length given too":
        row_len = 300
    elif case == "out over the flags":
        y = Arr(0x30000 + 64, n)
    elif case == "a carry":
        carry = b"\0\0\0\0"
    elif case == "offsets of int32":
        offsets = Arr(0x40000, 301, "int32")
    elif case == "offsets 2-D":
        offsets = Arr(0x40000, 302, "int64", shape=(2, 151))
    elif case == "offsets empty":
        offsets = Arr(0x40000, 0, "int64")
    elif case == "flags given too":
        flags = Arr(0x30000, n, "uint8")
    elif case == "first segments' buffer too small":
        rig.first.replace(FIRST, 8 * 6)
    elif case == "out over the offsets":
        y = Arr(0x40000 - 16, n)
    elif case == "another stream":
        rig.current = object()
    elif case == "a row length that does not divide":
        row_len = 299
    elif case == "a row length not an int":
        row_len = np.int64(300)
    elif case == "a row length of 0":
        row_len = 0
    epoch = rig.scratch.epoch
    assert rig.call(x, y, flags, offsets, row_len, carry) == "python"
    assert rig.slow_calls == [(x, y, flags, offsets, row_len, carry)]
    if case == "pre-pass failed":  # tried once, nothing after it; the epoch is skipped
        assert [g["function"] for g in rig.launches] == [PRE] and rig.scratch.epoch == epoch + 1
    else:
        assert not rig.launches and rig.scratch.epoch == epoch
    assert rig.lock.acquire(blocking=False)
    rig.lock.release()


def test_a_form_call_takes_six_arguments_and_remember_checks_the_forms_part():
    rig = FormRig("offsets")
    with pytest.raises(TypeError, match="form call"):
        rig.call(Arr(0, 1), None, None)
    with pytest.raises(ValueError, match="form"):
        rig.remember(form=(7, False, 0, None, 0, 0, 0, 0, 0, 0))  # no such mode
    with pytest.raises(ValueError, match="pre-pass"):
        rig.remember(form=(MODES["offsets"], False, 0, rig.first, 0, 0, 0, 0, 0, 0))  # none given
    with pytest.raises(ValueError, match="whole rows"):
        rig.remember(form=(MODES["rows"], True, TILE * 2, None, 0, 0, 0, 0, 0, 0))
    with pytest.raises(TypeError):
        rig.call.remember(rig.form())  # the plain record is missing
    plain = FormRig("flags")
    with pytest.raises(ValueError, match="slot code"):  # a form's slots in a plain call's record
        _common_call.CommonCall(
            ndarray=Arr, dtype=np.dtype(np.int32), loads={}, stream_of=object, slow=print, osize=4, align=16,
            one=False, launch=1,
        ).remember(
            (plain.stream, 0, 10, "", plain.lock.acquire, plain.lock.release, plain.scratch, TILE, HEADER)
            + (PER_TILE, LIMIT, KIND, KIND, 1, plain.codes, MAIN, 1, 1, 1, THREADS, 0, None)
        )  # fmt: skip
    with pytest.raises(ValueError, match="flags and offsets"):
        _common_call.CommonCall(
            ndarray=Arr, dtype=np.dtype(np.int32), loads={}, stream_of=object, slow=print, osize=4, align=16,
            one=False, launch=1, form=True,
        )  # fmt: skip


class BlockRig:
    """A compiled form call of one argument block (``codes`` then the launch's n, scratch, code,
    epoch and four constants), a recording launch and a Python call behind it; ``stream`` what
    its record names as the launch's stream (or queue). ``kwargs``: the CommonCall's own."""

    def __init__(self, codes: bytes, **kwargs):
        self.codes = codes + bytes([ARG_N, ARG_SCRATCH, ARG_CODE, ARG_EPOCH, *[ARG_CONST] * 4])
        self.slots = np.zeros(len(self.codes), np.uint64)
        self.params = (ctypes.c_void_p * len(self.codes))(
            *(self.slots.ctypes.data + 8 * k for k in range(len(self.codes)))
        )
        self.launches: list = []
        self.slow_calls: list[tuple] = []
        self.stream = object()
        self.lock = threading.RLock()
        self.scratch = Scratch()
        self.scratch.replace(SCRATCH, HEADER + 64 * PER_TILE)

        def launch(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            words = [int(ctypes.c_uint64.from_address(params[k]).value) for k in range(len(self.codes))]
            self.launches.append(self.recorded(gx, stream, words))
            return 0

        self._launch = _PROTOTYPE(launch)

        def slow(*args):
            self.slow_calls.append(args)
            return "python"

        self.call = _common_call.CommonCall(
            ndarray=Arr,
            loads={},
            slow=slow,
            align=16,
            one=False,
            launch=ctypes.cast(self._launch, ctypes.c_void_p).value,
            form=True,
            flag_types=(),
            offset_types=(),
            **kwargs,
        )

    def recorded(self, groups: int, stream: int, words: list[int]):
        return words

    def remember_mode(self, mode: int, codes: bytes | None = None, lo: int = 0, hi: int = 1 << 20) -> None:
        self.call.remember(
            (self.stream, lo, hi, "", self.lock.acquire, self.lock.release, self.scratch, TILE, HEADER)
            + (PER_TILE, LIMIT, KIND, KIND | STREAM_BIT, 1 << 30, codes or self.codes, MAIN)
            + (ctypes.addressof(self.params), self.slots.ctypes.data, 0x5EA, THREADS, 0, self.slots)
            + ((mode, False, 0, None, 0, 0, 0, 0, 0, 0),)
        )


class FieldsRig(BlockRig):
    """A compiled form call of tuple values: fields (float32, an index field, float32), the
    third written, as ``jitscan.scan((a, jitscan.index, b), op=..., output=2)`` makes it;
    ``outputs`` the written fields' dtypes."""

    F32 = np.dtype(np.float32)

    def __init__(self, outputs=(F32,), fields=None):
        self.fields = fields if fields is not None else (self.F32, None, self.F32)
        nin = sum(f is not None for f in self.fields)
        super().__init__(
            bytes([ARG_SRC, ARG_CONST] * nin + [ARG_DST, ARG_CONST] * len(outputs)),
            dtype=np.dtype([("a", "f4"), ("b", "f4")]),
            stream_of=lambda: self.stream,
            osize=8,
            fields=self.fields,
            outputs=outputs,
        )

    def remember(self, codes: bytes | None = None) -> None:
        self.remember_mode(4, codes)


def test_a_tuple_value_passes_each_field_in_memory_and_each_field_written_in_turn():
    rig = FieldsRig()
    rig.remember()
    a, b, h = Arr(0x10000, 3000, "float32"), Arr(0x20000, 3000, "float32"), Arr(0x30000, 3000, "float32")
    got = rig.call((a, "index", b), h, None, None, 0, None)
    assert got == (h,) and not rig.slow_calls  # the written fields' arrays, as Python's call returns
    (args,) = rig.launches
    assert args[:10] == [0x10000, 0, 0x20000, 0, 0x30000, 0, 3000, SCRATCH, KIND, 1]
    made = rig.call((a, "index", b), None, None, None, 0, None)  # a result of the field's dtype
    assert len(made) == 1 and made[0].dtype == np.float32 and made[0].shape == (3000,)
    assert rig.call((a, "index", b), (h,), None, None, 0, None) == (h,) and len(rig.launches) == 3


def test_an_index_field_written_gets_an_array_of_its_positions_dtype():
    rig = FieldsRig(outputs=(FieldsRig.F32, np.dtype(np.int32)))  # output=(2, 1): the value and its index
    rig.remember()
    a, b = Arr(0x10000, 3000, "float32"), Arr(0x20000, 3000, "float32")
    v, i = rig.call((a, "index", b), None, None, None, 0, None)
    assert (v.dtype, i.dtype) == (np.float32, np.int32) and v.shape == i.shape == (3000,)
    h, k = Arr(0x30000, 3000, "float32"), Arr(0x40000, 3000, "int32")
    assert rig.call((a, "index", b), (h, k), None, None, 0, None) == (h, k) and not rig.slow_calls
    assert rig.call((a, "index", b), (h, h), None, None, 0, None) == "python"  # the index's out is int32


@pytest.mark.parametrize(
    "case",
    [
        "a field of another dtype",
        "fields of two lengths",
        "one field too few",
        "a field not contiguous",
        "out over an input",
        "out of another dtype",
        "two outs for one field",
        "flags given",
        "a carry",
        "a list, not a tuple",
    ],
)
def test_every_other_tuple_call_goes_to_python_having_launched_nothing(case):
    rig = FieldsRig()
    rig.remember()
    n = 3000
    a, b, h = Arr(0x10000, n, "float32"), Arr(0x20000, n, "float32"), Arr(0x30000, n, "float32")
    xs: object = (a, "index", b)
    flags, carry, out = None, None, h
    if case == "a field of another dtype":
        xs = (a, "index", Arr(0x20000, n, "float64"))
    elif case == "fields of two lengths":
        xs = (a, "index", Arr(0x20000, n - 1, "float32"))
    elif case == "one field too few":
        xs = (a, b)
    elif case == "a field not contiguous":
        xs = (a, "index", Arr(0x20000, n, "float32", contiguous=False))
    elif case == "out over an input":
        out = Arr(0x20000 + 64, n, "float32")
    elif case == "out of another dtype":
        out = Arr(0x30000, n, "int32")
    elif case == "two outs for one field":
        out = (h, Arr(0x40000, n, "float32"))
    elif case == "flags given":
        flags = Arr(0x50000, n, "uint8")
    elif case == "a carry":
        carry = b"\0\0\0\0"
    elif case == "a list, not a tuple":
        xs = [a, "index", b]
    assert rig.call(xs, out, flags, None, 0, carry) == "python"
    assert not rig.launches and rig.scratch.epoch == 0


def test_a_tuple_values_record_has_a_slot_for_each_array_and_the_call_names_its_fields():
    rig = FieldsRig()
    with pytest.raises(ValueError, match="fields' arrays"):  # two fields in memory, one array slot
        rig.remember(codes=rig.codes[2:])
    with pytest.raises(ValueError, match="field written is a dtype"):
        FieldsRig(outputs=(np.dtype([]),))
    with pytest.raises(ValueError, match="at most 8"):
        FieldsRig(fields=(FieldsRig.F32,) * 9)


# -- a transform's call (MODE_TRANSFORM: compaction, runs, partitions)


class TransformRig(BlockRig):
    """A compiled transform's call as compaction's makes it: it reads a condition (bool), the
    values (int32) and the padding (int32), and writes the kept values (int32) and the count
    (int64), each array with its length; ``queue`` the queue its launch was on."""

    READS = (np.dtype(np.bool_), np.dtype(np.int32), np.dtype(np.int32))
    WRITES = (np.dtype(np.int32), np.dtype(np.int64))

    def __init__(self):
        super().__init__(
            bytes([ARG_SRC, ARG_CONST, ARG_LEN] * 3 + [ARG_DST, ARG_CONST, ARG_LEN] * 2),
            dtype=self.WRITES[0],
            stream_of=lambda: None,  # a transform's call is on the queue it is given
            osize=4,
            transform=(self.READS, self.WRITES),
        )
        self.queue = self.stream

    def recorded(self, groups: int, stream: int, words: list[int]):
        return dict(groups=groups, stream=stream, args=words)

    def remember(self, codes: bytes | None = None, lo: int = 0, hi: int = 1 << 20) -> None:
        self.remember_mode(6, codes, lo, hi)

    @staticmethod
    def arrays(n: int = 3000, size: int = 1000) -> tuple[list, list]:
        reads = [Arr(0x10000, n, "bool"), Arr(0x20000, n, "int32"), Arr(0x30000, 1, "int32")]
        return reads, [Arr(0x40000, size, "int32"), Arr(0x50000, 1, "int64")]


def test_a_transforms_call_passes_each_array_with_its_length_then_the_count():
    rig = TransformRig()
    rig.remember()
    reads, writes = rig.arrays()
    assert rig.call(reads, writes, 3000, rig.queue) is None and not rig.slow_calls
    (launch,) = rig.launches
    assert launch["groups"] == math.ceil(3000 / TILE) and launch["stream"] == 0x5EA
    arrays = [0x10000, 0, 3000, 0x20000, 0, 3000, 0x30000, 0, 1, 0x40000, 0, 1000, 0x50000, 0, 1]
    assert launch["args"][:19] == [*arrays, 3000, SCRATCH, KIND, 1]
    # tuples as well as lists; another n of the class, another epoch
    assert rig.call(tuple(reads), tuple(writes), 2500, rig.queue) is None
    assert rig.launches[1]["args"][15:19] == [2500, SCRATCH, KIND, 2] and not rig.slow_calls


@pytest.mark.parametrize(
    "case",
    [
        "another queue",
        "another size class",
        "a read of another dtype",
        "a write not contiguous",
        "an empty array",
        "one read too few",
        "n not an int",
        "no elements",
    ],
)
def test_every_other_transform_call_goes_to_python_having_launched_nothing(case):
    rig = TransformRig()
    rig.remember(lo=1000, hi=4000)
    reads, writes = rig.arrays()
    n, queue = 3000, rig.queue
    if case == "another queue":
        queue = object()
    elif case == "another size class":
        n = 4001
    elif case == "a read of another dtype":
        reads[0] = Arr(0x10000, 3000, "uint8")
    elif case == "a write not contiguous":
        writes[0] = Arr(0x40000, 1000, "int32", contiguous=False)
    elif case == "an empty array":
        writes[0] = Arr(0x40000, 0, "int32")
    elif case == "one read too few":
        reads = reads[:2]
    elif case == "n not an int":
        n = 3000.0
    elif case == "no elements":
        n = 0
    assert rig.call(reads, writes, n, queue) == "python"
    assert not rig.launches and rig.scratch.epoch == 0
    assert rig.slow_calls[0][2:] == (n, queue)


def test_a_transforms_record_has_a_length_after_each_array_and_the_call_names_its_arrays():
    rig = TransformRig()
    with pytest.raises(ValueError, match="length two slots after"):  # a length where no array is
        rig.remember(codes=bytes([ARG_LEN]) + rig.codes[1:])
    with pytest.raises(ValueError, match="length two slots after"):  # not after its array's offset
        rig.remember(codes=bytes([ARG_SRC, ARG_SRC, ARG_LEN]) + rig.codes[3:])
    with pytest.raises(ValueError, match="a length for each array"):  # the padding's length missing
        rig.remember(codes=rig.codes[:8] + rig.codes[9:])
    with pytest.raises(ValueError, match="a transform's call its own"):  # a tuple value's mode
        rig.remember_mode(4)
    with pytest.raises(TypeError, match=r"\(reads, writes, n, queue\)"):
        rig.call([], [], 1)
    with pytest.raises(ValueError, match="1 to 8 arrays"):
        _common_call.CommonCall(
            ndarray=Arr, dtype=np.dtype(np.int32), loads={}, stream_of=None, slow=print, osize=4, align=16,
            one=False, launch=1, form=True, flag_types=(), offset_types=(),
            transform=((np.dtype(np.int32),) * 9, (np.dtype(np.int32),)),
        )  # fmt: skip


# -- a reduction by offsets in stages (rts: the pre-pass, the tile pass, the spine, the fix-up)

SPINE_F, FIXUP_F = 0x5B1, 0xF1C  # the stages' function handles
SPINE_BUF, OPEN_BUF = 0x5B0000, 0x0B0000


class StagesRig:
    """A compiled reduction by offsets in stages, its record made by cupy.py's
    compiled.stages_record from rts's own description of its launches (rts.stage_codes)."""

    def __init__(
        self,
        spine_tiles: int = 64,
        open_tiles: int = 64,
        first_tiles: int = 64,
        graph: GraphDriver | None = None,
    ):
        from types import SimpleNamespace

        from jitscan.backends import compiled, targets
        from jitscan.dtypes import lookup
        from jitscan.operators import resolve
        from jitscan.plan import tuning
        from jitscan.variants import rts

        spec = tuning.spec_for(
            targets.target("sm_90"), variant="rts", kind="reduce", dtype=lookup("int32"),
            monoid=resolve("add"), n=None, segmented="offsets",
        )  # fmt: skip
        self.stages = rts.stage_codes(spec)
        self.blocks, self.params, fires = [], [], []
        for (_, groups, codes), function in zip(self.stages, (MAIN, SPINE_F, FIXUP_F), strict=True):
            block = np.array([KIND if c == ARG_CONST else 0 for c in codes], np.uint64)
            params = (ctypes.c_void_p * len(codes))(*(block.ctypes.data + 8 * k for k in range(len(codes))))
            self.blocks.append(block)
            self.params.append(params)
            fire = SimpleNamespace(native=(function, ctypes.addressof(params), block.ctypes.data, THREADS))
            fires.append((fire, groups, codes))
        for block, (_, _, codes) in zip(self.blocks, self.stages, strict=True):  # the offsets' 0, the kind
            block[[k for k, c in enumerate(codes) if c == ARG_CONST]] = 0
        self.blocks[1][-1] = KIND  # the spine's last constant: the launch's kind
        # the alarm's words, as the tile pass's launcher packed them
        self.blocks[0][[k for k, c in enumerate(self.stages[0][2]) if c in (ARG_WORD, ARG_FLAG)]] = ALARM
        self.pre_slots = np.array([0, 0, 0, 0, 0xA1, 0xA2, 1], np.uint64)
        self.pre_params = (ctypes.c_void_p * 7)(*(self.pre_slots.ctypes.data + 8 * k for k in range(7)))
        self.flag = np.zeros(1, np.uint32)
        self.lock = threading.RLock()
        self.spine, self.open, self.first = Scratch(), Scratch(), Scratch()
        self.spine.replace(SPINE_BUF, 4 * spine_tiles)
        self.open.replace(OPEN_BUF, 4 * open_tiles)
        self.first.replace(FIRST, 8 * (first_tiles + 1))
        pre_cuda = (PRE, ctypes.addressof(self.pre_params), self.pre_slots.ctypes.data, PRE_THREADS)
        pre = SimpleNamespace(
            fire=SimpleNamespace(native=pre_cuda), searches=False, first=self.first,
            alarm=SimpleNamespace(flag=self.flag.ctypes.data, seen=self.flag.ctypes.data),
        )  # fmt: skip
        self.stream = object()
        self.state = (self.lock, self.spine, self.open, TILE, 4, 4, tuple(fires), pre)
        self.record = compiled.stages_record(self.stream, 0x5EA, 0, 1 << 20, "", "offsets", self.state)
        self.launches: list[dict] = []
        self.slow_calls: list[tuple] = []
        counts = {
            MAIN: len(self.stages[0][2]),
            SPINE_F: len(self.stages[1][2]),
            FIXUP_F: len(self.stages[2][2]),
            PRE: 7,
        }

        def launch(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            words = [int(ctypes.c_uint64.from_address(params[k]).value) for k in range(counts[function])]
            self.launches.append(dict(function=function, groups=gx, threads=bx, stream=stream, args=words))
            return 0

        self._launch = _PROTOTYPE(launch)
        extra = {}
        if graph is not None:  # the driver's graphs, whose launches land in self.launches too
            graph.counts, graph.launches = counts, self.launches
            extra["graph"] = graph.addresses

        def slow(*args):
            self.slow_calls.append(args)
            return "python"

        self.call = _common_call.CommonCall(
            ndarray=Arr, dtype=np.dtype(np.int32), loads={np.dtype(np.int32): ""},
            stream_of=lambda: self.stream, slow=slow, osize=4, align=16, one=True,
            launch=ctypes.cast(self._launch, ctypes.c_void_p).value, form=True,
            flag_types=(np.dtype(np.uint8),), offset_types=(np.dtype(np.int64), np.dtype(np.uint64)), **extra,
        )  # fmt: skip
        self.call.remember(self.record)


class _Node(ctypes.Structure):
    """CUDA_KERNEL_NODE_PARAMS_v2, as the compiled call fills it in."""

    _fields_ = [
        ("func", ctypes.c_void_p),
        *[(name, ctypes.c_uint) for name in ("gx", "gy", "gz", "bx", "by", "bz", "shared")],
        ("params", ctypes.POINTER(ctypes.c_void_p)),
        ("extra", ctypes.c_void_p),
        ("kern", ctypes.c_void_p),
        ("ctx", ctypes.c_void_p),
    ]


_DRIVERS: list[GraphDriver] = []


class GraphDriver:
    """Stand-ins for the driver's graph entry points (GraphApi's order). A node keeps what a
    kernel node keeps, its arguments' values copied when it is added or set; a graph's
    launch records each node's launch in turn, as the launch stand-in does. ``fail`` names
    an entry point that returns an error."""

    def __init__(self, fail: str = ""):
        self.fail, self.calls = fail, []
        self.counts: dict = {}
        self.launches: list = []
        self.nodes: list[dict] = []
        self.live: set[str] = set()
        vp = ctypes.c_void_p
        pp, node = ctypes.POINTER(vp), ctypes.POINTER(_Node)
        protos = [
            ctypes.CFUNCTYPE(ctypes.c_int, pp, ctypes.c_uint),  # create
            ctypes.CFUNCTYPE(ctypes.c_int, pp, vp, pp, ctypes.c_size_t, node),  # add
            ctypes.CFUNCTYPE(ctypes.c_int, pp, vp, ctypes.c_ulonglong),  # instantiate
            ctypes.CFUNCTYPE(ctypes.c_int, vp, vp, node),  # set
            ctypes.CFUNCTYPE(ctypes.c_int, vp, vp),  # launch
            ctypes.CFUNCTYPE(ctypes.c_int, vp),  # destroy an exec
            ctypes.CFUNCTYPE(ctypes.c_int, vp),  # destroy a graph
        ]
        fns = [self._create, self._add, self._instantiate, self._set, self._launch]
        fns += [self._drop_exec, self._drop]
        self._keep = [proto(fn) for proto, fn in zip(protos, fns, strict=True)]
        self.addresses = tuple(ctypes.cast(f, ctypes.c_void_p).value for f in self._keep)
        # kept for the process, as the driver's are: a call collected later still calls them
        _DRIVERS.append(self)

    def _kept(self, p) -> dict:
        n = p.contents
        words = [int(ctypes.c_uint64.from_address(n.params[k]).value) for k in range(self.counts[n.func])]
        return dict(function=n.func, groups=n.gx, threads=n.bx, args=words)

    def _status(self, name: str) -> int:
        self.calls.append(name)
        return 1 if name == self.fail else 0

    def _create(self, graph, flags):
        graph[0] = 0x6A
        self.live.add("graph")
        self.nodes = []
        return self._status("create")

    def _add(self, node, graph, deps, ndeps, p):
        after = deps[0] if ndeps else None
        assert after == (len(self.nodes) or None)  # a chain, each node after the one before
        self.nodes.append(self._kept(p))
        node[0] = len(self.nodes)
        return self._status("add")

    def _instantiate(self, exe, graph, flags):
        exe[0] = 0xE0
        self.live.add("exec")
        return self._status("instantiate")

    def _set(self, exe, node, p):
        self.nodes[node - 1] = self._kept(p)
        return self._status("set")

    def _launch(self, exe, stream):
        status = self._status("launch")
        if not status:
            self.launches.extend(dict(n, stream=stream) for n in self.nodes)
        return status

    def _drop_exec(self, exe):
        self.live.discard("exec")
        return 0

    def _drop(self, graph):
        self.live.discard("graph")
        return 0


def test_a_reduction_in_stages_runs_the_pre_pass_the_tile_pass_the_spine_and_the_fix_up():
    rig = StagesRig()
    x, o = Arr(0x10000, 3000), Arr(0x40000, 301, "int64")  # 300 segments over 6 tiles
    r = rig.call(x, None, None, o, 0, None)
    assert isinstance(r, Arr) and r.shape == (300,) and not rig.slow_calls
    pre, tiles, spine, fixup = rig.launches
    assert (pre["function"], pre["groups"]) == (PRE, -(-301 // PRE_THREADS))
    assert pre["args"] == [0x40000, 300, 3000, FIRST, 0xA1, 0xA2, 1]
    assert (tiles["function"], tiles["groups"], tiles["stream"]) == (MAIN, 6, 0x5EA)
    assert tiles["args"] == [0x10000, 0, 3000, SPINE_BUF, NEW, 0, OPEN_BUF, 0x40000, FIRST, 300, *ALARM]
    assert (spine["function"], spine["groups"]) == (SPINE_F, 1)
    assert spine["args"] == [SPINE_BUF, 6, NEW, 0, KIND]
    assert (fixup["function"], fixup["groups"]) == (FIXUP_F, -(-6 // THREADS))
    assert fixup["args"] == [SPINE_BUF, OPEN_BUF, NEW, 0, 6, FIRST]
    out = Arr(0x90000, 300)
    assert rig.call(x, out, None, o, 0, None) is out and rig.launches[-1]["args"][2] == 0x90000


def test_a_reduction_in_stages_is_one_graph_built_once_and_given_each_calls_arguments():
    driver = GraphDriver()
    rig = StagesRig(graph=driver)
    plain = StagesRig()
    x, o = Arr(0x10000, 3000), Arr(0x40000, 301, "int64")
    for r in (rig, plain):
        r.call(x, None, None, o, 0, None)
    assert driver.calls == ["create", "add", "add", "add", "add", "instantiate", "launch"]
    assert rig.launches == plain.launches  # what the four launches would have launched
    # another call's arrays and size: the nodes given them, the graph launched again
    x2, o2, out = Arr(0x20000, 1500), Arr(0x50000, 151, "int64"), Arr(0x90000, 150)
    for r in (rig, plain):
        r.launches.clear()
        assert r.call(x2, out, None, o2, 0, None) is out
    assert driver.calls[7:] == ["set"] * 4 + ["launch"]
    assert rig.launches == plain.launches and rig.launches[1]["groups"] == 3
    del rig
    import gc

    gc.collect()
    assert not driver.live  # the graph and its exec go with the call


@pytest.mark.parametrize("fail", ["create", "add", "instantiate"])
def test_a_graph_that_cannot_be_built_leaves_the_stages_to_launch_one_by_one(fail):
    driver = GraphDriver(fail=fail)
    rig = StagesRig(graph=driver)
    x, o = Arr(0x10000, 3000), Arr(0x40000, 301, "int64")
    for _ in range(2):
        r = rig.call(x, None, None, o, 0, None)
        assert isinstance(r, Arr) and not rig.slow_calls
    assert [launch["function"] for launch in rig.launches] == [PRE, MAIN, SPINE_F, FIXUP_F] * 2
    assert driver.calls.count("create") == 1 and "launch" not in driver.calls  # tried once
    assert not driver.live


def test_a_graph_launch_that_fails_leaves_the_call_to_python():
    driver = GraphDriver(fail="launch")
    rig = StagesRig(graph=driver)
    assert rig.call(Arr(0x10000, 3000), None, None, Arr(0x40000, 301, "int64"), 0, None) == "python"
    assert not rig.launches and rig.lock.acquire(blocking=False)
    rig.lock.release()


def test_graph_entry_points_are_seven_addresses_of_cuda():
    from jitscan.backends import compiled

    base = dict(
        ndarray=Arr, dtype=np.dtype(np.int32), loads={}, stream_of=lambda: None, slow=print, osize=4,
        align=16, one=True, launch=1, form=True, flag_types=(), offset_types=(),
    )  # fmt: skip
    with pytest.raises(ValueError, match="seven addresses"):
        _common_call.CommonCall(**base, graph=(1, 2, 3))
    with pytest.raises(ValueError, match="address is 0"):
        _common_call.CommonCall(**base, graph=(1, 2, 3, 4, 5, 6, 0))
    with pytest.raises(ValueError, match="CUDA"):
        _common_call.CommonCall(
            **base, graph=(1,) * 7, api=compiled.API_OPENCL, set_arg=1, empty=print, buffer_types=()
        )


@pytest.mark.parametrize(
    "case",
    [
        "a spine too small",
        "open partials too small",
        "first segments too small",
        "the alarm set",
        "no segment",
    ],
)
def test_a_reduction_in_stages_leaves_to_python_what_it_cannot_launch_as_python_would(case):
    rig = StagesRig(
        spine_tiles=5 if case == "a spine too small" else 64,
        open_tiles=5 if case == "open partials too small" else 64,
        first_tiles=5 if case == "first segments too small" else 64,
    )
    if case == "the alarm set":
        rig.flag[0] = 1
    o = Arr(0x40000, 1 if case == "no segment" else 301, "int64")
    assert rig.call(Arr(0x10000, 3000), None, None, o, 0, None) == "python"
    assert not rig.launches and rig.lock.acquire(blocking=False)
    rig.lock.release()


def test_remember_takes_stages_only_in_stages_and_of_the_codes_a_stage_takes():
    rig = StagesRig()
    record, form = rig.record[:-1], rig.record[-1]
    with pytest.raises(ValueError, match="stages"):  # stages of a plain reduction by offsets
        rig.call.remember(record + ((MODES["offsets"], *form[1:]),))
    with pytest.raises(ValueError, match="stages"):  # a reduction in stages without them
        rig.call.remember(record + (form[:-4],))
    stages = form[-2]  # then the alarm's copy back (OpenCL's: None here)
    bad = ((*stages[0][:5], bytes([ARG_SCRATCH])), stages[1])
    with pytest.raises(ValueError, match="stage"):  # a scratch's epoch: no stage takes one
        rig.call.remember(record + ((*form[:-2], bad, form[-1]),))
