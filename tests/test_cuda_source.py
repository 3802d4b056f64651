"""The rendered CUDA source of every variant and dtype compiles with nvcc (no GPU needed)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import DTYPES, FFILL, op_dtype_pairs

import jitscan
from jitscan import backends, variants
from jitscan.dtypes import lookup
from jitscan.operators import resolve
from jitscan.plan import tuning

NVCC = shutil.which("nvcc")


def _compiles(path, src):
    path.write_text(src)
    res = subprocess.run(
        [
            NVCC,
            "-arch=sm_90",
            "--fmad=false",
            "--diag-suppress=177",
            "-c",
            str(path),
            "-o",
            str(path.with_suffix(".o")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert "warning" not in res.stderr.lower(), res.stderr  # 177: unused helper in memcpy


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed on this machine")
@pytest.mark.parametrize("variant", jitscan.VARIANTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_source_compiles_with_nvcc(tmp_path, variant, dtype):
    for tile_state in ("packed", "split") if variant in ("fallback", "lookback") else ("packed",):
        op = FFILL if variant == "fallback" else "max"
        src = jitscan.source(dtype, op=op, variant=variant, backend="cupy", tile_state=tile_state)
        _compiles(tmp_path / f"{variant}_{dtype}_{tile_state}.cu", src)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed on this machine")
@pytest.mark.parametrize("mode", ["flags", "rows", "offsets"])
@pytest.mark.parametrize("variant", ["fallback", "rts"])
@pytest.mark.parametrize("dtype", ["uint32", "float64"])
def test_segmented_cuda_source_compiles_with_nvcc(tmp_path, mode, variant, dtype):
    # a reduction by offsets is its own program (it stages the tile in shared memory)
    for kind in ("inclusive", "reduce") if mode == "offsets" else ("inclusive",):
        spec = tuning.spec_for(
            backends.typical_device("cupy"),
            variant=variant,
            kind=kind,
            dtype=lookup(dtype),
            monoid=resolve(FFILL if dtype == "float64" else "max"),
            segmented=mode,
        )
        _compiles(tmp_path / f"seg_{mode}_{kind}_{variant}_{dtype}.cu", variants.source(spec, "cuda"))


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed on this machine")
@pytest.mark.parametrize("width", [32, 64, 128])
@pytest.mark.parametrize("variant", ["fallback", "lookback"])
def test_look_back_windows_of_one_to_four_warps_compile_with_nvcc(tmp_path, width, variant):
    # one warp walks its window by shuffles; wider windows combine per-warp parts
    src = jitscan.source(
        "float64", op=FFILL, variant=variant, backend="cupy", threads=128, lookback_width=width
    )
    assert f"#define JS_LB_W {width}" in src
    _compiles(tmp_path / f"window_{variant}_{width}.cu", src)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed on this machine")
@pytest.mark.parametrize("segmented", ["", "flags"])
@pytest.mark.parametrize("width", [8, 32, 128])
@pytest.mark.parametrize("variant", ["fallback", "lookback"])
def test_deterministic_looks_compile_with_nvcc(tmp_path, segmented, width, variant):
    # the serial look (narrower than a warp), one warp's look, and a wide one (whose
    # segmented form reads the first warp alone first)
    spec = tuning.spec_for(
        backends.typical_device("cupy"),
        variant=variant,
        dtype=lookup("float64"),
        monoid=resolve(FFILL),
        threads=128,
        lookback_width=width,
        segmented=segmented,
        deterministic=True,
    )
    assert spec.deterministic
    _compiles(tmp_path / f"det_{variant}_{width}_{segmented}.cu", variants.source(spec, "cuda"))


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed on this machine")
@pytest.mark.parametrize("segmented", ["", "offsets"])
@pytest.mark.parametrize("variant", jitscan.VARIANTS)
def test_tuple_value_sources_compile_with_nvcc(tmp_path, variant, segmented):
    """Structs of mixed fields, an index field, one output, both encodings, the warp shuffles per field."""
    if variant == "memcpy" and segmented:
        pytest.skip("memcpy has no segmented form")
    pytest.importorskip("numba", reason="tuple values are combined by operators typed by Numba")
    argmax = jitscan.operator(lambda x, y: y if y[0] > x[0] else x, identity=(-1.0, -1))
    for tile_state in ("packed", "split") if variant in ("fallback", "lookback") else ("packed",):
        for kind in ("inclusive", "reduce") if segmented else ("inclusive",):
            spec = tuning.spec_for(
                backends.typical_device("cupy"),
                variant=variant,
                kind=kind,
                dtype=jitscan.dtypes.value_type(("float64", "int32")),
                monoid=argmax,
                segmented=segmented,
                tile_state=tile_state,
                index_fields=(1,),
                outputs=(1,),
            )
            _compiles(
                tmp_path / f"tuple_{variant}_{segmented}_{kind}_{tile_state}.cu",
                variants.source(spec, "cuda"),
            )


@pytest.mark.parametrize(("op", "dtype"), op_dtype_pairs())
def test_a_built_in_operator_on_integers_steps_its_subgroup_scans_by_one_predicated_instruction(op, dtype):
    # the shuffle's predicate guards the op (kernels/ptx.py), on CUDA and NVIDIA's
    # OpenCL; floats keep the portable step (measured no faster, and NumPy's NaN rules)
    src = jitscan.source(dtype, op=op, backend="cupy")
    portable = dtype.startswith("float")
    assert ("#define JS_PTX_SCAN_STEP" in src) is not portable
    if not portable:
        assert "#if !(defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC_RTC__))" in src  # not on ROCm
    # the same spec lowered to OpenCL for NVIDIA (whose shuffles are PTX already)
    spec = tuning.spec_for(
        backends.typical_device("cupy"), variant="fallback", dtype=lookup(dtype), monoid=resolve(op)
    )
    assert ("#define JS_PTX_SCAN_STEP" in variants.source(spec, "opencl")) is not portable


def test_operators_of_their_own_segmented_scans_and_tuple_values_keep_the_portable_step():
    info = backends.typical_device("cupy")
    assert "#define JS_PTX_SCAN_STEP" not in jitscan.source("int64", op=FFILL, backend="cupy")
    same_name = jitscan.Monoid("add", combine="a + b", identity=0)
    assert "#define JS_PTX_SCAN_STEP" not in jitscan.source("int64", op=same_name, backend="cupy")
    for segmented in ("flags", "offsets"):
        spec = tuning.spec_for(
            info, variant="fallback", dtype=lookup("int64"), monoid=resolve("add"), segmented=segmented
        )
        assert "#define JS_PTX_SCAN_STEP" not in variants.source(spec, "cuda")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed on this machine")
@pytest.mark.parametrize(
    ("op", "dtype"), [("add", "int64"), ("max", "uint32"), ("min", "int32"), ("xor", "uint64")]
)
def test_the_predicated_scan_step_compiles_with_nvcc(tmp_path, op, dtype):
    # 32- and 64-bit registers, signed and unsigned, arithmetic and bitwise instructions
    src = jitscan.source(dtype, op=op, backend="cupy")
    assert "#define JS_PTX_SCAN_STEP" in src
    _compiles(tmp_path / f"step_{op}_{dtype}.cu", src)
