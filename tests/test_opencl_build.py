"""How OpenCL programs are built: vector accesses, and NVIDIA's occupancy directive."""

from __future__ import annotations

import pytest

from jitscan import backends, tuning
from jitscan.dtypes import lookup
from jitscan.kernels import render
from jitscan.monoid import resolve


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
    src = render(_spec(info).program_spec(), "opencl")
    assert "vload4(" not in src and "vstore4(" not in src
    assert "(__global const int4*)" in src


def test_nvidia_programs_ask_for_min_blocks_per_multiprocessor():
    b, q, info = _opencl()
    if "cl_nv_compiler_options" not in q.device.extensions:
        pytest.skip("needs NVIDIA's OpenCL (its program binary is PTX)")
    ptx = b.program(_spec(info, threads=128, vectors=16, min_blocks=3), q).program.binaries[0]
    assert ptx.count(b".entry ") >= 1
    assert ptx.count(b".minnctapersm 3\n") == ptx.count(b".entry ")
    plain = b.program(_spec(info, threads=128, vectors=16, min_blocks=0), q).program.binaries[0]
    assert b".minnctapersm" not in plain
    # rts's spine runs as one workgroup: it keeps every register (as in the CUDA build)
    rts = b.program(_spec(info, variant="rts", threads=128, vectors=16, min_blocks=3), q).program.binaries[0]
    entries = {e.split(b"(")[0].strip(): e for e in rts.split(b".entry ")[1:]}
    assert b".minnctapersm" not in entries[b"js_rts_spine"]
    assert all(b".minnctapersm 3\n" in e for name, e in entries.items() if name != b"js_rts_spine")
