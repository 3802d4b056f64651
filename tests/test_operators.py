"""Operators written in Python: typed by Numba, lowered to C by jitscan, checked before use."""

from __future__ import annotations

import math

import numpy as np
import pytest

import jitscan
from jitscan.dtypes import lookup

pytest.importorskip("numba", reason="Python operators are typed by Numba")

ffill = jitscan.operator(lambda x, y: y if y != 0 else x, identity=0)


def ffill_reference(x: np.ndarray) -> np.ndarray:
    out, last = np.empty_like(x), x.dtype.type(0)
    for i, v in enumerate(x):
        last = v if v != 0 else last
        out[i] = last
    return out


def gappy(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    x = rng.integers(1, 100, n).astype(dtype)
    x[rng.random(n) < 0.7] = 0
    return x


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint64", "float32", "float64"])
@pytest.mark.parametrize("variant", ["fallback", "lookback", "rts"])
def test_a_scalar_python_operator_scans_like_its_python_loop(rng, dtype, variant):
    x = gappy(rng, 10_000, dtype)
    np.testing.assert_array_equal(jitscan.scan(x, op=ffill, variant=variant), ffill_reference(x))


def test_exclusive_starts_from_the_identity_and_reduce_is_the_last_value(rng):
    x = gappy(rng, 5_000, "int32")
    inclusive = ffill_reference(x)
    np.testing.assert_array_equal(jitscan.scan(x, op=ffill, kind="exclusive"), np.r_[0, inclusive[:-1]])
    assert jitscan.reduce(x, op=ffill) == inclusive[-1]


def test_segmented_and_axis_scans_take_python_operators(rng):
    x = gappy(rng, 3_000, "int64")
    offsets = np.array([0, 10, 10, 1_000, 2_999, 3_000])
    got = jitscan.segmented_scan(x, offsets=offsets, op=ffill)
    want = np.concatenate([ffill_reference(x[a:b]) for a, b in zip(offsets[:-1], offsets[1:], strict=True)])
    np.testing.assert_array_equal(got, want)
    m = x.reshape(30, 100)
    np.testing.assert_array_equal(
        jitscan.scan(m, op=ffill, axis=1), np.stack([ffill_reference(r) for r in m])
    )


def test_a_python_sum_equals_the_builtin_sum(rng):
    add = jitscan.operator(lambda x, y: x + y, identity=0)
    x = rng.integers(-1000, 1000, 20_000).astype(np.int32)
    np.testing.assert_array_equal(jitscan.scan(x, op=add), jitscan.scan(x, op="add"))


def test_simulated_blocking_still_scans_right(rng):
    x = gappy(rng, 50_000, "float32")
    got = jitscan.scan(x, op=ffill, variant="fallback", simulate_blocking=3, spin_limit=4)
    np.testing.assert_array_equal(got, ffill_reference(x))


def test_branches_locals_casts_and_math_translate(rng):
    def largest(x, y):  # the later of the values largest in magnitude; NaN wins
        ax = math.fabs(x)
        if ax > abs(y) or math.isnan(x):
            r = x
        elif not math.isnan(y) and int(ax) == -1:
            r = float(-1)
        else:
            r = y
        return r

    op = jitscan.operator(largest, identity=0.0)
    x = rng.integers(-50, 50, 3_000).astype(np.float64)
    x[1234] = np.nan
    want, last = np.empty_like(x), 0.0
    for i, v in enumerate(x):
        last = largest(last, v)
        want[i] = last
    np.testing.assert_array_equal(jitscan.scan(x, op=op, variant="rts"), want)
    np.testing.assert_array_equal(jitscan.scan(x, op=op), want)
    src = op.c_function(lookup("float64"))
    assert "if ax > abs(y) or math.isnan(x):" in src and "isnan(x)" in src and "goto" in src


def test_the_generated_c_is_readable_in_source():
    text = jitscan.source("int32", op=ffill, backend="opencl")
    assert "lowered from Python" in text and "y if y != 0 else x" in text


def test_a_non_associative_operator_is_refused_with_a_counterexample():
    op = jitscan.operator(lambda x, y: x + y + x * y * y, identity=0)
    with pytest.raises(ValueError, match=r"not associative on int64: op\(op\(x, y\), z\) = .* for x = "):
        jitscan.scan(np.arange(1, 50, dtype=np.int64), op=op)


def test_a_wrong_identity_is_refused():
    op = jitscan.operator(lambda x, y: max(x, y), identity=0)
    with pytest.raises(ValueError, match="identity of operator 'lambda' is not one on int32"):
        jitscan.scan(np.array([-5, -3, -4], np.int32), op=op)


def test_a_function_numba_cannot_type_is_refused_with_numbas_message_and_line():
    def bad(x, y):
        return x.real_part

    with pytest.raises(TypeError, match=r"(?s)Numba cannot type operator 'bad' on int32.*return x.real_part"):
        jitscan.scan(np.arange(4, dtype=np.int32), op=jitscan.operator(bad, identity=0))


def test_a_result_of_another_kind_is_refused():
    op = jitscan.operator(lambda x, y: (x + y) / 2, identity=0)
    with pytest.raises(TypeError, match="float64 does not convert to int32 in kind"):
        jitscan.scan(np.arange(4, dtype=np.int32), op=op)


def test_syntax_outside_the_subset_is_refused_with_its_line():
    def looping(x, y):
        for _ in range(2):
            x = x + y
        return x

    with pytest.raises(TypeError, match=r"a call of range .*line \d+: for _ in range\(2\):"):
        jitscan.scan(np.arange(4, dtype=np.int32), op=jitscan.operator(looping, identity=0))


def test_an_identity_beyond_a_narrow_type_is_clipped_for_python_operators_too():
    # int8 scans in int32; the identity is clipped to int8's range, the function kept
    mx = jitscan.operator(lambda a, b: max(a, b), identity=-(2**31))
    np.testing.assert_array_equal(jitscan.scan(np.array([1, -3, 2], np.int8), op=mx), [1, 1, 2])
    assert jitscan.reduce(np.array([1, -3, 2], np.int16), op=mx) == 2


def test_captured_values_of_another_type_make_another_operator():
    # 1 == 1.0, but a float captured in the function makes an int32 scan return floats
    def make(k):
        return jitscan.operator(lambda a, b: a + b * k, identity=0, check=False)

    x = np.arange(1, 6, dtype=np.int32)
    np.testing.assert_array_equal(jitscan.scan(x, op=make(1)), np.cumsum(x))
    with pytest.raises(TypeError, match="float64"):
        jitscan.scan(x, op=make(1.0))
