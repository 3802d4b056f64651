"""Do the programs rendered for a 64-lane AMD target run right on ROCm's HIP-CPU runtime?

Usage: python experiments/hip_cpu.py HIP_CPU_INCLUDE [--cxx g++] [--work DIR] [--only NAME,...]

HIP_CPU_INCLUDE is the ``include`` directory of a checkout of github.com/ROCm/HIP-CPU (a
header-only C++17 runtime that runs a HIP kernel's workgroups as tasks of the C++ parallel
algorithms, TBB underneath, and each workgroup's threads as fibers on one OS thread);
this script fetches nothing. It needs TBB's headers and library (Debian: libtbb-dev).

For each case it renders ``jitscan.source(..., device="gfx942")`` and compiles the text as
C++ against HIP-CPU at three levels:

- ``raw``: HIP-CPU's ``hip/hip_runtime.h`` and the program, nothing else;
- ``defines``: macros only: ``__HIP_PLATFORM_AMD__`` (the text's AMD branches, which
  ROCm's compile takes), the ``__builtin_amdgcn_*`` calls of those branches, the bit casts
  HIP-CPU lacks, ``wall_clock64()`` at ROCm's documented 100 MHz;
- ``warp``: those, and shuffles over one wavefront's 64 fibers in place of HIP-CPU's, whose
  ``__shfl``/``__shfl_up`` wait at a barrier of the whole workgroup.

Each level that compiles is linked with a host driver generated here (the arguments of
``js_chained`` in the order of its ``LaunchPlan.slots``, the scratch of its ``header`` and
``per_tile``, epochs 1, 2, ... on one scratch, the offsets pre-pass ``js_seg_first``
first), run for a few sizes in a process of its own with a time limit, and its results
compared with NumPy. It prints a table of what compiled and what matched.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import jitscan
from jitscan import variants
from jitscan.backends import launch as L
from jitscan.backends import targets
from jitscan.dtypes import lookup
from jitscan.operators import resolve
from jitscan.plan import tuning
from jitscan.variants import chained

DEVICE = "gfx942"
#: (name, dtype, variant, kind, segmented); "counting": the flat program with JS_STATS (the
#: spec's ``stats``, which jitscan.source does not take: rendered by the variant itself)
CASES = (
    ("flat", "int32", "fallback", "inclusive", ""),
    ("counting", "int32", "fallback", "inclusive", ""),
    ("exclusive", "int32", "fallback", "exclusive", ""),
    ("lookback", "int32", "lookback", "inclusive", ""),
    ("float64", "float64", "fallback", "inclusive", ""),
    ("offsets", "int32", "fallback", "inclusive", "offsets"),
    ("flags", "int32", "fallback", "inclusive", "flags"),
)
#: element counts of each run (a tile of the large-input shape is 8,192 or 4,096 elements)
SIZES = (1, 1000, 4096, 8192, 8193, 100_000, 1 << 20, (1 << 22) + 5)
#: launches of one process on one scratch (epochs 1 .. REPS)
REPS = 3
#: seconds a run may take before it counts as hung
TIMEOUT = 120

#: defines only: what the text's AMD branches call, and what HIP-CPU lacks
DEFINES = r"""
#define __HIP_PLATFORM_AMD__ 1
/* the text's AMD branches: its wave barrier's fences, the barrier, the spin's sleep */
#define __builtin_amdgcn_fence(order, scope) std::atomic_thread_fence(std::memory_order_seq_cst)
#define __builtin_amdgcn_wave_barrier() ((void)0)
#define __builtin_amdgcn_s_sleep(n) std::this_thread::yield()
/* ROCm documents wall_clock64's rate as 100 MHz; HIP-CPU's clock64() counts nanoseconds */
#define wall_clock64() ((unsigned long long)(hip::detail::clock64() / 10))
/* bit casts HIP-CPU does not declare */
#define __int_as_float(x) hip::detail::bit_cast<float>((int)(x))
#define __float_as_uint(x) hip::detail::bit_cast<unsigned int>((float)(x))
#define __uint_as_float(x) hip::detail::bit_cast<float>((unsigned int)(x))
#define __double_as_longlong(x) hip::detail::bit_cast<long long>((double)(x))
"""

#: one wavefront's shuffles: HIP-CPU's own yield to the next fiber of the workgroup (a
#: barrier of all its threads); these yield to the next fiber of the same 64
WARP = r"""
namespace js_cpu {
inline void wave_barrier() noexcept
{
    using namespace hip::detail;
    const std::uint32_t n = count(Tile::this_tile().dimensions());
    if (n == 1)
        return;
    this_tile::has_barrier = true;
    const std::uint32_t f = id(Fiber::this_fiber());
    const std::uint32_t base = f / warpSize * warpSize;
    const std::uint32_t lanes = n - base < (std::uint32_t)warpSize ? n - base : (std::uint32_t)warpSize;
    Fiber::yield(Tile::fibers()[base + (f - base + 1) % lanes]);
}
template <typename T>
inline T shfl_from(T x, std::int32_t src, bool relative, std::int32_t w) noexcept
{
    using namespace hip::detail;
    const std::int32_t lane = id(Fiber::this_fiber()) % warpSize;
    Tile::scratchpad<T>()[lane] = x;
    wave_barrier();
    const std::int32_t in_seg = lane % w;
    const std::int32_t s = relative ? in_seg - src : src % w;
    const T r = (s < 0 || s >= w) ? x : Tile::scratchpad<T>()[lane - in_seg + s];
    wave_barrier();
    return r;
}
}  // namespace js_cpu
#define __shfl(x, s, w) js_cpu::shfl_from((x), (s), false, (w))
#define __shfl_up(x, d, w) js_cpu::shfl_from((x), (std::int32_t)(d), true, (w))
"""

DRIVER = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static std::vector<char> slurp(const char* path, size_t bytes)
{
    std::vector<char> b(bytes ? bytes : 1);
    FILE* f = std::fopen(path, "rb");
    if (!f || std::fread(b.data(), 1, bytes, f) != bytes) {
        std::fprintf(stderr, "read %s\n", path);
        std::exit(2);
    }
    std::fclose(f);
    return b;
}

/* argv: IN OUT N REPS KIND SPIN WAIT BLOCK_EVERY [SEG NSEG] */
int main(int argc, char** argv)
{
    if (argc < 9) return 2;
    const js_size n = std::strtoull(argv[3], 0, 10);
    const unsigned reps = std::strtoul(argv[4], 0, 10);
    const js_u32 kind = std::strtoul(argv[5], 0, 10), spin = std::strtoul(argv[6], 0, 10);
    const js_u32 wait = std::strtoul(argv[7], 0, 10), block_every = std::strtoul(argv[8], 0, 10);
    const js_size tiles = n ? (n + PLAN_TILE - 1) / PLAN_TILE : 1;
    js_in* in = nullptr; js_val* out = nullptr; js_u32* ctrl = nullptr;
    hipMalloc((void**)&in, n * sizeof(js_in) + 64);
    hipMalloc((void**)&out, (size_t)reps * n * sizeof(js_val) + 64);
    hipMalloc((void**)&ctrl, PLAN_HEADER + tiles * PLAN_PER_TILE);
    hipMemset(ctrl, 0, PLAN_HEADER + tiles * PLAN_PER_TILE);  /* a new scratch: zeroed, epoch 0 */
    std::vector<char> host = slurp(argv[1], n * sizeof(js_in));
    std::memcpy(in, host.data(), n * sizeof(js_in));
    void* seg = nullptr; js_size nseg = 0; js_size* first = nullptr; js_u32* alarm = nullptr;
    if (argc > 10) {
        nseg = std::strtoull(argv[10], 0, 10);
        size_t bytes = SEG_OFFSETS ? (nseg + 1) * sizeof(js_size) : n;
        std::vector<char> s = slurp(argv[9], bytes);
        hipMalloc(&seg, bytes + 64);
        std::memcpy(seg, s.data(), bytes);
    }
    hipMalloc((void**)&alarm, 2 * sizeof(js_u32));
    hipMemset(alarm, 0, 2 * sizeof(js_u32));
    for (unsigned r = 0; r < reps; ++r) {
        const js_u32 epoch = r + 1;
        js_val* dst = out + (size_t)r * n;
#if SEG_OFFSETS
        if (!first) hipMalloc((void**)&first, (tiles + 1) * sizeof(js_size));
        const js_size m = (tiles > nseg ? tiles : nseg) + 1;
        hipLaunchKernelGGL(js_seg_first, dim3((m + JS_T - 1) / JS_T), dim3(JS_T), 0, 0,
                           (const js_size*)seg, nseg, n, first, alarm, alarm + 1, 1u);
#endif
#if JS_STATS
        std::memset(ctrl, 0, JS_CTRL_CARRY * 4);  /* the counters, as a counting launch does */
#endif
        hipLaunchKernelGGL(js_chained, dim3(tiles), dim3(JS_T), 0, 0, CHAINED_ARGS);
        hipDeviceSynchronize();
#if JS_STATS
        std::printf("[spins %u steps %u fallbacks %u insertions %u] ", ctrl[JS_CTRL_SPINS],
                    ctrl[JS_CTRL_STEPS], ctrl[JS_CTRL_FALLBACKS], ctrl[JS_CTRL_INSERTIONS]);
#endif
    }
    std::printf("ctrl tile=%u deadlock=%u alarm=%u,%u\n", ctrl[JS_CTRL_TILE], ctrl[JS_CTRL_DEADLOCK],
                alarm[0], alarm[1]);
    FILE* f = std::fopen(argv[2], "wb");
    std::fwrite(out, sizeof(js_val), (size_t)reps * n, f);
    std::fclose(f);
    return 0;
}
"""


def plan_of(dtype: str, variant: str, kind: str, seg: str, stats: bool) -> tuple[str, L.LaunchPlan, object]:
    """The program's text as jitscan.source renders it for DEVICE (``stats``: the counting
    form of the same spec), its launch plan and launch arguments (from the same spec and
    launch jitscan.source renders)."""
    text = jitscan.source(dtype, kind=kind, variant=variant, segmented=seg, device=DEVICE)
    info = targets.target(DEVICE)
    spec = tuning.spec_for(info, variant=variant, kind=kind, dtype=lookup(dtype), monoid=resolve("add"),
                           segmented=seg, stats=stats)  # fmt: skip
    variants.get(variant).check(spec)
    if stats:
        text = variants.get(variant).source(spec, "cuda")
    else:
        assert variants.get(variant).source(spec, "cuda") in text  # the same program
    launch = tuning.launch_for(info, variant=variant, kind=kind)
    return text, chained.launch_plan(spec), launch


def chained_args(plan: L.LaunchPlan, seg: str) -> str:
    """js_chained's arguments in the plan's slot order, as the driver names them."""
    consts = iter(("spin", "wait", "block_every", "(js_u32)0"))  # chained.constants: row_tiles 0
    per_slot = {
        L.ARG_SRC: "(const js_in*)in, (js_size)0",
        L.ARG_DST: "dst, (js_size)0",
        L.ARG_N: "n",
        L.ARG_SCRATCH: "ctrl",
        L.ARG_CODE: "kind",
        L.ARG_EPOCH: "epoch",
        L.ARG_SEG: "(const js_size*)seg" if seg == "offsets" else "(const js_u8*)seg",
        L.ARG_FIRST: "(const js_size*)first",
        L.ARG_SEGN: "nseg" if seg == "offsets" else "(js_size)0",  # flags: row length 0
    }
    out = []
    for s in plan.slots:
        if s == L.ARG_CONST:
            out.append(next(consts))
        elif s == L.ARG_CARRY:
            out.append("(js_size)0")
        else:
            out.append(per_slot[s])
    return ", ".join(out)


def compile_level(cxx: str, inc: str, text: str, level: str, driver: str, work: Path) -> tuple[int, str]:
    """Compiles (and with a driver, links) ``text`` at ``level``; (exit status, errors)."""
    shim = {"raw": "", "defines": DEFINES, "warp": DEFINES + WARP}[level]
    src = work / f"{level}.cpp"
    head = "#include <hip/hip_runtime.h>\n#include <atomic>\n#include <thread>\n"
    src.write_text(head + shim + text + driver)
    cmd = [cxx, "-std=c++17", "-O2", "-DNDEBUG", "-w", f"-I{inc}", str(src), "-o", str(work / level)]
    cmd += ["-ltbb", "-lpthread"] if driver else ["-fsyntax-only"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    errors = [ln.split("error: ", 1)[1] for ln in run.stderr.splitlines() if "error: " in ln]
    return run.returncode, "; ".join(dict.fromkeys(errors))


def inputs(dtype: str, seg: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
    """An input of ``n`` elements, and the segments' array (int64 offsets or uint8 flags)."""
    x = rng.integers(-100, 100, n).astype(dtype) if dtype != "float64" else rng.standard_normal(n)
    if seg == "offsets":
        cuts = np.sort(rng.integers(0, n + 1, max(n // 300, 1)))
        return x, np.concatenate([[0], cuts, [n]]).astype(np.int64)
    if seg == "flags":
        return x, (rng.random(n) < 1 / 300).astype(np.uint8)
    return x, None


def expected(x: np.ndarray, kind: str, seg: str, s: np.ndarray | None) -> np.ndarray:
    """NumPy's answer: an inclusive or exclusive sum, restarting at each segment."""
    c = np.cumsum(x, dtype=x.dtype)
    if seg:
        starts = s[:-1] if seg == "offsets" else np.flatnonzero(s)
        head = np.zeros(len(x), bool)
        head[starts[starts < len(x)]] = True
        head[:1] = True
        ids = np.cumsum(head) - 1
        before = np.concatenate([[0], c])[np.flatnonzero(head)]  # the sum before each segment
        c = c - before[ids].astype(x.dtype)
    if kind == "exclusive":
        c = c - x
    return c


def command(exe: Path, work: Path, n: int, reps: int, launch, block_every: int, seg: np.ndarray | None,
            nseg: int, cpus: int) -> list[str]:  # fmt: skip
    """The driver's command line (on the first ``cpus`` CPUs, 0: all; TBB's threads follow)."""
    argv = ["taskset", "-c", f"0-{cpus - 1}"] if cpus else []
    argv += [str(exe), str(work / "in.bin"), str(work / "out.bin"), str(n), str(reps), str(launch.kind_code),
             str(launch.spin_limit), str(launch.wait_limit), str(block_every)]  # fmt: skip
    if seg is not None:
        seg.tofile(work / "seg.bin")
        argv += [str(work / "seg.bin"), str(nseg)]
    return argv


def run_case(
    exe: Path, work: Path, dtype: str, kind: str, seg: str, launch, block_every: int, cpus: int
) -> list[str]:
    """Runs ``exe`` for each of SIZES; one cell per size: ok, or what went wrong."""
    rng = np.random.default_rng(1)
    cells = []
    for n in SIZES:
        x, s = inputs(dtype, seg, n, rng)
        x.tofile(work / "in.bin")
        nseg = len(s) - 1 if seg == "offsets" else 0
        argv = command(exe, work, n, REPS, launch, block_every, s, nseg, cpus)
        t = time.perf_counter()
        try:
            run = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            cells.append(f"n={n}: hung (> {TIMEOUT} s)")
            continue
        took = time.perf_counter() - t
        if run.returncode:
            cells.append(f"n={n}: exit {run.returncode} {run.stderr.strip()[-200:]}")
            continue
        got = np.fromfile(work / "out.bin", dtype=x.dtype).reshape(REPS, n)
        want = expected(x, kind, seg, s)
        bad = [
            int(np.count_nonzero(~np.isclose(g, want, rtol=1e-9, atol=1e-9))) if dtype == "float64"
            else int(np.count_nonzero(g != want))
            for g in got
        ]  # fmt: skip
        status = "ok" if not any(bad) else f"wrong {bad} of {n}"
        cells.append(f"n={n}: {status} ({took:.2f} s; {run.stdout.strip()})")
    if seg == "offsets":  # bad offsets (the last is not n): the pre-pass raises the alarm
        n = 100_000
        x, s = inputs(dtype, seg, n, rng)
        s[-1] = n - 1
        x.tofile(work / "in.bin")
        run = subprocess.run(command(exe, work, n, 1, launch, block_every, s, len(s) - 1, cpus),
                             capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip
        want = 0xFFFFFFFF - ((len(s) - 1) * 4 + 2)  # js_check_offset's word: rule 2 at s = nseg
        cells.append(f"bad offsets (n={n}): {run.stdout.strip()}; expected alarm={want},1")
    return cells


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("include")
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--work", default="/tmp/jitscan-hipcpu")
    ap.add_argument("--only", default="")
    ap.add_argument("--levels", default="raw,defines,warp")
    ap.add_argument("--cpus", type=int, default=0, help="run on CPUs 0..N-1 (TBB's threads follow)")
    a = ap.parse_args()
    root = Path(a.work)
    only = set(a.only.split(",")) - {""}
    print(f"jitscan.source(..., device={DEVICE!r}); {a.cxx}; HIP-CPU at {a.include}; sizes {SIZES}; {REPS} "
          f"launches a process; CPUs: {a.cpus or 'all'}")  # fmt: skip
    for name, dtype, variant, kind, seg in CASES:
        if only and name not in only:
            continue
        text, plan, launch = plan_of(dtype, variant, kind, seg, name == "counting")
        work = root / name
        work.mkdir(parents=True, exist_ok=True)
        (work / "program.cu").write_text(text)
        defs = (
            f"#define PLAN_TILE {plan.tile}\n#define PLAN_HEADER {plan.header}\n"
            f"#define PLAN_PER_TILE {plan.per_tile}\n#define SEG_OFFSETS {int(seg == 'offsets')}\n"
            f"#define CHAINED_ARGS {chained_args(plan, seg)}\n"
        )
        print(f"\n## {name}: {dtype} {variant} {kind} {seg or 'flat'}; tile {plan.tile}, scratch "
              f"{plan.header} + {plan.per_tile}/tile, slots {plan.slots}")  # fmt: skip
        for level in a.levels.split(","):
            rc, errors = compile_level(a.cxx, a.include, text, level, "", work)
            print(f"- {level}: compiles: {'yes' if rc == 0 else 'no: ' + errors[:600]}")
            if rc:
                continue
            rc, errors = compile_level(a.cxx, a.include, text, level, defs + DRIVER, work)
            if rc:
                print(f"  driver: no: {errors[:600]}")
                continue
            blockings = (0, 3) if variant == "fallback" else (0,)
            for block_every in blockings:
                sys.stdout.flush()
                cells = run_case(work / level, work, dtype, kind, seg, launch, block_every, a.cpus)
                print(f"  block_every={block_every}:")
                for c in cells:
                    print(f"    {c}")


if __name__ == "__main__":
    main()
