"""The description of a scan kernel, in two halves.

:class:`ScanSpec` says everything that changes the generated source: the algorithm,
the operator and type, the tile shape, the tile-state encoding, the look-back window
and the instrumentation. It is frozen and hashable: it is the key of a compiled
program. :class:`LaunchArgs` holds what a launch passes as plain integers (the kind,
the spin limit, simulated blocking), so one program serves every value of them.

Both are validated when they are made, once per prepared scan; nothing on the
per-call path builds or checks either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..dtypes import INPUTS, VECTOR_BYTES, DType, Record, loaded_as, value_type
from ..operators import BUILTIN, Monoid
from . import storage
from .transform import ARRAY_CTYPES, Transform

KINDS = ("inclusive", "exclusive", "reduce")
#: the widest vector of a one-thread tile (CPUs; ScanSpec.lanes holds them in lanes), moved
#: with unaligned accesses on OpenCL: OpenCL C's vectors hold at most 16 items
LANE_BYTES = 64
SEGMENTED = ("", "flags", "rows", "offsets")
#: bytes of local memory a tile may stage (CUDA's static shared-memory limit per block)
STAGE_LIMIT = 48 * 1024
#: the kind as the kernels take it (JS_KIND_* in the generated source)
KIND_CODES = {"inclusive": 0, "exclusive": 1, "reduce": 2}
#: or'ed into a chained launch's kind for a scan from a carry (JS_CARRY_BIT, rendered by the dialect)
KIND_CARRY = 4
#: or'ed into it where one-thread tiles store around the cache (JS_STREAM_BIT, rendered by the dialect)
KIND_STREAM = 8
#: or'ed into a carried launch's kind where the carry's bits come in its arguments (the
#: chained kernel's carry words), not in the scratch's carry words (JS_CARRY_ARGS_BIT)
KIND_CARRY_ARGS = 16
#: the largest carry: 8 control words (from tile_state.CTRL_CARRY)
CARRY_BYTES = 32
TILE_STATES = ("packed", "split")
#: device clocks a kernel can read (backends.clock): none, NVIDIA's %globaltimer, an x86 TSC
CLOCKS = ("", "globaltimer", "tsc", "wall_clock64")
#: shared memory a workgroup may give its parked vectors (ScanSpec.parked_vectors); the
#: default segmented tiles park 6-8 KiB
PARK_BYTES = 16 << 10
#: the same for a tuple value's tile of 16 vectors a thread (the largest size class), which
#: parks half of them: 40 KiB of the pair scan's float32 pairs
TUPLE_PARK_BYTES = 40 << 10
BLOCKING_RANGE = (2, 512)


def check_choice(what: str, value: object, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise a ValueError listing them."""
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; valid {what}s: {', '.join(choices)}")
    return value  # type: ignore[return-value]


def _power_of_two(name: str, v: int) -> None:
    if v < 1 or v & (v - 1):
        raise ValueError(f"{name} must be a power of two, got {v}")


@dataclass(frozen=True)
class ScanSpec:
    """One compiled scan program, independent of the backend it is lowered to.

    Attributes
    ----------
    variant : str
        The algorithm (a name in ``jitscan.variants``'s registry, which checks what
        each variant supports).
    dtype : str
        NumPy name of the element type, or a tuple value's ``"(float32, int32)"``
        (``dtypes.Record``: a struct of fields, read from and written to an array per
        field).
    monoid : Monoid
    threads, vectors, vector_width : int
        Tile shape: a tile is ``threads * vectors * vector_width`` elements.
    subgroup : int
        Lanes that scan together through shuffles; equal to ``threads`` when the
        backend has no shuffles (the workgroup then scans in local memory).
    shuffle : bool
        Whether the dialect provides subgroup shuffles.
    tile_state : {"packed", "split"}
        Descriptor encoding: 64-bit words with 32 value bits each, or the paper's
        32-bit words with 16 value bits each.
    lookback_width : int
        Predecessors inspected at once.
    stats : bool
        Count spins, look-back steps, fallbacks and insertions.
    min_blocks : int
        Occupancy hint: workgroups per multiprocessor the compiler should fit
        (CUDA ``__launch_bounds__``); 0 leaves it to the compiler.
    segmented : {"", "flags", "rows", "offsets"}
        Plain scan, or a segmented one whose heads come from a uint8 flag array, a
        fixed row length, or CSR offsets (all launch arguments).
    row_tiles : bool
        A plain chained scan of independent rows, each a whole number of tiles long
        (the launch argument ``row_tiles``): no head flags, and no look-back past the
        first tile of a row.
    stages_tile : bool
        A segmented reduction by offsets: tiles stage (tile + 1) values in local memory
        and store one total per segment. The only kind that is compiled in; the scans
        should not pay for the staging.
    deterministic : bool
        A chained scan whose every tile prefix is one fixed expression of tile
        aggregates (``src/deterministic.h``): the same bits on every run. Tiles form
        groups of ``lookback_width``.
    unrolled : bool
        Whether the loops over a thread's vectors are unrolled: a GPU keeps them in
        registers, which needs constant indices; a CPU's compiler keeps them in memory
        as cheaply and compiles a long tile far faster as loops. The items of one
        vector are always unrolled (a few, and on a CPU they then stay in registers).
    in_dtype : str
        NumPy name of the input's type where it differs from ``dtype``: the kernels
        read it and convert as they load (``dtypes.loaded_as`` says which pairs), which
        saves a conversion pass over the data. Empty: the input is of ``dtype``.
    index_fields : tuple of int
        Fields of a tuple value that are the element's index (``jitscan.index``): computed
        as loaded, never read from memory.
    outputs : tuple of int
        Fields of a tuple value that are written (each to its own array); empty: all.
    clock : {"", "globaltimer", "tsc"}
        The device clock look-back's watchdog reads to bound a wait in time
        (``backends.clock``); empty: none, and only the spin limit bounds it.
    rows_in_smem : bool
        A tile's row values cross its subgroups through shared memory, so that each lane
        scans consecutive ones and the subgroup scans once, not once per row
        (``js_scan_rows_smem`` in ``src/scan.h``). Only for devices with shuffles, tiles
        of several threads and rows; elsewhere it is normalized to False.
    chained : bool
        The program passes tile aggregates between workgroups in one pass, through tile
        state and look-back (its variant's ``Capabilities.tile_state``; set from the variant
        by ``tuning.spec_for``, as are ``lane_tiles`` and ``clock``).
    lane_tiles : bool
        The variant's one-thread tiles may hold their vectors as lanes (``lanes``).
    search_segments : bool
        A chained scan by offsets whose many-thread tiles search the offsets themselves,
        with no pre-pass (``searches_segments``; ``tuning.SEARCH_SEGMENTS_BYTES``, set by
        ``tuning.spec_for``).
    serial : bool
        The device runs one workgroup at a time, in the order they start (a CPU driver of
        one compute unit: PoCL's ``basic``). A chained scan in lanes whose predecessor has
        posted its inclusive prefix then scans and stores its tile in one pass
        (``JS_SERIAL`` in ``src/chained.c``; ``one_pass_tiles``); other specs ignore it.
    transform : Transform, optional
        A chained scan of scalars that reads an expression of several arrays and writes
        through rules (``kernels/transform.py``) instead of one array in and one out.
    head_keys : str
        A scan by flags whose "flags" array is an array of keys of this dtype: a segment
        starts where a key differs from the one before it (``!=``), found as the tile loads
        (``JS_HEAD_KEYS``), no flag array made. Empty: uint8 flags.
    """

    variant: str
    dtype: str
    monoid: Monoid
    threads: int
    vectors: int
    vector_width: int
    subgroup: int
    shuffle: bool
    tile_state: str = "packed"
    lookback_width: int = 32
    stats: bool = False
    min_blocks: int = 0
    segmented: str = ""
    row_tiles: bool = False
    stages_tile: bool = False
    deterministic: bool = False
    unrolled: bool = True
    in_dtype: str = ""
    index_fields: tuple[int, ...] = ()
    outputs: tuple[int, ...] = ()
    clock: str = ""
    serial: bool = False
    rows_in_smem: bool = False
    chained: bool = False
    lane_tiles: bool = False
    search_segments: bool = False
    transform: Transform | None = None
    head_keys: str = ""
    #: derived once: elements per tile, the element type, the input's type
    tile: int = field(init=False, compare=False, repr=False)
    dtype_info: DType | Record = field(init=False, compare=False, repr=False)
    input_info: DType | Record = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype_info", value_type(self.dtype))
        if isinstance(self.dtype_info, Record):
            arity = len(self.dtype_info.fields)
            if self.in_dtype:
                raise ValueError("tuple values are loaded in their fields' types (in_dtype is for scalars)")
            if not set(self.index_fields) | set(self.outputs) <= set(range(arity)):
                raise ValueError(f"index_fields and outputs name fields of 0..{arity - 1}")
            if len(self.index_fields) == arity:
                raise ValueError("a tuple value needs at least one field read from an array")
            if not self.outputs:
                object.__setattr__(self, "outputs", tuple(range(arity)))
            if getattr(self.monoid, "arity", 0) != arity:
                raise TypeError(f"{self.dtype} values need an operator written in Python on {arity} fields")
        elif self.index_fields or self.outputs:
            raise ValueError("index_fields and outputs are for tuple values")
        if self.transform is not None:
            if not isinstance(self.transform, Transform):
                raise TypeError(f"transform must be a jitscan Transform, got {self.transform!r}")
            if self.record or self.segmented or self.in_dtype or self.row_tiles or not self.chained:
                raise ValueError("a transform is a chained scan of scalars, unsegmented, of its own arrays")
        if self.head_keys and (self.segmented != "flags" or self.head_keys not in ARRAY_CTYPES):
            raise ValueError(f"head_keys names a key dtype of a scan by flags, not {self.head_keys!r}")
        if self.in_dtype:
            d = INPUTS.get(self.in_dtype)
            if d is None or loaded_as(np.dtype(self.in_dtype), self.dtype_info) is None:
                raise ValueError(f"the kernels do not load {self.in_dtype} input into a {self.dtype} scan")
            object.__setattr__(self, "input_info", d)
        else:
            object.__setattr__(self, "input_info", self.dtype_info)
        object.__setattr__(self, "tile", self.threads * self.vectors * self.vector_width)
        check_choice("tile_state", self.tile_state, TILE_STATES)
        check_choice("segmented mode", self.segmented, SEGMENTED)
        vector_bytes = self.vector_width * self.dtype_info.vector_itemsize
        one_thread = self.threads == 1 and vector_bytes <= LANE_BYTES
        if vector_bytes > VECTOR_BYTES and not self.record and not one_thread:
            # the kernels move whole vectors and the backends guarantee only this alignment;
            # a one-thread tile (CPUs) may hold wider ones, which OpenCL moves unaligned
            # (dialect.OpenCLDialect.vector_type; CUDA refuses them)
            raise ValueError(
                f"vector_width={self.vector_width} of {self.dtype} is {vector_bytes} bytes; at most "
                f"{VECTOR_BYTES} are supported ({LANE_BYTES} in one-thread tiles on OpenCL)"
            )
        if self.segmented and self.vector_width > 16:
            # a tuple's vectors of 32 scanned by offsets came out wrong on PoCL 3.0 and 3.1
            # (tests/test_knob_sweep.py; the cause is not pinned down): refused, as scalars'
            # vectors are by their bytes
            raise ValueError(
                f"a segmented scan's vectors hold at most 16 items, not vector_width={self.vector_width}"
            )
        items = self.vectors * self.vector_width
        if self.segmented and items > 64 and items % 64:
            raise ValueError(
                "a segmented scan's thread holds at most 64 items or a multiple of 64 "
                f"(vectors * vector_width), not {items}"
            )
        if self.row_tiles and self.segmented:
            raise ValueError("row_tiles applies to plain scans")
        if self.stages_tile and self.segmented != "offsets":
            raise ValueError("only a reduction by offsets stages its tile")
        if self.stages_tile and storage.stage_bytes(self) > STAGE_LIMIT:
            raise ValueError(
                f"a segmented reduction stages a tile in local memory: {self.tile} elements of "
                f"{self.dtype} need {storage.stage_bytes(self)} bytes, over "
                f"{STAGE_LIMIT}; use a smaller tile"
            )
        self.monoid.check_dtype(self.dtype_info)
        for name in ("threads", "vectors", "vector_width", "subgroup", "lookback_width"):
            _power_of_two(name, getattr(self, name))
        if self.threads % self.subgroup or self.threads // self.subgroup > self.subgroup:
            raise ValueError(
                f"threads ({self.threads}) must be a multiple of the subgroup ({self.subgroup}) "
                "and at most subgroup**2"
            )
        if not self.shuffle and self.subgroup != self.threads:
            raise ValueError("without shuffles the subgroup is the whole workgroup")
        if self.lookback_width > self.threads:
            raise ValueError("lookback_width cannot exceed threads")
        check_choice("clock", self.clock, CLOCKS)
        if self.clock and not self.chained:
            raise ValueError("only a chained scan's watchdog reads a clock")
        if self.deterministic and not self.chained:
            raise ValueError(
                f"variant {self.variant!r} is deterministic as it is; only chained scans take it"
            )
        if self.serial and not self.one_pass_tiles:
            object.__setattr__(self, "serial", False)  # specs it changes nothing in compare equal
        if self.rows_in_smem and not (self.shuffle and self.threads > 1 and self.vectors > 1):
            object.__setattr__(self, "rows_in_smem", False)

    @property
    def lane_totals(self) -> bool:
        """Whether a segmented reduction's one-thread tiles (CPUs) sum each segment's part
        in lanes, with no scan and no staging (``JS_LANE_TOTALS``, ``js_lanes_seg_totals``):
        the built-in operators in lanes but float min and max, since the sums reorder
        operands."""
        return self.stages_tile and self.lanes and not self._lane_order_counts

    @property
    def seg_store_pass(self) -> bool:
        """Whether a segmented chained scan's one-thread tiles (CPUs) find their aggregate
        without scanning, and scan in their store pass alone (``JS_SEG_STORE_PASS``).

        The aggregate is whether the tile holds a head and its items after the last one
        combined: the head bits are read back from the tile's end to its last head, and
        only the items after it are combined, in lanes. The store pass scans the tile from
        its prefix as a one-pass tile does (``js_lanes_seg_store``), so a tile whose prefix
        is not known at its start reads its tail twice, not all of it into an array and
        back. The built-in operators in lanes but float min and max (the sums reorder
        operands); deterministic float scans keep their scanned tiles, as they keep both
        passes on serial devices (``one_pass_tiles``)."""
        return (
            bool(self.segmented)
            and self.lanes
            and self.chained
            and not self.stages_tile
            and not self._lane_order_counts
            and not (self.deterministic and self.dtype_info.is_float)
        )

    @property
    def searches_segments(self) -> bool:
        """Whether tiles by offsets find their segments themselves, a search of the offsets,
        so that a launch needs no pre-pass (``JS_SEARCH_SEGMENTS``): chained programs of
        many-thread tiles asked to (``search_segments``: GPUs' small size classes), which
        check the offsets they read as they mark their heads; and one-thread tiles (CPUs),
        whose offsets a launch beside them checks, but not their reductions, whose totals
        (and rts's fix-up) read the pre-pass's table."""
        if self.segmented != "offsets":
            return False
        if self.threads == 1:
            return not self.stages_tile
        return self.search_segments and self.chained

    @property
    def one_pass_tiles(self) -> bool:
        """Whether a tile whose predecessor has posted its inclusive prefix scans in one pass
        (``serial`` devices): chained scans in lanes, plain or segmented, and transforms'
        one-thread tiles (``js_own_serial_store``), but deterministic float ones.

        The tile posts the carry past its last vector as its inclusive prefix; a float
        total rounds differently there than the lane-wise reduction a fallback would work
        out. On a device that runs one workgroup at a time nobody falls back on a tile that
        will still post, so the two never meet, but a deterministic scan promises the same
        bits with and without (simulated) stalls, and keeps both passes."""
        return (
            self.serial
            and (self.lanes or (self.transform is not None and self.threads == 1))
            and not self.shuffle
            and self.chained
            and not (self.deterministic and self.dtype_info.is_float)
        )

    @property
    def lanes(self) -> bool:
        """Whether a one-thread tile (CPUs) holds its vectors as the lanes of vector types.

        Every vector is then scanned by shifted combines, and a plain scan's aggregate is
        reduced lane by lane (``JS_LANES``, ``src/lanes.h``). Only the built-in operators
        have expressions that hold lane by lane, so only chained scans of those take it,
        segmented reductions by offsets (``lane_totals``), and ``memcpy``, the yardstick
        of their loads and stores; the dialect says whether it has the vector types.
        Lane-wise reduction reorders operands, which float min and max do not allow bit
        for bit (``min(+0.0, -0.0)`` is -0.0 and ``min(-0.0, +0.0)`` is +0.0; the first
        NaN is kept): their plain scans keep the items in arrays. A segmented scan reduces
        its vectors in order, but where its tiles find their aggregate without scanning
        (``seg_store_pass``, which leaves out float min and max too).
        """
        if not (
            self.threads == 1
            and self.vector_width > 1
            and (self.lane_tiles or self.stages_tile)
            and not self.record
            and self.transform is None  # its items are expressions, read one by one
            and self.monoid in BUILTIN.values()
        ):
            return False
        return bool(self.segmented) or not self._lane_order_counts

    @property
    def _lane_order_counts(self) -> bool:
        """Whether lane-wise reduction, which reorders operands, would change the bits:
        float min and max (see ``lanes``)."""
        return self.dtype_info.is_float and self.monoid.name in ("min", "max")

    @property
    def head_words(self) -> int:
        """64-bit words of a segmented thread's head bits (one bit per item it holds)."""
        return max(1, self.vectors * self.vector_width // 64)

    @property
    def parked_vectors(self) -> int:
        """Vectors of a thread's own tile that wait out the look-back in the workgroup's
        shared memory (OpenCL's local memory).

        Segmented chained scans on GPUs with shuffles hold their tiles at 64 registers a
        thread (tuning.geometry), and the look-back's own registers pushed some of the
        tile's items to CUDA's per-thread local memory (cache-backed), read back after the
        walk. Half the vectors are parked in shared memory instead: on the H100 the
        segmented modes of 4-byte values ran 5-24% faster, float64 0-13% and its
        deterministic scan 14-17% (experiments/notes/performance-log.md, "Segmented scans on GPUs: a
        regression found, and half the tile parked"). Not a staged tile of 8-byte values
        (a reduction by offsets), whose shared memory it doubles and which ran 3% slower.
        A deterministic scan of 4-byte floats parks one vector: in turns on the H100 it ran
        1-3% faster so than with two (three: no gain), and the ordinary scan 1.2-2.6%
        slower with one (experiments/notes/performance-log.md, "Deterministic scans").

        A tuple value's tile of 16 vectors a thread (the largest size class) parks half of
        them too: the pair scan's (float32 pairs, ``output=1``) held 64 pairs a thread
        through the look-back at 255 registers and spilled 224 bytes; parked, 247 and
        none, and on an H100 it took 1.542x and 1.557x an int32 scan's pipelined time at
        2^25 and 2^28 against 1.593x and 1.614x (experiments/tuple_park.py, run N of
        experiments/call_forms_h200.md). Smaller tiles spill nothing and park nothing.
        """
        if self.record and self.chained and self.shuffle and not self.segmented:
            if self.vectors < 16 or self.deterministic:
                return 0
            return min(self.vectors // 2, TUPLE_PARK_BYTES // storage.parked_vector_bytes(self))
        if not (self.segmented and self.shuffle and self.chained):
            return 0
        if self.stages_tile and self.dtype_info.itemsize == 8:
            return 0
        # at most PARK_BYTES a workgroup: wide tiles keep their static shared memory in
        # the limit (48 KiB on NVIDIA), parking fewer vectors or none
        per_vector = storage.parked_vector_bytes(self)
        half = self.vectors // 2
        if self.deterministic and self.dtype_info.is_float and self.dtype_info.itemsize == 4:
            half = min(half, 1)
        return min(half, PARK_BYTES // per_vector)

    @property
    def positive_zero(self) -> bool:
        """Whether a whole-array sum of floats is written as ``numpy.sum`` gives it.

        The identity of a float ``add`` is -0.0 (a scan keeps -0.0 where NumPy's does),
        so a total of negative zeros comes out -0.0; ``numpy.sum`` starts from +0.0 and
        gives +0.0. The kernels add +0.0 to the total they write, which changes exactly
        that result, and the call needs no operation of its own after the launch. A sum
        from a start value (``initial=``) keeps its sign, as ``numpy.add.reduce`` does.
        """
        return (
            self.monoid is BUILTIN["add"]
            and self.dtype_info.is_float
            and self.dtype_info.itemsize in (4, 8)
            and not self.segmented
            and not self.record
        )

    @property
    def outputs_first(self) -> bool:
        """Whether the store pass computes every vector's output before its stores.

        Segmented tiles of 32-bit integers in registers (GPUs): on the H100, in turns,
        int32 by flags and by rows ran 6% faster so (2^28), float32 and float64 0.3-6%
        slower; other tiles store each vector as it is computed (js_store_output). A
        transform's GPU tiles too: their rules run once the whole tile's reads are loaded
        (tile.h's js_store_values).
        """
        if self.transform is not None and self.threads > 1:
            return True
        if not self.segmented or self.threads == 1 or self.record:
            return False
        return not self.dtype_info.is_float and self.dtype_info.itemsize == 4

    @property
    def local_bytes(self) -> int:
        """The local (shared) memory of a workgroup of this program, exactly as the compiler lays
        it out: its kernel's storage struct (``kernels/storage.py``, which the headers check)."""
        return storage.workgroup_bytes(self)

    @property
    def register_words(self) -> int:
        """32-bit words of the tile one thread holds (its items, in registers on a GPU)."""
        return self.vectors * self.vector_width * -(-self.element_bytes // 4)

    @property
    def record(self) -> bool:
        """Whether values are tuples (``dtypes.Record``)."""
        return isinstance(self.dtype_info, Record)

    @property
    def element_bytes(self) -> int:
        """Bytes of one scanned element T: a (value, head) pair when segmented."""
        size = self.dtype_info.itemsize
        if self.record and self.segmented:  # struct { js_val v; js_u32 h; }, C-aligned
            return np.dtype([("v", self.dtype_info.numpy), ("h", np.uint32)], align=True).itemsize
        return 2 * size if self.segmented else size


@dataclass(frozen=True)
class LaunchArgs:
    """The integers a launch passes beside the buffers: one program serves every value.

    Attributes
    ----------
    kind : {"inclusive", "exclusive", "reduce"}
        Only the final stores depend on it.
    spin_limit : int
        Spins on one predecessor before a fallback (``fallback``) or before the
        deadlock watchdog fires (``lookback``); read once per workgroup.
    block_every : int
        Simulated blocking: 1 in ``block_every`` tiles never posts; 0 disables.
    wait_limit : int
        Look-back's watchdog also fires once a wait has lasted this many units of 1,024
        ticks of the spec's clock; 0: no time bound (no clock).
    carry : bytes
        A chained scan from a value (``initial=``): the value's bits, at most
        ``CARRY_BYTES``; empty: none. The kernel reads it from its control words.
    carry_from : device array, optional
        A carry that is already on the device (``initial=`` a one-element device array of
        the scan's dtype): copied into the control words on the device, in queue order,
        so that a scan can start from another's last element without waiting for it.
    stream_bytes : int
        Flat scans and copies in lanes (CPU tiles) whose output has at least this many
        bytes store it around the cache (``KIND_STREAM``, memcpy's last argument); 0: never.
    """

    kind: str = "inclusive"
    spin_limit: int = 0
    block_every: int = 0
    wait_limit: int = 0
    carry: bytes = b""
    carry_from: Any = field(default=None, compare=False, repr=False)
    stream_bytes: int = 0
    kind_code: int = field(init=False, compare=False, repr=False)

    def stream_from(self, spec: ScanSpec) -> float:
        """Elements from which a launch of ``spec``'s program stores around the cache (inf: never)."""
        if not self.stream_bytes or self.kind == "reduce" or spec.segmented or not spec.lanes:
            return math.inf
        return self.stream_bytes // spec.dtype_info.itemsize

    def carrying(self, value: bytes | Any) -> LaunchArgs:
        """These arguments for a scan from ``value``: a carry's bytes, or a device array."""
        if isinstance(value, bytes):
            return replace(self, carry=value, carry_from=None)
        return replace(self, carry=b"", carry_from=value)

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, KINDS)
        carried = bool(self.carry) or self.carry_from is not None
        object.__setattr__(self, "kind_code", KIND_CODES[self.kind] | (KIND_CARRY if carried else 0))
        if len(self.carry) > CARRY_BYTES:
            raise ValueError(f"a carry is at most {CARRY_BYTES} bytes, not {len(self.carry)}")
        if self.carry_from is not None and self.carry_from.nbytes > CARRY_BYTES:
            raise ValueError(f"a carry is at most {CARRY_BYTES} bytes, not {self.carry_from.nbytes}")
        if not 0 <= self.spin_limit < 1 << 32:
            # the kernels take it as a 32-bit launch argument
            raise ValueError(f"spin_limit must be between 0 and 2**32 - 1, got {self.spin_limit}")
        if not 0 <= self.wait_limit < 1 << 32:
            raise ValueError(f"wait_limit must be between 0 and 2**32 - 1, got {self.wait_limit}")
        if self.block_every:
            lo, hi = BLOCKING_RANGE
            if not lo <= self.block_every <= hi:
                raise ValueError(f"simulate_blocking must be between {lo} and {hi}, got {self.block_every}")
