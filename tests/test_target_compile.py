"""Every program a user can get, compiled for the GPUs jitscan describes (backends.targets).

ROCm: clang-19 compiles the CUDA dialect's text as HIP for gfx90a, gfx942 and gfx1100
(jitscan.verify.hip; .ci/run installs Debian's clang-19, libamdhip64-dev and
rocm-device-libs, and the ISA versions Debian lacks are built in a temporary directory).
Each program must compile without a warning, and its kernels must not spill (clang's
kernel-resource-usage remarks: no scratch, no spilled VGPR). A program rendered for
another wavefront stops its own compile.

NVIDIA: nvcc, where installed, compiles the same programs for sm_80, sm_90 and sm_100.

These compile without a GPU; they say nothing of how the programs run on one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

import jitscan
from jitscan import variants
from jitscan.backends import targets
from jitscan.dtypes import lookup, value_type
from jitscan.kernels.transform import Transform, Write
from jitscan.operators import resolve
from jitscan.plan import tuning
from jitscan.verify import hip

NVCC = shutil.which("nvcc")
AMD = ("gfx90a", "gfx942", "gfx1100")
NVIDIA = ("sm_80", "sm_90", "sm_100")

needs_rocm = pytest.mark.skipif(
    not hip.available(),
    reason="clang-19, ROCm's HIP headers and device libraries are not installed "
    "(apt-get install clang-19 lld-19 libamdhip64-dev rocm-device-libs)",
)
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")


def programs(target: str) -> dict[str, str]:
    """Every program a user can get for ``target``, by a name saying which: each variant,
    kind, segmented mode and tile-state encoding, at the sizes whose shapes differ, for
    32- and 64-bit integers and floats (int32 and float64 in every form); conversions as
    they load; deterministic forms; a Python operator; tuple values."""
    info = targets.target(target)
    out: dict[str, str] = {}

    def add(name: str, variant: str, **kw: object) -> None:
        try:
            spec = tuning.spec_for(info, variant=variant, **kw)  # type: ignore[arg-type]
            variants.get(variant).check(spec)
        except ValueError:
            return  # not a program a call can get
        out[name] = variants.get(variant).source(spec, "cuda")

    add_ = resolve("add")
    for variant in ("fallback", "lookback", "rts"):
        for kind in ("inclusive", "exclusive", "reduce"):
            for seg in ("", "flags", "rows", "offsets"):
                for dt in ("int32", "float64"):
                    for n in (1 << 16, 1 << 22, None):  # small, middle and large shapes
                        tag = f"{variant} {kind} {seg or 'flat'} {dt} n={n}"
                        add(tag, variant, kind=kind, dtype=lookup(dt), monoid=add_, segmented=seg, n=n)
    for dt in ("int64", "float32", "uint32"):
        add(f"fallback inclusive flat {dt}", "fallback", kind="inclusive", dtype=lookup(dt), monoid=add_)
    for op in ("max", "min", "mul", "xor"):
        add(
            f"fallback inclusive flat int32 {op}",
            "fallback",
            kind="inclusive",
            dtype=lookup("int32"),
            monoid=resolve(op),
        )
    add(
        "fallback split tile state",
        "fallback",
        kind="inclusive",
        dtype=lookup("int32"),
        monoid=add_,
        tile_state="split",
    )
    add(
        "fallback int8 loaded as int32",
        "fallback",
        kind="inclusive",
        dtype=lookup("int32"),
        monoid=add_,
        in_dtype="int8",
    )
    add(
        "fallback rows of whole tiles",
        "fallback",
        kind="inclusive",
        dtype=lookup("int32"),
        monoid=add_,
        row_tiles=True,
    )
    for seg in ("", "flags"):
        for n in (1 << 16, 1 << 22, None):
            f32 = lookup("float32")
            tag = f"deterministic {seg or 'flat'} float32 n={n}"
            add(
                tag,
                "fallback",
                kind="inclusive",
                dtype=f32,
                monoid=add_,
                segmented=seg,
                n=n,
                deterministic=True,
            )
    add("memcpy", "memcpy", kind="inclusive", dtype=lookup("int32"), monoid=add_)
    python_add = jitscan.operator(lambda a, b: a + b, identity=0.0, name="py_add")
    add(
        "fallback Python operator float32",
        "fallback",
        kind="inclusive",
        dtype=lookup("float32"),
        monoid=python_add,
    )
    argmax = jitscan.operator(
        lambda a, b: (b[0], b[1]) if b[0] > a[0] else (a[0], a[1]), identity=(-1e30, 0), name="argmax_t"
    )
    pair = value_type(("float32", "int64"))
    for n in (1 << 16, None):
        add(
            f"tuple argmax n={n}",
            "fallback",
            kind="inclusive",
            dtype=pair,
            monoid=argmax,
            n=n,
            index_fields=(1,),
        )
        add(
            f"tuple argmax reduce n={n}",
            "fallback",
            kind="reduce",
            dtype=pair,
            monoid=argmax,
            n=n,
            index_fields=(1,),
        )
    affine = jitscan.operator(
        lambda p, q: (p[0] * q[0], p[1] * q[0] + q[1]), identity=(1.0, 0.0), name="affine_t"
    )
    for n in (1 << 16, None):
        add(f"tuple affine n={n}", "fallback", kind="inclusive", dtype=value_type(("float32", "float32")),
            monoid=affine, n=n, outputs=(1,))  # fmt: skip
    # scans by key: the heads where a key changes, read from the keys (ScanSpec.head_keys)
    for keys in ("int64", "float32"):
        for n in (1 << 16, 1 << 22, None):
            try:
                spec = tuning.spec_for(
                    info, variant="fallback", kind="inclusive", dtype=lookup("int32"), monoid=add_,
                    segmented="flags", n=n,
                )  # fmt: skip
            except ValueError:
                continue
            out[f"by key {keys} n={n}"] = variants.get("fallback").source(
                replace(spec, head_keys=keys), "cuda"
            )
    # the transforms compaction and the runs functions are made of (kernels/transform.py)
    keep = Transform(
        "keep", (("c", "bool"), ("x", "float64")), "c != 0", (("y", "float64"), ("count", "int64")),
        (Write("y", "v", "x", "c != 0"), Write("count", "0", "v + (c != 0)", "i == n - 1")),
    )  # fmt: skip
    runs = Transform(
        "runs1", (("k0", "int32"),), "i == 0 || k0 != k0[i - 1]", (("u0", "int32"), ("starts", "int64")),
        (Write("u0", "v - 1", "k0", "i == 0 || k0 != k0[i - 1]"), Write("starts", "v", "n", "i == n - 1")),
    )  # fmt: skip
    from jitscan.api.predicates import _lowered

    lowered = _lowered("copy_if", lambda v: v > 0.5 and v < 2.0, "float64")
    by_python = Transform(
        "keep_py", (("x", "float64"),), "js_pred(x)", (("y", "float64"),),
        (Write("y", "v", "x", "js_pred(x)"),), lowered, (("js_pred", 1),),
    )  # fmt: skip
    for t, kind, dt in (
        (keep, "exclusive", "int32"),
        (runs, "inclusive", "int64"),
        (by_python, "exclusive", "int32"),
    ):
        for n in (1 << 16, 1 << 22, None):
            try:
                spec = tuning.spec_for(
                    info, variant="fallback", kind=kind, dtype=lookup(dt), monoid=add_, n=n
                )
                spec = replace(spec, transform=t)
            except ValueError:
                continue
            out[f"transform {t.name} {dt} n={n}"] = variants.get("fallback").source(spec, "cuda")
    return out


@pytest.fixture(scope="module")
def device_libs():
    """A directory of ROCm's device libraries with the ISA versions Debian's lack, built here."""
    with tempfile.TemporaryDirectory(prefix="jitscan-rocm-") as d:
        yield hip.device_libs(Path(d))


@pytest.fixture
def hip_header(device_libs, tmp_path):
    """``pch(arch)``: HIP's runtime header precompiled for ``arch`` (parsing it took most of a
    small program's compile)."""
    return lambda arch: hip.header(arch, device_libs, tmp_path)


def compile_all(target: str, compile_one) -> list[str]:
    """What is wrong with each program of ``target``, compiled on every core."""
    progs = programs(target)
    assert len(progs) > 150, f"{target}: only {len(progs)} programs"  # the matrix stays whole
    names: dict[str, list[str]] = {}  # each text once: sizes of one shape render alike
    for name, source in progs.items():
        names.setdefault(source, []).append(name)

    def one(item: tuple[str, list[str]]) -> str | None:
        with tempfile.TemporaryDirectory() as d:
            return compile_one(" / ".join(item[1]), item[0], Path(d))

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return [e for e in pool.map(one, names.items()) if e]


@needs_rocm
@pytest.mark.parametrize("arch", AMD)
def test_every_program_compiles_for_rocm_without_a_warning_or_a_spill(arch, device_libs, hip_header):
    pch = hip_header(arch)

    def check(name: str, source: str, work: Path) -> str | None:
        rc, other, kernels = hip.compile_hip(source, arch, device_libs, work, pch)
        if rc or other:
            return f"{name}: exit {rc}: {other[:400]}"
        if not kernels:
            return f"{name}: no kernel's resources reported"
        for kernel, use in kernels.items():
            scratch, spill = int(use["ScratchSize [bytes/lane]"]), int(use["VGPRs Spill"])
            if scratch or spill:
                return f"{name}: {kernel} spills ({spill} VGPRs, {scratch} bytes of scratch a lane)"
        return None

    wrong = compile_all(arch, check)
    assert not wrong, "\n".join(wrong)


@needs_rocm
def test_a_program_rendered_for_another_wavefront_stops_its_own_compile(device_libs, tmp_path):
    wave32 = jitscan.source("int32", device="gfx1100")  # 32 lanes
    rc, other, _ = hip.compile_hip(wave32, "gfx942", device_libs, tmp_path)  # a 64-lane target
    assert rc != 0 and "rendered for subgroups of 32 lanes" in other and "device=TARGET" in other
    rc, other, _ = hip.compile_hip(jitscan.source("int32", device="gfx942"), "gfx942", device_libs, tmp_path)
    assert rc == 0 and not other


@needs_rocm
def test_a_program_compiled_with_the_precompiled_header_reports_what_one_without_it_does(
    hip_header, device_libs, tmp_path
):
    source = jitscan.source("float64", device="gfx942", segmented="offsets")
    plain = hip.compile_hip(source, "gfx942", device_libs, tmp_path)
    assert plain[0] == 0 and plain[2], plain[1]
    assert hip.compile_hip(source, "gfx942", device_libs, tmp_path, hip_header("gfx942")) == plain


def test_amd_targets_take_their_own_wavefront_clock_and_no_nvidia_occupancy_bound():
    for arch, lanes in (("gfx90a", 64), ("gfx942", 64), ("gfx1100", 32)):
        src = jitscan.source("int32", device=arch, variant="lookback")
        assert f"#define JS_SG {lanes}" in src and "wall_clock64()" in src
        assert "__launch_bounds__(256)" in src  # the threads alone: no blocks-per-CU bound
    info = targets.target("gfx942")
    for n in (1 << 10, 1 << 22, 1 << 28):
        for seg in ("", "flags", "offsets"):
            assert tuning.geometry(info, lookup("int32"), n, seg)["min_blocks"] == 0
    assert "%globaltimer" in jitscan.source("int32", device="sm_90", variant="lookback")
    with pytest.raises(ValueError, match="targets: gfx90a"):
        jitscan.source("int32", device="gfx803")
    with pytest.raises(ValueError, match="backend='cupy'"):
        jitscan.source("int32", device="gfx942", backend="opencl")


@needs_nvcc
@pytest.mark.parametrize("arch", NVIDIA)
def test_every_program_compiles_for_nvidia_without_a_warning(arch):
    def check(name: str, source: str, work: Path) -> str | None:
        src = work / "p.cu"
        src.write_text(source)
        run = subprocess.run(
            # 177: a static function declared but not called; the headers hold some that a
            # given kernel does not call (NVRTC, which CuPy compiles with, says nothing).
            # -cubin: the device code alone, as NVRTC compiles it (a host object cost 1.3 s more)
            [NVCC, f"-arch={arch}", "-std=c++17", "--fmad=false", "-diag-suppress", "177", "-cubin", str(src),
             "-o", str(work / "p.cubin")],
            capture_output=True, text=True,
        )  # fmt: skip
        if run.returncode or "warning" in run.stderr:
            return f"{name}: exit {run.returncode}: {run.stderr[:400]}"
        return None

    wrong = compile_all(arch, check)
    assert not wrong, "\n".join(wrong)
