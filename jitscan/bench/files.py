"""A report as files: JSON (everything, every run's time) and CSV (one row per result)."""

from __future__ import annotations

import csv
import json
import os

from .results import Report

CSV_FIELDS = (
    "backend",
    "category",
    "name",
    "dtype",
    "n",
    "block_every",
    "timing",
    "call",
    "error",
    "reps",
    "seconds",
    "spread",
    "elements_per_s",
    "hmean_elements_per_s",
    "spins",
    "lookback_steps",
    "fallbacks",
    "insertions",
    "tiles",
)


def write_json(report: Report, path: str | os.PathLike) -> None:
    """The report (configuration, devices, versions, every result with its run times) as JSON."""
    with open(path, "w") as fh:
        json.dump(report.as_dict(), fh, indent=1)


def write_csv(report: Report, path: str | os.PathLike) -> None:
    """One row per result (run times left out; see the JSON)."""
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in report.results:
            row = {k: getattr(r, k) for k in CSV_FIELDS[:9]}
            row.update(
                reps=len(r.times),
                seconds=r.seconds,
                spread=r.spread,
                elements_per_s=r.elements_per_s,
                hmean_elements_per_s=r.hmean_elements_per_s,
            )
            row.update({k: r.stats.get(k, "") for k in CSV_FIELDS[14:]})
            w.writerow(row)


__all__ = ["CSV_FIELDS", "write_csv", "write_json"]
