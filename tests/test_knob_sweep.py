"""No knob value kills the process: every knob's range against every variant, value width and
segmented mode, each case a call in a subprocess that reports it before and after.

A case gives the right result, or raises a clear error (ValueError, TypeError, a
JitscanError such as the DeadlockError of ``lookback`` under simulated blocking); a case
during which the process dies (a signal) or hangs is a failure naming the case. Cases run
one after another in one subprocess, and a fresh one takes over after a death, so the sweep
costs one process start, not one a case.

CI runs a slice (``SLICE``: the shapes that once crashed PoCL, and every knob's edges on
the default variant); the whole sweep (about 2,000 cases, 20-40 minutes on 2 cores) is
``JITSCAN_SWEEP=all python -m pytest tests/test_knob_sweep.py -s`` (``JITSCAN_SWEEP_SHARD=k/m``
runs every m-th case from the k-th, for m processes side by side); docs/reliability.md gives
its last counts.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import jitscan

#: each knob's range: the edges, the odd, the huge
RANGES: dict[str, list] = {
    "threads": [0, 1, 2, 3, 4, 64, 256, 1024, 4096, 8192],
    "vectors": [0, 1, 2, 3, 16, 64, 128, 256, 4096],
    "vector_width": [0, 1, 2, 3, 4, 8, 16, 32],
    "lookback_width": [0, 1, 2, 3, 32, 4096],
    "min_blocks": [0, 1, 8, 1000],
    "spin_limit": [0, 1, 2**31, 2**32 - 1, 2**40],
    "spin_timeout": [1e-9, 1e-3, 600.0, 601.0],
    "simulate_blocking": [0, 1, 2, 1000],
    "tile_state": ["packed", "split", "other"],
    "deterministic": [True, False],
}
#: pairs of knobs whose product sizes a tile (the crashes were there)
PAIRS = [("threads", "vectors")]
VARIANTS = ["fallback", "lookback", "rts", "memcpy"]
DTYPES = ["int32", "int64", "float64", "pair"]  # 4 and 8 bytes, and a tuple value of 12
MODES = ["flat", "flags", "offsets", "rows"]
N = 5000

#: the CI slice: the shapes that crashed PoCL, then each knob's range on the default variant
SLICE = [
    {"mode": "flat", "dtype": "int64", "variant": "fallback", "threads": 2},
    {"mode": "flat", "dtype": "float64", "variant": "lookback", "threads": 4},
    {"mode": "flat", "dtype": "int64", "variant": "fallback", "threads": 2, "vectors": 128},
    {"mode": "flat", "dtype": "int32", "variant": "fallback", "threads": 1024},
    {"mode": "flags", "dtype": "int32", "variant": "fallback", "threads": 1024},
    {"mode": "offsets", "dtype": "int32", "variant": "fallback", "threads": 512, "vectors": 64},
    {"mode": "flags", "dtype": "int64", "variant": "fallback", "threads": 1024, "vectors": 32},
    {"mode": "flat", "dtype": "pair", "variant": "fallback", "threads": 4},
    {"mode": "rows", "dtype": "int64", "variant": "fallback", "threads": 256},
] + [
    {"mode": mode, "dtype": dtype, "variant": "fallback", knob: value}
    for knob, values in RANGES.items()
    for value in values
    for mode, dtype in (("flat", "int64"), ("flags", "int32"))
    if mode == "flat" or knob in ("threads", "vectors", "vector_width")
]


def all_cases() -> list[dict]:
    cases = [
        {"mode": mode, "dtype": dtype, "variant": variant, knob: value}
        for mode, dtype, variant in itertools.product(MODES, DTYPES, VARIANTS)
        for knob, values in RANGES.items()
        for value in values
        if not (variant == "memcpy" and mode != "flat")
    ]
    cases += [
        {"mode": mode, "dtype": dtype, "variant": "fallback", a: va, b: vb}
        for mode, dtype in itertools.product(MODES, DTYPES)
        for a, b in PAIRS
        for va, vb in itertools.product(RANGES[a], RANGES[b])
    ]
    return cases


def _sweep(cases: list[dict]) -> tuple[list[dict], dict[str, int]]:
    """Runs ``cases`` in subprocesses; returns the cases that killed or hung one, and counts."""
    b = jitscan.backends.get("opencl")
    if not b.available():
        pytest.skip(f"OpenCL unavailable: {b.unavailable_reason()}")
    env = {**os.environ, "PYTHONPATH": str(Path(jitscan.__file__).parents[1])}
    bad, counts, at = [], {"right": 0, "refused": 0, "wrong": 0, "died": 0}, 0
    while at < len(cases):
        run = subprocess.Popen(
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        out, _ = _communicate(run, json.dumps(cases[at:]))
        done = [json.loads(line[6:]) for line in out.splitlines() if line.startswith("CASE: ")]
        for said in done:
            counts[said["outcome"]] += 1
            if said["outcome"] == "wrong":
                bad.append({**cases[at + said["index"]], "outcome": "wrong", "error": said.get("error")})
        at += len(done)
        if at < len(cases):  # the process died (or hung) in case ``at``
            counts["died"] += 1
            bad.append({**cases[at], "outcome": f"died (exit {run.returncode})"})
            at += 1
    return bad, counts


#: seconds one case may take (a compile on PoCL takes about one) before it counts as a hang
CASE_TIMEOUT = 300


def _communicate(run: subprocess.Popen, given: str) -> tuple[str, int | None]:
    """What the subprocess printed, until it ends or a case outlasts CASE_TIMEOUT (killed)."""
    import selectors

    run.stdin.write(given)
    run.stdin.close()
    lines = []
    with selectors.DefaultSelector() as sel:
        sel.register(run.stdout, selectors.EVENT_READ)
        while True:
            if not sel.select(timeout=CASE_TIMEOUT):
                run.kill()  # a hang
                break
            line = run.stdout.readline()
            if not line:
                break
            lines.append(line)
    run.wait()
    return "".join(lines), run.returncode


def test_no_knob_value_of_the_ci_slice_kills_the_process_or_scans_wrong():
    bad, counts = _sweep(SLICE)
    print(f"knob sweep, CI slice: {len(SLICE)} cases, {counts}")
    assert not bad, f"{counts}: {bad}"
    assert counts["right"] > len(SLICE) // 3 and counts["refused"] > 0, counts


@pytest.mark.skipif(os.environ.get("JITSCAN_SWEEP") != "all", reason="the whole sweep: JITSCAN_SWEEP=all")
@pytest.mark.timeout(6 * 3600)
def test_no_knob_value_of_the_whole_sweep_kills_the_process_or_scans_wrong():
    cases = all_cases()
    shard, shards = (int(k) for k in os.environ.get("JITSCAN_SWEEP_SHARD", "0/1").split("/"))
    cases = cases[shard::shards]  # JITSCAN_SWEEP_SHARD=k/m: every m-th case from the k-th
    bad, counts = _sweep(cases)
    print(f"knob sweep: {len(cases)} cases, {counts}")
    assert not bad, f"{counts}: {bad}"


# -- the subprocess ------------------------------------------------------------------------


def _call(case: dict):
    """The call of ``case`` and the result NumPy gives for it."""
    import numpy as np

    mode, dtype, variant = case["mode"], case["dtype"], case["variant"]
    knobs = {k: v for k, v in case.items() if k not in ("mode", "dtype", "variant")}
    rng = np.random.default_rng(5)
    if dtype == "pair":
        a = rng.integers(-9, 9, N).astype(np.int32)
        c = rng.random(N)
        op = jitscan.operator(lambda x, y: (x[0] + y[0], x[1] + y[1]), identity=(0, 0.0))
        x = (a, c)
    else:
        x = rng.integers(-9, 9, N).astype(dtype)
    heads = rng.random(N) < 0.01
    heads[0] = True
    starts = np.flatnonzero(heads)

    def seg_ref(v):
        return np.concatenate([np.cumsum(p) for p in np.split(v, starts[1:])])

    if variant == "memcpy":
        return (lambda: jitscan.memcpy(x, **knobs)), x
    kw = {"variant": variant, **knobs}
    if mode == "flat":
        if dtype == "pair":
            return (lambda: jitscan.scan(x, op, **kw)), (np.cumsum(a), np.cumsum(c))
        return (lambda: jitscan.scan(x, **kw)), np.cumsum(x, dtype=dtype)
    if mode == "rows":
        if dtype == "pair":
            return (lambda: jitscan.scan(tuple(v.reshape(50, -1) for v in x), op, axis=1, **kw)), (
                np.cumsum(a.reshape(50, -1), axis=1),
                np.cumsum(c.reshape(50, -1), axis=1),
            )
        return (lambda: jitscan.scan(x.reshape(50, -1), axis=1, **kw)), np.cumsum(x.reshape(50, -1), axis=1)
    seg = {"flags": heads} if mode == "flags" else {"offsets": np.r_[starts, N]}
    if dtype == "pair":
        return (lambda: jitscan.segmented_scan(x, op=op, **seg, **kw)), (seg_ref(a), seg_ref(c))
    return (lambda: jitscan.segmented_scan(x, **seg, **kw)), seg_ref(x).astype(dtype)


def _main() -> None:
    import numpy as np

    cases = json.loads(sys.stdin.read())
    for index, case in enumerate(cases):
        said = {"index": index}
        try:
            call, want = _call(case)
            got = call()
            got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
            right = all(
                np.allclose(
                    jitscan.backends.get("opencl").to_host(g) if not isinstance(g, np.ndarray) else g, w
                )
                for g, w in zip(got, want, strict=True)
            )
            said["outcome"] = "right" if right else "wrong"
        except (ValueError, TypeError, jitscan.JitscanError) as why:
            said["outcome"], said["error"] = "refused", f"{type(why).__name__}: {str(why)[:200]}"
        except Exception as why:  # noqa: BLE001 - an unclear error is a wrong outcome
            said["outcome"], said["error"] = "wrong", f"{type(why).__name__}: {str(why)[:200]}"
        print("CASE: " + json.dumps(said), flush=True)


if __name__ == "__main__":
    _main()
