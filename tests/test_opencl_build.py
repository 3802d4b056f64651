"""How OpenCL programs are built: vector accesses, and NVIDIA's occupancy directive."""

from __future__ import annotations

import pytest

from jitscan import backends, variants
from jitscan.dtypes import lookup
from jitscan.operators import resolve
from jitscan.plan import tuning


def _opencl():
    b = backends.get("opencl")
    if not b.available():
        pytest.skip(f"backend 'opencl' unavailable here: {b.unavailable_reason()}")
    q = b.queue_of(None)
    return b, q, b.device_info(q)


def _spec(info, variant="fallback", **shape):
    base = dict(kind="inclusive", dtype=lookup("int32"), monoid=resolve("add"))
    return tuning.spec_for(info, variant=variant, **base, **shape)


def test_vector_accesses_are_vector_pointers_not_vload():
    # vload/vstore promise only element alignment, so NVIDIA's compiler splits them
    # into scalar accesses; the host guarantees 16-byte alignment instead
    b, q, info = _opencl()
    spec = _spec(info)
    src = variants.source(spec, "opencl")
    v = spec.vector_width
    assert f"vload{v}(" not in src and f"vstore{v}(" not in src
    # vectors wider than 16 bytes (a CPU's lanes) through a type aligned to those 16
    vec = f"int{v}" if v <= 4 else f"js_int{v}_a16"
    assert f"(__global const {vec}*)" in src


def test_nvidia_programs_ask_for_min_blocks_per_multiprocessor():
    b, q, info = _opencl()
    if "cl_nv_compiler_options" not in q.device.extensions:
        pytest.skip("needs NVIDIA's OpenCL (its program binary is PTX)")

    def ptx(spec):
        program = b.program(variants.get(spec.variant).build(spec), q).program
        return program.binaries[list(program.devices).index(q.device)]

    bound = ptx(_spec(info, threads=128, vectors=16, min_blocks=3))
    assert bound.count(b".entry ") >= 1
    assert bound.count(b".minnctapersm 3\n") == bound.count(b".entry ")
    assert b".minnctapersm" not in ptx(_spec(info, threads=128, vectors=16, min_blocks=0))
    # rts's spine runs as one workgroup: it keeps every register (as in the CUDA build)
    rts = ptx(_spec(info, variant="rts", threads=128, vectors=16, min_blocks=3))
    entries = {e.split(b"(")[0].strip(): e for e in rts.split(b".entry ")[1:]}
    assert b".minnctapersm" not in entries[b"js_rts_spine"]
    assert all(b".minnctapersm 3\n" in e for name, e in entries.items() if name != b"js_rts_spine")


# -- the PTX rewrite itself, on a stand-in program (no NVIDIA device needed) ---------------

_PTX = b"""//
.version 9.0
.target sm_90, texmode_independent
.address_size 64

.entry js_chained(
\t.param .u64 js_chained_param_0
)
.reqntid 128, 1, 1
{
\tret;
}
.entry js_rts_spine(
\t.param .u64 js_rts_spine_param_0
)
.reqntid 128, 1, 1
{
\tret;
}
\x00"""


class _Device:
    extensions = "cl_khr_fp64 cl_nv_compiler_options"


class _Built:
    """What the stand-in cl.Program builds: records the binary it was given."""

    fail = False

    def __init__(self, context, devices, binaries):
        self.context, self.devices, self.binaries = context, devices, binaries

    def build(self, devices):
        if _Built.fail:
            import pyopencl as cl

            raise cl.RuntimeError("clBuildProgram failed")
        return self

    def get_build_info(self, device, what):
        return ""  # a build that said nothing


class _Program:
    context = "context"

    def __init__(self, devices):
        self.devices = devices

    def get_info(self, what):
        import pyopencl as cl

        if what == cl.program_info.DEVICES:
            return self.devices
        return [b"" if d is not self.devices[-1] else _PTX for d in self.devices]


@pytest.fixture
def rebuild(monkeypatch):
    pytest.importorskip("pyopencl")
    from jitscan.backends import opencl_programs

    monkeypatch.setattr(opencl_programs.cl, "Program", _Built)
    monkeypatch.setattr(_Built, "fail", False)
    return opencl_programs.with_occupancy


def _bound_spec(min_blocks):
    """The Build of an rts program (its spine is a single-workgroup kernel)."""
    info = backends.typical_device("cupy")
    spec = _spec(info, variant="rts", threads=128, vectors=16, min_blocks=min_blocks)
    return variants.get("rts").build(spec)


def test_rewrite_bounds_every_kernel_but_the_single_workgroup_spine(rebuild):
    device = _Device()
    built = rebuild(_Program([_Device(), device]), _bound_spec(3), device)  # binary of the second device
    ptx = built.binaries[0]
    chained, spine = ptx.split(b".entry ")[1:]
    assert b".reqntid 128, 1, 1\n.minnctapersm 3\n{" in chained
    assert b".minnctapersm" not in spine
    assert ptx.endswith(b"}\n\x00")


def test_rewrite_leaves_unbounded_and_non_nvidia_programs_alone(rebuild):
    device = _Device()
    program = _Program([device])
    assert rebuild(program, _bound_spec(0), device) is program

    class Other:
        extensions = "cl_khr_fp64"

    other = Other()
    program = _Program([other])
    assert rebuild(program, _bound_spec(3), other) is program


def test_a_failed_rebuild_keeps_the_program_as_built(rebuild):
    _Built.fail = True  # the fixture restores it
    device = _Device()
    program = _Program([device])
    with pytest.warns(RuntimeWarning, match="minnctapersm"):
        assert rebuild(program, _bound_spec(3), device) is program


class _Logged:
    """A program whose build succeeds and leaves ``log``."""

    def __init__(self, log: str) -> None:
        self.log = log

    def build(self, devices):
        return self

    def get_build_info(self, device, what):
        return self.log


def test_the_drivers_note_on_kernels_is_not_a_compiler_warning_but_anything_else_in_the_log_is():
    import warnings

    cl = pytest.importorskip("pyopencl")
    from jitscan.backends.opencl_programs import build_program as _build

    note = "(): Warning: Function js_chained is a kernel, so overriding noinline attribute. The function may"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _build(_Logged(f"\n{note}\n\n"), object())  # nothing to say: no warning
    with pytest.warns(cl.CompilerWarning, match="use of logical"):
        _build(_Logged(f"{note}\n<kernel>:3:7: warning: use of logical '&&' with constant operand"), object())


def test_lane_vectors_compile_as_vector_literals_where_the_compiler_has_no_shuffle():
    # clang-based CPU runtimes take __builtin_shufflevector; others, the same lanes as
    # swizzles (JS_VEC_SHUFFLES 0): both forms of a 32-byte lane vector, segmented too
    import pyopencl as cl

    b, q, info = _opencl()
    if info.is_gpu:
        pytest.skip("lanes are for a CPU's one-thread tiles")
    for segmented in ("", "offsets"):
        spec = _spec(info, vector_width=8, segmented=segmented)
        assert spec.lanes
        src = variants.source(spec, "opencl")
        cl.Program(q.context, src).build(options=["-DJS_VEC_SHUFFLES=0"])
