"""Property-based tests: scans and segmented scans of arbitrary inputs against NumPy.

Hypothesis draws the values, sizes (around tile edges too), ops, kinds and segments; each
example runs on the default backend (PoCL in CI). The budget (``max_examples``) keeps the
file to well under a minute there: the kernels are compiled once per spec and reused.
"""

from __future__ import annotations

import numpy as np
import pytest

import jitscan

hypothesis = pytest.importorskip("hypothesis", reason="property tests need Hypothesis (the test extra)")
st = pytest.importorskip("hypothesis.strategies")
from hypothesis import HealthCheck, given, settings  # noqa: E402

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
UFUNCS = {"add": np.add, "max": np.maximum, "min": np.minimum, "xor": np.bitwise_xor, "or": np.bitwise_or}
INT_TYPES = ("int32", "uint32", "int64", "uint64")


def sizes() -> st.SearchStrategy[int]:
    """Small sizes, and sizes near the CPU tile's edges (a 1024-vector tile of 4 items)."""
    edges = [k * 4096 + d for k in (1, 2) for d in (-1, 0, 1)]
    return st.one_of(st.integers(0, 300), st.sampled_from(edges))


@st.composite
def integer_arrays(draw: st.DrawFn) -> np.ndarray:
    dtype = np.dtype(draw(st.sampled_from(INT_TYPES)))
    n = draw(sizes())
    info = np.iinfo(dtype)
    seed = draw(st.integers(0, 2**32 - 1))
    return np.random.default_rng(seed).integers(info.min, info.max, n, dtype=dtype, endpoint=True)


@SETTINGS
@given(
    x=integer_arrays(), op=st.sampled_from(sorted(UFUNCS)), kind=st.sampled_from(["inclusive", "exclusive"])
)
def test_integer_scans_equal_numpys_accumulate(x, op, kind):
    got = jitscan.scan(x, op=op, kind=kind)
    want = UFUNCS[op].accumulate(x, dtype=x.dtype) if x.size else x.copy()
    if kind == "exclusive" and x.size:
        identity = jitscan.BUILTIN_OPS[op].identity_for(jitscan.dtypes.lookup(x.dtype))
        want = np.concatenate([[identity], want[:-1]]).astype(x.dtype)
    np.testing.assert_array_equal(got, want)


@SETTINGS
@given(x=integer_arrays(), op=st.sampled_from(sorted(UFUNCS)))
def test_integer_reductions_equal_numpys_reduce(x, op):
    got = jitscan.reduce(x, op=op)
    identity = jitscan.BUILTIN_OPS[op].identity_for(jitscan.dtypes.lookup(x.dtype))
    want = UFUNCS[op].reduce(x, dtype=x.dtype) if x.size else identity
    assert got == want


@st.composite
def segmented(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """int64 values and CSR offsets: empty segments, one segment, many short ones."""
    n = draw(sizes())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.integers(0, n + 1, draw(st.integers(0, 40))))
    offsets = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    return rng.integers(-1000, 1000, n).astype(np.int64), offsets


@SETTINGS
@given(data=segmented(), kind=st.sampled_from(["inclusive", "exclusive"]))
def test_segmented_scans_restart_at_every_offset(data, kind):
    x, offsets = data
    got = jitscan.segmented_scan(x, offsets=offsets, kind=kind)
    parts = []
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):
        c = np.cumsum(x[a:b])
        parts.append(np.concatenate([[0], c[:-1]]) if kind == "exclusive" and b > a else c)
    want = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
    np.testing.assert_array_equal(got, want)


@SETTINGS
@given(data=segmented())
def test_segmented_reductions_give_each_segments_sum(data):
    x, offsets = data
    got = jitscan.segmented_reduce(x, offsets=offsets)
    want = [x[a:b].sum() for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    np.testing.assert_array_equal(got, np.asarray(want, np.int64))
