"""An executable model of the chained scans' tile-state protocol, run under schedulers.

The model follows ``kernels/src/tile_state.h``, ``lookback.h`` and ``chained.c``: T
workgroups ("agents") each take a tile id from an atomic counter (the last one rewinds
it), reduce their tile, post its READY aggregate (tile 0: INCLUSIVE), walk back over
their predecessors and post their INCLUSIVE prefix. Every step of an agent is one memory
operation on the shared words or one piece of local work, and a scheduler chooses which
agent takes the next step, so the model explores interleavings a GPU rarely shows.

What it covers
--------------
* The descriptor encodings: *packed* (one 64-bit word: tag over 32 value bits) and
  *split* (two 32-bit words: tag over 16 value bits each). Posting, the fallback's
  insertion and the INCLUSIVE posting write one word per step with atomic max, so a
  reader of the split encoding can meet a descriptor half written.
* Reads of one word per step, the reader's rule (accepted only when every word shows the
  same flag of this launch), the window of predecessors read nearest first and walked
  right to left, spins, and ``spin_limit``: the fallback (reduce the stalled tile, insert
  it, walk on) or the look-back watchdog (flag a deadlock tagged with the launch's epoch,
  stop waiting; the deadlock word is looked at every 64 spins, as ``js_watchdog`` does, and
  a flag an earlier launch left stops nobody).
* Epochs: runs may start on words left by the launch before (epoch e-1), consistent or
  torn, NOT_READY, READY or INCLUSIVE with values unrelated to this launch's.
* Values: affine maps t -> a t + b mod 2^16 (a odd), composed in order and encoded as
  ``a << 16 | b``: associative, not commutative, and no map erases what came before, so a
  wrong order, a torn value or a stale one shows in the prefixes.
* Checks: every tile's exclusive prefix and posted INCLUSIVE value against a serial scan,
  every accepted descriptor against what a writer of this launch posted (else counted as
  a torn or stale acceptance), the final words, and the rewound tile counter.
* Deliberate bugs (``bug=``) that the checks must catch: a reader that looks at word 0's
  flag only, a reader blind to epochs, a combine in the wrong order, and writers that
  store instead of taking the atomic max.

What it does not cover
----------------------
* Memory orders weaker than sequential consistency: steps interleave whole, each on the
  latest value of its word (no store buffers, no reordering of one agent's loads). The
  protocol's safety rests on per-word atomicity and coherence alone (a flag of this launch
  determines the value), so weaker orders should change when values are seen, not which
  are accepted; the model does not check that (herd7 and the like would).
* Compilers, the intra-tile scan, the output stores: a tile is one input value, and its
  reduction is one step; a fallback's reduction gives the owner's bits (as ``js_scan_tile``
  promises; a float reduction that differed would break the atomic max's argument).
* The windowed walks' shuffle trees and barriers: the window's descriptors are read one
  word at a time nearest first, one of the orders the lanes' parallel reads can take.
* Segmented scans (the head bit in the tag), batched rows, deterministic scans, simulated
  blocking, the look-back watchdog's time bound (clocks), epoch overflow and the host.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

__all__ = ["BUGS", "ENCODINGS", "SCHEDULERS", "VARIANTS", "Result", "explore", "main"]

#: flags, as in ``tile.h``
NOT_READY, READY, INCLUSIVE = 0, 1, 2
VARIANTS = {"lookback": 0, "fallback": 1}
#: words per 32-bit value and value bits per word
ENCODINGS = {"packed": (1, 32), "split": (2, 16)}
SCHEDULERS = {"fair": 0, "random": 1, "starve": 2, "torn": 3}
BUGS = {"none": 0, "word0_reader": 1, "epoch_blind_reader": 2, "swapped_combine": 3, "store_not_max": 4}

_FAIR, _RANDOM, _STARVE, _TORN = 0, 1, 2, 3
_WORD0, _EPOCH_BLIND, _SWAPPED, _STORE = 1, 2, 3, 4
_IDENTITY = 1 << 16  # the map t -> t

# agent program counters: one atomic step each
_TAKE, _REWIND, _REDUCE, _POST_OWN, _READ, _WALK = 0, 1, 2, 3, 4, 5
_CHECK, _FLAG, _FB_REDUCE, _FB_INSERT, _POST_INCL, _DONE = 6, 7, 8, 9, 10, 11

# agent fields (one row of an int64 array per agent)
_PC, _TILE, _P, _I, _CUR, _PREFIX, _HAVE, _SPINS, _AGG, _OWNFLAG = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
_FBVAL, _FIRST, _ALLINC, _OLDBITS, _INCL, _WLEN, _FINAL, _STOPPED = 10, 11, 12, 13, 14, 15, 16, 17
_NFIELDS = 18

# per-launch globals and counters
_G_COUNTER, _G_DEADLOCK, _G_TORN, _G_STALE, _G_TORN_VIEW, _G_STALE_VIEW = 0, 1, 2, 3, 4, 5
_G_FALLBACKS, _G_INSERTS, _G_STOPPED, _G_EPOCH, _G_CHECKS = 6, 7, 8, 9, 10
_NGLOBALS = 11

# the configuration of a batch (an int64 array)
_K_VARIANT, _K_NPARTS, _K_PBITS, _K_SCHED, _K_T, _K_SPIN, _K_MAX_STEPS = 0, 1, 2, 3, 4, 5, 6
_K_WINDOW, _K_BUG, _K_WATCHDOG, _K_DEADLOCK_LEFT = 7, 8, 9, 10
_NCONFIG = 11

# batch counters returned by _explore
_C_RUN, _C_TERM, _C_STARVED, _C_DEADLOCK, _C_WRONG, _C_TORN, _C_STALE = 0, 1, 2, 3, 4, 5, 6
_C_TORN_VIEW, _C_STALE_VIEW, _C_FALLBACKS, _C_INSERTS, _C_CHECKS, _C_STEPS = 7, 8, 9, 10, 11, 12
_NCOUNTS = 13


@njit(cache=True)
def _op(x: int, y: int) -> int:
    """``x`` then ``y`` (x farther on the left): (a1, b1) then (a2, b2) is (a2 a1, a2 b1 + b2)."""
    xa, xb, ya, yb = x >> 16, x & 0xFFFF, y >> 16, y & 0xFFFF
    return ((ya * xa) & 0xFFFF) << 16 | ((ya * xb + yb) & 0xFFFF)


@njit(cache=True)
def _word(epoch: int, flag: int, value: int, p: int, pbits: int) -> int:
    """``js_state_word``: tag (epoch << 3 | flag, no head bit) over part ``p`` of the value."""
    return (epoch << 3 | flag) << pbits | ((value >> (p * pbits)) & ((1 << pbits) - 1))


@njit(cache=True)
def _flag_of(w: int, epoch: int, pbits: int, bug: int) -> int:
    tag = w >> pbits
    if bug == _EPOCH_BLIND or (tag >> 3) == epoch:
        return tag & 3
    return NOT_READY


@njit(cache=True)
def _write(words: np.ndarray, at: int, new: int, bug: int) -> int:
    """One atomic max (or, for the store bug, a plain exchange); returns the old word."""
    old = words[at]
    if bug == _STORE or new > old:
        words[at] = new
    return old


@njit(cache=True)
def _finish_walk(ag: np.ndarray, a: int, posted: np.ndarray) -> None:
    """The walk is over: decide the INCLUSIVE value (chained.c after the loop)."""
    t = ag[a, _TILE]
    prefix = ag[a, _PREFIX] if ag[a, _HAVE] else _IDENTITY
    ag[a, _FINAL] = prefix
    if t == 0:
        ag[a, _PC] = _DONE
        return
    ag[a, _INCL] = _op(prefix, ag[a, _AGG])
    posted[t] = ag[a, _INCL]
    ag[a, _P] = 0
    ag[a, _PC] = _POST_INCL


@njit(cache=True)
def _look(ag: np.ndarray, a: int) -> None:
    ag[a, _I] = 0
    ag[a, _P] = 0
    ag[a, _PC] = _READ


@njit(cache=True)
def _take(ag: np.ndarray, a: int, v: int, bug: int) -> None:
    """``js_walk_take``: what was walked goes on the left of the prefix."""
    if ag[a, _HAVE]:
        ag[a, _PREFIX] = _op(ag[a, _PREFIX], v) if bug == _SWAPPED else _op(v, ag[a, _PREFIX])
    else:
        ag[a, _PREFIX] = v
    ag[a, _HAVE] = 1


@njit(cache=True)
def _step(a, ag, win, words, g, inputs, posted, cfg, flags, vals):
    """Agent ``a`` takes one atomic step."""
    T, nparts, pbits, window, bug = cfg[_K_T], cfg[_K_NPARTS], cfg[_K_PBITS], cfg[_K_WINDOW], cfg[_K_BUG]
    spin_limit, watchdog = cfg[_K_SPIN], cfg[_K_WATCHDOG]
    pc = ag[a, _PC]
    epoch = g[_G_EPOCH]
    mask = (1 << pbits) - 1
    if pc == _TAKE:
        t = g[_G_COUNTER]
        g[_G_COUNTER] = t + 1
        ag[a, _TILE] = t
        ag[a, _PC] = _REWIND if t == T - 1 else _REDUCE
    elif pc == _REWIND:
        g[_G_COUNTER] = 0  # the last tile handed out: every agent has its id
        ag[a, _PC] = _REDUCE
    elif pc == _REDUCE:
        t = ag[a, _TILE]
        ag[a, _AGG] = inputs[t]
        ag[a, _OWNFLAG] = INCLUSIVE if t == 0 else READY
        if t == 0:
            posted[0] = inputs[0]
        ag[a, _P] = 0
        ag[a, _PC] = _POST_OWN
    elif pc == _POST_OWN:
        t, p = ag[a, _TILE], ag[a, _P]
        _write(words, t * nparts + p, _word(epoch, ag[a, _OWNFLAG], ag[a, _AGG], p, pbits), bug)
        ag[a, _P] = p + 1
        if p + 1 == nparts:
            if t == 0:
                _finish_walk(ag, a, posted)
            else:
                ag[a, _CUR] = t - 1
                _look(ag, a)
    elif pc == _READ:
        i, p = ag[a, _I], ag[a, _P]
        win[a, i * nparts + p] = words[(ag[a, _CUR] - i) * nparts + p]
        if p + 1 < nparts:
            ag[a, _P] = p + 1
        else:
            ag[a, _P] = 0
            ag[a, _I] = i + 1
            if i + 1 == window or ag[a, _CUR] - (i + 1) < 0:
                ag[a, _WLEN] = i + 1
                ag[a, _PC] = _WALK
    elif pc == _WALK:
        cur, wlen = ag[a, _CUR], ag[a, _WLEN]
        # js_read on each descriptor of the window, then the checks of what it accepted
        for k in range(wlen):
            d = cur - k
            flag, val, torn, stale = 0, 0, False, False
            tag0 = win[a, k * nparts] >> pbits
            for p in range(nparts):
                w = win[a, k * nparts + p]
                f = _flag_of(w, epoch, pbits, bug)
                if p == 0:
                    flag = f
                elif f != flag and bug != _WORD0:
                    flag = NOT_READY
                val |= (w & mask) << (p * pbits)
                # a disagreement among words one of which this launch wrote: a posting caught midway
                torn |= (w >> pbits) != tag0 and ((w >> pbits) >> 3 == epoch or tag0 >> 3 == epoch)
                stale |= ((w >> pbits) >> 3) != epoch and ((w >> pbits) & 3) != NOT_READY
            g[_G_TORN_VIEW] += torn
            g[_G_STALE_VIEW] += stale
            flags[k], vals[k] = flag, val
            if flag != NOT_READY and not (
                (flag == READY and val == inputs[d]) or (flag == INCLUSIVE and val == posted[d])
            ):
                if stale:
                    g[_G_STALE] += 1
                else:
                    g[_G_TORN] += 1
        # js_window_walk: right to left up to a NOT_READY one, ended by an INCLUSIVE one
        k, taken, done = 0, _IDENTITY, False
        while k < wlen and not done:
            if flags[k] == NOT_READY:
                break
            if k == 0:
                taken = vals[k]
            else:
                taken = _op(taken, vals[k]) if bug == _SWAPPED else _op(vals[k], taken)
            done = flags[k] == INCLUSIVE
            k += 1
        # js_walk_advance
        if k:
            _take(ag, a, taken, bug)
        ag[a, _CUR] = cur - k
        if done or cur - k < 0:
            _finish_walk(ag, a, posted)
            return
        ag[a, _SPINS] = 0 if k else ag[a, _SPINS] + 1
        spins = ag[a, _SPINS]
        if cfg[_K_VARIANT] == 1:
            if spins > spin_limit:
                g[_G_FALLBACKS] += 1
                ag[a, _PC] = _FB_REDUCE
            else:
                _look(ag, a)
        elif watchdog and spins > spin_limit:
            ag[a, _PC] = _FLAG
        elif watchdog and spins and spins % 64 == 0:
            ag[a, _PC] = _CHECK
        else:
            _look(ag, a)
    elif pc == _CHECK:
        g[_G_CHECKS] += 1
        # the flag carries its launch's epoch (epoch << 2 | cause): an earlier launch's stops nobody
        if g[_G_DEADLOCK] >> 2 == g[_G_EPOCH]:
            ag[a, _STOPPED] = 1
            g[_G_STOPPED] = 1
            _finish_walk(ag, a, posted)
        else:
            _look(ag, a)
    elif pc == _FLAG:
        g[_G_DEADLOCK] = max(g[_G_DEADLOCK], g[_G_EPOCH] << 2 | 1)  # atomic max, as the kernel
        ag[a, _STOPPED] = 1
        g[_G_STOPPED] = 1
        _finish_walk(ag, a, posted)  # as the kernel does: a partial prefix, for the host to discard
    elif pc == _FB_REDUCE:
        ag[a, _FBVAL] = inputs[ag[a, _CUR]]
        ag[a, _P] = 0
        ag[a, _ALLINC] = 1
        ag[a, _OLDBITS] = 0
        ag[a, _PC] = _FB_INSERT
    elif pc == _FB_INSERT:
        # js_insert, one word per step
        cur, p = ag[a, _CUR], ag[a, _P]
        old = _write(words, cur * nparts + p, _word(epoch, READY, ag[a, _FBVAL], p, pbits), bug)
        f = _flag_of(old, epoch, pbits, bug)
        if p == 0:
            ag[a, _FIRST] = f
        if f != INCLUSIVE:
            ag[a, _ALLINC] = 0
        ag[a, _OLDBITS] |= (old & mask) << (p * pbits)
        ag[a, _P] = p + 1
        if p + 1 < nparts:
            return
        g[_G_INSERTS] += ag[a, _FIRST] == NOT_READY
        inclusive = ag[a, _ALLINC] == 1
        if inclusive and ag[a, _OLDBITS] != posted[cur]:
            g[_G_TORN] += 1
        # js_fallback_take
        _take(ag, a, ag[a, _OLDBITS] if inclusive else ag[a, _FBVAL], bug)
        ag[a, _SPINS] = 0
        ag[a, _CUR] = cur - 1
        if inclusive or cur - 1 < 0:
            _finish_walk(ag, a, posted)
        else:
            _look(ag, a)
    elif pc == _POST_INCL:
        t, p = ag[a, _TILE], ag[a, _P]
        _write(words, t * nparts + p, _word(epoch, INCLUSIVE, ag[a, _INCL], p, pbits), bug)
        ag[a, _P] = p + 1
        if p + 1 == nparts:
            ag[a, _PC] = _DONE


@njit(cache=True)
def _access(ag, a, win, nparts, pbits, epoch, out):
    """The shared word agent ``a``'s next step touches: out = (kind, word index, new word, part).

    kind 0: none, 1: a read (new word: the tag of word 0 already read), 2: a write."""
    pc = ag[a, _PC]
    out[0] = 0
    if pc == _READ:
        i, p = ag[a, _I], ag[a, _P]
        d = ag[a, _CUR] - i
        out[0], out[1], out[3] = 1, d * nparts + p, p
        out[2] = win[a, i * nparts] >> pbits if p > 0 else -1
    elif pc == _POST_OWN or pc == _POST_INCL or pc == _FB_INSERT:
        p = ag[a, _P]
        if pc == _POST_OWN:
            d, f, v = ag[a, _TILE], ag[a, _OWNFLAG], ag[a, _AGG]
        elif pc == _POST_INCL:
            d, f, v = ag[a, _TILE], INCLUSIVE, ag[a, _INCL]
        else:
            d, f, v = ag[a, _CUR], READY, ag[a, _FBVAL]
        out[0], out[1], out[2], out[3] = 2, d * nparts + p, _word(epoch, f, v, p, pbits), p


@njit(cache=True)
def _torn_pick(run, n, ag, win, words, cfg, epoch, stamp, marks, acc):
    """The torn scheduler: the step that best tears a split descriptor under some reader's eyes.

    ``marks`` rows, per descriptor or agent: a reader's next step reads word 0 (the stamp of
    this step), a reader is midway (its stamp), the tag of word 0 that reader has, the score."""
    nparts, pbits, bug = cfg[_K_NPARTS], cfg[_K_PBITS], cfg[_K_BUG]
    r0_at, mid_at, mid_tag, score = marks[0], marks[1], marks[2], marks[3]
    for j in range(n):
        _access(ag, run[j], win, nparts, pbits, epoch, acc[j])
        if acc[j, 0] == 1:
            d = acc[j, 1] // nparts
            if acc[j, 3] == 0:
                r0_at[d] = stamp
            else:
                mid_at[d] = stamp
                mid_tag[d] = acc[j, 2]
    best, m = -(1 << 30), 0
    for j in range(n):
        kind, at, new, p = acc[j, 0], acc[j, 1], acc[j, 2], acc[j, 3]
        d = at // nparts
        s = 0
        if kind == 1 and p > 0:
            if (words[at] >> pbits) != new:
                s = 8  # reading now completes a torn view
        elif kind == 1:
            for q in range(1, nparts):
                if (words[d * nparts + q] >> pbits) != (words[d * nparts] >> pbits):
                    s = 6  # word 0 of a half-written descriptor: its other words are behind
        elif kind == 2 and (new > words[at] or (bug == _STORE and new != words[at])):
            if mid_at[d] == stamp and (new >> pbits) != mid_tag[d]:
                s = 6 if p > 0 else 5  # a reader has word 0 already: change the rest under it
            elif p == 0 and nparts > 1 and r0_at[d] == stamp:
                s = 4  # half-write a descriptor a reader is about to read
            elif p > 0:
                s = -1  # keep descriptors half-written as long as possible
        score[j] = s
        if s > best:
            best, m = s, 1
        elif s == best:
            m += 1
    # a random one among the best
    r = np.random.randint(0, m)
    for j in range(n):
        if score[j] == best:
            if r == 0:
                return run[j]
            r -= 1
    return run[0]


@njit(cache=True)
def _explore(cfg, schedules, seed, stale, counts):
    nparts, pbits, sched, T, window = cfg[_K_NPARTS], cfg[_K_PBITS], cfg[_K_SCHED], cfg[_K_T], cfg[_K_WINDOW]
    np.random.seed(seed)
    words = np.zeros(T * nparts, np.int64)
    ag = np.zeros((T, _NFIELDS), np.int64)
    win = np.zeros((T, window * nparts), np.int64)
    g = np.zeros(_NGLOBALS, np.int64)
    inputs = np.zeros(T, np.int64)
    incl = np.zeros(T, np.int64)
    posted = np.zeros(T, np.int64)
    flags = np.zeros(window, np.int64)
    vals = np.zeros(window, np.int64)
    run = np.zeros(T, np.int64)
    marks = np.zeros((4, T), np.int64)
    acc = np.zeros((T, 4), np.int64)
    stamp = 0
    for _ in range(schedules):
        epoch = 1 + np.random.randint(0, 8)
        g[:] = 0
        g[_G_EPOCH] = epoch
        # a flag the previous launch left (unchecked): its epoch is not this launch's
        g[_G_DEADLOCK] = ((epoch - 1) << 2 | 1) * cfg[_K_DEADLOCK_LEFT]
        for t in range(T):
            inputs[t] = (2 * np.random.randint(0, 1 << 15) + 1) << 16 | np.random.randint(0, 1 << 16)
            incl[t] = inputs[t] if t == 0 else _op(incl[t - 1], inputs[t])
            posted[t] = -1
        words[:] = 0
        if np.random.random() < stale:
            for t in range(T):
                sf = min(np.random.randint(0, 4), INCLUSIVE)  # INCLUSIVE half the time
                sv = np.random.randint(0, 1 << 32)
                torn = np.random.random() < 0.25
                for p in range(nparts):
                    f = np.random.randint(0, 3) if torn else sf
                    words[t * nparts + p] = _word(epoch - 1, f, sv, p, pbits)
        ag[:, :] = 0
        ag[:, _PC] = _TAKE
        ag[:, _FINAL] = -1
        victim, stop_at = -1, 0
        if sched == _STARVE:
            victim = np.random.randint(0, T - 1)  # not the last tile: it has successors
            stop_at = np.random.randint(0, nparts)  # own words posted before it stops for good
        last, steps, finished = T - 1, 0, False
        while True:
            n = 0
            for a in range(T):
                if ag[a, _PC] == _DONE:
                    continue
                if ag[a, _TILE] == victim and ag[a, _PC] == _POST_OWN and ag[a, _P] == stop_at:
                    continue
                run[n] = a
                n += 1
            if n == 0:
                finished = True
                break
            if steps == cfg[_K_MAX_STEPS]:
                break
            if sched == _FAIR:
                a = last
                for j in range(1, T + 1):
                    c = (last + j) % T
                    found = False
                    for q in range(n):
                        found |= run[q] == c
                    if found:
                        a = c
                        break
                last = a
            elif sched == _TORN and np.random.randint(0, 8) != 0:
                stamp += 1
                a = _torn_pick(run, n, ag, win, words, cfg, epoch, stamp, marks, acc)
            else:
                a = run[np.random.randint(0, n)]
            _step(a, ag, win, words, g, inputs, posted, cfg, flags, vals)
            steps += 1
        # the verdict on this schedule
        bad = False
        for a in range(T):
            if ag[a, _PC] != _DONE:
                continue
            t = ag[a, _TILE]
            if ag[a, _FINAL] != (incl[t - 1] if t > 0 else _IDENTITY) or posted[t] != incl[t]:
                bad = True
        stopped = g[_G_STOPPED] != 0
        if finished and not stopped:
            for a in range(T):
                t = ag[a, _TILE]
                if t == victim:
                    continue
                for p in range(nparts):
                    if words[t * nparts + p] != _word(epoch, INCLUSIVE, incl[t], p, pbits):
                        bad = True
            if g[_G_COUNTER] != 0:
                bad = True
        counts[_C_RUN] += 1
        counts[_C_TERM] += finished and not bad and not stopped
        counts[_C_STARVED] += not finished
        counts[_C_DEADLOCK] += stopped
        counts[_C_WRONG] += bad and not stopped
        counts[_C_TORN] += g[_G_TORN] > 0
        counts[_C_STALE] += g[_G_STALE] > 0
        counts[_C_TORN_VIEW] += g[_G_TORN_VIEW]
        counts[_C_STALE_VIEW] += g[_G_STALE_VIEW]
        counts[_C_FALLBACKS] += g[_G_FALLBACKS]
        counts[_C_INSERTS] += g[_G_INSERTS]
        counts[_C_CHECKS] += g[_G_CHECKS]
        counts[_C_STEPS] += steps


@dataclass(frozen=True)
class Result:
    """What :func:`explore` found; counts of schedules unless said otherwise.

    Attributes
    ----------
    schedules : int
        Schedules run.
    terminated : int
        Every tile but a starved one finished, posted INCLUSIVE with the right value and took
        the right exclusive prefix; the words end INCLUSIVE and the tile counter rewound.
    starved : int
        Hit ``max_steps`` with some runnable tile unfinished.
    deadlocked : int
        The look-back watchdog (or its flag, left set) stopped some tile's wait: the host
        raises and discards the output, so these are neither terminated nor wrong.
    wrong : int
        A wrong prefix or INCLUSIVE value, or final words that are not the right INCLUSIVE
        ones, outside deadlocked schedules.
    torn_accepted, stale_accepted : int
        Schedules where a reader accepted a value no writer of this launch posted with that
        flag: put together from different postings, or holding words of the earlier launch.
    torn_views, stale_views : int
        Descriptor reads (not schedules) whose words disagreed on their tag, or held a
        READY or INCLUSIVE word of the earlier launch: chances the readers had to go wrong.
    fallbacks, insertions, deadlock_checks, steps : int
        Totals over all schedules (deadlock_checks: look-back's loads of the deadlock word).
    seconds : float
        Time of the compiled batch (compilation left out).
    """

    variant: str
    encoding: str
    scheduler: str
    tiles: int
    bug: str
    schedules: int
    terminated: int
    starved: int
    deadlocked: int
    wrong: int
    torn_accepted: int
    stale_accepted: int
    torn_views: int
    stale_views: int
    fallbacks: int
    insertions: int
    deadlock_checks: int
    steps: int
    seconds: float

    @property
    def schedules_per_s(self) -> float:
        return self.schedules / self.seconds if self.seconds > 0 else float("inf")


def default_max_steps(tiles: int, encoding: str, spin_limit: int) -> int:
    """Steps after which a schedule counts as starved: far beyond what a finishing one takes."""
    nparts = ENCODINGS[encoding][0]
    return 40 * tiles * (tiles + spin_limit + 4) * nparts


def explore(
    variant: str,
    encoding: str,
    scheduler: str,
    tiles: int,
    schedules: int,
    seed: int,
    spin_limit: int = 3,
    max_steps: int | None = None,
    *,
    window: int = 4,
    stale: float = 0.5,
    bug: str = "none",
    watchdog: bool = False,
    deadlock_left: bool = False,
) -> Result:
    """Run ``schedules`` schedules of one launch of ``tiles`` tiles and check each.

    Parameters
    ----------
    variant : {"lookback", "fallback"}
    encoding : {"packed", "split"}
    scheduler : {"fair", "random", "starve", "torn"}
        fair: round robin. random: uniform among runnable agents. starve: random, but the
        agent that took a random tile id (not the last) stops for good before its READY
        posting is complete (in the split encoding, possibly after its first word).
        torn: prefers the step that leaves a reader with a half-written split descriptor
        (1 step in 8 uniform, so that writers finish eventually).
    tiles : int
        Workgroups, and tiles (2 to a few hundred).
    schedules : int
    seed : int
        Seeds inputs, epochs, stale words and the schedulers' choices.
    spin_limit : int
        Spins on one predecessor before a fallback, or the watchdog (``watchdog=True``).
    max_steps : int, optional
        Steps before a schedule counts as starved; by default :func:`default_max_steps`.
    window : int
        Predecessors read per look (the kernel's JS_LB_W).
    stale : float
        Share of schedules that start on words of the launch before (epoch e-1).
    bug : str
        One of :data:`BUGS`: "none", or a deliberate bug for the checks to catch.
    watchdog : bool
        Look-back only: give up after ``spin_limit`` spins and flag a deadlock (else spin
        for ever).
    deadlock_left : bool
        Start with the deadlock word set, as an earlier launch whose flag was not cleared.

    Returns
    -------
    Result
    """
    if variant not in VARIANTS or encoding not in ENCODINGS or scheduler not in SCHEDULERS or bug not in BUGS:
        raise ValueError(
            f"unknown variant, encoding, scheduler or bug: {variant!r} {encoding!r} {scheduler!r} {bug!r}"
        )
    if tiles < 2 or window < 1 or schedules < 0:
        raise ValueError("tiles must be at least 2, window at least 1")
    nparts, pbits = ENCODINGS[encoding]
    if max_steps is None:
        max_steps = default_max_steps(tiles, encoding, spin_limit)
    # in the order of the _K_ indices
    config = (VARIANTS[variant], nparts, pbits, SCHEDULERS[scheduler], tiles, spin_limit, max_steps, window)
    cfg = np.array([*config, BUGS[bug], watchdog, deadlock_left], np.int64)
    if not _explore.signatures:
        _explore(cfg, 1, seed, float(stale), np.zeros(_NCOUNTS, np.int64))  # compile (or load) first
    counts = np.zeros(_NCOUNTS, np.int64)
    start = time.perf_counter()
    _explore(cfg, schedules, seed, float(stale), counts)
    seconds = time.perf_counter() - start
    # the counters are in the order of Result's fields
    return Result(variant, encoding, scheduler, tiles, bug, *(int(c) for c in counts), seconds)


def main(argv: Sequence[str] | None = None) -> int:
    """Print variant x encoding x scheduler, then the deliberate bugs, as a table."""
    ap = argparse.ArgumentParser(prog="python -m jitscan.verify.protocol", description=__doc__.split("\n")[0])
    ap.add_argument("--tiles", type=int, default=8)
    ap.add_argument("--schedules", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--spin-limit", type=int, default=3)
    ap.add_argument("--window", type=int, default=4)
    ap.add_argument("--max-steps", type=int, default=None)
    args = ap.parse_args(argv)
    runs = [(v, e, s, "none") for v in VARIANTS for e in ENCODINGS for s in SCHEDULERS]
    runs += [
        ("fallback", "split", "torn", "word0_reader"),
        ("fallback", "packed", "random", "epoch_blind_reader"),
        ("fallback", "split", "random", "swapped_combine"),
        ("fallback", "split", "torn", "store_not_max"),
    ]
    head = (
        "variant",
        "encoding",
        "scheduler",
        "bug",
        "schedules",
        "terminated",
        "starved",
        "wrong",
        "torn acc",
        "stale acc",
        "torn views",
        "sched/s",
    )
    row = "{:<9} {:<7} {:<9} {:<18}" + " {:>10}" * 8
    print(f"{args.tiles} tiles, window {args.window}, spin limit {args.spin_limit}, seed {args.seed}")
    print(row.format(*head))
    for v, e, s, bug in runs:
        r = explore(
            v,
            e,
            s,
            args.tiles,
            args.schedules,
            args.seed,
            args.spin_limit,
            args.max_steps,
            window=args.window,
            bug=bug,
        )
        print(
            row.format(
                v,
                e,
                s,
                bug,
                r.schedules,
                r.terminated,
                r.starved,
                r.wrong,
                r.torn_accepted,
                r.stale_accepted,
                r.torn_views,
                f"{r.schedules_per_s:,.0f}",
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
