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

__all__ = ["BUGS", "ENCODINGS", "SCHEDULERS", "VARIANTS", "Result", "explore", "main"]

from .machine import (
    _NCOUNTS,
    BUGS,
    ENCODINGS,
    SCHEDULERS,
    VARIANTS,
    _explore,
)


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
