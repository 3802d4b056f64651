"""Do fresh processes whose threads all start scanning at once survive, and get right results?

Usage: python experiments/threads_cold_start.py [--backend opencl] [--mode threads|serial|warm]
       [--procs 8] [--waves 10] [--seconds 2]

Each wave starts ``--procs`` new processes at the same moment; each runs the eight cases of
``tests/test_reliability.py -k threads`` (its own dtype, op and variant per case) for
``--seconds`` in eight threads (``threads``), in one thread (``serial``), or in eight threads
after one call of each case in the main thread (``warm``: every program built before the
threads start). A process that dies prints its Python stacks (faulthandler); with
``LD_PRELOAD`` of a handler that prints native frames, where it died.
Prints one row per wave and the totals: clean exits, segfaults, timeouts, wrong results.
"""

from __future__ import annotations

import argparse
import faulthandler
import subprocess
import sys
import threading
import time

import numpy as np

CASES = [
    ("int32", "add", "fallback"),
    ("int64", "max", "lookback"),
    ("float32", "add", "rts"),
    ("float64", "min", "fallback"),
    ("uint32", "add", "lookback"),
    ("uint64", "max", "rts"),
    ("int32", "xor", "rts"),
    ("int64", "add", "fallback"),
]
UFUNC = {"add": np.add, "max": np.maximum, "min": np.minimum, "xor": np.bitwise_xor}


def worker(backend: str, mode: str, seconds: float) -> None:
    """One process: the cases until ``seconds`` have passed; prints 'rounds R wrong W errors E'."""
    import jitscan

    faulthandler.enable()
    rng = np.random.default_rng(7)
    xs = [rng.integers(0, 100, 40_000 + 1_000 * k).astype(dt) for k, (dt, _, _) in enumerate(CASES)]
    wrong: list[tuple] = []
    errors: list[str] = []

    def run(k: int, calls: int) -> None:
        dt, op, variant = CASES[k]
        want = UFUNC[op].accumulate(xs[k])
        for _ in range(calls):
            try:
                got = jitscan.scan(xs[k], op=op, variant=variant, backend=backend)
            except Exception as exc:  # noqa: BLE001 - counted and shown
                errors.append(f"{CASES[k]}: {exc!r}"[:200])
                continue
            if not np.array_equal(got, want):
                bad = np.flatnonzero(got != want)
                wrong.append((CASES[k], bad.size, int(bad[0])))

    if mode == "warm":
        for k in range(len(CASES)):
            run(k, 1)
    sys.setswitchinterval(1e-5)
    t0, rounds = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        if mode == "serial":
            for k in range(len(CASES)):
                run(k, 30)
        else:
            threads = [threading.Thread(target=run, args=(k, 30)) for k in range(len(CASES))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        rounds += 1
    print(f"rounds {rounds} wrong {len(wrong)} errors {len(errors)}")
    for w in wrong[:5]:
        print("  wrong", w)
    for e in errors[:5]:
        print("  error", e)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="opencl")
    ap.add_argument("--mode", choices=("threads", "serial", "warm"), default="threads")
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--waves", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--timeout", type=float, default=90.0)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.backend, args.mode, args.seconds)
        return
    cmd = [sys.executable, __file__, "--worker", "--backend", args.backend, "--mode", args.mode]
    cmd += ["--seconds", str(args.seconds)]
    totals = {"clean": 0, "segfault": 0, "timeout": 0, "other": 0, "wrong": 0}
    for wave in range(1, args.waves + 1):
        procs = [
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for _ in range(args.procs)
        ]
        codes = []
        for p in procs:
            try:
                out, _ = p.communicate(timeout=args.timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
                codes.append("timeout")
                totals["timeout"] += 1
                continue
            if p.returncode == 0:
                codes.append("ok")
                totals["clean"] += 1
                if " wrong 0 " not in out:
                    totals["wrong"] += 1
                    print(out, file=sys.stderr)
            else:
                kind = "segfault" if p.returncode in (-11, -7) else "other"
                codes.append(f"{kind}({p.returncode})")
                totals[kind] += 1
                print(f"--- wave {wave}: exit {p.returncode}\n{out[-6000:]}", file=sys.stderr)
        print(f"wave {wave}: {' '.join(codes)}", flush=True)
    env = f"{args.backend}, {args.mode}, {args.procs} processes x {args.waves} waves"
    print(f"{env}: " + ", ".join(f"{k} {v}" for k, v in totals.items()))


if __name__ == "__main__":
    main()
