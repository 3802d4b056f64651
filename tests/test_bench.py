"""The bench command and the asv suite do not rot: tables, files and plots, timers and
peers, the per-call figures, and a dry run of the asv benchmarks at the smallest size, on
whatever OpenCL device is here (PoCL in CI).

Speed itself is not tested: these check that the measurements run and are reported.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jitscan import backends, bench
from jitscan.bench import forms, tuples

ROOT = Path(__file__).resolve().parents[1]
SEG = forms.SEG_OFFSETS
AXIS = forms.AXIS_SCAN
HAS_MPL = importlib.util.find_spec("matplotlib") is not None


def _opencl() -> None:
    b = backends.get("opencl")
    if not b.available():
        pytest.skip(f"no OpenCL device: {b.unavailable_reason()}")


@pytest.fixture
def opencl_queue():
    """Put the OpenCL backend's default queue back after a Timer replaced it."""
    _opencl()
    b = backends.get("opencl")
    queue = b.default_queue()
    yield
    b.set_default_queue(queue)


def _result(name: str, n: int, seconds: float, **kw) -> bench.Result:
    times = [seconds * f for f in (0.9, 1.0, 1.1)]
    return bench.Result("opencl", name, "int32", n, seconds, 0.2, times=times, **kw)


def _report() -> bench.Report:
    """A synthetic report: no device needed."""
    stats = {"spins": 64.0, "lookback_steps": 128.0, "fallbacks": 2.0, "insertions": 1.0, "tiles": 64}
    results = []
    for n in (1 << 16, 1 << 18):
        results += [
            _result("memcpy", n, n / 1e9),
            _result("rts", n, n / 4e8),
            _result("lookback", n, n / 5e8, stats=dict(stats)),
            _result("fallback", n, n / 6e8, stats=dict(stats)),
            _result("clEnqueueCopyBuffer", n, n / 2e9, category="peer"),
        ]
        results.append(
            bench.Result("host", "numpy.cumsum", "int32", n, n / 1e9, 0.1, category="peer", timing="host")
        )
    n = 1 << 16
    results.append(_result("memcpy", n, n / 1e9, category="blocking"))
    results.append(_result("fallback", n, n / 6e8, category="blocking", stats=dict(stats)))
    for k in (512, 2):
        results.append(_result("fallback", n, n / 1e8, category="blocking", block_every=k, stats=dict(stats)))
    # per call: jitscan twice as fast as PyOpenCL's scan in every figure, at two sizes
    for n in (1 << 10, 1 << 12):
        for name, us in (
            (bench.CUMSUM, 10.0),
            (bench.PREPARED, 8.0),
            ("pyopencl InclusiveScanKernel", 20.0),
            ("clEnqueueCopyBuffer", 4.0),
        ):
            for figure in bench.CALL_FIGURES:
                results.append(_result(name, n, us * 1e-6, category="call", timing=figure))
        for figure in bench.CALL_FIGURES:
            seg = _result(SEG, n, 30e-6, category="call", timing=figure, call="segmented-offsets")
            bad = _result(AXIS, n, float("nan"), category="call", timing=figure, call="axis-scan")
            bad.error = "TypeError: not here"
            results += [seg, bad]
    return bench.Report(devices={"opencl": "Test Device"}, results=results, skipped=["lookback: a reason"])


def test_paper_table_has_the_papers_rows():
    text = bench.paper_table(_report())
    assert "n = 2^18" in text  # the largest size at or below 2^25
    for row in (
        "H-mean memcpy",
        "H-mean fallback",
        "H-mean RTS",
        "fallback / memcpy (%)",
        "fallback / RTS (%)",
        "Avg spins per workgroup",
        "Avg look-back length per workgroup",
        "Avg fallbacks initiated",
        "Avg successful insertions",
    ):
        assert row in text
    # harmonic mean over the runs: n over the mean time; fallback is 60% of memcpy, 150% of RTS
    assert "| fallback / memcpy (%) | 60.0% |" in text
    assert "| fallback / RTS (%) | 150.0% |" in text
    assert "| Avg spins per workgroup | 1.000 |" in text
    assert "| Avg look-back length per workgroup | 2.000 |" in text


def test_throughput_and_blocking_tables():
    report = _report()
    text = bench.throughput_table(report)
    assert "| algorithm | 2^16 | 2^18 | H-mean |" in text
    assert "| fallback | 0.6 (60.0%) | 0.6 (60.0%) | 0.6 |" in text
    assert "numpy.cumsum (host)" in text
    blocking = bench.blocking_table(report)
    lines = [line for line in blocking.splitlines() if line.startswith("| ")]
    assert [line.split(" | ")[0] for line in lines[1:]] == ["| none", "| 1/512", "| 1/2"]
    assert "| 1/2 | 0.1 | 16.7% | 10.0% |" in blocking
    md = bench.markdown(report)
    assert "## Skipped" in md and "lookback: a reason" in md
    assert "## Per call (what a user sees)" in md


def test_latency_table_has_every_figure_and_the_ratio_to_the_baseline():
    text = bench.latency_table(_report())
    assert "| figure | call | contender | 2^10 | 2^12 |" in text
    assert "ratio to pyopencl InclusiveScanKernel** (opencl): flat" in text
    assert f"ratio to {bench.CUMSUM}** (opencl): segmented-offsets" in text
    for figure in ("host", "isolated", "pipelined", "device"):
        assert f"| {figure} | flat | jitscan.cumsum(x, out=y) | 10.0 (0.50) | 10.0 (0.50) |" in text
        assert f"| {figure} | flat | jitscan.plan(...)(x, out=y) | 8.00 (0.40) | 8.00 (0.40) |" in text
        assert f"| {figure} | flat | pyopencl InclusiveScanKernel | 20.0 | 20.0 |" in text  # the baseline
        # another form: its ratio is to its reference (on OpenCL jitscan's flat cumsum)
        assert f"| {figure} | segmented-offsets | {SEG} | 30.0 (3.00) | 30.0 (3.00) |" in text
        assert f"| {figure} | axis-scan | {AXIS} | error | error |" in text  # an error cell
    # jitscan's calls come first within each figure, then the peers, then the other forms
    rows = [line.split(" | ")[1:3] for line in text.splitlines() if line.startswith("| host |")]
    assert rows == [
        ["flat", bench.CUMSUM],
        ["flat", bench.PREPARED],
        ["flat", "pyopencl InclusiveScanKernel"],
        ["flat", "clEnqueueCopyBuffer"],
        ["segmented-offsets", SEG],
        ["axis-scan", AXIS],
    ]
    # a report of per-call figures only has no device-time tables
    only = bench.Report(
        devices={"opencl": "D"}, results=[r for r in _report().results if r.category == "call"]
    )
    md = bench.markdown(only)
    assert "## Per call" in md and "Results table" not in md and "Throughput" not in md


def test_json_and_csv_hold_every_result(tmp_path):
    report = _report()
    bench.write_json(report, tmp_path / "b.json")
    bench.write_csv(report, tmp_path / "b.csv")
    data = json.loads((tmp_path / "b.json").read_text())
    assert len(data["results"]) == len(report.results)
    assert data["devices"] == {"opencl": "Test Device"} and "numpy" in data["versions"]
    rows = list(csv.DictReader((tmp_path / "b.csv").open()))
    assert len(rows) == len(report.results)
    assert {r["category"] for r in rows} == {"variant", "peer", "blocking", "call"}
    assert {r["timing"] for r in rows if r["category"] == "call"} == set(bench.CALL_FIGURES)
    assert float(rows[0]["elements_per_s"]) == pytest.approx(1e9)
    assert {r["call"] for r in rows if r["category"] == "call"} == {"", "segmented-offsets", "axis-scan"}
    errors = [r for r in data["results"] if r["error"]]
    assert errors and all(r["call"] == "axis-scan" and r["name"] == AXIS for r in errors)
    assert {r["error"] for r in rows if r["name"] == AXIS} == {"TypeError: not here"}


@pytest.mark.skipif(not HAS_MPL, reason="matplotlib not installed")
def test_plots_are_pngs(tmp_path):
    report = _report()
    bench.plot_throughput(report, tmp_path / "t.png")
    bench.plot_blocking(report, tmp_path / "b.png")
    bench.plot_latency(report, tmp_path / "l.png")
    for name in ("t.png", "b.png", "l.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_presets_and_table_size():
    quick = bench.preset(is_gpu=False, quick=True)
    assert quick.sizes == [1 << 16, 1 << 20, 1 << 24] and quick.reps <= 5
    full_cpu = bench.preset(is_gpu=False)
    assert {1 << 16, 1 << 20, 1 << 24} <= set(full_cpu.sizes) and full_cpu.dtypes == ["int32", "float32"]
    gpu = bench.preset(is_gpu=True)
    assert gpu.sizes[0] == 1 << 10 and gpu.sizes[-1] == 1 << 28 and bench.PAPER_SIZE in gpu.sizes
    assert gpu.blocking_rates == [512, 256, 128, 64, 32, 16, 8, 4, 2]
    assert bench.table_size([1 << 20, 1 << 25, 1 << 28]) == 1 << 25
    assert bench.table_size([1 << 26, 1 << 28]) == 1 << 26
    latency = bench.preset(is_gpu=True, latency=True)
    assert latency.sizes == [1 << e for e in range(10, 29, 2)] and not latency.blocking_rates
    assert latency.dtypes == ["int32", "float32", "int64", "float64"]
    cpu = bench.preset(is_gpu=False, latency=True)
    assert cpu.sizes[0] == 1 << 10 and cpu.sizes[-1] < 1 << 20 and cpu.dtypes == ["int32"]


def test_bench_variants_are_the_librarys_and_segmented():
    import jitscan

    assert set(bench.VARIANTS) == set(jitscan.VARIANTS) | {"segmented"}
    assert bench.VARIANTS[0] == "memcpy"  # the baseline of the throughput tables
    assert bench.ALGORITHM["segmented"] == "fallback"


def test_timers_are_picked_per_backend():
    assert bench.TIMERS == {"cupy": bench.CudaTimer, "opencl": bench.OpenCLTimer}
    with pytest.raises(ValueError, match="unknown backend"):
        bench.Timer("nope")


def test_cub_call_checks_its_arguments():
    with pytest.raises(ValueError, match="unknown CUB call"):
        bench.cub_call("scan", None, None, num_items=1)
    with pytest.raises(ValueError, match="unknown op"):
        bench.cub_call("inclusive", None, None, num_items=1, op="sub")
    with pytest.raises(ValueError, match="offsets"):
        bench.cub_call("segmented_reduce", None, None, num_items=1)
    if importlib.util.find_spec("cuda") is None or importlib.util.find_spec("cuda.compute") is None:
        with pytest.raises(ImportError, match="cuda-cccl"):
            bench.cub_call("inclusive", None, None, num_items=1)


def test_size_arguments():
    from jitscan.__main__ import _rates, _sizes

    assert _sizes("16:20:2") == [1 << 16, 1 << 18, 1 << 20]
    assert _sizes("10,12") == [1 << 10, 1 << 12]
    assert _rates("512,2") == [512, 2] and _rates("none") == []


def test_peers_and_variants_measure_on_opencl(opencl_queue):
    timer = bench.Timer("opencl")
    assert isinstance(timer, bench.OpenCLTimer) and timer.device is timer.queue
    n = 1 << 12
    r = bench.measure_variant(timer, "fallback", "int32", n, reps=2, stat_runs=1)
    assert r.seconds > 0 and r.stats["tiles"] >= 1 and len(r.times) == 2
    # every variant computes what it claims, through the bare launch the bench times
    x = timer.inputs(n, "int32")[0].get()
    flags = bench.head_flags(n, np.random.default_rng(n))
    inclusive = np.cumsum(x, dtype=np.int32)
    starts = np.flatnonzero(flags)
    segmented = inclusive - np.repeat(inclusive[starts] - x[starts], np.diff(np.append(starts, n)))
    for variant in bench.VARIANTS:
        case = bench.prepare(timer, variant, "int32", n)
        case.run_sync(0)
        want = {"memcpy": x, "segmented": segmented}.get(variant, inclusive)
        np.testing.assert_array_equal(case.out.get(), want, err_msg=variant)
        assert (case.counted is not None) == (variant in ("lookback", "fallback", "segmented"))
    with pytest.raises(bench.Unsupported, match="do not fit"):
        bench.prepare(timer, "fallback", "int32", 2 * timer.max_elements("int32"))
    peers, skipped = bench.peer_functions(timer, "int32", n)
    names = {p.name for p in peers}
    assert "clEnqueueCopyBuffer" in names, skipped
    if importlib.util.find_spec("mako") is not None:  # PyOpenCL's scans need Mako
        assert {"pyopencl InclusiveScanKernel", "pyopencl segmented GenericScanKernel"} <= names, skipped
    # the peers compute what they claim (each writes input 0's result into its output)
    expected = {
        "clEnqueueCopyBuffer": x,
        "pyopencl InclusiveScanKernel": inclusive,
        "pyopencl segmented GenericScanKernel": segmented,
    }
    for peer in peers:
        peer.run(0)
        timer.sync()
        np.testing.assert_array_equal(peer.out.get(), expected[peer.name], err_msg=peer.name)
    numpy_result = bench.measure_numpy(timer, "int32", n, reps=3)
    assert numpy_result.timing == "host" and numpy_result.seconds > 0


def test_calls_measure_every_figure_on_opencl(opencl_queue):
    """The per-call contenders compute what they claim, and each gets the four figures."""
    timer = bench.Timer("opencl")
    n = 1 << 12
    found, skipped = bench.contenders(timer, "int32", n)
    names = [c.name for c in found]
    assert names[:3] == [bench.CUMSUM, bench.CUMSUM_NEW, bench.PREPARED], skipped
    assert "clEnqueueCopyBuffer" in names, skipped
    assert "pyopencl segmented GenericScanKernel" not in names  # not a cumsum
    x = timer.inputs(n, "int32")[0].get()
    for c in found:
        returned = c.call(0)
        timer.sync()
        want = x if c.name == "clEnqueueCopyBuffer" else np.cumsum(x, dtype=np.int32)
        got = c.out if c.out is not None else returned  # jitscan.cumsum(x) allocates its result
        np.testing.assert_array_equal(got.get(), want, err_msg=c.name)
    host, isolated = timer.call(found[0].call, 1)
    assert host > 0 and isolated > 0
    assert timer.pipelined(found[1].call, 5) > 0
    results = bench.measure_calls(timer, "int32", n, reps=3, calls=4, peers=False)
    assert {(r.name, r.timing) for r in results} == {
        (name, figure) for name in bench.JITSCAN_CALLS for figure in bench.CALL_FIGURES
    }
    assert all(r.category == "call" and r.seconds > 0 and len(r.times) == 3 for r in results)
    pair = {c.name: c.call for c in found if c.name in (bench.CUMSUM, bench.PREPARED)}
    assert bench.interleaved(timer, pair, rounds=2, reps=2).keys() == {bench.CUMSUM, bench.PREPARED}


def test_every_call_form_measures_on_opencl(opencl_queue):
    """A row per call form: each jitscan call of every form computes what it claims, and the
    per-call figures of every form (with the peers) come back, four per call, named by form."""
    timer = bench.Timer("opencl")
    n = 1 << 10
    found, skipped = bench.contenders(timer, "int32", n, forms=bench.FORMS)
    by_form = {}
    for c in found:
        by_form.setdefault(c.form, []).append(c)
    assert list(by_form) == list(bench.FORMS), skipped  # every form, in table order
    assert not [c.error for c in found if c.error], skipped
    data = forms.shared(timer, "int32", n)
    x = timer.inputs(n, "int32")[0].get()
    off = data.host_offsets
    assert off[0] == 0 and off[-1] == n and np.all(np.diff(off) > 0)
    np.testing.assert_array_equal(np.flatnonzero(data.flags.get()), off[:-1])
    inclusive = np.cumsum(x, dtype=np.int32)
    before = np.concatenate([[0], inclusive])[off[:-1]]
    segmented = inclusive - np.repeat(before, np.diff(off)).astype(np.int32)
    rows = x.reshape(data.rows, -1)
    want = {
        forms.PYTHON_OP: inclusive,
        forms.EXCLUSIVE: inclusive - x,
        forms.INITIAL: inclusive + 1,
        forms.TUPLE: inclusive,  # a = 1 for integers: h = h + x
        forms.SEG_OFFSETS: segmented,
        forms.SEG_FLAGS: segmented,
        forms.CL_SEGMENTED: segmented,
        forms.AXIS_SCAN: np.cumsum(rows, axis=1, dtype=np.int32),
    }
    reductions = {
        "segmented-reduce": np.add.reduceat(x, off[:-1]).astype(np.int32),
        "axis-reduce": rows.sum(axis=1, dtype=np.int32),
    }
    for c in found:
        if c.form == "flat":
            continue
        returned = c.call(0)
        timer.sync()
        if c.name in want:
            np.testing.assert_array_equal(c.out.get().reshape(-1), want[c.name].reshape(-1), err_msg=c.name)
        else:
            np.testing.assert_array_equal(returned.get(), reductions[c.form], err_msg=c.name)
    results = bench.measure_calls(timer, "int32", n, reps=3, calls=3, peers=False, forms=bench.FORMS)
    got = {(r.call, r.name, r.timing) for r in results}
    assert got == {
        (c.form, c.name, f) for c in found if c.name.startswith("jitscan") for f in bench.CALL_FIGURES
    }
    assert all(r.category == "call" and r.seconds > 0 and not r.error for r in results)
    with pytest.raises(ValueError, match="unknown call form"):
        bench.form_names(["flat", "ragged"])
    assert bench.form_names("all") == list(bench.FORMS) == bench.form_names(["axis-scan", "all"])
    assert bench.form_names(["axis-scan", "flat"]) == ["flat", "axis-scan"]


def test_a_failing_form_is_an_error_cell_and_the_rest_goes_on(opencl_queue, monkeypatch):
    """A jitscan call that raises (built or timed) gives error cells with the reason; the others
    are measured and the run reports it under Skipped."""
    calls = {"n": 0}

    def broken(*args, **kwargs):
        raise TypeError("segmented_reduce is not here")

    def flaky(*args, **kwargs):  # works when built, fails once timed
        calls["n"] += 1
        if calls["n"] > 1:
            raise RuntimeError("a queue went away")

    monkeypatch.setattr(forms, "segmented_reduce", broken)
    monkeypatch.setattr(forms, "reduce", flaky)
    timer = bench.Timer("opencl")
    n = 1 << 10
    asked = ["flat", "segmented-reduce", "axis-reduce", "segmented-flags"]
    results = bench.measure_calls(timer, "int32", n, reps=3, calls=3, peers=False, forms=asked)
    errors = {(r.call, r.timing): r.error for r in results if r.error}
    assert {k[0] for k in errors} == {"segmented-reduce", "axis-reduce"}
    assert len(errors) == 2 * len(bench.CALL_FIGURES)
    assert "TypeError: segmented_reduce is not here" in errors[("segmented-reduce", "host")]
    assert "RuntimeError: a queue went away" in errors[("axis-reduce", "isolated")]
    fine = [r for r in results if not r.error]
    assert {r.call for r in fine} == {"flat", "segmented-flags"} and all(r.seconds > 0 for r in fine)
    report = bench.run("opencl", sizes=[n], reps=3, latency=True, peers=False, forms=asked, pipeline=3)
    text = bench.latency_table(report)
    assert "| host | segmented-reduce | jitscan.segmented_reduce(x, offsets=o) | error |" in text, text
    assert any("segmented_reduce is not here" in line for line in report.skipped), report.skipped
    assert report.config["forms"] == ["flat", "segmented-flags", "segmented-reduce", "axis-reduce"]


def test_asv_benchmarks_dry_run(opencl_queue):
    """Each asv benchmark class: its setup_cache sweep at the smallest size, then setup
    and every tracked metric, as asv would call them."""
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks import scan
    finally:
        sys.path.remove(str(ROOT))
    n = 1 << 10
    cache = scan.sweep(["opencl"], ["memcpy", "fallback", "segmented"], ["int32"], [n], reps=2)
    bm = scan.Scan()
    bm.setup(cache, "opencl", "fallback", "int32", n)
    assert bm.track_device_seconds(cache, "opencl", "fallback", "int32", n) > 0
    assert bm.track_elements_per_second(cache, "opencl", "fallback", "int32", n) > 0
    assert bm.track_percent_of_memcpy(cache, "opencl", "fallback", "int32", n) > 0
    bm.setup(cache, "opencl", "segmented", "int32", n)
    assert bm.track_percent_of_memcpy(cache, "opencl", "segmented", "int32", n) > 0
    with pytest.raises(NotImplementedError):
        bm.setup(cache, "cupy", "fallback", "int32", n)  # not measured: skipped

    det = {
        "plain": scan.sweep(["opencl"], ["fallback"], ["float32"], [n], reps=2),
        "deterministic": scan.sweep(["opencl"], ["fallback"], ["float32"], [n], reps=2, deterministic=True),
    }
    dm = scan.Deterministic()
    dm.setup(det, "opencl", "fallback", "float32", n)
    assert dm.track_device_seconds(det, "opencl", "fallback", "float32", n) > 0
    assert dm.track_percent_of_plain(det, "opencl", "fallback", "float32", n) > 0

    sel = scan.Selection()
    sel.setup("opencl", n)  # each call once, as asv's warm-up would
    sel.time_extract("opencl", n)

    cache = scan.blocking_sweep(["opencl"], [0, 2], 1 << 15, reps=2)  # several tiles on any device
    bl = scan.Blocking()
    bl.setup(cache, "opencl", 2)
    assert bl.track_elements_per_second(cache, "opencl", 2) > 0
    assert bl.track_percent_of_unblocked(cache, "opencl", 2) > 0
    assert bl.track_fallbacks_per_workgroup(cache, "opencl", 2) > 0  # half the tiles never post
    assert bl.track_spins_per_workgroup(cache, "opencl", 2) >= 0

    call = scan.Call()
    call.setup("opencl", "fallback", n)
    call.time_cumsum_device("opencl", "fallback", n)
    call.time_cumsum_numpy("opencl", "fallback", n)

    seg = scan.Segmented()
    seg.setup("opencl", 10, n)  # runs every timed call once

    per_call = scan.PerCall()
    per_call.setup("opencl", n)
    for method in (per_call.time_cumsum_out, per_call.time_cumsum, per_call.time_prepared_out):
        method("opencl", n)
    per_call.teardown("opencl", n)

    tuples = scan.Tuples()
    tuples.setup("opencl", n)  # runs every timed call once

    assert scan.FORMS == list(bench.FORMS)
    each = scan.PerCallForm()
    for form in scan.FORMS:
        each.setup("opencl", form, n)
        each.time_call("opencl", form, n)
        assert each.track_isolated_seconds("opencl", form, n) > 0
        assert each.track_pipelined_seconds("opencl", form, n) > 0
        each.teardown("opencl", form, n)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_numpy_table_gives_each_call_and_jitscans_ratios_to_numpy():
    results = [
        bench.Result("opencl", name, "int32", n, n / rate, 0.1, category="numpy", timing="host")
        for n in (1 << 16, 1 << 20)
        for name, rate in (
            ("jitscan.cumsum(a)", 2e9),
            ("numpy.cumsum(a)", 1e9),
            ("np.copyto(b, a)", 4e9),
            ("jitscan.cumsum(a, dtype=a.dtype)", 3e9),
            ("numpy.cumsum(a, dtype=a.dtype)", 2e9),
        )
    ]
    report = bench.Report(devices={"opencl": "A CPU"}, results=results)
    text = bench.numpy_table(report)
    assert "| call | 2^16 | 2^20 |" in text
    assert "| jitscan.cumsum(a) | 2 | 2 |" in text
    assert "| jitscan.cumsum(a) / numpy.cumsum(a) | 2.00 | 2.00 |" in text
    assert "| jitscan.cumsum(a, dtype=a.dtype) / np.copyto(b, a) | 0.75 | 0.75 |" in text
    assert "segmented" not in text  # a pair is shown where both were measured
    assert "## NumPy to NumPy (a CPU device)" in bench.markdown(report)


def test_numpy_to_numpy_calls_compute_what_they_claim_on_a_cpu(opencl_queue):
    timer = bench.Timer("opencl")
    if timer.info.is_gpu:
        pytest.skip("NumPy to NumPy is measured on devices that work in host memory")
    n = 1 << 12
    x = timer.host_inputs(n, "int32")[0]
    found = bench.host.contenders(timer, "int32", n, np.random.default_rng(1))
    np.testing.assert_array_equal(found["jitscan.cumsum(a)"](0), np.cumsum(x))
    np.testing.assert_array_equal(found["jitscan.cumsum(a, dtype=a.dtype)"](0), np.cumsum(x, dtype=np.int32))
    np.testing.assert_array_equal(
        found["jitscan.segmented_cumsum(a, offsets)"](0), found["NumPy segmented sum (loop-free)"](0)
    )
    results = bench.measure_host_calls(timer, "int32", n, reps=3)
    assert [r.name for r in results] == list(found)
    assert all(r.category == "numpy" and r.timing == "host" and r.seconds > 0 for r in results)


def test_bench_command_writes_table_plots_and_data(tmp_path):
    """``python -m jitscan bench --quick``, cut to one size, one blocking rate and the
    variants of the paper's table (fewer PoCL compiles)."""
    _opencl()
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "jitscan",
        "bench",
        "--quick",
        "--backend",
        "opencl",
        "--variants",
        "memcpy,rts,fallback,segmented",
        "--sizes",
        "14",
        "--blocking-rates",
        "2",
        "--blocking-size",
        "14",
        "--reps",
        "2",
        "--no-progress",
        "--out",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout
    for needle in (
        "H-mean memcpy",
        "fallback / RTS (%)",
        "Avg successful insertions",
        "| 1/2 |",
        "numpy.cumsum",
    ):
        assert needle in text, text
    assert "## Per call (what a user sees)" in text, text
    if not backends.get("opencl").device_info(backends.get("opencl").default_queue()).is_gpu:
        assert "## NumPy to NumPy (a CPU device)" in text, text
    data = json.loads((out / "bench.json").read_text())
    names = {r["name"] for r in data["results"] if r["category"] != "call"}
    assert {"memcpy", "rts", "fallback", "segmented", "clEnqueueCopyBuffer", "numpy.cumsum"} <= names
    calls = {(r["name"], r["timing"]) for r in data["results"] if r["category"] == "call"}
    assert {(bench.CUMSUM, f) for f in bench.CALL_FIGURES} <= calls
    assert (out / "bench.csv").exists() and (out / "table.md").exists()
    if HAS_MPL:
        for png in ("throughput.png", "blocking.png", "latency.png"):
            assert (out / png).stat().st_size > 0, png


def test_bench_latency_writes_the_per_call_table(tmp_path):
    """``python -m jitscan bench --latency`` at two small sizes: the per-call table alone."""
    _opencl()
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "jitscan", "bench", "--latency", "--backend", "opencl"]
    cmd += ["--sizes", "10,12", "--reps", "3", "--pipeline", "5", "--no-progress", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout
    assert "## Per call (what a user sees)" in text, text
    assert "| figure | call | contender | 2^10 | 2^12 |" in text, text
    assert "Results table" not in text and "Simulated blocking" not in text
    assert "5 calls back to back" in text
    data = json.loads((out / "bench.json").read_text())
    assert data["config"]["latency"] and data["config"]["pipeline"] == 5
    assert data["config"]["forms"] == list(bench.FORMS)  # --latency: every form
    assert {r["category"] for r in data["results"]} == {"call"}
    figures = {(r["name"], r["timing"], r["n"]) for r in data["results"]}
    for call in bench.JITSCAN_CALLS:
        for figure in bench.CALL_FIGURES:
            assert {(call, figure, 1 << 10), (call, figure, 1 << 12)} <= figures
    # a row per form and figure in the table, every form in the JSON
    rows = {tuple(line.split(" | ")[:2]) for line in text.splitlines() if line.startswith("| ")}
    for form in bench.FORMS:
        assert {(f"| {figure}", form) for figure in bench.CALL_FIGURES} <= rows, form
        mine = [r for r in data["results"] if r["call"] == form and r["name"].startswith("jitscan")]
        assert {(r["timing"], r["n"]) for r in mine} >= {
            (f, n) for f in bench.CALL_FIGURES for n in (1 << 10, 1 << 12)
        }, form
    rows = list(csv.DictReader((out / "bench.csv").open()))
    assert len(rows) == len(data["results"])
    if HAS_MPL:
        assert (out / "latency.png").stat().st_size > 0 and not (out / "throughput.png").exists()


def test_bench_forms_selects_call_forms(tmp_path):
    """``--forms``: only the forms asked for; an unknown one is refused before anything runs."""
    _opencl()
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "jitscan", "bench", "--latency", "--backend", "opencl", "--no-peers"]
    cmd += ["--forms", "segmented-flags,flat", "--sizes", "10", "--reps", "3", "--pipeline", "3"]
    cmd += ["--no-progress", "--no-plots", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((out / "bench.json").read_text())
    assert data["config"]["forms"] == ["flat", "segmented-flags"]
    assert {r["call"] for r in data["results"]} == {"flat", "segmented-flags"}
    assert f"| host | segmented-flags | {forms.SEG_FLAGS} |" in proc.stdout
    bad = subprocess.run(
        cmd[:8] + ["--forms", "flat,ragged", "--out", str(out)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
        cwd=tmp_path,
    )
    assert bad.returncode == 2 and "unknown call form(s) ragged; valid forms: all, flat" in bad.stderr


def test_bench_tuples_adds_the_tuple_table(tmp_path):
    """``--tuples``: each tuple call's four figures per size, and the Python sum's ratio to the built-in."""
    _opencl()
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "jitscan",
        "bench",
        "--backend",
        "opencl",
        "--variants",
        "memcpy",
        "--tuples",
    ]
    cmd += [
        "--sizes",
        "10",
        "--reps",
        "3",
        "--pipeline",
        "5",
        "--no-calls",
        "--no-peers",
        "--blocking-rates",
        "none",
    ]
    cmd += ["--no-progress", "--no-plots", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "## Tuple values and Python operators" in proc.stdout, proc.stdout
    data = json.loads((out / "bench.json").read_text())
    got = {(r["name"], r["timing"]) for r in data["results"] if r["category"] == "tuples"}
    for name in (tuples.RECURRENCE, tuples.ARGMAX, tuples.WELFORD, tuples.PYTHON_ADD, tuples.BUILTIN_ADD):
        assert {(name, f) for f in bench.CALL_FIGURES} <= got, name
    assert f"| speed, pipelined | {tuples.PYTHON_ADD} / {tuples.BUILTIN_ADD} |" in proc.stdout


def test_asv_run_quick(tmp_path):
    """``asv run --quick`` of the whole suite on a smoke-test grid, in this environment."""
    _opencl()
    if importlib.util.find_spec("asv") is None:
        pytest.skip("asv not installed (pip install 'jitscan[bench]')")
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("asv needs the git checkout")
    env = _env()
    # asv drops PYTHONPATH for the benchmarks it starts but passes this on; asv itself may
    # live on PYTHONPATH too (wheels unpacked into a folder on an offline GPU machine)
    env["ASV_PYTHONPATH"] = env.get("PYTHONPATH", "")
    env["JITSCAN_ASV_QUICK"] = "1"
    env["JITSCAN_ASV_BACKENDS"] = "opencl"
    # asv keeps its machine description in ~/.asv-machine.json: use a throwaway home, but
    # keep PoCL's kernel cache where it was
    cache = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    env.setdefault("POCL_CACHE_DIR", os.path.join(cache, "pocl"))
    env["HOME"] = str(tmp_path)
    # the project's configuration, with everything asv writes moved out of the checkout
    lines = (ROOT / "asv.conf.json").read_text().splitlines()
    conf = json.loads("\n".join(line for line in lines if not line.lstrip().startswith("//")))
    conf.update(
        repo=str(ROOT),
        benchmark_dir=str(ROOT / "benchmarks"),
        results_dir=str(tmp_path / "results"),
        html_dir=str(tmp_path / "html"),
        env_dir=str(tmp_path / "env"),
    )
    config = tmp_path / "asv.conf.json"
    config.write_text(json.dumps(conf))
    asv = [sys.executable, "-m", "asv"]
    subprocess.run(
        asv + ["machine", "--yes", "--config", str(config)],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
    )
    proc = subprocess.run(
        asv
        + ["run", "--config", str(config), "--quick", "--dry-run", "--show-stderr"]
        + ["-E", f"existing:{sys.executable}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "failed" not in out, out[-4000:]
    for name in (
        "Scan.track_elements_per_second",
        "Scan.track_percent_of_memcpy",
        "Blocking.track_",
        "PerCall.time_cumsum_out",
        "PerCall.time_prepared_out",
        "PerCallForm.time_call",
        "PerCallForm.track_isolated_seconds",
    ):
        assert name in out, out[-4000:]


def test_the_asv_suite_lists_the_benchs_call_forms():
    # the suite spells them out so that importing it stays cheap: the two lists must agree
    from benchmarks import scan

    assert scan.FORMS == list(bench.FORMS)
