"""The tile-state protocol, checked exhaustively by SPIN on a model of a few tiles.

``jitscan/verify/tilestate.pml`` models the descriptors of ``kernels/src/tile_state.h``
(one word packed, two split, atomic max writes, one-word reads, words of an earlier launch)
and the walk of ``lookback.h`` and ``chained.c``; ``jitscan.verify.spin`` runs SPIN on it.
No fairness is assumed: the scheduler may stop running any tile at any point. What the
model leaves out is listed at the top of the model.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from jitscan.verify import spin

needs_spin = pytest.mark.skipif(
    shutil.which("spin") is None or shutil.which("gcc") is None,
    reason="SPIN (`spin`) and `gcc` are needed to check the Promela model (apt-get install spin gcc)",
)
FIXTURE = Path(__file__).parent / "fixtures" / "lookback_starves.trail"


def cycle_of(trail: str) -> tuple[list[str], list[str]]:
    """A lasso trail's steps before and after its cycle marker (``-1:-1:-1``)."""
    lines = [line for line in trail.splitlines() if re.fullmatch(r"-?\d+:-?\d+:-?\d+", line)]
    assert len(lines) == len(trail.splitlines()), "a trail is lines of step:process:transition"
    assert "-1:-1:-1" in lines, "no cycle in the trail"
    at = lines.index("-1:-1:-1")
    return lines[:at], lines[at + 1 :]


def processes_in_cycle(replay: str) -> set[str]:
    """The processes that move in the cycle of a replayed lasso, as ``proctype:pid``."""
    cycle = replay.split("<<<<<START OF CYCLE>>>>>", 1)[1].split("spin: trail ends", 1)[0]
    return {f"{kind}:{pid}" for pid, kind in re.findall(r"proc\s+(\d+) \((\w+):", cycle)}


@needs_spin
@pytest.mark.parametrize("encoding", ["split", "packed"])
@pytest.mark.parametrize("tiles", [2, 3, 4])
def test_fallback_always_terminates_with_every_tile_inclusive_and_right(encoding, tiles):
    # safety: no reader accepts a torn value, no insertion takes one for INCLUSIVE, every
    # walk combines in order, every tile posts INCLUSIVE [0, t], and at the end every word
    # is this launch's INCLUSIVE word with the right part, whatever earlier launches left
    safe = spin.check("safety", tiles, fallback=True, encoding=encoding)
    assert safe.holds, safe.output
    # termination: <> all_done over every run, no fairness: no tile waits forever,
    # whichever tiles the scheduler stops running
    ends = spin.check("termination", tiles, fallback=True, encoding=encoding)
    assert ends.holds, ends.output
    for result in (safe, ends):
        assert result.exhaustive and result.truncated is None
        assert result.states > 0 and result.transitions >= result.states


@needs_spin
def test_fallback_holds_when_words_are_posted_and_read_in_either_order():
    for prop in spin.PROPERTIES:
        result = spin.check(prop, 3, fallback=True, encoding="split", reorder=True)
        assert result.holds, result.output


@needs_spin
@pytest.mark.parametrize("encoding", ["split", "packed"])
def test_lookback_has_a_run_that_never_terminates(encoding):
    result = spin.check("termination", 3, fallback=False, encoding=encoding, replay=True)
    assert result.errors == 1 and result.violation.startswith("acceptance cycle"), result.output
    stem, cycle = cycle_of(result.trail)
    assert stem and cycle
    # the cycle is one tile spinning on its predecessor, which the scheduler never runs
    (spinner,) = processes_in_cycle(result.replay)
    assert spinner.startswith("tile:")
    # the fixture documents such a run (a trail replays only against the model it came from)
    stem, cycle = cycle_of(FIXTURE.read_text())
    assert stem and cycle


@needs_spin
def test_lookback_is_never_wrong_only_possibly_stuck():
    result = spin.check("safety", 3, fallback=False, encoding="split")
    assert result.holds, result.output


@needs_spin
def test_a_reader_that_checks_one_word_accepts_a_torn_value():
    broken = spin.check("safety", 3, fallback=True, broken_reader=True, encoding="split")
    assert broken.errors == 1 and broken.violation.startswith("assertion violated"), broken.output
    # the reader's assertion: what it accepted is not what was posted with that flag
    assert "rf==0" in broken.violation
    assert broken.trail
    # one packed word cannot tear, so there the same reader is right
    packed = spin.check("safety", 3, fallback=True, broken_reader=True, encoding="packed")
    assert packed.holds, packed.output


@needs_spin
def test_a_search_cut_short_by_the_depth_limit_is_not_called_exhaustive():
    result = spin.check("safety", 3, max_depth=20)
    assert result.errors == 0 and not result.exhaustive and not result.holds
    assert result.truncated == "depth limit (-m)"


def test_without_spin_on_path_the_runner_says_so(monkeypatch):
    monkeypatch.setattr(spin.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="`spin`"):
        spin.check("safety")
    monkeypatch.setattr(spin.shutil, "which", lambda name: None if name == "gcc" else "/usr/bin/" + name)
    with pytest.raises(RuntimeError, match="`gcc`"):
        spin.check("safety")


def test_unknown_properties_and_sizes_are_refused():
    with pytest.raises(ValueError, match="prop"):
        spin.check("liveness")
    with pytest.raises(ValueError, match="tiles"):
        spin.check("safety", tiles=5)
