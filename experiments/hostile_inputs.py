"""Does every hostile or unusual input give a right answer or a clear error, never a crash?

Usage: python experiments/hostile_inputs.py [BACKEND]   (default: the default backend)

Each case runs in a process of its own (a crash must not end the survey) and is
classified: ``right`` (the result is checked), ``clear`` (a TypeError or ValueError whose
message holds the words the case expects), ``unclear`` (another exception, or a message
without them), ``crash`` (the process died), ``wrong`` (a result that is not the right one)
and ``accepted`` (no error where one was due). The cases are those of the reliability
issue that a user can write; docs/reliability.md gives the table.
"""

from __future__ import annotations

import subprocess
import sys

#: name -> (code after ``import numpy as np, jitscan``, the words a clear error holds; None:
#: the code checks its result and prints "right")
CASES: dict[str, tuple[str, str | None]] = {
    "huge tile (vectors=1024, fallback)": (
        "x = np.arange(100000, dtype=np.int32); y = jitscan.scan(x, variant='fallback', vectors=1024)\n"
        "assert (y == np.cumsum(x, dtype=np.int32)).all(); print('right')",
        None,
    ),
    "threads=1 with rts": (
        "x = np.arange(100000, dtype=np.int32); y = jitscan.scan(x, variant='rts', threads=1)\n"
        "assert (y == np.cumsum(x, dtype=np.int32)).all(); print('right')",
        None,
    ),
    "threads=64.0": (
        "jitscan.scan(np.arange(10, dtype=np.int32), threads=64.0)",
        "threads must be an integer",
    ),
    "threads='64'": (
        "jitscan.scan(np.arange(10, dtype=np.int32), threads='64')",
        "threads must be an integer",
    ),
    "threads=True": (
        "jitscan.scan(np.arange(10, dtype=np.int32), threads=True)",
        "threads must be an integer",
    ),
    "spin_limit=2**32": (
        "jitscan.scan(np.arange(10, dtype=np.int32), spin_limit=2**32)",
        "spin_limit must be",
    ),
    "spin_limit=1.5": ("jitscan.scan(np.arange(10, dtype=np.int32), spin_limit=1.5)", "spin_limit must be"),
    "spin_limit='8'": ("jitscan.scan(np.arange(10, dtype=np.int32), spin_limit='8')", "spin_limit must be"),
    "simulate_blocking=2.5": (
        "jitscan.scan(np.arange(10, dtype=np.int32), simulate_blocking=2.5)",
        "simulate_blocking must be",
    ),
    "axis=1.5": ("jitscan.scan(np.zeros((2, 3), np.int32), axis=1.5)", "axis"),
    "axis='0'": ("jitscan.scan(np.zeros((2, 3), np.int32), axis='0')", "axis"),
    "axis=(0, 1)": ("jitscan.scan(np.zeros((2, 3), np.int32), axis=(0, 1))", "axis"),
    "identity 1.5 on int32": (
        "jitscan.scan(np.arange(10, dtype=np.int32), op=jitscan.Monoid('m', 'a * b', identity=1.5))",
        "is not an integer",
    ),
    "identity nan on int32": (
        "jitscan.scan(np.arange(10, dtype=np.int32), op=jitscan.Monoid('m', 'a * b', identity=float('nan')))",
        "is not an integer",
    ),
    "identity None": ("jitscan.Monoid('m', 'a * b', identity=None)", "identity"),
    "2-D flags of the right size": (
        "f = np.zeros((2, 5), np.uint8); f[1, 0] = 1\n"
        "y = jitscan.segmented_scan(np.arange(10, dtype=np.int32), flags=f)\n"
        "assert (y == np.r_[np.cumsum(np.arange(5)), np.cumsum(np.arange(5, 10))]).all(); print('right')",
        None,
    ),
    "flags of the wrong size": (
        "jitscan.segmented_scan(np.arange(10, dtype=np.int32), flags=np.zeros(3, np.uint8))",
        "flags has 3 entries",
    ),
    "combine closing the function": (
        "jitscan.Monoid('m', 'a + b); } __kernel void evil() { (0', 0)",
        "may not hold",
    ),
    "combine with a #define": ("jitscan.Monoid('m', 'a\\n#define JS_BARRIER()', 0)", "may not hold '#'"),
    "combine with another name": ("jitscan.Monoid('m', 'a + c', 0)", "the name 'c'"),
    "combine of 80 KB": ("jitscan.Monoid('m', 'a + b' * 16000, 0)", "characters, over"),
    "tuple of arrays of two lengths": (
        "op = jitscan.operator(lambda x, y: (x[0] + y[0], x[1] + y[1]), identity=(0, 0))\n"
        "jitscan.scan((np.arange(3), np.arange(4)), op=op)",
        "differ in shape",
    ),
    "non-associative Python operator": (
        "jitscan.scan(np.arange(1, 50), op=jitscan.operator(lambda x, y: x - y, identity=0))",
        "identity",
    ),
}


def classify(backend: str | None, code: str, expect: str | None) -> tuple[str, str]:
    head = "import numpy as np, jitscan\n"
    if backend:
        head += f"import os; os.environ['JITSCAN_BACKEND'] = {backend!r}\n"
    run = subprocess.run([sys.executable, "-c", head + code], capture_output=True, text=True, timeout=600)
    last = (run.stderr.strip().splitlines() or [""])[-1]
    if run.returncode < 0 or run.returncode > 1:
        return "crash", f"exit {run.returncode}: {last[:120]}"
    if expect is None:
        if run.returncode == 0 and run.stdout.strip().endswith("right"):
            return "right", ""
        return ("wrong" if "AssertionError" in last else "unclear"), last[:120]
    if run.returncode == 0:
        return "accepted", run.stdout.strip()[:120]
    clear = last.startswith(("TypeError", "ValueError", "numpy.exceptions.AxisError")) and expect in last
    return ("clear" if clear else "unclear"), last[:160]


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else None
    counts: dict[str, int] = {}
    print("case | outcome | message")
    for name, (code, expect) in CASES.items():
        outcome, msg = classify(backend, code, expect)
        counts[outcome] = counts.get(outcome, 0) + 1
        print(f"{name} | {outcome} | {msg}", flush=True)
    print(" ".join(f"{k}: {v}" for k, v in sorted(counts.items())), f"(of {len(CASES)})")


if __name__ == "__main__":
    main()
