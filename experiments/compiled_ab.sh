#!/usr/bin/env bash
# The forms' host time with the compiled common call ("compiled", backends/_common_call.c)
# and without it ("python", JITSCAN_NO_EXTENSION=1), in turns, on NVIDIA's OpenCL and on
# CUDA (profile_forms.py --top 1 10: 2,000 warm calls of 2^10 elements a form):
#   OUT=$OUT experiments/compiled_ab.sh [ROUNDS]
set -uo pipefail
OUT=${OUT:-/tmp/out}
for r in $(seq 1 "${1:-2}"); do
  for api in opencl cuda; do
    flag=$([ "$api" = opencl ] && echo --opencl || true)
    for how in compiled python; do
      no=$([ "$how" = python ] && echo 1 || echo 0)
      JITSCAN_NO_EXTENSION=$no timeout 120 python3 experiments/profile_forms.py $flag --top 1 10 \
        > "$OUT/${api}_${how}_$r.md" 2>&1
      echo "round $r, $api, $how:"; grep -E "^=== " "$OUT/${api}_${how}_$r.md" | sed 's/ (no profiler)//'
    done
  done
done
