"""Tuning on the user's own device: a run measures, keeps its winners, and later scans use them.

``jitscan.tune`` / ``python -m jitscan tune`` search the chained scan's tile shapes per
case (dtype class, op class, segmented mode, size class) and write a table to the user's
cache (here a temporary ``JITSCAN_CACHE_DIR``). A prepared scan takes the table's knobs
for its case unless the caller gives a tile-shape knob; ``JITSCAN_TUNING=off``, a table of
another device, driver or build, and a corrupt file leave the built-in knobs.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import jitscan
from jitscan import backends
from jitscan.api import cache
from jitscan.plan import KNOBS, tuned, tuning
from jitscan.tuner import search

BACKEND = "opencl"  # PoCL in CI: the run and its tables need no GPU


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    if not backends.get(BACKEND).available():
        pytest.skip(f"backend {BACKEND!r} unavailable here: {backends.get(BACKEND).unavailable_reason()}")
    monkeypatch.setenv("JITSCAN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(tuned.SWITCH, raising=False)
    tuned.forget()
    cache.clear()
    yield
    tuned.forget()
    cache.clear()


@pytest.fixture
def info():
    b = backends.get(BACKEND)
    return b.device_info(b.default_queue())


def plant(info, knobs, **header):
    """A table for ``info``'s device whose one case (int32 sums of class 0) sets ``knobs``."""
    name = tuned.case(jitscan.dtypes.lookup(np.dtype("int32")), jitscan.BUILTIN_OPS["add"], "", 0)
    table = tuned.header(info) | header | {"cases": {name: {"knobs": knobs, "speedup": 1.1}}}
    path = tuned.cache_dir() / tuned.file_name(info)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(table))
    tuned.forget()
    return path


def vectors_used(info, **knobs) -> int:
    return jitscan.plan("int32", backend=BACKEND, **knobs).spec(info, 0).vectors


def test_a_run_from_the_command_line_writes_a_table_for_this_device(tmp_path, capsys):
    from jitscan.__main__ import main

    out = tmp_path / "table.json"
    argv = ["tune", "--backend", BACKEND, "--dtypes", "int32", "--ops", "add", "--segmented", "none"]
    assert main([*argv, "--sizes", "14", "--budget", "2", "--out", str(out), "--no-progress"]) == 0
    table = json.loads(out.read_text())
    b = backends.get(BACKEND)
    assert all(table[k] == v for k, v in tuned.header(b.device_info(b.default_queue())).items())
    assert list(table["cases"]) == ["4-byte/builtin/none/0"]
    assert "| 4-byte/builtin/none/0 |" in capsys.readouterr().out


def test_later_scans_use_the_table_and_stay_right(info, rng):
    default = vectors_used(info)
    plant(info, {"vectors": default // 2})
    assert vectors_used(info) == default // 2
    x = rng.integers(-100, 100, 50_000).astype(np.int32)
    np.testing.assert_array_equal(
        jitscan.cumsum(x, backend=BACKEND, dtype=np.int32), np.cumsum(x, dtype=np.int32)
    )


def test_a_table_shipped_for_this_device_applies_whatever_driver_or_build_made_it(
    info, tmp_path, monkeypatch
):
    default = vectors_used(info)
    shipped = tmp_path / "shipped"
    monkeypatch.setattr(tuned, "_SHIPPED", shipped)
    path = plant(info, {"vectors": default // 2}, driver="an older one", build="0.0.1+000000000000")
    shipped.mkdir()
    path.rename(shipped / path.name)
    tuned.forget()
    assert vectors_used(info) == default // 2  # the user's cache has none: the shipped table
    plant(info, {"vectors": default // 4})
    assert vectors_used(info) == default // 4  # the user's own table comes first


def test_the_switch_and_a_callers_shape_knob_leave_the_built_in_knobs(info, monkeypatch):
    default = vectors_used(info)
    plant(info, {"vectors": default // 2})
    assert vectors_used(info, tile_state="split") == default  # a shape knob given: none of the table's
    monkeypatch.setenv(tuned.SWITCH, "off")
    assert vectors_used(info) == default


@pytest.mark.parametrize("field", ["device", "driver", "build"])
def test_a_table_of_another_device_driver_or_build_is_never_trusted(info, field):
    default = vectors_used(info)
    plant(info, {"vectors": default // 2}, **{field: "something else"})
    assert vectors_used(info) == default


def test_a_corrupt_table_is_ignored_with_a_warning_and_rewritten(info):
    default = vectors_used(info)
    path = plant(info, {})
    path.write_text("{ not json")
    tuned.forget()
    with pytest.warns(UserWarning, match="corrupt"):
        assert vectors_used(info) == default
    search.save(info, [search.Outcome("4-byte/builtin/none/0", {"vectors": default // 2}, 1.1)], str(path))
    assert vectors_used(info) == default // 2


@pytest.mark.parametrize(
    "contents",
    [b"\xff\xfe not text", b'{"cases": {"4-byte/builtin/none/0": {"knobs": {"vectors": true}}}}'],
    ids=["not UTF-8", "a knob of the wrong type"],
)
def test_a_table_that_is_not_text_or_has_bad_values_is_corrupt_too(info, contents):
    default = vectors_used(info)
    path = plant(info, {})
    path.write_bytes(contents)
    tuned.forget()
    with pytest.warns(UserWarning, match="corrupt"):
        assert vectors_used(info) == default


def test_the_users_cases_come_before_the_shipped_ones_case_by_case(info, tmp_path, monkeypatch):
    default = vectors_used(info)
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    monkeypatch.setattr(tuned, "_SHIPPED", shipped)
    path = plant(info, {"vectors": default // 2})
    path.rename(shipped / path.name)
    other = search.Outcome("8-byte/builtin/none/0", {"vectors": 8}, 1.2, tried=3)
    search.save(info, [other], str(tuned.cache_dir() / tuned.file_name(info)))
    assert vectors_used(info) == default // 2  # the user's table lacks this case: shipped
    search.save(info, [search.Outcome("4-byte/builtin/none/0", {}, 1.0, tried=0)], str(path))
    assert vectors_used(info) == default // 2  # a case the budget never reached adds nothing
    search.save(info, [search.Outcome("4-byte/builtin/none/0", {}, 1.0, tried=5)], str(path))
    assert vectors_used(info) == default  # a case measured here: the built-in knobs won


def test_knobs_that_no_longer_fit_warn_and_leave_the_built_in_knobs(info):
    default = vectors_used(info)
    plant(info, {"threads": info.max_threads * 2})
    with pytest.warns(UserWarning, match="do not apply"):
        assert vectors_used(info) == default


def test_a_candidate_that_does_not_build_or_fit_is_reported_not_timed(rng):
    timer = search.Timer(BACKEND)
    case = search.space.Case(4, "add", "", 0, [("int32", 1 << 12)])
    points = search._Points(timer, case, rng)
    assert points.check({}) is None
    assert "ValueError" in points.check({"threads": 10**6})


def test_every_tunable_is_documented_with_its_range():
    assert set(tuned.TUNABLES) == {
        "threads",
        "vectors",
        "vector_width",
        "min_blocks",
        "lookback_width",
        "tile_state",
    }
    assert all(":" in text for text in tuned.TUNABLES.values())
    assert tuned.SHAPE_KNOBS <= set(KNOBS)
    assert tuning.size_class(1 << 19) == 0 and tuning.size_class(1 << 25) == 3
