"""The chained scans' scratch: control words, then one descriptor per tile.

The C side of the encoding is ``src/tile_state.h``; :class:`TileState` answers what
the prelude and the host ask of it (words per descriptor, bits per part, bytes for
so many tiles, the largest epoch its tag holds). The control-word layout is
``JS_CTRL_*`` in ``src/tile.h``; the constants here mirror it (a test keeps them in step).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .spec import ScanSpec

#: control words before the descriptors (JS_CTRL_WORDS in tile.h) and what each holds
CTRL_WORDS = 16
CTRL_TILE = 0  # the tile counter (rewound by the last tile of each launch)
CTRL_DEADLOCK = 1  # set by a look-back that hit its watchdog: epoch << 2 | STUCK_SPINS or STUCK_TIME
CTRL_WAITED = 6  # how long that wait lasted, in units of 1,024 clock ticks (0 without a clock)
CTRL_CARRY = 8  # a scan from a value: its bits, up to 32 bytes (LaunchArgs.carry)
#: the watchdog's causes (JS_STUCK_* in tile.h)
STUCK_SPINS, STUCK_TIME = 1, 2
#: the instrumentation counters, in the order of the control words after the first two
STAT_NAMES = ("spins", "lookback_steps", "fallbacks", "insertions")
CTRL_STATS = 2


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
