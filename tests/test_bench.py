"""The bench command and the asv suite do not rot: tables, files and plots, and a dry run
of the asv benchmarks at the smallest size, on whatever OpenCL device is here (PoCL in CI).

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

ROOT = Path(__file__).resolve().parents[1]
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
    return bench.Report(devices={"opencl": "Test Device"}, results=results, skipped=["segmented: not yet"])


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
    assert "## Skipped" in md and "segmented: not yet" in md


def test_json_and_csv_hold_every_result(tmp_path):
    report = _report()
    bench.write_json(report, tmp_path / "b.json")
    bench.write_csv(report, tmp_path / "b.csv")
    data = json.loads((tmp_path / "b.json").read_text())
    assert len(data["results"]) == len(report.results)
    assert data["devices"] == {"opencl": "Test Device"} and "numpy" in data["versions"]
    rows = list(csv.DictReader((tmp_path / "b.csv").open()))
    assert len(rows) == len(report.results)
    assert {r["category"] for r in rows} == {"variant", "peer", "blocking"}
    assert float(rows[0]["elements_per_s"]) == pytest.approx(1e9)


@pytest.mark.skipif(not HAS_MPL, reason="matplotlib not installed")
def test_plots_are_pngs(tmp_path):
    report = _report()
    bench.plot_throughput(report, tmp_path / "t.png")
    bench.plot_blocking(report, tmp_path / "b.png")
    for name in ("t.png", "b.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_presets_and_table_size():
    quick = bench.preset(is_gpu=False, quick=True)
    assert quick.sizes == [1 << 16, 1 << 18, 1 << 20] and quick.reps <= 5
    gpu = bench.preset(is_gpu=True)
    assert gpu.sizes[0] == 1 << 10 and gpu.sizes[-1] == 1 << 28 and bench.PAPER_SIZE in gpu.sizes
    assert gpu.blocking_rates == [512, 256, 128, 64, 32, 16, 8, 4, 2]
    assert bench.table_size([1 << 20, 1 << 25, 1 << 28]) == 1 << 25
    assert bench.table_size([1 << 26, 1 << 28]) == 1 << 26


def test_size_arguments():
    from jitscan.__main__ import _rates, _sizes

    assert _sizes("16:20:2") == [1 << 16, 1 << 18, 1 << 20]
    assert _sizes("10,12") == [1 << 10, 1 << 12]
    assert _rates("512,2") == [512, 2] and _rates("none") == []


def test_peers_and_variants_measure_on_opencl(opencl_queue):
    timer = bench.Timer("opencl")
    n = 1 << 12
    r = bench.measure_variant(timer, "fallback", "int32", n, reps=2, stat_runs=1)
    assert r.seconds > 0 and r.stats["tiles"] >= 1 and len(r.times) == 2
    if not bench.segmented_available():
        with pytest.raises(bench.Unsupported, match="segmented_scan"):
            bench.prepare(timer, "segmented", "int32", n)
    peers, skipped = bench.peer_functions(timer, "int32", n)
    names = {p.name for p in peers}
    assert "clEnqueueCopyBuffer" in names, skipped
    if importlib.util.find_spec("mako") is not None:  # PyOpenCL's scans need Mako
        assert {"pyopencl InclusiveScanKernel", "pyopencl segmented GenericScanKernel"} <= names, skipped
    # the peers compute what they claim (each writes input 0's result into its output)
    x = timer.inputs(n, "int32")[0].get()
    flags = bench.head_flags(n, np.random.default_rng(n))
    inclusive = np.cumsum(x, dtype=np.int32)
    starts = np.flatnonzero(flags)
    segmented = inclusive - np.repeat(inclusive[starts] - x[starts], np.diff(np.append(starts, n)))
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
    if not bench.segmented_available():
        with pytest.raises(NotImplementedError, match="segmented"):
            bm.setup(cache, "opencl", "segmented", "int32", n)
    with pytest.raises(NotImplementedError):
        bm.setup(cache, "cupy", "fallback", "int32", n)  # not measured: skipped

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


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


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
    data = json.loads((out / "bench.json").read_text())
    names = {r["name"] for r in data["results"]}
    assert {"memcpy", "rts", "fallback", "clEnqueueCopyBuffer", "numpy.cumsum"} <= names
    assert any("segmented" in s for s in data["skipped"]) or "segmented" in names
    assert (out / "bench.csv").exists() and (out / "table.md").exists()
    if HAS_MPL:
        assert (out / "throughput.png").stat().st_size > 0 and (out / "blocking.png").stat().st_size > 0


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
    for name in ("Scan.track_elements_per_second", "Scan.track_percent_of_memcpy", "Blocking.track_"):
        assert name in out, out[-4000:]
