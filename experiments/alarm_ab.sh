#!/usr/bin/env bash
# The OpenCL forms' host time with the offsets alarm's flag copied by the ICD loader's own
# read ("driver", backends/opencl_icd.py) and by PyOpenCL's ("pyopencl"), in turns, on the
# default OpenCL device: OUT=$OUT experiments/alarm_ab.sh [ROUNDS]
set -uo pipefail
OUT=${OUT:-/tmp/out}
for r in $(seq 1 "${1:-2}"); do
  for how in driver pyopencl; do
    python3 - "$how" > "$OUT/alarm_${how}_$r.md" 2>&1 <<'PY'
import runpy, sys
if sys.argv[1] == "pyopencl":
    import jitscan.backends.opencl_icd as icd
    icd.reader = lambda *args: None
sys.argv = ["profile_forms.py", "--opencl", "--top", "1", "10"]
runpy.run_path("experiments/profile_forms.py", run_name="__main__")
PY
    echo "round $r, $how:"; grep -E "^\| 10 \|" "$OUT/alarm_${how}_$r.md"
  done
done
