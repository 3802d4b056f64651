#!/usr/bin/env bash
# One device-machine session: environment report, GPU tests, benchmarks.
# Usage (on the lent GPU machine, from the repo root): scripts/gpu_run.sh [tests|bench|all] [pytest -k expr]
# Needs .whl/ (pyopencl and friends, cuda-cccl) and .dev/gpu-env.sh carried along.
set -uo pipefail
what=${1:-all}
kexpr=${2:-}
. .dev/gpu-env.sh
export PYTHONPATH=$PWD:${PYTHONPATH:-}
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import cupy, numpy, pyopencl as cl; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'pyopencl', cl.VERSION_TEXT); print([(p.name, [d.name for d in p.get_devices()]) for p in cl.get_platforms()])"
  python3 -c "import torch; print('torch', torch.__version__)" 2>/dev/null
  python3 -c "import cuda.compute, importlib.metadata as m; print('cuda-cccl', m.version('cuda-cccl'))" 2>/dev/null
} 2>&1 | tee "$OUT/env.txt"
if [ "$what" = tests ] || [ "$what" = all ]; then
  python3 -m pytest -q -x -n 8 -p no:cacheprovider ${kexpr:+-k "$kexpr"} tests 2>&1 | tee "$OUT/tests.txt" | tail -15
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  python3 -m jitscan bench --backend cupy --dtypes int32,float32 --sizes 16:28:2 --reps 30 --json "$OUT/bench_cupy.json" > "$OUT/bench_cupy.md" 2> "$OUT/bench_cupy.log"
  python3 -m jitscan bench --backend cupy --dtypes int64,float64 --sizes 27 --reps 30 --json "$OUT/bench_cupy64.json" > "$OUT/bench_cupy64.md" 2>> "$OUT/bench_cupy.log"
  python3 -m jitscan bench --backend opencl --dtypes int32 --sizes 24,28 --reps 20 --json "$OUT/bench_ocl.json" > "$OUT/bench_ocl.md" 2> "$OUT/bench_ocl.log"
  tail -3 "$OUT/bench_cupy.log"
  cat "$OUT/bench_cupy.md" "$OUT/bench_cupy64.md" "$OUT/bench_ocl.md"
fi
