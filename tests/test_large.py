"""Sizes past 2^31 elements: 64-bit indexing end to end (GPU only: it needs ~26 GB)."""

from __future__ import annotations

import pytest

import jitscan
from jitscan import backends


def _cupy_with_memory(nbytes: int):
    b = backends.get("cupy")
    if not b.available():
        pytest.skip(f"needs a CUDA GPU: {b.unavailable_reason()}")
    import cupy

    free, _ = cupy.cuda.runtime.memGetInfo()
    if free < nbytes:
        pytest.skip(f"needs {nbytes / 2**30:.0f} GiB of free GPU memory, {free / 2**30:.0f} GiB free")
    return cupy


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["fallback", "rts"])
def test_scan_past_two_to_the_31_elements(variant):
    n = (1 << 31) + 12345
    cp = _cupy_with_memory(n * (4 + 4 + 8) + (1 << 30))
    x = cp.random.default_rng(3).integers(-8, 9, n, dtype=cp.int32)
    y = jitscan.cumsum(x, dtype=cp.int32, variant=variant)
    ref = cp.cumsum(x, dtype=cp.int64).astype(cp.int32)  # int32 wraps the same way
    bad = cp.flatnonzero(y != ref)
    assert bad.size == 0, f"first mismatch at {int(bad[0])}"
    assert int(jitscan.reduce(x, variant=variant)) == int(ref[-1])
    del x, y, ref
    cp.get_default_memory_pool().free_all_blocks()
