#!/usr/bin/env bash
# The call forms' step on the lent GPU machine, from the repo root (carry .whl and .dev):
#   experiments/gpu_forms.sh bench   build the compiled call, then the per-call bench of every
#                                    form (int32) and segmented_reduce by variant at small sizes
#   experiments/gpu_forms.sh tests   build, then the whole test suite on both backends
#   experiments/gpu_forms.sh ab      build, then device time against the tree in .dev/base, in turns
#   experiments/gpu_forms.sh all     build, the whole suite, then the per-call bench
#   experiments/gpu_forms.sh selection   build, the compaction and runs tests on both
#                                    backends, then experiments/selection_gpu.py (SIZES="20 24 28")
#                                    and transform_tiles.py (a transform's tile vectors)
#   experiments/gpu_forms.sh transforms  build, the compaction tests, transform_profile.py,
#                                    transform_tiles.py, selection_gpu.py, transform_host.py
#   experiments/gpu_forms.sh verify      build, the tests of the launch paths on both backends, then the
#                                    per-call bench of every form on CUDA (SIZES)
#   experiments/gpu_forms.sh opencl      build, the per-call bench on NVIDIA's OpenCL, the OpenCL forms'
#                                    host time, whether a kernel's write reaches a host mapping
#   experiments/gpu_forms.sh measure     build, the per-call bench of every form on CUDA (SIZES) and
#                                    on NVIDIA's OpenCL, then the OpenCL forms' host time and
#                                    whether a kernel's write reaches a host mapping (ocl_zero_copy.py)
#   experiments/gpu_forms.sh explore     build, the OpenCL launch and segmented tests, then the
#                                    OpenCL forms' host time, search_sweep.py, small_forms.py and
#                                    the pair scan's shapes at 2^28 (tuples_sweep.py)
#   experiments/gpu_forms.sh nostall     build, the compaction, runs and launch tests on both backends, then the
#                                    host time of the no-stall calls on CUDA and NVIDIA's OpenCL
#                                    (transform_host.py) and the forms' on both (profile_forms.py at 2^10)
#   experiments/gpu_forms.sh compiled    build, the launch paths' tests on both backends (the compiled
#                                    call's on OpenCL too), then the forms' host time with and
#                                    without the compiled call on NVIDIA's OpenCL and CUDA (compiled_ab.sh)
#   experiments/gpu_forms.sh probe       build, the scan, segmented and compiled-call tests on both
#                                    backends, graph_launch.cu (GRAPH=1: four launches against one CUDA
#                                    graph), tuple_park.py for each K of ${PARK}, stages_host.py with and
#                                    without graphs in turns, the no-stall calls' host time and the
#                                    isolated calls against the tree in .dev/base (transform_host.py
#                                    --ab, ab_device.py ISOLATED=1; its extension built there)
#   experiments/gpu_forms.sh forms       build, the per-call bench of every form on CUDA (SIZES) and on NVIDIA's
#                                    OpenCL, the pair scan parked (PARK="K ..."), the no-stall calls' host time
#   experiments/gpu_forms.sh check       build, the call paths' tests on both backends, then forms
#   experiments/gpu_forms.sh profile     build, then where each CUDA form's host time goes (profile_forms.py
#                                    at ${PROFILE:-10 22 25}: cProfile's functions of most own time), the
#                                    OpenCL forms' at 2^10, and the kernels each CUDA form launches
#                                    (form_launches.py under ncu, at 2^10, 2^22 and 2^25)
set -uo pipefail
what=${1:-bench}
. .dev/gpu-env.sh
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import cupy, numpy, pyopencl as cl; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'pyopencl', cl.VERSION_TEXT)"
  python3 -c "import torch, importlib.metadata as m; print('torch', torch.__version__, 'cuda-cccl', m.version('cuda-cccl'))"
} > "$OUT/env.txt" 2>&1
python3 setup.py build_ext --inplace > "$OUT/build.txt" 2>&1 || tail -5 "$OUT/build.txt"
python3 -c "import jitscan.backends.cupy as c; print('compiled call:', c.CommonCall is not None)"
case "$what" in
  bench)
    timeout 300 python3 -m jitscan bench --backend cupy --latency --dtypes int32 --sizes ${SIZES:-10,16,20,24} \
      --out /tmp/b-forms --no-progress > "$OUT/forms.md" 2>&1
    timeout 150 python3 experiments/seg_reduce_small.py ${SEG_SIZES:-10,14,18,22} > "$OUT/seg_small.md" 2>&1
    timeout 100 python3 -m jitscan bench --backend opencl --latency --dtypes int32 --sizes 10,20 \
      --out /tmp/b-ocl --no-progress > "$OUT/ocl.md" 2>&1
    grep -E "host \||^\| 2|isolated \| (flat|seg|tuple|axis|init)" "$OUT/forms.md" | head -60
    cat "$OUT/seg_small.md"; grep -E "host \|" "$OUT/ocl.md" ;;
  ab)  # device time against the tree in .dev/base (ab_device.py's BASE), sizes ${AB:-20,24,28}
    PYTHONPATH=$PWD/.dev/base:$PYTHONPATH BASE=.dev/base timeout 300 python3 experiments/ab_device.py ${AB:-20,24,28} \
      > "$OUT/ab.md" 2>&1; cat "$OUT/ab.md" ;;
  all)  # the whole suite, then the per-call bench of every form (int32, ${SIZES:-10,19,24})
    timeout 330 python3 -m pytest -q -n 14 -p no:cacheprovider tests -k "not unfair and not past_two and not knob_sweep" \
      --timeout 300 > "$OUT/tests.txt" 2>&1
    tail -3 "$OUT/tests.txt"; grep -E "^FAILED" "$OUT/tests.txt" | head -20
    timeout 150 python3 -m jitscan bench --backend cupy --latency --dtypes int32 --sizes ${SIZES:-10,19,24} \
      --out /tmp/b-forms --no-progress > "$OUT/forms.md" 2>&1
    grep -E "^\| (host|isolated) \|" "$OUT/forms.md" | grep -E "tuple|CUB \(|segmented|initial|axis|torch" ;;
  selection)
    timeout 150 python3 -m pytest -q -n 14 -p no:cacheprovider tests/test_selection.py tests/test_contracts.py \
      tests/test_docs.py -k "not unfair" --timeout 140 > "$OUT/tests.txt" 2>&1
    grep -E "^FAILED" "$OUT/tests.txt" | head -20
    timeout 150 python3 experiments/selection_gpu.py ${SIZES:-20 24 28} > "$OUT/selection.md" 2>&1
    timeout 120 python3 experiments/transform_tiles.py 24 28 > "$OUT/tiles.md" 2>&1
    grep -E "^\| 2[48]" "$OUT/tiles.md"; tail -3 "$OUT/tiles.md"
    tail -28 "$OUT/selection.md"; tail -2 "$OUT/tests.txt" ;;
  transforms)  # the compaction tests, then a transform's pass against its parts, its tiles, the
               # functions beside their peers, and the host's part of a call
    timeout 150 python3 -m pytest -q -n 14 -p no:cacheprovider tests/test_selection.py -k "not unfair" \
      --timeout 140 > "$OUT/tests.txt" 2>&1
    tail -1 "$OUT/tests.txt"; grep -E "^FAILED" "$OUT/tests.txt" | head
    timeout 100 python3 experiments/transform_profile.py 24 28 > "$OUT/prof.md" 2>&1
    timeout 100 python3 experiments/transform_tiles.py 24 28 > "$OUT/tiles.md" 2>&1
    timeout 150 python3 experiments/selection_gpu.py ${SIZES:-20 24 28} > "$OUT/selection.md" 2>&1
    timeout 60 python3 experiments/transform_host.py 10 > "$OUT/host.md" 2>&1
    timeout 90 python3 experiments/selection_ocl.py 20 24 > "$OUT/ocl.md" 2>&1
    grep -E "^(\||device)" "$OUT/ocl.md" | tail -8
    grep -hE "^\| 2" "$OUT/prof.md" "$OUT/tiles.md"; grep -E "^\| (2|j|c)" "$OUT/selection.md" | tail -30
    head -8 "$OUT/host.md" ;;
  verify)  # the launch paths' tests on both backends, then the CUDA bench of every form
    timeout 170 python3 -m pytest -q -n 14 -p no:cacheprovider tests/test_segmented.py tests/test_opencl_launches.py \
      tests/test_cuda_form_call.py tests/test_cuda_call.py tests/test_tuples.py tests/test_reliability.py \
      tests/test_api.py tests/test_launch_plans.py -k "not unfair and not past_two" --timeout 160 > "$OUT/tests.txt" 2>&1
    tail -1 "$OUT/tests.txt"; grep -E "^FAILED" "$OUT/tests.txt" | head -20
    timeout 330 python3 -m jitscan bench --backend cupy --latency --dtypes int32 --sizes ${SIZES:-10,16,19,22,25,28} \
      --out /tmp/b-forms --no-progress > "$OUT/forms.md" 2>&1
    grep -E "^\| (host|isolated) \|" "$OUT/forms.md" | head -80 ;;
  measure)
    timeout 330 python3 -m jitscan bench --backend cupy --latency --dtypes int32 --sizes ${SIZES:-10,16,19,22,25,28} \
      --out /tmp/b-forms --no-progress > "$OUT/forms.md" 2>&1
    grep -E "^\| (host|isolated) \|" "$OUT/forms.md" | head -80
    OUT=$OUT bash "$0" opencl ;;
  opencl)
    timeout 120 python3 -m jitscan bench --backend opencl --latency --dtypes int32 --sizes 10,20 \
      --out /tmp/b-ocl --no-progress > "$OUT/ocl.md" 2>&1
    timeout 80 python3 experiments/profile_forms.py --opencl --top 4 10 > "$OUT/ocl_prof.md" 2>&1
    timeout 30 python3 experiments/ocl_zero_copy.py > "$OUT/zero_copy.txt" 2>&1
    grep -E "host \|" "$OUT/ocl.md"; tail -12 "$OUT/ocl_prof.md"; cat "$OUT/zero_copy.txt" ;;
  explore)
    timeout 150 python3 -m pytest -q -n 14 -p no:cacheprovider tests/test_opencl_launches.py tests/test_segmented.py \
      -k "not unfair" --timeout 140 > "$OUT/tests.txt" 2>&1
    tail -1 "$OUT/tests.txt"; grep -E "^FAILED" "$OUT/tests.txt" | head
    timeout 120 python3 experiments/profile_forms.py --opencl --top 4 10 > "$OUT/ocl_prof.md" 2>&1
    timeout 150 python3 experiments/search_sweep.py 20 22 24 26 28 > "$OUT/search.md" 2>&1
    timeout 120 python3 experiments/small_forms.py 10 13 16 > "$OUT/small.md" 2>&1
    timeout 120 python3 experiments/tuples_sweep.py 28 recurrence > "$OUT/tuples.md" 2>&1
    tail -22 "$OUT/ocl_prof.md"; grep -E "^\| 2" "$OUT/search.md"; tail -8 "$OUT/tuples.md"
    grep -E "default|CUB|torch|flat" "$OUT/small.md"; grep -E "^\| " "$OUT/small.md" | sort -t'|' -k2,3 -s | awk -F'|' '!seen[$2 $3]++' ;;
  nostall)
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_selection.py tests/test_opencl_launches.py \
      tests/test_segmented.py tests/test_api.py -n 14 -k "not unfair" --timeout 150 > "$OUT/tests.txt" 2>&1
    tail -1 "$OUT/tests.txt"; grep -E "^FAILED" "$OUT/tests.txt" | head
    timeout 100 python3 experiments/transform_host.py 10 > "$OUT/host_cuda.md" 2>&1
    timeout 100 python3 experiments/transform_host.py --opencl 10 > "$OUT/host_ocl.md" 2>&1
    timeout 100 python3 experiments/profile_forms.py --top 1 10 > "$OUT/forms_cuda.md" 2>&1
    timeout 100 python3 experiments/profile_forms.py --opencl --top 1 10 > "$OUT/forms_ocl.md" 2>&1
    head -12 "$OUT/host_cuda.md"; head -11 "$OUT/host_ocl.md"; tail -9 "$OUT/forms_cuda.md"; tail -9 "$OUT/forms_ocl.md" ;;
  profile)
    timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_opencl_launches.py tests/test_tuples.py \
      -n 8 --timeout 100 > "$OUT/tests.txt" 2>&1; tail -1 "$OUT/tests.txt"; grep -E "^FAILED" "$OUT/tests.txt" | head
    timeout 300 python3 experiments/profile_forms.py --top 8 ${PROFILE:-10 22 25} > "$OUT/prof.md" 2>&1
    timeout 150 python3 experiments/profile_forms.py --opencl --top 10 10 > "$OUT/ocl_prof.md" 2>&1
    timeout 200 ncu --profile-from-start off --csv --metrics gpu__time_duration.sum \
      python3 experiments/form_launches.py 10 22 25 > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
    python3 experiments/form_launches.py --table < "$OUT/ncu.csv" > "$OUT/launches.md"
    timeout 100 python3 experiments/transform_host.py 10 > "$OUT/transform_host.md" 2>&1
    grep -E "^\| " "$OUT/prof.md" | tail -24; tail -9 "$OUT/ocl_prof.md"; cat "$OUT/launches.md"
    grep -E "^\|" "$OUT/transform_host.md" ;;
  compiled)
    timeout 260 python3 -m pytest -q -n 14 -p no:cacheprovider tests/test_opencl_compiled.py tests/test_opencl_launches.py \
      tests/test_segmented.py tests/test_tuples.py tests/test_api.py tests/test_initial.py tests/test_call_dispatch.py \
      tests/test_cuda_call.py tests/test_cuda_form_call.py tests/test_launch_description.py tests/test_reliability.py \
      -k "not unfair and not past_two" --timeout 200 > "$OUT/tests.txt" 2>&1
    tail -1 "$OUT/tests.txt"; grep -E "^FAILED" "$OUT/tests.txt" | head -20
    OUT=$OUT bash experiments/compiled_ab.sh ${ROUNDS:-2} ;;
  probe)  # the reductions in stages with and without one CUDA graph, the one-workgroup launch's
          # isolated time against the tree in .dev/base, the launch paths' tests; GRAPH=1 adds
          # graph_launch.cu, PARK="K ..." the pair scan with K vectors parked
    for r in $(seq ${ROUNDS:-2}); do JITSCAN_GRAPHS=1 timeout 60 python3 experiments/stages_host.py 25 28; \
      JITSCAN_GRAPHS=0 timeout 60 python3 experiments/stages_host.py 25 28; done 2>&1 | tee "$OUT/stages.md"
    # the base tree's own extension (its record's layout is its own)
    (cd .dev/base && python3 -c "from setuptools import setup, Extension; setup(ext_modules=[Extension(
      'jitscan_base.backends._common_call', ['jitscan_base/backends/_common_call.c'])],
      script_args=['build_ext', '--inplace', '-q'])") > "$OUT/base_build.txt" 2>&1 || tail -3 "$OUT/base_build.txt"
    PYTHONPATH=$PWD/.dev/base:$PYTHONPATH timeout 150 python3 experiments/transform_host.py --ab 10 2>&1 | tee "$OUT/nostall.md"
    ISOLATED=1 PYTHONPATH=$PWD/.dev/base:$PYTHONPATH BASE=.dev/base timeout 120 python3 experiments/ab_device.py \
      ${AB:-10,13} 2>&1 | tee "$OUT/ab.md"
    JITSCAN_GRAPHS=1 timeout ${TESTS_S:-170} python3 -m pytest -q -n 14 -p no:cacheprovider tests/test_segmented.py tests/test_scan.py \
      tests/test_initial.py tests/test_opencl_compiled.py tests/test_api.py tests/test_selection.py -k "not unfair" --timeout 150 \
      > "$OUT/tests.txt" 2>&1
    tail -1 "$OUT/tests.txt"; grep -E "^FAILED" "$OUT/tests.txt" | head
    if [ -n "${GRAPH:-}" ]; then nvcc -O2 -o /tmp/graph_launch experiments/graph_launch.cu -lcuda > "$OUT/graph.txt" 2>&1
      /tmp/graph_launch 2>&1 | tee -a "$OUT/graph.txt"; fi
    for K in ${PARK:-}; do timeout 60 python3 experiments/tuple_park.py $K 25 28 2>&1 | grep -v Warn; done
    if [ -n "${OCL:-}" ]; then timeout 90 python3 -m jitscan bench --backend opencl --latency --dtypes int32 --sizes 10 \
      --out /tmp/b-ocl --no-progress > "$OUT/ocl.md" 2>&1; grep -E "host \|" "$OUT/ocl.md"; fi ;;
  forms)  # the per-call bench of every form on CUDA (SIZES) and NVIDIA's OpenCL (2^10), the pair
          # scan with K vectors parked for each K of ${PARK}, the no-stall calls' host time
    timeout ${BENCH_S:-300} python3 -m jitscan bench --backend cupy --latency --dtypes int32 \
      --sizes ${SIZES:-10,19,22,25,28} --out /tmp/b-forms --no-progress > "$OUT/forms.md" 2>&1
    timeout 90 python3 -m jitscan bench --backend opencl --latency --dtypes int32 --sizes 10 \
      --out /tmp/b-ocl --no-progress > "$OUT/ocl.md" 2>&1
    for K in ${PARK:-}; do timeout 70 python3 experiments/tuple_park.py $K ${PARK_SIZES:-20 22 25 28} 2>&1 \
      | grep -v Warn; done | tee "$OUT/park.md"
    timeout 60 python3 experiments/transform_host.py 10 > "$OUT/nostall.md" 2>&1; head -12 "$OUT/nostall.md"
    grep -E "host \|" "$OUT/ocl.md"
    grep -E "^\| (host|isolated|pipelined) \|" "$OUT/forms.md" | head -120 ;;
  check)  # the tests of the call paths on both backends, then `forms` (TESTS_S caps the tests)
    timeout ${TESTS_S:-200} python3 -m pytest -q -n 14 -p no:cacheprovider tests/test_opencl_compiled.py \
      tests/test_segmented.py tests/test_conventions.py tests/test_initial.py tests/test_api.py tests/test_selection.py \
      tests/test_cuda_form_call.py tests/test_tuples.py -k "not unfair and not past_two" --timeout 150 > "$OUT/tests.txt" 2>&1
    OUT=$OUT bash "$0" forms; tail -1 "$OUT/tests.txt"; grep -E "^FAILED" "$OUT/tests.txt" | head -20 ;;
  tests)
    timeout 520 python3 -m pytest -q -n 14 -p no:cacheprovider tests -k "not unfair and not past_two and not knob_sweep" \
      --timeout 300 > "$OUT/tests.txt" 2>&1
    tail -25 "$OUT/tests.txt" ;;
esac
