#!/usr/bin/env bash
# One device-machine session, from the repo root on the lent GPU machine:
#   experiments/gpu_run.sh tests   the whole test suite on both backends (cupy, NVIDIA OpenCL)
#   experiments/gpu_run.sh seg     segmented targets (experiments/seg_bench.py), segmented_reduce
#                                  launch by launch (experiments/seg_reduce_parts.py) and the
#                                  OpenCL bench
#   experiments/gpu_run.sh bench   the CUDA bench (README's performance table and plots) and the
#                                  default scan against CUB in turns at every size
#                                  (experiments/vs_cub.py)
#   experiments/gpu_run.sh dask [ARGS]  Dask scans on one LocalCUDACluster worker per GPU
#                                  (experiments/dask_cuda_scaling.py ARGS, by default issue 21's
#                                  sizes in chunks of 2^26 and 2^28; 1 GPU and all of them), cut at
#                                  520 s with its progress lines kept; needs dask, distributed,
#                                  dask-cuda, partd, locket, tblib, tornado and zict in .whl/
# Needs .whl/ (pyopencl and friends, cuda-cccl) and .dev/gpu-env.sh carried along.
set -uo pipefail
what=${1:-tests}
shift $(( $# > 0 ? 1 : 0 ))
. .dev/gpu-env.sh
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import cupy, numpy, pyopencl as cl; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'pyopencl', cl.VERSION_TEXT)"
  python3 -c "import torch; print('torch', torch.__version__)" 2>/dev/null
  python3 -c "import importlib.metadata as m; print('cuda-cccl', m.version('cuda-cccl'))" 2>/dev/null
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
case "$what" in
  tests)
    python3 -m pytest -q -n 8 -p no:cacheprovider tests -k "not unfair and not past_two" 2>&1 | tee "$OUT/tests.txt" | tail -15
    # alone: it needs ~40 GB of GPU memory, which parallel workers would contend for
    python3 -m pytest -q -p no:cacheprovider tests/test_large.py 2>&1 | tee -a "$OUT/tests.txt" | tail -3 ;;
  seg)
    python3 experiments/seg_bench.py 28 2>&1 | tee "$OUT/seg.txt"
    python3 experiments/seg_reduce_parts.py 28 1000 2>&1 | tee "$OUT/seg_parts.txt"
    python3 -m jitscan bench --backend opencl --dtypes int32 --sizes 24,28 --blocking-rates none \
      --out /tmp/b-ocl --no-progress > "$OUT/ocl.md" 2>&1; cat "$OUT/ocl.md" ;;
  bench)
    python3 -m jitscan bench --backend cupy --dtypes int32,float32 --sizes 16:28:1 --out /tmp/b-cu \
      --no-progress > "$OUT/cupy.md" 2>&1
    cp /tmp/b-cu/throughput.png /tmp/b-cu/blocking.png "$OUT/" 2>/dev/null
    python3 -m jitscan bench --backend cupy --dtypes int64,float64 --sizes 27 --blocking-rates none \
      --variants memcpy,rts,lookback,fallback --out /tmp/b-cu64 --no-progress > "$OUT/cupy64.md" 2>&1
    python3 experiments/vs_cub.py int32,float32 16:28 > "$OUT/vs_cub.txt" 2>&1
    cat "$OUT/cupy.md" "$OUT/cupy64.md" "$OUT/vs_cub.txt" ;;
  dask)
    # NVLink multicast stays off for everything the workers start (the machines' rule)
    export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
    nvidia-smi topo -m | head -4
    [ $# -gt 0 ] || set -- --sizes 30:33 --chunk 26,28 --profile 32
    timeout 520 python3 experiments/dask_cuda_scaling.py "$@" > "$OUT/dask.txt" 2>&1
    grep -E "^[0-9] GPU|^\||^profile|^  |checks|^2 x|^dask|worker-sat" "$OUT/dask.txt" ;;
esac
