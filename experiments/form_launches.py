"""Which kernels each call form launches, and how long each runs: run under Nsight Compute.

Usage: ncu --profile-from-start off --csv --metrics gpu__time_duration.sum \
           python experiments/form_launches.py [LOG2N ...] | python experiments/form_launches.py --table

Each form (experiments/profile_forms.py's) is called three times, warm, between two
launches of a marker kernel named after it; --table reads ncu's CSV on stdin and prints,
per form and size, the kernels of one call in order with their device time.
"""

from __future__ import annotations

import csv
import sys

if "--table" in sys.argv:
    rows = [r for r in csv.reader(sys.stdin) if len(r) > 10]
    head = rows[0]
    name_at, value_at, unit_at = (head.index(k) for k in ("Kernel Name", "Metric Value", "Metric Unit"))
    scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
    form, calls = None, []
    print("| form | kernels of one call (µs each) |\n|---|---|")
    for r in rows[1:]:
        name = r[name_at]
        if name.startswith("marker_"):
            tag = name[len("marker_") :]
            if form == tag:  # the closing marker: the last of the three calls
                one = calls[-(len(calls) // 3 or 1) :]
                print(f"| {form} | {', '.join(f'{k} {v:.2f}' for k, v in one)} |")
                form = None
            else:
                form, calls = tag, []
        elif form is not None:
            us = float(r[value_at].replace(",", "")) * scale.get(r[unit_at], float("nan"))
            calls.append((name.split("(")[0], us))
    sys.exit(0)

import cupy  # noqa: E402

sys.argv = [sys.argv[0], *[a for a in sys.argv[1:] if a.isdigit()]]
import profile_forms  # noqa: E402  (its forms; it runs nothing on import but its argv parse)

for log2n in [int(a) for a in sys.argv[1:]] or [10]:
    for name, fn in profile_forms.forms(1 << log2n).items():
        for _ in range(3):
            fn()
        cupy.cuda.runtime.deviceSynchronize()
        marker = cupy.ElementwiseKernel("int32 x", "int32 y", "y = x", f"marker_{log2n}_{name}")
        z = cupy.zeros(1, cupy.int32)
        marker(z)  # compiled before the profiled part
        cupy.cuda.runtime.deviceSynchronize()
        cupy.cuda.profiler.start()  # only these launches are profiled
        marker(z)
        for _ in range(3):
            fn()
        marker(z)
        cupy.cuda.runtime.deviceSynchronize()
        cupy.cuda.profiler.stop()
