"""The chained scans' scratch: control words, then one descriptor per tile.

The C side of the encoding is ``src/tile_state.h``; :class:`TileState` answers what
the prelude and the host ask of it (words per descriptor, bits per part, bytes for
so many tiles, the largest epoch its tag holds). The control-word layout is defined
here alone: the dialect renders it into every program as ``JS_CTRL_*`` (:func:`defines`),
and the host reads the same constants.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .spec import ScanSpec

#: control words before the descriptors (JS_CTRL_WORDS)
CTRL_WORDS = 16
CTRL_TILE = 0
CTRL_DEADLOCK = 1
#: the first of the instrumentation counters, one word each in the order of STATS
CTRL_STATS = 2
CTRL_WAITED = 6
CTRL_CARRY = 8
#: the instrumentation counters: the name the host reports, the word's in the kernels
#: (JS_CTRL_<word>, which chained.c adds js_stats' field of that name, lower-cased, to)
STATS = {"spins": "SPINS", "lookback_steps": "STEPS", "fallbacks": "FALLBACKS", "insertions": "INSERTIONS"}
STAT_NAMES = tuple(STATS)
#: the watchdog's causes, the low bits of the deadlock word (JS_STUCK_*)
STUCK_SPINS, STUCK_TIME = 1, 2

#: every control word, by its name in the kernels (JS_CTRL_<name>), with what it holds
CTRL: dict[str, tuple[int, str]] = {
    "TILE": (CTRL_TILE, "the tile counter (rewound by the last tile of each launch)"),
    "DEADLOCK": (CTRL_DEADLOCK, "set by look-back's watchdog: epoch << 2 | JS_STUCK_*, the larger kept"),
    **{word: (CTRL_STATS + i, f"counter: {name}") for i, (name, word) in enumerate(STATS.items())},
    "WAITED": (CTRL_WAITED, "how long the watchdog's wait lasted, in 1,024 clock ticks"),
    "CARRY": (CTRL_CARRY, "a scan from a value (kind | JS_CARRY_BIT): its bits, up to 32 bytes"),
    "WORDS": (CTRL_WORDS, "the tile descriptors follow, in the same zeroed buffer"),
}


def defines() -> list[str]:
    """The control words and the watchdog's causes as the kernels name them (``#define`` lines)."""
    lines = ["/* the scratch's control words (kernels/tile_state.py) */"]
    lines += [f"#define JS_CTRL_{name} {index}  /* {what} */" for name, (index, what) in CTRL.items()]
    lines += [f"#define JS_STUCK_SPINS {STUCK_SPINS}u", f"#define JS_STUCK_TIME {STUCK_TIME}u"]
    return lines


@dataclass(frozen=True)
class TileState:
    """One descriptor encoding for one value size.

    *packed*: 64-bit words each holding a flag tag and 32 value bits. *split*: the
    paper's 32-bit words each holding a flag tag and 16 value bits.

    Attributes
    ----------
    part_bits : int
        Value bits per word.
    parts : int
        Atomic words per tile descriptor.
    word_bytes : int
    epoch_limit : int
        Largest launch epoch the tag holds (tag = epoch << 3 | head << 2 | flag).
    """

    encoding: str
    value_bytes: int
    part_bits: int = field(init=False)
    parts: int = field(init=False)
    word_bytes: int = field(init=False)
    epoch_limit: int = field(init=False)

    def __post_init__(self) -> None:
        packed = self.encoding == "packed"
        part_bits, word_bytes = (32, 8) if packed else (16, 4)
        object.__setattr__(self, "part_bits", part_bits)
        object.__setattr__(self, "parts", self.value_bytes * 8 // part_bits)
        object.__setattr__(self, "word_bytes", word_bytes)
        object.__setattr__(self, "epoch_limit", (1 << (word_bytes * 8 - part_bits - 3)) - 1)

    def nbytes(self, tiles: int) -> int:
        """Scratch bytes for a launch of ``tiles`` tiles."""
        return CTRL_WORDS * 4 + tiles * self.parts * self.word_bytes

    def tiles_in(self, nbytes: int) -> int:
        """How many tiles a scratch buffer of ``nbytes`` holds (negative: not even the control words)."""
        return (nbytes - CTRL_WORDS * 4) // (self.parts * self.word_bytes)


@cache
def of(encoding: str, value_bytes: int) -> TileState:
    return TileState(encoding, value_bytes)


def of_spec(spec: ScanSpec) -> TileState:
    """The tile state of a spec's descriptors (they hold values; a segment head rides in the tag)."""
    return of(spec.tile_state, spec.dtype_info.packed_bytes)
