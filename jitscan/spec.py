"""ScanSpec: the backend-agnostic description of one scan kernel.

A spec says everything that changes the generated source: the algorithm, the
operator and type, the tile shape and the tile-state encoding, and the knobs of the
look-back (spin limit, simulated blocking, instrumentation). It is frozen and
hashable, so compiled programs are cached by (spec, device).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .dtypes import DType, lookup
from .monoid import Monoid

VARIANTS = ("fallback", "lookback", "rts", "memcpy")
KINDS = ("inclusive", "exclusive", "reduce")
SEGMENTED = ("", "flags", "rows", "offsets")
#: the widest vector access of the kernels; backends hand them arrays aligned to it
VECTOR_BYTES = 16
#: bytes of local memory a tile may stage (CUDA's static shared-memory limit per block)
STAGE_LIMIT = 48 * 1024
KINDS_CODE = {"inclusive": 0, "exclusive": 1, "reduce": 2}
TILE_STATES = ("packed", "split")
#: variants that carry tile state between workgroups in one pass
CHAINED = ("lookback", "fallback")
BLOCKING_RANGE = (2, 512)


def check_choice(what: str, value: object, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise a ValueError listing them."""
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; valid {what}s: {', '.join(choices)}")
    return value  # type: ignore[return-value]


@dataclass(frozen=True)
class ScanSpec:
    """One scan kernel, independent of the backend it is lowered to.

    Attributes
    ----------
    variant : {"fallback", "lookback", "rts", "memcpy"}
    kind : {"inclusive", "exclusive", "reduce"}
    dtype : str
        NumPy name of the element type.
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
    spin_limit : int
        Spins on one predecessor before a fallback (``fallback``) or before the
        deadlock watchdog fires (``lookback``).
    block_every : int
        Simulated blocking: 1 in ``block_every`` tiles never posts; 0 disables.
    stats : bool
        Count spins, look-back steps, fallbacks and insertions.
    min_blocks : int
        Occupancy hint: workgroups per multiprocessor the compiler should fit
        (CUDA ``__launch_bounds__``); 0 leaves it to the compiler.
    segmented : {"", "flags", "rows", "offsets"}
        Plain scan, or a segmented one whose heads come from a uint8 flag array, a
        fixed row length, or CSR offsets (all launch arguments). With ``offsets`` the
        kind ``reduce`` stores one total per segment.
    row_tiles : bool
        A plain chained scan of independent rows, each a whole number of tiles long
        (the launch argument ``row_tiles``): no head flags, and no look-back past the
        first tile of a row.
    """

    variant: str
    kind: str
    dtype: str
    monoid: Monoid
    threads: int
    vectors: int
    vector_width: int
    subgroup: int
    shuffle: bool
    tile_state: str = "packed"
    lookback_width: int = 32
    spin_limit: int = 64
    block_every: int = 0
    stats: bool = False
    min_blocks: int = 0
    segmented: str = ""
    row_tiles: bool = False

    def __post_init__(self) -> None:
        check_choice("variant", self.variant, VARIANTS)
        check_choice("kind", self.kind, KINDS)
        check_choice("tile_state", self.tile_state, TILE_STATES)
        check_choice("segmented mode", self.segmented, SEGMENTED)
        if self.vector_width * self.dtype_info.itemsize > VECTOR_BYTES:
            # the kernels move whole vectors; the backends guarantee only this alignment
            raise ValueError(
                f"vector_width={self.vector_width} of {self.dtype} is "
                f"{self.vector_width * self.dtype_info.itemsize} bytes; at most {VECTOR_BYTES} are supported"
            )
        if self.segmented and self.vectors * self.vector_width > 64:
            raise ValueError("a segmented scan holds at most 64 items per thread (vectors * vector_width)")
        if self.row_tiles and (self.segmented or self.variant not in CHAINED):
            raise ValueError("row_tiles applies to plain chained scans")
        if self.stages_tile and (self.tile + 1) * self.dtype_info.itemsize > STAGE_LIMIT:
            raise ValueError(
                f"a segmented reduction stages a tile in local memory: {self.tile} elements of "
                f"{self.dtype} need {(self.tile + 1) * self.dtype_info.itemsize} bytes, over "
                f"{STAGE_LIMIT}; use a smaller tile"
            )
        if self.segmented and self.variant == "memcpy":
            raise ValueError("memcpy has no segmented form")
        self.monoid.check_dtype(self.dtype_info)
        for name in ("threads", "vectors", "vector_width", "subgroup", "lookback_width"):
            v = getattr(self, name)
            if v < 1 or v & (v - 1):
                raise ValueError(f"{name} must be a power of two, got {v}")
        if self.threads % self.subgroup or self.threads // self.subgroup > self.subgroup:
            raise ValueError(
                f"threads ({self.threads}) must be a multiple of the subgroup ({self.subgroup}) "
                "and at most subgroup**2"
            )
        if not self.shuffle and self.subgroup != self.threads:
            raise ValueError("without shuffles the subgroup is the whole workgroup")
        if self.lookback_width > self.threads:
            raise ValueError("lookback_width cannot exceed threads")
        if self.spin_limit < 0:
            raise ValueError("spin_limit must be >= 0")
        if self.block_every:
            lo, hi = BLOCKING_RANGE
            if not lo <= self.block_every <= hi:
                raise ValueError(f"simulate_blocking must be between {lo} and {hi}, got {self.block_every}")
            if self.variant not in CHAINED:
                raise ValueError(
                    f"simulated blocking applies to chained variants {CHAINED}, not {self.variant!r}"
                )

    @property
    def kind_code(self) -> int:
        """The kind as the kernels take it (a launch argument, not compiled in)."""
        return KINDS_CODE[self.kind]

    def program_spec(self) -> ScanSpec:
        """This spec with the launch-time fields normalized: the key of a compiled program.

        The kind only decides the final stores, and the spin limit and simulated
        blocking are read once per workgroup, so all three are launch arguments: one
        program serves every value of them. A reduction by offsets is the exception: it
        stages its tile in local memory, which the scans should not pay for.
        """
        kind = "reduce" if self.stages_tile else "inclusive"
        return replace(self, kind=kind, spin_limit=0, block_every=0)

    @property
    def stages_tile(self) -> bool:
        """A segmented reduction by offsets: (tile + 1) values staged in local memory."""
        return self.segmented == "offsets" and self.kind == "reduce"

    @property
    def dtype_info(self) -> DType:
        return lookup(self.dtype)

    @property
    def tile(self) -> int:
        """Elements per tile."""
        return self.threads * self.vectors * self.vector_width

    @property
    def chained(self) -> bool:
        return self.variant in CHAINED

    @property
    def state_parts(self) -> int:
        """Atomic words per tile descriptor."""
        bits = 32 if self.tile_state == "packed" else 16
        return self.dtype_info.itemsize * 8 // bits

    @property
    def epoch_limit(self) -> int:
        """Largest launch epoch the descriptor tag holds (tag = epoch << 3 | head << 2 | flag)."""
        return (1 << (29 if self.tile_state == "packed" else 13)) - 1

    @property
    def element_bytes(self) -> int:
        """Bytes of one scanned element T: a (value, head) pair when segmented."""
        size = self.dtype_info.itemsize
        return 2 * size if self.segmented else size

    @property
    def state_word_bytes(self) -> int:
        return 8 if self.tile_state == "packed" else 4
