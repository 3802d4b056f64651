"""Contracts between the C kernels and the Python that launches them, checked without a device.

The C side is the rendered source (and ``kernels/src``); the Python side is each
variant's entry points and signatures, the control-word layout of ``tile_state.py``,
``KIND_CODES`` and the registry. A kernel compiled with parameters Python does not pass
fails only at launch, on a device, or worse silently: these tests keep both in step.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest
from conftest import DTYPES

import jitscan
from jitscan import backends, kernels, variants
from jitscan.dtypes import lookup
from jitscan.kernels import lanes, tile_state
from jitscan.kernels.spec import (
    CARRY_BYTES,
    KIND_CARRY,
    KIND_CODES,
    KIND_STREAM,
    SEGMENTED,
    TILE_STATES,
    ScanSpec,
)
from jitscan.operators import resolve
from jitscan.plan import tuning
from jitscan.variants import CHAINED
from jitscan.variants.chained import Chained

#: each dialect with the backend whose typical device renders it
DIALECTS = {backends.get(name).dialect: name for name in backends.names()}
#: every kernel source file (headers and kernels)
SOURCES = tuple(sorted(f.name for f in (Path(kernels.__file__).parent / "src").iterdir()))

_CPP = shutil.which("cpp")
_GCC = shutil.which("gcc")
PREPROCESSOR = [_CPP] if _CPP else [_GCC, "-E"] if _GCC else None
needs_cpp = pytest.mark.skipif(
    PREPROCESSOR is None, reason="neither cpp nor gcc is installed to expand the kernels' #if and macros"
)


def spec_of(variant: str, dialect: str, kind: str = "inclusive", **knobs) -> ScanSpec:
    info = backends.typical_device(DIALECTS[dialect])
    knobs.setdefault("dtype", lookup("int32"))
    knobs.setdefault("monoid", resolve("add"))
    return tuning.spec_for(info, variant=variant, kind=kind, **knobs)


def defines(text: str) -> dict[str, str]:
    return dict(re.findall(r"^[ \t]*#define[ \t]+(\w+)[ \t]+(.*?)[ \t]*$", text, re.M))


def code_of(text: str) -> str:
    """C text without its comments."""
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", " ", text, flags=re.S))


# -- (a) entry points and their parameters ---------------------------------------------


def program_cases() -> list:
    """Every program a variant compiles: each segmented mode it has, the staged reduction, rows."""
    cases = []
    for name, v in variants.REGISTRY.items():
        for mode in SEGMENTED if v.segments_ok else ("",):
            cases.append(pytest.param(name, mode, False, False, id=f"{name}-{mode or 'plain'}"))
        if v.segments_ok:
            cases.append(pytest.param(name, "offsets", True, False, id=f"{name}-offsets-stages_tile"))
        if name in CHAINED:
            cases.append(pytest.param(name, "", False, True, id=f"{name}-row_tiles"))
    return cases


@cache
def compiled_kernels(source: str) -> dict[str, tuple[bool, tuple[str, ...]]]:
    """Entry point -> (declared JS_KERNEL_SINGLE, C parameters) of a rendered source, as compiled.

    The preprocessor expands JS_SEG_PARAMS and settles every #if; the two entry-point
    macros are renamed beforehand (outside directives), so that they survive expansion
    and stay told apart (OpenCL defines one as the other).
    """
    lines = []
    for line in source.splitlines():
        if not line.lstrip().startswith("#"):
            line = re.sub(r"\bJS_KERNEL_SINGLE\b", "JS_ENTRY_SINGLE", line)
            line = re.sub(r"\bJS_KERNEL\b", "JS_ENTRY_KERNEL", line)
        lines.append(line)
    res = subprocess.run(
        [*PREPROCESSOR, "-P", "-w", "-undef", "-x", "c", "-"],
        input="\n".join(lines),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    out = res.stdout
    found = re.findall(r"\bJS_ENTRY_(SINGLE|KERNEL)\s+void\s+(\w+)\s*\(([^)]*)\)", out)
    # a kernel the pattern missed, or one declared without the dialect's macro
    assert len(found) == len(re.findall(r"\bJS_ENTRY_(?:SINGLE|KERNEL)\b", out))
    assert not re.search(r"\b__kernel\b|\b__global__\b", out), "a kernel not declared through JS_KERNEL"
    kernels_ = {}
    for macro, name, params in found:
        assert name not in kernels_, f"{name} declared twice"
        kernels_[name] = (macro == "SINGLE", tuple(" ".join(p.split()) for p in params.split(",")))
    return kernels_


def kind_of(param: str) -> str:
    """The launch argument kind a C parameter takes: pointers are buffers, then by type."""
    if "*" in param:
        return "buf"
    ctype = param.split()[-2]
    return {"js_size": "size", "js_u32": "u32"}.get(ctype, f"unmapped C type {ctype!r}")


def program(variant: str, mode: str, stages: bool, row_tiles: bool, dialect: str):
    kind = "reduce" if stages else "inclusive"
    spec = spec_of(variant, dialect, kind, segmented=mode, row_tiles=row_tiles)
    assert spec.stages_tile == stages
    v = variants.get(variant)
    return spec, v, compiled_kernels(v.source(spec, dialect))


@needs_cpp
@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("variant", "mode", "stages", "row_tiles"), program_cases())
def test_the_kernels_compiled_are_exactly_the_entry_points_python_can_launch(
    variant, mode, stages, row_tiles, dialect
):
    spec, v, compiled = program(variant, mode, stages, row_tiles, dialect)
    assert sorted(compiled) == sorted(v.entries(spec))
    assert sorted(v.build(spec).entries) == sorted(compiled)


@needs_cpp
@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("variant", "mode", "stages", "row_tiles"), program_cases())
def test_each_entry_points_c_parameters_map_one_to_one_onto_its_python_signature(
    variant, mode, stages, row_tiles, dialect
):
    spec, v, compiled = program(variant, mode, stages, row_tiles, dialect)
    entries = v.entries(spec)
    for name, (_, params) in compiled.items():
        assert tuple(kind_of(p) for p in params) == entries.get(name), f"{name}({', '.join(params)})"
        if dialect == "opencl":
            # a pointer parameter without an address space would be private memory
            assert all("__global" in p for p in params if "*" in p), name


@needs_cpp
@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("variant", "mode", "stages", "row_tiles"), program_cases())
def test_the_single_workgroup_entry_points_are_exactly_those_declared_js_kernel_single(
    variant, mode, stages, row_tiles, dialect
):
    spec, v, compiled = program(variant, mode, stages, row_tiles, dialect)
    assert {name for name, (single, _) in compiled.items() if single} == v.single
    assert v.build(spec).single == v.single


# -- (b) the control words -----------------------------------------------------------


def rendered_defines() -> dict[str, str]:
    """The defines of a rendered chained program, comments left out (the control words are rendered)."""
    return defines(code_of(variants.source(spec_of("fallback", "cuda"), "cuda")))


def ctrl_defines() -> dict[str, int]:
    return {k: int(v) for k, v in rendered_defines().items() if k.startswith("JS_CTRL_")}


def test_the_control_word_layout_the_kernels_see_is_tile_state_pys():
    ctrl = ctrl_defines()
    assert ctrl["JS_CTRL_WORDS"] == tile_state.CTRL_WORDS
    assert ctrl["JS_CTRL_TILE"] == tile_state.CTRL_TILE
    assert ctrl["JS_CTRL_DEADLOCK"] == tile_state.CTRL_DEADLOCK
    words = [v for k, v in ctrl.items() if k != "JS_CTRL_WORDS"]
    assert len(set(words)) == len(words) and all(0 <= w < tile_state.CTRL_WORDS for w in words)


def test_every_control_word_the_kernels_name_is_rendered():
    used = {name for src in SOURCES for name in re.findall(r"\bJS_CTRL_\w+", code_of(kernels.read(src)))}
    assert used <= set(ctrl_defines())


def test_the_counters_are_reported_in_the_order_chained_c_adds_them_to_the_control_words():
    updates = re.findall(r"JS_ATOMIC_ADD_U32\(ctrl \+ (JS_CTRL_\w+), st\.(\w+)\)", kernels.read("chained.c"))
    ctrl = ctrl_defines()
    assert [ctrl[define] for define, _ in updates] == [
        tile_state.CTRL_STATS + i for i in range(len(tile_state.STAT_NAMES))
    ]
    for (define, field), name in zip(updates, tile_state.STAT_NAMES, strict=True):
        # JS_CTRL_SPINS takes st.spins, reported as "spins" ("lookback_steps" counts st.steps)
        assert define == f"JS_CTRL_{field.upper()}" and name.split("_")[-1] == field
    assert tile_state.CTRL_STATS + len(tile_state.STAT_NAMES) <= tile_state.CTRL_WORDS


def test_every_counter_the_kernel_keeps_is_added_to_the_control_words():
    struct = re.search(r"typedef struct \{\s*js_u32 ([\w, ]+);\s*\} js_stats;", kernels.read("lookback.h"))
    fields = [f.strip() for f in struct.group(1).split(",")]
    added = re.findall(r"JS_ATOMIC_ADD_U32\(ctrl \+ JS_CTRL_\w+, st\.(\w+)\)", kernels.read("chained.c"))
    assert sorted(added) == sorted(fields)


# -- (c) kind codes --------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("variant", variants.VARIANTS)
def test_every_rendered_source_defines_the_kind_codes_python_passes(variant, dialect):
    src = variants.get(variant).source(spec_of(variant, dialect), dialect)
    codes = {
        k.removeprefix("JS_KIND_").lower(): int(v)
        for k, v in defines(src).items()
        if k.startswith("JS_KIND_")
    }
    assert codes == KIND_CODES


@pytest.mark.parametrize("name", SOURCES)
def test_kernels_compare_the_kind_only_through_its_js_kind_names(name):
    code = code_of(kernels.read(name))
    names = {f"JS_KIND_{kind.upper()}" for kind in KIND_CODES}
    for m in re.finditer(r"\bkind\b", code):
        before, after = code[: m.start()].rstrip(), code[m.end() :].lstrip()
        if before.endswith("js_u32"):
            continue  # the parameter
        if re.match(r"(&|&=\s*~)\s*\(?\s*JS_(CARRY|STREAM|CARRY_ARGS)_BIT\b", after):
            continue  # a carry (in the arguments), stores around the cache: bits read and cleared first
        cmp = re.match(r"(==|!=)\s*(\w+)", after)
        assert cmp and cmp.group(2) in names, f"{name}: kind used as {code[m.start() : m.end() + 30]!r}"
    assert not re.search(r"\b\d+\s*[!=]=\s*kind\b", code)


def test_the_carry_and_stream_bits_python_sets_are_the_ones_the_kernel_reads():
    tile = rendered_defines()
    assert int(tile["JS_CARRY_BIT"].rstrip("u")) == KIND_CARRY
    assert int(tile["JS_STREAM_BIT"].rstrip("u")) == KIND_STREAM
    assert not (KIND_CARRY | KIND_STREAM) & max(KIND_CODES.values())
    assert int(tile["JS_CTRL_CARRY"]) == tile_state.CTRL_CARRY
    assert int(tile["JS_CTRL_WORDS"]) * 4 - tile_state.CTRL_CARRY * 4 >= CARRY_BYTES


# -- (d) tile-state numbers ------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("encoding", TILE_STATES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_the_prelude_describes_the_descriptors_tile_state_py_sizes(dtype, encoding, dialect):
    spec = spec_of("fallback", dialect, dtype=lookup(dtype), tile_state=encoding)
    src = variants.get("fallback").source(spec, dialect)
    d = defines(src)
    ts = tile_state.of_spec(spec)
    sw = re.search(r"^typedef (\w+) js_sw;", src, re.M).group(1)
    word_bits = {"js_u32": 32, "js_u64": 64}[sw]
    assert word_bits == 8 * ts.word_bytes
    assert int(d["JS_NPARTS"]) == ts.parts
    assert int(d["JS_PART_BITS"]) == ts.part_bits
    assert ts.parts * ts.part_bits == 8 * lookup(dtype).itemsize
    # the tag sits right above the value bits, with head and flag below the epoch
    assert int(d["JS_FLAG_SHIFT"]) == ts.part_bits
    low = re.search(r"tag = epoch << (\d+) \|", src)
    assert low and re.search(rf"\(tag >> {low.group(1)}\) == epoch", src)
    assert ts.epoch_limit == (1 << (word_bits - int(d["JS_FLAG_SHIFT"]) - int(low.group(1)))) - 1


# -- (e) registry and JS_FALLBACK ------------------------------------------------------


def test_the_chained_variants_are_exactly_those_whose_source_defines_js_fallback():
    values = {}
    for name, v in variants.REGISTRY.items():
        src = v.source(spec_of(name, "cuda"), "cuda")
        value = defines(src).get("JS_FALLBACK")
        if value is not None:
            values[name] = int(value)
        else:
            # read but never defined, #if JS_FALLBACK would quietly be 0
            assert "JS_FALLBACK" not in code_of(src), name
    assert set(values) == set(CHAINED)
    assert values == {"fallback": 1, "lookback": 0}
    assert {name for name, v in variants.REGISTRY.items() if isinstance(v, Chained)} == set(CHAINED)


# -- (f) which tiles hold their vectors as lanes ----------------------------------------


def lanes_of(variant: str, dialect: str, **knobs) -> str:
    spec = spec_of(variant, dialect, **knobs)
    return defines(variants.get(variant).source(spec, dialect))["JS_LANES"]


@pytest.mark.parametrize("variant", CHAINED)
@pytest.mark.parametrize("op", ["add", "mul", "min", "max", "or"])
@pytest.mark.parametrize("dtype", ["int32", "uint64", "float64"])
def test_a_cpu_tile_holds_its_vectors_as_lanes_for_the_built_in_operators_that_allow_it(variant, op, dtype):
    if op == "or" and dtype == "float64":
        pytest.skip("or is for integers")
    monoid = resolve(op)
    # float min and max do not commute bit for bit (signed zeros, NaNs): a plain scan would
    # reduce them out of order
    plain = "0" if dtype == "float64" and op in ("min", "max") else "1"
    assert lanes_of(variant, "opencl", monoid=monoid, dtype=lookup(dtype)) == plain
    assert lanes_of(variant, "opencl", monoid=monoid, dtype=lookup(dtype), deterministic=True) == plain
    for mode in ("flags", "offsets", "rows"):  # scanned in lanes as they load, reduced in order
        assert lanes_of(variant, "opencl", monoid=monoid, dtype=lookup(dtype), segmented=mode) == "1"


@pytest.mark.parametrize(
    ("variant", "knobs"),
    [
        # a user's operator may not commute, whatever it declares; its lanes would be reordered
        ("fallback", {"monoid": jitscan.Monoid("sum", "a + b", 0, commutative=True)}),
        ("rts", {}),
        ("fallback", {"threads": 4}),  # several threads: the rows are scanned across them
    ],
)
def test_other_tiles_keep_their_values_as_items(variant, knobs):
    assert lanes_of(variant, "opencl", **knobs) == "0"


def test_memcpy_moves_a_cpu_tile_as_the_scans_do():
    # the yardstick of the scans' loads and stores: the same lanes and the same tiles
    memcpy, scan = spec_of("memcpy", "opencl"), spec_of("fallback", "opencl")
    assert memcpy.lanes and scan.lanes
    assert (memcpy.vectors, memcpy.vector_width) == (scan.vectors, scan.vector_width)


def simulate_steps(steps: list, x: list[int], heads: list[bool]) -> list[int]:
    """lanes.h's js_lanes_scan, lane by lane in Python, with add and identity 0."""
    h = list(heads)
    for step in steps:
        moved = [0 if src == "f" else x[j] for src, j in step]
        moved_h = [False if src == "f" else h[j] for src, j in step]
        x = [x[i] if h[i] else moved[i] + x[i] for i in range(len(x))]
        h = [h[i] or moved_h[i] for i in range(len(x))]
    return x


@pytest.mark.parametrize(("v", "chunk"), [(2, 2), (4, 4), (2, 4), (8, 4), (16, 4), (4, 2), (8, 2), (16, 16)])
def test_the_lane_steps_scan_a_vector_and_restart_it_at_its_heads(v, chunk, rng):
    # within each 16-byte run of lanes, then across the runs
    steps = lanes.scan_steps(v, chunk)
    for _ in range(50):
        x = [int(a) for a in rng.integers(-9, 10, v)]
        heads = [bool(a) for a in rng.random(v) < 0.3]
        want, run = [], 0
        for xi, hi in zip(x, heads, strict=True):
            run = xi if hi else run + xi
            want.append(run)
        assert simulate_steps(steps, x, heads) == want
        assert simulate_steps(steps, x, [False] * v) == list(itertools.accumulate(x))


@pytest.mark.parametrize("v", [2, 4, 8, 16])
def test_a_lane_shuffle_and_its_vector_literal_pick_the_same_lanes(v):
    # clang's __builtin_shufflevector where the compiler has it, swizzles elsewhere
    for picks in lanes.scan_steps(v, min(v, 4)) + [[("f", 0)] + [("x", e) for e in range(v - 1)]]:
        shuffle, literal = lanes.lane_picks("M", picks)[1], lanes.lane_picks("M", picks)[3]
        index = [int(i) for i in re.search(r"\(t\)\(f\), (.*)\)$", shuffle).group(1).split(", ")]
        assert index == [j if src == "x" else v + j for src, j in picks]
        swizzles = re.findall(r"\((x|f)\)\.s([0-9a-f]+)", literal)
        assert all(len(lanes) in (1, 2, 3, 4, 8, 16) for _, lanes in swizzles)
        assert [(src, int(c, 16)) for src, lanes in swizzles for c in lanes] == picks


def test_a_cpu_with_wide_vector_registers_holds_32_bytes_a_lane_vector_in_tiles_of_the_same_bytes():
    wide = dataclasses.replace(backends.typical_device("opencl"), vector_bytes=64)  # AVX-512
    for dtype, width in (("int32", 8), ("float32", 8), ("int64", 4), ("float64", 4)):
        d = lookup(dtype)
        for segmented, tile_bytes in (("", tuning.CPU_LANE_BYTES), ("offsets", tuning.CPU_SEG_LANE_BYTES)):
            spec = tuning.spec_for(
                wide, variant="fallback", dtype=d, monoid=resolve("add"), segmented=segmented
            )
            assert (spec.vector_width, spec.tile * d.itemsize) == (width, tile_bytes)
        # the knob is the caller's; 16-byte registers keep 16-byte vectors
        assert spec_of("fallback", "opencl", dtype=d, vector_width=2).vector_width == 2
        assert spec_of("fallback", "opencl", dtype=d).vector_width == 16 // d.itemsize
    # tiles not held in lanes keep 16-byte vectors (float min: its lanes would reorder it)
    spec = tuning.spec_for(wide, variant="fallback", dtype=lookup("float32"), monoid=resolve("min"))
    assert not spec.lanes and spec.vector_width == 4


def test_cuda_refuses_vectors_wider_than_16_bytes():
    spec = spec_of("fallback", "opencl", vector_width=8)  # a one-thread tile, 32 bytes
    assert spec.threads == 1
    variants.source(spec, "opencl")
    with pytest.raises(ValueError, match="CUDA's vectors hold at most 16"):
        variants.source(spec, "cuda")


def test_a_dialect_without_vector_types_has_no_lanes():
    spec = spec_of("fallback", "opencl")  # a one-thread CPU tile, rendered as CUDA C
    assert spec.lanes
    assert defines(variants.get("fallback").source(spec, "cuda"))["JS_LANES"] == "0"


# -- (g) which tiles park half their vectors in shared memory during the look-back -------


def parked_of(variant: str, dialect: str, **knobs) -> str:
    spec = spec_of(variant, dialect, **knobs)
    return defines(variants.get(variant).source(spec, dialect))["JS_PARK"]


@pytest.mark.parametrize("variant", CHAINED)
@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_segmented_chained_tiles_on_gpus_with_shuffles_park_half_their_vectors(variant, dialect):
    # their 64-register tiles spilled to per-thread memory across the look-back
    info = backends.typical_device(DIALECTS[dialect])
    for mode in ("flags", "offsets", "rows"):
        spec = spec_of(variant, dialect, segmented=mode)
        want = spec.vectors // 2 if info.shuffle_width else 0
        assert parked_of(variant, dialect, segmented=mode) == str(want)
        assert spec.local_bytes >= want * spec.threads * spec.vector_width * spec.dtype_info.itemsize
    assert parked_of(variant, dialect) == "0"  # a plain scan holds its tile in registers


def test_wide_tiles_park_only_what_fits_the_workgroups_shared_memory():
    # 1024 threads would need 24-32 KiB a parked vector: they keep their tiles as before
    for dtype, threads, vectors in (("int32", 1024, 4), ("float64", 1024, 4), ("float64", 512, 8)):
        knobs = {"dtype": lookup(dtype), "segmented": "flags", "threads": threads, "vectors": vectors}
        spec = spec_of("fallback", "cuda", min_blocks=1, **knobs)
        assert spec.local_bytes <= 48 << 10
        assert spec.parked_vectors < vectors // 2


def test_a_staged_reduction_of_8_byte_values_parks_nothing():
    # it doubles the staged tile's shared memory, and ran 3% slower (H100, float64)
    for dtype, parked in (("float64", "0"), ("int64", "0"), ("float32", "2")):
        knobs = {"dtype": lookup(dtype), "segmented": "offsets", "kind": "reduce"}
        assert spec_of("fallback", "cuda", **knobs).stages_tile
        assert parked_of("fallback", "cuda", **knobs) == parked


def test_a_deterministic_scan_of_4_byte_floats_parks_one_vector():
    # the anchors' fold left it 1-3% faster with one than with two (H100, in turns)
    for dtype, parked in (("float32", "1"), ("float64", "2"), ("int32", "2")):
        knobs = {"dtype": lookup(dtype), "segmented": "flags", "deterministic": True}
        assert parked_of("fallback", "cuda", **knobs) == parked
    assert parked_of("fallback", "cuda", dtype=lookup("float32"), segmented="flags") == "2"


@pytest.mark.parametrize(
    ("dtype", "first"), [("int32", "1"), ("uint32", "1"), ("float32", "0"), ("float64", "0")]
)
def test_segmented_32_bit_integer_gpu_tiles_compute_their_outputs_before_storing(dtype, first):
    # measured per type on the H100: int32 6% faster so, floats 0.3-6% slower
    def outputs_first(**knobs) -> str:
        spec = spec_of("fallback", "cuda", dtype=lookup(dtype), **knobs)
        return defines(variants.get("fallback").source(spec, "cuda"))["JS_OUTPUTS_FIRST"]

    assert outputs_first(segmented="flags") == first
    assert outputs_first() == "0"  # the flat tile stores each vector as it is computed
