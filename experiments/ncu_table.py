"""Nsight Compute's CSV (``ncu --csv --metrics ...``) as a Markdown table: a row per kernel
launch, a column per metric (shortened), in launch order.

Usage: ncu --csv --metrics A,B,... python3 script.py > raw.csv
       python experiments/ncu_table.py raw.csv [NAMES]
NAMES: a label per launch, separated by "; " (e.g. the script's "order:" line).
"""

from __future__ import annotations

import csv
import sys


def main() -> None:
    text = open(sys.argv[1]).read().splitlines()
    start = next(k for k, line in enumerate(text) if line.startswith('"ID"'))
    rows = list(csv.DictReader(text[start:]))
    labels = sys.argv[2].split("; ") if len(sys.argv) > 2 else []
    launches: dict[str, dict[str, str]] = {}
    for r in rows:
        launches.setdefault(r["ID"], {"kernel": r["Kernel Name"][:24]})[r["Metric Name"]] = r["Metric Value"]
    metrics = [m for m in dict.fromkeys(r["Metric Name"] for r in rows)]
    cut = (
        ("smsp__average_warps_issue_stalled_", "stall "),
        ("_per_issue_active.ratio", ""),
        (".sum", ""),
        (".avg.pct_of_peak_sustained_", " %"),
        ("__", "."),
    )
    short = []
    for m in metrics:
        for a, b in cut:
            m = m.replace(a, b)
        short.append(m)
    print("| launch | kernel | " + " | ".join(short) + " |")
    print("|---" * (len(metrics) + 2) + "|")
    for k, (lid, m) in enumerate(launches.items()):
        label = labels[k] if k < len(labels) else lid
        print(f"| {label} | {m['kernel']} | " + " | ".join(m.get(x, "") for x in metrics) + " |")


if __name__ == "__main__":
    main()
