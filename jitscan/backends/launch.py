"""What launches keep on a queue, in a backend's terms: the slots of a planned launch's
arguments, the scratch it reuses, the alarm its kernels raise, and the launch plan itself.

Backends read these and know nothing of scans: what a slot, a scratch buffer or an alarm's
words mean is the variant's (``variants/``) or the plan's (``plan/forms.py``).
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: what each argument of a planned launch holds (:attr:`LaunchPlan.slots`), by code: the
#: input and the result array (each as many arguments as the backend passes an array: a
#: buffer and an offset), the element count, the scratch buffer, the launch's code, the
#: scratch's epoch, a constant (set once per launcher), the segments' three: their
#: array (head flags or offsets: one buffer), each tile's first segment (a buffer) and
#: their count (the row length of rows), a word of a carry's bits (a launch from a
#: value the host knows: :data:`CARRY_WORDS` of them, 0 where there is none), and the
#: queue's alarm (its word and flag buffers: :class:`Alarm`), which kernels that check
#: what they read raise; and a launch in stages' own (a reduction by offsets of
#: several launches, rts's): the launch's tile count, a buffer of a value a tile (the
#: spine) and one of a partial a tile (each tile's open segment's); and an array's length
#: (a transform passes each array with its elements: only the compiled call's codes
#: name it, ``compiled.arg_codes``).
#: ``_common_call.c`` reads the same codes, and says so (its ``SLOTS``, which cupy.py
#: compares with these names).
ARG_SLOTS = (
    "src", "dst", "n", "scratch", "code", "epoch", "const", "seg", "first", "segn", "carry", "word", "flag",
    "tiles", "spine", "open", "len",
)  # fmt: skip
(
    ARG_SRC,
    ARG_DST,
    ARG_N,
    ARG_SCRATCH,
    ARG_CODE,
    ARG_EPOCH,
    ARG_CONST,
    ARG_SEG,
    ARG_FIRST,
    ARG_SEGN,
    ARG_CARRY,
    ARG_WORD,
    ARG_FLAG,
    ARG_TILES,
    ARG_SPINE,
    ARG_OPEN,
    ARG_LEN,
) = range(len(ARG_SLOTS))
#: the workgroups of a launch in stages, by rule: one a tile, one, one a thread's worth of
#: tiles (``_common_call.c`` numbers them so: GROUPS_*)
GROUPS_TILES, GROUPS_ONE, GROUPS_TILES_PER_THREAD = range(3)
#: the 8-byte words of a carry passed in a launch's arguments (its bits, then zeros)
CARRY_WORDS = 4
#: a launch without a carry in its arguments
NO_CARRY = (0,) * CARRY_WORDS
#: slots that may repeat: the constants, the carry's words
_REPEATED = (ARG_CONST, ARG_CARRY)
_WORDS = struct.Struct(f"<{CARRY_WORDS}Q")
#: the per-call slots in the order a launcher's ``fire`` takes them after the groups
FIRE_ORDER = (ARG_SRC, ARG_DST, ARG_N, ARG_SCRATCH, ARG_CODE, ARG_EPOCH)
#: the segments' slots, in the order a segmented launch passes them (its ``tail``)
SEG_ORDER = (ARG_SEG, ARG_FIRST, ARG_SEGN, ARG_WORD, ARG_FLAG)


class Scratch:
    """A device buffer that the launches on one queue reuse (see :meth:`Backend.scratch`).

    Attributes
    ----------
    buf : Any
        What kernels take: a new buffer each time it grows.
    nbytes : int
        Its size (0 before the first use).
    epoch : int
        Kept with the buffer by the launches that use it (the chained scans count their
        launches here); 0 for a buffer just allocated, which is also zeroed.
    """

    __slots__ = ("buf", "nbytes", "epoch", "_owner")

    def __init__(self) -> None:
        self.buf: Any = None
        self.nbytes = 0
        self.epoch = 0
        self._owner: Any = None

    def replace(self, buf: Any, nbytes: int, owner: Any = None) -> None:
        """Take a new, zeroed buffer (``owner`` keeps its memory alive); the old one is let go."""
        self.buf, self.nbytes, self._owner, self.epoch = buf, nbytes, owner, 0


class Alarm:
    """Two words of one queue that kernels set and the host reads.

    ``word`` is a device word kernels set (what it holds is the caller's; it stays until
    :meth:`clear`). ``flag`` is a word the same kernels set that the host reads without
    waiting for the device (:meth:`rung`): host memory the device writes (CUDA's pinned
    memory, a CPU device's host buffer), or a device word copied back behind a launch
    that may set it (:meth:`watch`), at most once in ``every`` seconds: a flag is only
    ever set, so one copy brings what every launch before it set, and the host learns of
    it a little later in a loop of launches rather than paying a copy for each (0: a copy
    behind every launch). A backend only makes them: what they mean is the caller's.
    """

    __slots__ = ("word", "flag", "_host", "_owner", "_copy", "_pending", "_reset", "_every", "_last")

    def __init__(
        self,
        word: Any,
        flag: Any,
        host: np.ndarray,
        reset: Callable[[], None],
        owner: Any = None,
        copy: Callable[[], Callable[[], bool] | None] | None = None,
        every: float = 0.0,
    ) -> None:
        self.word, self.flag = word, flag
        #: ``reset()`` zeroes both words on the device, in queue order
        self._reset = reset
        #: the flag as the host sees it: the word itself, or where ``copy`` puts it
        self._host = host
        self._owner = owner  # keeps the words' memory alive
        #: ``copy()`` enqueues a copy of the flag into ``_host`` and returns its completion
        #: test, or None: the host reads what has arrived (a flag is only ever set, and
        #: :meth:`clear` waits for the queue). ``copy`` None: the host sees the flag itself
        self._copy = copy
        self._pending: Any = None
        #: at most one copy in ``_every`` seconds; ``_last``: when the last one was enqueued
        self._every = every
        self._last = -math.inf

    @property
    def seen(self) -> int:
        """The host address of the flag as the host sees it (what :meth:`rung` reads): for a
        compiled call, which reads it too."""
        return int(self._host.ctypes.data)

    @property
    def copy(self) -> Any:
        """``copy`` as given (None: the host sees the flag itself)."""
        return self._copy

    def rung(self) -> bool:
        """Whether a kernel has set the flag, as far as the host has seen yet (never waits)."""
        pending = self._pending
        if pending is not None:
            if not pending():
                return False  # the copy has not run: what it brings is still to come
            self._pending = None
        return bool(self._host[0])

    def due(self) -> bool:
        """Whether a launch that may set the flag now copies it back (its ``every`` seconds
        since the last copy have passed); where it does, the copy counts from now."""
        now = time.monotonic()
        if now - self._last < self._every:
            return False
        self._last = now
        return True

    def watch(self) -> None:
        """After a launch that may set the flag: have the host see it (a copy where needed
        and :meth:`due`; one at a time where each tells when it has run)."""
        if self._copy is not None and self._pending is None and self.due():
            self._pending = self._copy()

    def clear(self) -> None:
        """Both words back to 0 (the caller has read what it needs: the device is idle)."""
        self._pending = None
        self._last = -math.inf  # the next launch that may set it copies it back
        self._reset()
        self._host[0] = 0


@dataclass(frozen=True)
class LaunchPlan:
    """One launch of one entry point, a workgroup per tile, over a scratch buffer of the
    queue whose launches tag what they write with an epoch.

    A variant states its launch once as one of these; its general launch, its common
    launch (through :meth:`Program.launcher`) and a compiled call (``_common_call.c``, from
    the record cupy.py makes of it) all read it. What a launch passes besides is its own:
    the constants, its code, and from how many elements the code is ``code | stream_bit``.

    Attributes
    ----------
    entry : str
        The kernel entry point.
    slots : tuple of int
        What each argument of ``entry`` holds, in order (``ARG_*``; an array slot stands
        for the arguments the backend passes an array as).
    tile : int
        Elements of one workgroup: a launch of ``n`` has ``ceil(n / tile)`` of them.
    header, per_tile : int
        Scratch bytes: ``header + tiles * per_tile`` for a launch of ``tiles``.
    slot : str
        The scratch's slot on the queue (:meth:`Backend.scratch`).
    epoch_limit : int
        The largest epoch the tags hold (:meth:`next_epoch`).
    stream_bit : int
        OR-ed into the code of a launch of at least its ``stream_from`` elements.
    carry_at, carry_bit : int
        A launch from a value: the value's byte offset in the scratch, and the bit OR-ed
        into its code.
    carry_args_bit : int
        OR-ed into the code of a launch from a value passed in its carry words (the
        :data:`ARG_CARRY` slots), not in the scratch; 0: the plan has none.
    """

    entry: str
    slots: tuple[int, ...]
    tile: int
    header: int
    per_tile: int
    slot: str
    epoch_limit: int
    stream_bit: int = 0
    carry_at: int = 0
    carry_bit: int = 0
    carry_args_bit: int = 0

    #: how many of its arguments are constants
    nconst: int = field(init=False, repr=False)
    #: how many are a carry's words (0 or :data:`CARRY_WORDS`)
    ncarry: int = field(init=False, repr=False)
    #: whether its per-call arguments come first, in the order ``fire`` takes them, then
    #: its constants, then its carry's words: the layout that launchers pack without
    #: rearranging anything
    fire_order: bool = field(init=False, repr=False)
    #: the segments' slots after those (in :data:`SEG_ORDER`), where the layout is
    #: :attr:`fire_order`'s and then these: what :meth:`Program.packer` packs as they are
    tail: tuple[int, ...] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        per_call = [s for s in self.slots if s not in _REPEATED]
        if len(per_call) != len(set(per_call)) or not all(0 <= s < len(ARG_SLOTS) for s in self.slots):
            raise ValueError(
                f"a launch plan's slots are ARG_* codes, each but ARG_CONST and ARG_CARRY once: {self.slots}"
            )
        if self.tile <= 0 or self.per_tile <= 0 or self.header < 0 or self.epoch_limit < 1:
            raise ValueError(
                "a launch plan's tile, per_tile and epoch_limit are positive, its header not negative"
            )
        nconst, ncarry = self.slots.count(ARG_CONST), self.slots.count(ARG_CARRY)
        if ncarry not in (0, CARRY_WORDS) or bool(ncarry) != bool(self.carry_args_bit):
            raise ValueError(f"a launch plan has {CARRY_WORDS} carry words and their bit, or neither")
        object.__setattr__(self, "nconst", nconst)
        object.__setattr__(self, "ncarry", ncarry)
        fixed = FIRE_ORDER + (ARG_CONST,) * nconst + (ARG_CARRY,) * ncarry
        object.__setattr__(self, "fire_order", self.slots == fixed)
        rest = self.slots[len(fixed) :]
        packed = self.slots[: len(fixed)] == fixed and rest == tuple(s for s in SEG_ORDER if s in rest)
        object.__setattr__(self, "tail", rest if packed else None)

    def nbytes(self, tiles: int) -> int:
        """Scratch bytes of a launch of ``tiles`` workgroups."""
        return self.header + tiles * self.per_tile

    def tiles_in(self, nbytes: int) -> int:
        """Workgroups a scratch buffer of ``nbytes`` holds (negative: not even the header)."""
        return (nbytes - self.header) // self.per_tile

    def next_epoch(self, backend: Any, scratch: Scratch, queue: Any) -> int:
        """The epoch of the next launch on ``scratch`` (the queue's lock held), kept in it.

        One more than the last launch's; past :attr:`epoch_limit` the whole buffer is
        zeroed and epochs start again at 1 (a stale word of a higher epoch would win the
        atomic max against the restarted ones). A new buffer has epoch 0 and is zeroed:
        words are never cleared between launches, since each launch tags its own. The
        common launch and the compiled call take the first branch themselves and leave the
        second to this.
        """
        epoch = scratch.epoch + 1
        if epoch > self.epoch_limit:
            backend.zero(scratch.buf, None, queue)
            epoch = 1
        scratch.epoch = epoch
        return epoch

    def arguments(
        self,
        src: Sequence[Any],
        dst: Sequence[Any],
        n: int,
        scratch: Any,
        code: int,
        epoch: int,
        constants: Sequence[int],
        tail: Sequence[Any] = (),
        carry: Sequence[int] = NO_CARRY,
    ) -> list[Any]:
        """The arguments of a launch, in :attr:`slots` order: ``src`` and ``dst`` as the
        backend passes arrays (:meth:`Backend.buffer`), ``constants`` the constants in
        order, ``tail`` the segments' values of the plan's segment slots, in
        :data:`SEG_ORDER` (``segments.args``), ``carry`` the carry's words."""
        words = carry if self.ncarry else ()
        if self.tail is not None:  # the layout written out: a general launch asks this on every call
            return [*src, *dst, n, scratch, code, epoch, *constants, *words, *tail]
        seg = dict(zip((s for s in SEG_ORDER if s in self.slots), tail, strict=True))
        per_call = (src, dst, (n,), (scratch,), (code,), (epoch,))
        out: list[Any] = []
        k = c = 0
        for s in self.slots:
            if s == ARG_CONST:
                out.append(constants[k])
                k += 1
            elif s == ARG_CARRY:
                out.append(words[c])
                c += 1
            elif s in seg:
                out.append(seg[s])
            else:
                out += per_call[s]
        return out

    def carry_words(self, carry: bytes) -> tuple[int, ...]:
        """A carry's bits as the plan's carry words (little-endian, zeros after them)."""
        if len(carry) > 8 * CARRY_WORDS:
            raise ValueError(f"a carry of {len(carry)} bytes: at most {8 * CARRY_WORDS} go in a launch")
        return _WORDS.unpack(carry.ljust(8 * CARRY_WORDS, b"\0"))
