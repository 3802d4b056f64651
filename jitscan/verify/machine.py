"""The tile-state protocol's state machine, compiled with Numba (see ``protocol``).

T agents take one atomic step at a time on the shared descriptor words; ``_explore`` runs
batches of schedules and counts what they came to. ``protocol`` holds the public face:
what the model covers, :func:`protocol.explore` and the command line.
"""

from __future__ import annotations

import numpy as np
from numba import njit

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
