"""Experimental look-back walks, built from patched kernel text and timed against the shipped one.

Usage:
  python scripts/walk_ab.py check         render every patch and compile it with nvcc (no GPU)
  python scripts/walk_ab.py run [LOG2N..] on a CUDA GPU: check each patch's results against the
                                          shipped kernels, then time them in turns (default 20-23)
  python scripts/walk_ab.py run --backend opencl 14   the same on PoCL, to smoke-test this script

The library ships only kernels that ran on the GPU; a change to the walk that could not be
measured yet waits here as text replacements of jitscan/kernels/src, so that one device call
can try it. Patches:
  nearest  the warp walk takes a nearest predecessor that ends the walk by itself (INCLUSIVE,
           or a segment head: most segmented look-backs) without its shuffle trees;
  wide     a window of several subgroups (lookback_width 64 or 128 with 32-lane warps): each
           subgroup finds its stop and combines its part in registers, two barriers join the
           parts. Today such windows take the serial walk.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

import jitscan.kernels as kernels
from jitscan import Monoid, backends, tuning
from jitscan.dtypes import lookup
from jitscan.monoid import resolve

NEAREST = [
    (
        "lookback.h",
        """    if (JS_SHFL_IDX_U32(key, 0u) == 0u)
        return lane == 0 ? js_walk_advance(w, cur, 0u, JS_IDENTITY, 0, ctrl, st) : JS_LB_LOOK;""",
        """    js_u32 key0 = JS_SHFL_IDX_U32(key, 0u);
    if (key0 <= 1u)  /* other lanes' keys are at least 2 */
        return lane == 0 ? js_walk_advance(w, cur, key0, v, (int)key0, ctrl, st) : JS_LB_LOOK;""",
    )
]

_WIDE_FN = """#elif JS_WIDE_WALK
/* A window of JS_LB_W / JS_SG subgroups: each finds its first stop and combines its part
 * in registers; two barriers join the parts. Call with every thread. */
JS_DEVICE_FN js_u32 js_window_look_wide(JS_GLOBAL js_sw* state, js_u32 epoch, js_i64 at, js_i64* cur,
                                        js_walk* w, JS_GLOBAL js_u32* ctrl, js_stats* st,
                                        JS_LOCAL_PTR js_shared* sh)
{
    js_u32 lid = JS_LID, lane = JS_LANE, sg = JS_SG_ID;
    T v = JS_IDENTITY;
    js_u32 key = 2u * JS_LB_W;
    /* JS_LB_W is a multiple of JS_SG: whole subgroups take this branch */
    if (lid < JS_LB_W) {
        js_u32 f = JS_NOT_READY;
        if (at - (js_i64)lid >= w->stop)
            f = js_read(state, epoch, (js_u32)(at - (js_i64)lid), &v);
        key = f == JS_NOT_READY ? 2u * lid
              : (f == JS_INCLUSIVE || JS_PREFIX_DONE(v)) ? 2u * lid + 1u
              : 2u * JS_LB_W;
#pragma unroll
        for (js_u32 d = 1; d < JS_SG; d <<= 1) {
            js_u32 other = JS_SHFL_IDX_U32(key, lane ^ d);
            key = other < key ? other : key;
        }
        if (lane == 0)
            sh->lb_key[sg] = key;
    }
    JS_BARRIER();
    key = 2u * JS_LB_W;
    for (js_u32 j = 0; j < JS_LB_W / JS_SG; ++j)
        key = sh->lb_key[j] < key ? sh->lb_key[j] : key;
    /* uniform: a spin, or the nearest predecessor ends the walk by itself */
    if (key <= 1u)
        return lid == 0 ? js_walk_advance(w, cur, key, v, (int)key, ctrl, st) : JS_LB_LOOK;
    js_u32 k = (key + 1u) / 2u;
    if (lid < JS_LB_W) {
        T s = lid < k ? v : JS_IDENTITY;
#pragma unroll
        for (js_u32 d = 1; d < JS_SG; d <<= 1) {
            T farther = JS_SHFL_IDX(s, (lane + d) & (JS_SG - 1u));
            if (lane + d < JS_SG)
                s = js_op(farther, s);
        }
        if (lane == 0)
            sh->lb_part[sg] = s;
    }
    JS_BARRIER();
    if (lid != 0)
        return JS_LB_LOOK;
    T taken = sh->lb_part[0];
    for (js_u32 j = 1; j * JS_SG < k; ++j)
        taken = js_op(sh->lb_part[j], taken);
    return js_walk_advance(w, cur, k, taken, (int)(key & 1u), ctrl, st);
}
#else
/* Threads below JS_LB_W: read one predecessor"""

WIDE = [
    (
        "tile.h",
        "#define JS_WARP_WALK (JS_HAS_SHUFFLE && JS_LB_W == JS_SG)\n",
        "#define JS_WARP_WALK (JS_HAS_SHUFFLE && JS_LB_W == JS_SG)\n"
        "#define JS_WIDE_WALK (JS_HAS_SHUFFLE && JS_LB_W > JS_SG)\n",
    ),
    (
        "tile.h",
        "#if !JS_WARP_WALK\n    T lb_val[JS_LB_W];",
        "#if JS_WIDE_WALK\n    js_u32 lb_key[JS_LB_W / JS_SG];\n    T lb_part[JS_LB_W / JS_SG];\n"
        "#elif !JS_WARP_WALK\n    T lb_val[JS_LB_W];",
    ),
    ("lookback.h", "#else\n/* Threads below JS_LB_W: read one predecessor", _WIDE_FN),
    (
        "chained.c",
        "#else\n            js_window_read(state, epoch, sh.lb_cur, &sh);",
        """#elif JS_WIDE_WALK
            js_u32 next = js_window_look_wide(state, epoch, sh.lb_cur, &cur, &w, ctrl, &st, &sh);
            if (lid == 0) {
                sh.lb_ctrl[next_slot] = next;
                sh.lb_cur = cur;
            }
#else
            js_window_read(state, epoch, sh.lb_cur, &sh);""",
    ),
]

PATCHES = {"shipped": [], "nearest": NEAREST, "wide": NEAREST + WIDE}

#: a non-commutative monoid: the walk must combine predecessors in order
FFILL = Monoid("ffill", combine="b != 0 ? b : a", identity=0)

#: affine maps x -> m x + c (mod 2^32) packed as m << 32 | c, composed left to right: every
#: element and its position matter, so a dropped, repeated or reordered predecessor shows
AFFINE = Monoid(
    "affine",
    combine="(((a >> 32) * (b >> 32)) << 32)"
    " | (((a & 0xffffffffu) * (b >> 32) + (b & 0xffffffffu)) & 0xffffffffu)",
    identity=1 << 32,
)


def affine_input(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random affine maps with odd multipliers (invertible: no information is lost)."""
    m = rng.integers(0, 1 << 31, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    return (m << np.uint64(32)) | rng.integers(0, 1 << 32, n, dtype=np.uint64)


@contextlib.contextmanager
def patched(name: str):
    """Kernel sources with patch ``name`` applied while the block renders programs."""
    shipped = kernels._read

    def read(file: str) -> str:
        text = shipped(file)
        for target, old, new in PATCHES[name]:
            if target == file:
                if text.count(old) != 1:
                    raise RuntimeError(f"patch {name!r} no longer applies to {file}: {old[:60]!r}")
                text = text.replace(old, new)
        return text

    kernels._read = read
    try:
        yield
    finally:
        kernels._read = shipped


def spec(info, dtype="int32", op="add", n=None, variant="fallback", segmented="", **knobs):
    return tuning.spec_for(
        info, variant=variant, kind="inclusive", dtype=lookup(dtype), monoid=resolve(op), n=n,
        segmented=segmented, **knobs,
    )  # fmt: skip


def check() -> None:
    """Every patch renders and compiles with nvcc for sm_90; prints js_chained's resources."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        sys.exit("nvcc not found")
    info = backends.typical_device("cupy")
    cases = [
        dict(),
        dict(lookback_width=64),
        dict(lookback_width=128),
        dict(dtype="float64", op=FFILL, variant="lookback", tile_state="split", lookback_width=64),
        dict(segmented="flags"),
        dict(segmented="flags", lookback_width=64),
        dict(dtype="float64", segmented="offsets", lookback_width=128),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name in PATCHES:
            for case in cases:
                sp = spec(info, **case)
                with patched(name):
                    src = kernels.render(sp, "cuda")
                cu = Path(tmp, "k.cu")
                cu.write_text(src)
                res = subprocess.run(
                    [nvcc, "-arch=sm_90", "--fmad=false", "-c", str(cu), "-o", str(cu.with_suffix(".o")),
                     "-Xptxas", "-v"],
                    capture_output=True, text=True,
                )  # fmt: skip
                if res.returncode:
                    sys.exit(f"{name} {case}: nvcc failed\n{res.stderr}")
                lines = res.stderr.splitlines()
                at = next(i for i, line in enumerate(lines) if "for js_chained" in line)
                used = next(line for line in lines[at:] if "Used" in line).split(":", 1)[1].strip()
                label = {k: getattr(v, "name", v) for k, v in case.items()}
                print(f"{name:8} {label}: {used}")


def run(backend: str, exps: list[int], small: int, big: int) -> None:
    """Results of every patch against the shipped kernels, then times in turns.

    ``backend`` "cupy" on the GPU (what the patches are for); "opencl" on PoCL only smoke-tests
    this script (no shuffles there: every patch takes the serial walk).
    """
    from seg_bench import heads_from_offsets, interleaved, random_offsets

    from jitscan import bench, execute

    timer = bench.Timer(backend)
    b, q, info = timer.backend, timer.queue, timer.info
    # one backend object per patch: each keeps its own compiled programs, which execute.run
    # finds in its cache (a miss there would compile the shipped text: see the check below)
    builds = {name: type(b)() for name in PATCHES}
    rng = np.random.default_rng(9)

    def compiled(name, sp):
        with patched(name):
            builds[name].program(sp, q)
        return sp

    def agree(sp, x, n, check=False, stats=False, **seg):
        """Every patch gives the shipped kernels' result; with ``stats``, prints how far
        the tiles walked back (a window of several subgroups is tried only by long walks)."""
        outs, steps = {}, {}
        for name in PATCHES:
            y = b.empty((n,), x.dtype, q)
            execute.run(builds[name], q, compiled(name, sp), x, y, n, check=check, **seg)
            outs[name] = b.to_host(y)
            if stats:
                st = execute.run(builds[name], q, compiled(name, replace(sp, stats=True)), x, y, n, **seg)
                steps[name] = round(st["lookback_steps"] / st["tiles"], 1)
        bad = [name for name in PATCHES if not np.array_equal(outs[name], outs["shipped"])]
        assert not bad, f"{bad} differ from the shipped kernels for {sp}"
        if stats:
            print(f"  n {n}, window {sp.lookback_width}: look-back steps per tile {steps}", flush=True)

    def widths(n, segmented=""):
        threads = tuning.geometry(info, lookup("int32"), n, segmented)["threads"]
        return [w for w in (32, 64, 128) if w <= threads]

    # results first: blocked and not, windows of 1 to 4 subgroups, order-sensitive monoids,
    # segments short (walks end at the nearest tile) and long (walks cross many tiles)
    n = small + 5
    x = {
        "int32": b.to_device(rng.integers(-3, 4, n, dtype=np.int32), q),
        "uint64": b.to_device(affine_input(rng, n), q),
    }
    for width in widths(n):
        for dtype, op in (("int32", "add"), ("uint64", AFFINE)):
            for blocking in (None, 8):
                knobs = dict(lookback_width=width, simulate_blocking=blocking, spin_limit=2)
                agree(spec(info, dtype, op, n, **knobs), x[dtype], n)
            agree(spec(info, dtype, op, n, "lookback", lookback_width=width), x[dtype], n, check=True)
    for mean in (100, 50_000):
        heads = b.to_device(heads_from_offsets(random_offsets(rng, n, mean), n), q)
        for width in widths(n, "flags"):
            for dtype, op in (("int32", "add"), ("uint64", AFFINE)):
                sp = spec(info, dtype, op, n, segmented="flags", lookback_width=width)
                agree(sp, x[dtype], n, heads=heads)
    print("results: every patch equals the shipped kernels", flush=True)

    def line(label, n, fns):
        before = {name: be.compiled_count for name, be in builds.items()}
        t = interleaved(timer, fns, rounds=6, reps=15)
        # every timed launch found its patched program in its backend's cache
        assert before == {name: be.compiled_count for name, be in builds.items()}, "a timed run compiled"
        base = t["shipped"]
        cells = [f"{name} {n / s / 1e9:.1f} ({base / s:.3f}x)" for name, s in t.items()]
        print(f"{label}: " + " | ".join(cells), flush=True)

    def runner(name, sp, x, y, n, **seg):
        be = builds[name]
        return lambda i: execute.run(be, q, sp, x[i % len(x)], y, n, check=False, **seg)

    for e in exps:
        n = 1 << e
        ins = timer.inputs(n, "int32", rng)
        out = b.empty((n,), np.dtype(np.int32), q)
        fns = {}
        contenders = [("shipped", 32), ("nearest", 32), ("shipped", 64), ("wide", 64)]
        contenders += [("shipped", 128), ("wide", 128)]
        checked = set()
        for name, width in contenders:
            if width not in widths(n):
                continue
            sp = spec(info, n=n, lookback_width=width)
            if width not in checked:
                agree(sp, ins[0], n, stats=True)  # the shape timed here, checked first
                checked.add(width)
            fns[name if width == 32 else f"{name}{width}"] = runner(name, compiled(name, sp), ins, out, n)
        line(f"int32 2^{e}", n, fns)
    n = big
    x = [b.to_device(rng.integers(-1000, 1000, n, dtype=np.int32), q)]
    y = b.empty((n,), np.dtype(np.int32), q)
    for mean in (10, 1000):
        heads = b.to_device(heads_from_offsets(random_offsets(rng, n, mean), n), q)
        fns = {}
        for name in ("shipped", "nearest"):
            sp = compiled(name, spec(info, n=n, segmented="flags"))
            fns[name] = runner(name, sp, x, y, n, heads=heads)
        line(f"segmented flags 2^{n.bit_length() - 1} mean {mean}", n, fns)


def main() -> None:
    args = sys.argv[1:]
    mode = args.pop(0) if args else "check"
    if mode == "check":
        check()
        return
    backend = args.pop(1) if len(args) > 1 and args[0] == "--backend" else "cupy"
    if args and args[0] == "--backend":
        args.pop(0)
    exps = [int(a) for a in args] or [20, 21, 22, 23]
    if backend == "cupy":
        run(backend, exps, 1 << 22, 1 << 28)
    else:
        run(backend, exps, 1 << 14, 1 << 18)


if __name__ == "__main__":
    main()
