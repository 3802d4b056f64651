"""The tile-state protocol as an executable model (``jitscan/verify``), run under schedulers.

Each test states one property of the chained scans' protocol and checks it over a few
hundred schedules. The tests of deliberate bugs show that the checks can fail: a model
whose checks never fire would pass everything else too.
"""

from __future__ import annotations

import numpy as np
import pytest

from jitscan.verify import machine, protocol
from jitscan.verify.protocol import explore

N = 300  # schedules per case: the model runs tens of thousands a second


def _affine(x: int) -> tuple[int, int]:
    return x >> 16, x & 0xFFFF


def test_the_values_compose_in_order_so_a_mistake_in_the_order_shows():
    rng = np.random.default_rng(0)
    xs = [int((2 * rng.integers(1 << 15) + 1) << 16 | rng.integers(1 << 16)) for _ in range(64)]
    op = machine._op
    for x, y, z in zip(xs, xs[1:], xs[2:], strict=False):
        assert op(op(x, y), z) == op(x, op(y, z))
        # x then y, as maps t -> a t + b
        (xa, xb), (ya, yb), (ra, rb) = _affine(x), _affine(y), _affine(op(x, y))
        assert all((ra * t + rb) % 2**16 == (ya * (xa * t + xb) + yb) % 2**16 for t in (0, 1, 12345))
    assert sum(op(x, y) != op(y, x) for x, y in zip(xs, xs[1:], strict=False)) > 60
    assert op(machine._IDENTITY, xs[0]) == op(xs[0], machine._IDENTITY) == xs[0]


@pytest.mark.parametrize("encoding", ["packed", "split"])
@pytest.mark.parametrize("scheduler", ["fair", "random", "starve", "torn"])
def test_fallback_terminates_with_right_prefixes_under_every_scheduler(encoding, scheduler):
    r = explore("fallback", encoding, scheduler, tiles=8, schedules=N, seed=1)
    assert r.schedules == r.terminated == N
    assert r.starved == r.wrong == r.torn_accepted == r.stale_accepted == 0


@pytest.mark.parametrize("encoding", ["packed", "split"])
@pytest.mark.parametrize("scheduler", ["fair", "random", "torn"])
def test_lookback_terminates_with_right_prefixes_while_every_tile_keeps_running(encoding, scheduler):
    r = explore("lookback", encoding, scheduler, tiles=8, schedules=N, seed=2)
    assert r.schedules == r.terminated == N
    assert r.starved == r.wrong == r.torn_accepted == r.stale_accepted == r.fallbacks == 0


@pytest.mark.parametrize("encoding", ["packed", "split"])
def test_lookback_starves_when_a_predecessor_never_runs_again(encoding):
    # the starved tile has taken its id: its successors wait on it for ever
    r = explore("lookback", encoding, "starve", tiles=8, schedules=N, seed=3, max_steps=1500)
    assert r.terminated == 0
    assert r.starved == N
    assert r.wrong == r.torn_accepted == 0


@pytest.mark.parametrize("tiles", [2, 8, 64])
@pytest.mark.parametrize("encoding", ["packed", "split"])
def test_fallback_finishes_every_tile_but_the_starved_one_by_reducing_its_input(tiles, encoding):
    r = explore("fallback", encoding, "starve", tiles=tiles, schedules=N if tiles < 64 else 40, seed=4)
    # terminated: every tile but the starved one INCLUSIVE with the right value, and the
    # starved tile's successors took the right prefixes past it
    assert r.terminated == r.schedules
    assert r.fallbacks >= r.schedules  # someone reduced the starved tile in every schedule
    assert r.insertions > 0


@pytest.mark.parametrize("variant", ["lookback", "fallback"])
def test_split_encoding_never_accepts_a_torn_value(variant):
    r = explore(variant, "split", "torn", tiles=8, schedules=N, seed=5)
    assert r.torn_views > N  # the adversary did show readers half-written descriptors
    assert r.torn_accepted == 0
    assert r.terminated == N


def test_a_starved_tile_that_posted_half_its_descriptor_does_not_fool_its_successors():
    # the starve scheduler stops a split descriptor after its first word about half the time
    r = explore("fallback", "split", "starve", tiles=8, schedules=N, seed=6, stale=0.0)
    assert r.torn_views > 0
    assert r.torn_accepted == r.wrong == 0
    assert r.terminated == N


def test_a_reader_that_checks_one_word_is_caught_accepting_torn_values():
    r = explore("fallback", "split", "torn", tiles=8, schedules=N, seed=7, stale=0.0, bug="word0_reader")
    assert r.torn_accepted > N // 2
    assert r.wrong > N // 2


def test_stale_words_of_an_earlier_launch_read_as_not_ready():
    for encoding in ("packed", "split"):
        r = explore("fallback", encoding, "random", tiles=8, schedules=N, seed=8, stale=1.0)
        assert r.stale_views > N  # READY and INCLUSIVE words of epoch e-1 were read
        assert r.stale_accepted == r.wrong == 0
        assert r.terminated == N


def test_a_reader_blind_to_epochs_is_caught_accepting_stale_inclusive_values():
    r = explore(
        "fallback", "packed", "random", tiles=8, schedules=N, seed=9, stale=1.0, bug="epoch_blind_reader"
    )
    assert r.stale_accepted > 0
    assert r.wrong > 0


def test_a_walk_that_combines_left_to_right_is_caught_by_the_non_commutative_values():
    r = explore("fallback", "split", "random", tiles=8, schedules=N, seed=10, bug="swapped_combine")
    assert r.wrong > N // 2


def test_writers_that_store_instead_of_taking_the_max_let_a_late_insertion_undo_inclusive():
    r = explore("fallback", "split", "torn", tiles=8, schedules=N, seed=11, bug="store_not_max")
    assert r.wrong > 0


def test_the_lookback_watchdog_flags_a_starved_predecessor_instead_of_spinning():
    r = explore("lookback", "split", "starve", tiles=8, schedules=N, seed=12, spin_limit=50, watchdog=True)
    assert r.deadlocked == N
    assert r.starved == r.terminated == 0


def test_a_deadlock_flag_left_set_by_an_earlier_launch_stops_no_wait_of_the_next():
    # an unchecked launch (a bench's) leaves its flag set; the flag carries that launch's epoch,
    # so the waits of the next launch look at it and go on (here until the step budget ends)
    r = explore(
        "lookback",
        "packed",
        "starve",
        tiles=8,
        schedules=N,
        seed=13,
        spin_limit=10**6,
        max_steps=20_000,
        watchdog=True,
        deadlock_left=True,
    )
    assert r.deadlock_checks > 0
    assert r.deadlocked == 0 and r.starved == N
    # without a flag left, the same: a stale flag and no flag are one
    clean = explore(
        "lookback", "packed", "random", tiles=8, schedules=N, seed=13, spin_limit=10**6, watchdog=True
    )
    assert clean.deadlocked == 0 and clean.terminated == N


def test_thousands_of_schedules_run_and_all_are_checked():
    r = explore("fallback", "split", "random", tiles=8, schedules=2000, seed=14)
    assert r.schedules == r.terminated == 2000
    assert r.steps > 2000 * 8 * 5  # every tile took id, reduce, posts and reads: steps, not shortcuts
    assert r.schedules_per_s > 0


def test_the_same_seed_gives_the_same_schedules():
    a = explore("fallback", "split", "torn", tiles=8, schedules=50, seed=15)
    b = explore("fallback", "split", "torn", tiles=8, schedules=50, seed=15)
    assert (a.steps, a.torn_views, a.fallbacks) == (b.steps, b.torn_views, b.fallbacks)


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="unknown"):
        explore("chained", "split", "fair", tiles=8, schedules=1, seed=0)
    with pytest.raises(ValueError, match="tiles"):
        explore("fallback", "split", "fair", tiles=1, schedules=1, seed=0)


def test_main_prints_one_row_per_variant_encoding_scheduler_and_bug(capsys):
    assert protocol.main(["--schedules", "20", "--max-steps", "500"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines[2:]]
    assert len(rows) == 2 * 2 * 4 + len(protocol.BUGS) - 1
    assert {(r[0], r[1], r[2]) for r in rows if r[3] == "none"} == {
        (v, e, s) for v in protocol.VARIANTS for e in protocol.ENCODINGS for s in protocol.SCHEDULERS
    }
