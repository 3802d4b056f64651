#!/usr/bin/env bash
# Record the asv history of the landmark commits and of main, on this machine.
#   experiments/asv_history.sh MACHINE [COMMIT ...]
# CPU machine (PoCL): asv builds a virtualenv per commit from PyPI, as asv.conf.json says.
# GPU machine (no network): GPU=1 runs each commit in the existing Python environment from a
# worktree of its own (ASV_PYTHONPATH), with the compiled call built there.
# Untested on a device machine, whose copy of the checkout has no .git: carry a clone there
# (here: git clone --bare . .dev/repo.git; there: mv .dev/repo.git .git && git config
# core.bare false) so that the worktrees and asv's commit lookups have the history.
# The grid of every commit is the same: JITSCAN_ASV_SIZES and JITSCAN_ASV_DTYPES below
# (or as set by the caller), so that the series compare.
set -uo pipefail
machine=${1:?machine name, as asv machine --machine NAME gave it}
shift
# the landmarks: prepared scans, NumPy conventions, deterministic scans, CPU lanes, tuple
# values, Dask arrays, tuning on the device, compaction and runs. On PoCL 3.1 the Scan
# class's setup_cache died (asv: exit status -11, SIGSEGV) at 3e174a2 and 1d31942, twice, the
# second time on a quiet machine: they have no Scan results on the CPU machine (0aa6538 and
# later ran it). At fe0c93c the Deterministic class's setup_cache still ran after 20 minutes
# on the 2-core machine and was stopped: that commit has no results there yet.
# Untested on a device machine, whose copy of the checkout has no .git: carry a clone there
# (here: git clone --bare . .dev/repo.git; there: mv .dev/repo.git .git && git config
# core.bare false) so that the worktrees and asv's commit lookups have the history.
# The grid of every commit is the same: JITSCAN_ASV_SIZES and JITSCAN_ASV_DTYPES below
# (or as set by the caller), so that the series compare.
set -uo pipefail
machine=${1:?machine name, as asv machine --machine NAME gave it}
shift
# the landmarks: prepared scans, NumPy conventions, deterministic scans, CPU lanes, tuple
# values, Dask arrays, tuning on the device, compaction and runs. On PoCL 3.1 the Scan
# class's setup_cache died of SIGSEGV (asv: exit status -11) at 3e174a2 and 1d31942, so
# they have no Scan results on the CPU machine; 0a65b35 (a CPU workgroup's items a thread
# bounded, after PoCL's workers crashed) may be why: not checked. At fe0c93c the Deterministic
# class's setup_cache still ran after 20 minutes on PoCL 3.1 (the 2-core machine) and was
# stopped: that commit has no results there yet
landmarks="3e174a2 1d31942 fe0c93c 49b55df 0aa6538 2d74350 c5c10ea e85387c"
commits=${*:-$landmarks $(git rev-parse --short main)}
export JITSCAN_ASV_SIZES=${JITSCAN_ASV_SIZES:-14,18} JITSCAN_ASV_DTYPES=${JITSCAN_ASV_DTYPES:-int32,float32}
if [ -n "${GPU:-}" ] && ! command -v asv > /dev/null; then
  # asv and its needs, carried as wheels in .whl/asv (gpu-env.sh installs only .whl/*.whl)
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/asvsite .whl/asv/*.whl || exit 1
  export PYTHONPATH=/tmp/asvsite${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/asvsite/bin:$PATH
fi
for c in $commits; do
  echo "== $c $(git log -1 --format=%s "$c" | cut -c1-80)"
  if [ -n "${GPU:-}" ]; then
    wt=/tmp/asv-wt-$c
    [ -d "$wt" ] || git worktree add -f --detach "$wt" "$c" > /dev/null
    (cd "$wt" && python3 setup.py build_ext --inplace > /dev/null 2>&1)
    ASV_PYTHONPATH=$wt asv run -E existing:python3 --machine "$machine" --set-commit-hash "$(git rev-parse "$c")" \
      --show-stderr 2>&1 | grep -E "^\[|failed|Error" | tail -3
  else
    asv run "$c^!" --machine "$machine" --show-stderr 2>&1 | grep -E "^\[100|failed|Error" | tail -3
  fi
done
