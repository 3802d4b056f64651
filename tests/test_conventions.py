"""NumPy's and the Array API's conventions, as a user porting NumPy code expects them.

Each test names the convention it holds jitscan to; the references are NumPy's own
functions on the same input.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from conftest import UFUNCS

import jitscan
from jitscan import backends

AxisError = jitscan.AxisError


# -- 1. result dtypes: NumPy's promotion for the NumPy-named functions ------------------


def test_cumsum_of_int32_promotes_to_int64_as_numpy_does_instead_of_wrapping():
    x = np.array([2**30, 2**30, 5], dtype=np.int32)
    y = jitscan.cumsum(x)
    assert y.dtype == np.cumsum(x).dtype == np.int64
    assert y.tolist() == [2**30, 2**31, 2**31 + 5]


@pytest.mark.parametrize(
    ("src", "want"),
    [
        ("bool", "int64"),
        ("int8", "int64"),
        ("int16", "int64"),
        ("int32", "int64"),
        ("uint8", "uint64"),
        ("uint16", "uint64"),
        ("uint32", "uint64"),
        ("int64", "int64"),
        ("uint64", "uint64"),
        ("float16", "float16"),
        ("float32", "float32"),
        ("float64", "float64"),
    ],
)
@pytest.mark.parametrize("fn", ["cumsum", "cumprod", "nancumsum", "nancumprod"])
def test_numpy_named_functions_give_numpys_result_dtype(fn, src, want):
    x = np.array([1, 1, 0, 1], dtype=src)
    y = getattr(jitscan, fn)(x)
    assert y.dtype == getattr(np, fn)(x).dtype == np.dtype(want)
    np.testing.assert_array_equal(y, getattr(np, fn)(x))


@pytest.mark.parametrize("src", ["bool", "int8", "uint8", "int16", "uint16", "float16", "int32", "float32"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_running_max_and_min_and_scan_keep_the_input_dtype(src, op):
    x = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=src)
    ufunc = np.maximum if op == "max" else np.minimum
    for y in (getattr(jitscan, f"cum{op}")(x), jitscan.scan(x, op)):
        assert y.dtype == x.dtype
        np.testing.assert_array_equal(y, ufunc.accumulate(x))


def test_dtype_chooses_the_accumulator_so_int32_stays_the_fast_32_bit_scan():
    x = np.array([2**30, 2**30, 5], dtype=np.int32)
    y = jitscan.cumsum(x, dtype=np.int32)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.int32))


def test_float16_is_accumulated_in_float32_and_rounded_once():
    x = np.full(3000, 0.1, dtype=np.float16)
    y = jitscan.cumsum(x)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.float32).astype(np.float16))


def test_narrow_integers_scan_with_wraparound_in_their_own_dtype_when_asked():
    x = np.array([100, 100, 100], dtype=np.int8)
    assert jitscan.scan(x, "add").tolist() == np.add.accumulate(x, dtype=np.int8).tolist()


def test_bool_scans_are_logical_as_numpy_ufuncs_on_bool():
    x = np.array([False, True, False, True])
    assert jitscan.scan(x, "add").tolist() == np.add.accumulate(x, dtype=bool).tolist()
    assert jitscan.scan(x, "xor").tolist() == np.logical_xor.accumulate(x).tolist()


@pytest.mark.parametrize("dtype", ["object", "U3", "datetime64[s]"])
def test_types_jitscan_does_not_scan_raise_a_type_error_that_names_what_works(dtype):
    x = np.zeros(3, dtype=dtype)
    with pytest.raises(TypeError, match="it takes int32.*float16.*dtype="):
        jitscan.cumsum(x)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_sums_are_numpys_in_the_input_dtype(dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(5000) + 1j * rng.standard_normal(5000)).astype(dtype)
    y = jitscan.cumsum(x)
    assert y.dtype == np.cumsum(x).dtype == np.dtype(dtype)
    np.testing.assert_allclose(y, np.cumsum(x), rtol=1e-4 if dtype == "complex64" else 1e-12)
    np.testing.assert_allclose(jitscan.reduce(x), np.sum(x), rtol=1e-4 if dtype == "complex64" else 1e-12)
    m = x.reshape(50, 100)
    np.testing.assert_allclose(jitscan.cumsum(m, axis=0), np.cumsum(m, axis=0), rtol=1e-4)
    w = np.array([np.nan + 1j, 2.0, 1j], dtype=dtype)
    np.testing.assert_array_equal(jitscan.nancumsum(w), np.nancumsum(w))


def test_complex64_products_are_numpys():
    rng = np.random.default_rng(2)
    x = np.exp(1j * rng.uniform(0, 2 * np.pi, 3000)).astype(np.complex64)  # on the unit circle
    y = jitscan.cumprod(x)
    assert y.dtype == np.complex64
    np.testing.assert_allclose(y, np.cumprod(x), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(jitscan.reduce(x[:50], "mul"), np.prod(x[:50]), rtol=1e-4)
    m = x[:60].reshape(3, 20)
    np.testing.assert_allclose(jitscan.cumprod(m, axis=1), np.cumprod(m, axis=1), rtol=1e-4, atol=1e-5)
    w = np.array([np.nan + 1j, 2.0, 1j], dtype=np.complex64)
    np.testing.assert_array_equal(jitscan.nancumprod(w), np.nancumprod(w))
    assert jitscan.cumulative_prod(x[:2], include_initial=True)[0] == 1


def test_complex128_products_are_refused_until_scans_hold_16_byte_values():
    with pytest.raises(TypeError, match="16-byte values"):
        jitscan.cumprod(np.array([1 + 1j, 2]))
    with pytest.raises(TypeError, match="'add' or 'mul'"):
        jitscan.scan(np.array([1 + 1j, 2], dtype=np.complex64), "max")


# -- 3. 0-d input, Python scalars, out= ---------------------------------------------------


@pytest.mark.parametrize("x", [5, 2.5, np.array(7, dtype=np.int32), np.float32(1.5), True])
def test_a_0d_input_or_python_scalar_is_one_element_as_in_numpy(x):
    for fn in ("cumsum", "cumprod", "cummax"):
        y = getattr(jitscan, fn)(x)
        ref = np.cumsum(x) if fn == "cumsum" else np.cumprod(x) if fn == "cumprod" else np.atleast_1d(x)
        assert y.shape == (1,)
        np.testing.assert_array_equal(y, ref)
    assert jitscan.reduce(np.array(7)) == 7


@pytest.mark.parametrize("fn", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("kw", [{}, {"include_initial": True}, {"axis": 0}, {"axis": -1}])
@pytest.mark.parametrize("x", [np.asarray(3, dtype=np.int32), np.asarray(2.5), 4])
def test_the_array_api_functions_scan_a_0d_array_as_one_element_as_numpy(fn, kw, x):
    if not hasattr(np, fn):
        pytest.skip(f"NumPy {np.__version__} has no {fn} (2.1 and later)")
    got = getattr(jitscan, fn)(x, **kw)
    want = getattr(np, fn)(np.asarray(x), **kw)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_the_array_api_functions_refuse_an_axis_beyond_a_0d_arrays_one_as_numpy():
    with pytest.raises(jitscan.AxisError, match="axis 1 is out of bounds"):
        jitscan.cumulative_sum(np.asarray(3), axis=1)


def test_out_of_another_dtype_takes_the_result_cast_under_same_kind():
    x = np.array([1, 2, 3], dtype=np.int32)
    out = np.zeros(3, dtype=np.float32)
    assert jitscan.cumsum(x, out=out) is out
    np.testing.assert_array_equal(out, [1, 3, 6])
    out16 = np.zeros(3, dtype=np.int16)
    jitscan.cumsum(x, out=out16)
    np.testing.assert_array_equal(out16, [1, 3, 6])


def test_an_integer_out_gets_the_bits_of_the_promoted_scan_cast_to_it():
    x = np.array([2**30, 2**30, 5], dtype=np.int32)
    out = np.zeros(3, dtype=np.int32)
    jitscan.cumsum(x, out=out)
    np.testing.assert_array_equal(out, np.cumsum(x).astype(np.int32))


def test_out_that_the_result_cannot_cast_to_under_same_kind_is_refused():
    with pytest.raises(TypeError, match="same_kind"):
        jitscan.cumsum(np.array([1.5, 2.0]), out=np.zeros(2, dtype=np.int64))


@pytest.mark.parametrize("order", [">", "<"])
def test_out_of_either_byte_order_is_filled(order):
    x = np.array([1, 2, 3], dtype=np.int64)
    out = np.zeros(3, dtype=np.dtype("i8").newbyteorder(order))
    jitscan.cumsum(x, out=out)
    assert out.tolist() == [1, 3, 6]


def test_byte_swapped_input_is_scanned_by_value():
    x = np.array([1, 2, 3], dtype=">i4")
    assert jitscan.cumsum(x).tolist() == [1, 3, 6]


# -- 4. axes ------------------------------------------------------------------------------


@pytest.mark.parametrize("call", ["cumsum", "scan", "reduce", "cumulative_sum"])
def test_a_bad_axis_raises_numpys_axis_error_which_is_a_value_and_an_index_error(call):
    x = np.ones((2, 3), dtype=np.int32)
    fn = getattr(jitscan, call)
    with pytest.raises(AxisError):
        fn(x, axis=2)
    with pytest.raises(ValueError):
        fn(x, axis=-3)
    with pytest.raises(IndexError):
        fn(x, axis=5)
    assert issubclass(AxisError, np.exceptions.AxisError)


@pytest.mark.parametrize("axis", [1.5, "0", (0, 1)])
def test_an_axis_that_is_not_an_integer_is_a_type_error(axis):
    with pytest.raises(TypeError, match="axis"):
        jitscan.cumsum(np.ones((2, 3), dtype=np.int32), axis=axis)


# -- 5. signs of zeros ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sums_of_negative_zeros_stay_negative_flat_and_along_an_axis(dtype):
    x = np.full((3, 4), -0.0, dtype=dtype)
    flat = jitscan.cumsum(x)
    rows = jitscan.cumsum(x, axis=1)
    assert np.signbit(flat).all() and np.signbit(np.cumsum(x)).all()
    assert np.signbit(rows).all()


def test_float_sums_of_nothing_or_of_negative_zeros_are_positive_zero_as_numpy_sum():
    neg = np.full((2, 3), -0.0)
    assert not np.signbit(np.sum(neg)) and not np.signbit(np.sum(np.zeros(0)))
    assert not np.signbit(jitscan.reduce(np.zeros(0, dtype=np.float64)))
    assert not np.signbit(jitscan.reduce(neg))
    assert not np.signbit(jitscan.scan(neg, kind="reduce"))
    assert not np.signbit(jitscan.reduce(neg, axis=1)).any()
    assert not np.signbit(jitscan.reduce(np.zeros((0, 2), dtype=np.float32), axis=0)).any()
    assert not np.signbit(jitscan.segmented_reduce(np.array([-0.0, -0.0]), offsets=[0, 2, 2])).any()


# -- 6. the Array API functions, include_initial, nan functions, reductions along axes ----


def test_cumulative_sum_follows_the_array_api():
    x = np.array([1, 2, 3], dtype=np.int32)
    np.testing.assert_array_equal(jitscan.cumulative_sum(x), np.cumulative_sum(x))
    y = jitscan.cumulative_sum(x, include_initial=True)
    assert y.tolist() == [0, 1, 3, 6] and y.dtype == np.int64
    y = jitscan.cumulative_prod(np.array([2.0, 3.0]), include_initial=True)
    assert y.tolist() == [1.0, 2.0, 6.0]
    with pytest.raises(ValueError, match="axis"):
        jitscan.cumulative_sum(np.ones((2, 2)))
    np.testing.assert_array_equal(
        jitscan.cumulative_sum(np.ones((2, 3)), axis=1), np.cumulative_sum(np.ones((2, 3)), axis=1)
    )


def test_include_initial_along_an_axis_adds_one_element_to_that_axis():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    for axis in (0, 1, -1):
        got = jitscan.cumulative_sum(x, axis=axis, include_initial=True)
        np.testing.assert_array_equal(got, np.cumulative_sum(x, axis=axis, include_initial=True))
    got = jitscan.cumulative_prod(x + 1, axis=0, include_initial=True)
    np.testing.assert_array_equal(got, np.cumulative_prod(x + 1, axis=0, include_initial=True))


def test_include_initial_puts_positive_zero_first_as_numpy_does():
    y = jitscan.cumsum(np.array([-0.0, -0.0]), include_initial=True)
    ref = np.cumulative_sum(np.array([-0.0, -0.0]), include_initial=True)
    assert np.signbit(y).tolist() == np.signbit(ref).tolist() == [False, True, True]


def test_include_initial_of_nothing_is_the_initial_value_alone():
    assert jitscan.cumsum(np.zeros(0, dtype=np.int32), include_initial=True).tolist() == [0]


def test_nancumsum_and_nancumprod_count_nan_as_zero_and_one():
    x = np.array([np.nan, 1.0, np.nan, 2.0, np.inf])
    np.testing.assert_array_equal(jitscan.nancumsum(x), np.nancumsum(x))
    np.testing.assert_array_equal(jitscan.nancumprod(x), np.nancumprod(x))


# three ops (each one program flat and one segmented): the others share their code path
@pytest.mark.parametrize("op", ["add", "max", "xor"])
@pytest.mark.parametrize("axis", [0, 1, -1, (0, 2), None])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_along_axes_matches_the_numpy_reduction(op, axis, keepdims):
    x = np.random.default_rng(3).integers(1, 4, size=(3, 4, 5)).astype(np.int64)
    ufunc = UFUNCS[op]
    got = jitscan.reduce(x, op, axis=axis, keepdims=keepdims)
    want = ufunc.reduce(x, axis=axis, keepdims=keepdims)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_array_equal(got, want)


def test_reduce_along_an_axis_takes_user_monoids():
    m = jitscan.Monoid("last", combine="b", identity=0)
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert jitscan.reduce(x, m, axis=1).tolist() == [3, 7, 11]
    assert jitscan.reduce(x, m, axis=0).tolist() == [8, 9, 10, 11]


# -- device arrays -------------------------------------------------------------------------


def test_device_arrays_follow_the_same_conventions(backend):
    b = backends.get(backend)
    q = b.queue_of(None)

    def dev(a: np.ndarray):
        return b.to_device(a, q)

    y = jitscan.cumsum(dev(np.array([2**30, 2**30, 5], dtype=np.int32)))
    assert b.owns(y) and y.dtype == np.int64
    assert b.to_host(y).tolist() == [2**30, 2**31, 2**31 + 5]
    y = jitscan.cumsum(dev(np.array([4, 5], dtype=np.int32)), include_initial=True)
    assert b.to_host(y).tolist() == [0, 4, 9]
    m = dev(np.arange(12, dtype=np.int32).reshape(3, 4))
    assert b.to_host(jitscan.reduce(m, axis=1)).tolist() == [6, 22, 38]
    f = dev(np.array([np.nan, 1.0, 2.0], dtype=np.float32))
    assert b.to_host(jitscan.nancumsum(f)).tolist() == [0.0, 1.0, 3.0]
    assert b.to_host(jitscan.cummax(dev(np.array([1, 3, 2], dtype=np.int8)))).tolist() == [1, 3, 3]
    out = dev(np.zeros(3, dtype=np.float64))
    jitscan.cumsum(dev(np.array([1, 2, 3], dtype=np.int32)), out=out)
    assert b.to_host(out).tolist() == [1.0, 3.0, 6.0]
    c = np.array([1 + 2j, 3 - 1j], dtype=np.complex64)
    assert b.to_host(jitscan.cumsum(dev(c))).tolist() == np.cumsum(c).tolist()
    assert b.to_host(jitscan.cumprod(dev(c))).tolist() == np.cumprod(c).tolist()


# -- 2. Awkward arrays with missing values ------------------------------------------------


def test_awkward_missing_values_are_skipped_as_awkwards_reducers_skip_them():
    ak = pytest.importorskip("awkward")
    a = ak.Array([[1, None, 2], [], [None, 5]])
    assert jitscan.segmented_reduce(a).tolist() == ak.sum(a, axis=1).tolist() == [3, 0, 5]
    assert jitscan.segmented_scan(a).tolist() == [[1, None, 3], [], [None, 5]]
    b = ak.Array([[1.5, 2.0], None, [3.0]])
    assert jitscan.segmented_reduce(b).tolist() == [3.5, None, 3.0]
    assert jitscan.segmented_cumsum(b).tolist() == [[1.5, 3.5], None, [3.0]]
    m = ak.Array([[4, None, 1], [None], [], [3], None])
    for op, reducer in (("min", ak.min), ("max", ak.max), ("add", ak.sum), ("mul", ak.prod)):
        # min and max of no value are None, sums and products the identity, as Awkward's
        assert jitscan.segmented_reduce(m, op=op).tolist() == reducer(m, axis=1).tolist()


@pytest.mark.parametrize(
    "value", [[[{"x": 1}]], [["ab", "c"]], [[[1, 2]], [[3]]]], ids=["records", "strings", "nested"]
)
def test_awkward_records_strings_and_deeper_nesting_are_refused_naming_what_works(value):
    ak = pytest.importorskip("awkward")
    with pytest.raises(TypeError, match="lists of numbers"):
        jitscan.segmented_reduce(ak.Array(value))


# -- 7. signatures and docstrings ----------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["cumsum", "cumprod", "cummax", "cummin", "nancumsum", "nancumprod", "scan", "reduce"]
)
def test_every_public_scan_shows_its_arguments_and_documents_its_knobs(name):
    fn = getattr(jitscan, name)
    params = inspect.signature(fn).parameters
    assert {"backend", "variant", "dtype"} <= set(params)
    doc = inspect.getdoc(fn)
    for section in ("Parameters", "Returns", "Raises", "Examples", "tile_state", "spin_limit"):
        assert section in doc, f"{name}'s docstring lacks {section}"


@pytest.mark.parametrize("name", ["segmented_scan", "segmented_cumsum", "segmented_reduce"])
def test_segmented_functions_show_backend_and_variant_in_their_signatures(name):
    params = inspect.signature(getattr(jitscan, name)).parameters
    assert {"backend", "variant", "dtype"} <= set(params)
    assert "Examples" in inspect.getdoc(getattr(jitscan, name))


# -- found in review: each of these failed before its fix --------------------------------


def test_dtype_narrower_than_the_input_casts_the_input_first_as_numpy_does():
    x = np.array([127, 128], dtype=np.int32)
    np.testing.assert_array_equal(jitscan.cummax(x, dtype=np.int8), np.maximum.accumulate(x.astype(np.int8)))
    assert jitscan.reduce(x, "max", dtype=np.int8) == np.int8(127)
    np.testing.assert_array_equal(jitscan.cumsum(np.array([1, -1]), dtype=bool), [True, True])
    np.testing.assert_array_equal(jitscan.cumsum(np.array([0.5]), dtype=bool), [True])


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "uint16"])
def test_narrow_integers_show_their_own_types_identity(dtype):
    info = np.iinfo(dtype)
    x = np.array([5, 2], dtype=dtype)
    assert jitscan.cummin(x, exclusive=True)[0] == info.max
    assert jitscan.cummax(x, exclusive=True)[0] == info.min
    assert jitscan.reduce(np.zeros((2, 0), dtype), "min", axis=1).tolist() == [info.max, info.max]
    assert jitscan.segmented_reduce(x, offsets=[0, 2, 2], op="min").tolist() == [2, info.max]


@pytest.mark.parametrize("variant", ["fallback", "rts"])
def test_a_prepared_float_sum_of_negative_zeros_is_positive_zero_from_the_kernel(variant):
    # the kernels write the total plus +0.0: no operation after the launch
    neg = np.full(5000, -0.0, np.float32)
    assert not np.signbit(jitscan.plan("float32", kind="reduce", variant=variant)(neg))
    assert np.signbit(jitscan.plan("float32", variant=variant)(neg)).all()  # a scan keeps -0.0
    assert np.signbit(jitscan.plan("float32", "max", kind="reduce", variant=variant)(neg))


def test_a_float_sum_from_a_negative_zero_keeps_its_sign_as_numpys_reduce_with_initial():
    neg = np.full(5000, -0.0, np.float32)
    assert np.signbit(np.add.reduce(neg, initial=-0.0))
    assert np.signbit(jitscan.reduce(neg, initial=-0.0))
    assert np.signbit(jitscan.plan("float32", kind="reduce")(neg, initial=-0.0))
    assert not np.signbit(jitscan.reduce(neg, initial=0.0))


def test_a_reduction_into_out_converts_and_keeps_numpys_zero():
    out = np.empty(1, np.int8)
    assert jitscan.scan(np.int8([1, 2, 3]), kind="reduce", out=out) is out and out[0] == 6
    f = np.empty(1, np.float32)
    jitscan.scan(np.float32([-0.0, -0.0]), kind="reduce", out=f)
    assert not np.signbit(f[0])


@pytest.mark.parametrize(
    "call, shape",
    [
        (lambda x, out: jitscan.reduce(x, out=out), ()),
        (lambda x, out: jitscan.reduce(x, axis=1, out=out), (3,)),
        (lambda x, out: jitscan.reduce(x, "max", axis=0, keepdims=True, out=out), (1, 4)),
        (lambda x, out: jitscan.reduce(x, axis=(0, 1), out=out), ()),
        (lambda x, out: jitscan.segmented_reduce(x.reshape(-1), offsets=[0, 5, 5, 12], out=out), (3,)),
    ],
)
def test_reductions_take_out_as_numpys_do_and_return_it(backend, call, shape):
    # as np.add.reduce(x, axis, out=): of the result's shape, cast by same_kind, returned
    b = backends.get(backend)
    q = b.queue_of(None)
    h = np.arange(12, dtype=np.int32).reshape(3, 4)
    want = np.asarray(call(h, None))
    for x, made in ((h, np.empty), (b.to_device(h, q), lambda s, dt: b.empty(s, dt, q))):
        for dt in (np.int32, np.int64, np.float64):  # its own dtype: the kernels write it
            for _ in range(3):  # the first call, then warm ones
                out = made(shape, np.dtype(dt))
                assert call(x, out) is out
                np.testing.assert_array_equal(b.to_host(out) if made is not np.empty else out, want)


def test_a_reductions_out_of_the_wrong_shape_kind_or_dtype_is_refused_naming_it(backend):
    from jitscan.bench.operators import affine

    b = backends.get(backend)
    q = b.queue_of(None)
    x = b.to_device(np.arange(12, dtype=np.float32).reshape(3, 4), q)
    with pytest.raises(ValueError, match=r"out= has shape \(4,\), expected \(3,\)"):
        jitscan.reduce(x, axis=1, out=b.empty((4,), np.float32, q))
    with pytest.raises(TypeError, match="same_kind"):
        jitscan.reduce(x, axis=1, out=b.empty((3,), np.int32, q))
    with pytest.raises(TypeError, match=f"out= must be a {backend} array for {backend} input"):
        jitscan.reduce(x, axis=1, out=np.empty(3, np.float32))
    with pytest.raises(TypeError, match="out= must be a numpy.ndarray for NumPy input"):
        jitscan.segmented_reduce(np.ones(4), offsets=[0, 4], out=b.empty((1,), np.float64, q))
    with pytest.raises(ValueError, match="out= has shape"):
        jitscan.segmented_reduce(x.reshape(-1), offsets=np.array([0, 12]), out=b.empty((2,), np.float32, q))
    with pytest.raises(ValueError, match="not taken by a reduction of tuple values"):
        jitscan.reduce((x, x), op=affine, out=b.empty((), np.float32, q))


def test_reducing_over_no_axes_returns_the_values():
    assert jitscan.reduce(np.float64(3), axis=()) == 3.0
    np.testing.assert_array_equal(jitscan.reduce(np.ones((2, 3)), axis=()), np.ones((2, 3)))


def test_an_integer_out_of_another_kind_is_still_checked_under_same_kind():
    with pytest.raises(TypeError, match="same_kind"):
        jitscan.cumsum(np.array([1], dtype=np.int32), out=np.empty(1, np.uint32))


def test_complex_parts_are_set_apart_so_infinities_and_zero_signs_survive():
    x = np.array([complex(-0.0, 1.0), complex(0.0, np.inf)])
    y = jitscan.cumsum(x)
    np.testing.assert_array_equal(y, np.cumsum(x))
    assert np.signbit(y.real[0]) == np.signbit(np.cumsum(x).real[0])
    with pytest.raises(ValueError, match="stats"):
        jitscan.reduce(x, stats={})


def test_awkward_missing_values_keep_the_values_dtype_and_out_is_refused():
    ak = pytest.importorskip("awkward")
    a = ak.values_astype(ak.Array([[200, None, 100]]), np.uint8)
    assert jitscan.segmented_scan(a).tolist() == [[200, None, 44]]  # uint8 wraps, as ak's own uint8
    with pytest.raises(ValueError, match="out="):
        jitscan.segmented_scan(ak.Array([[1, 2]]), out=np.empty(2))


def test_device_arrays_of_every_input_dtype_and_0d_results(backend):
    b = backends.get(backend)
    q = b.queue_of(None)
    for host in (np.array([True, False, True]), np.array([1, 2, 3], np.float16)):
        got = b.to_host(jitscan.cumsum(b.to_device(host, q)))
        np.testing.assert_array_equal(got, np.cumsum(host))
    assert b.to_host(jitscan.reduce(b.to_device(np.zeros(0, np.float32), q))).shape == ()
    c = b.to_device(np.array([1 + 2j, 3 - 1j], np.complex64), q)
    assert b.to_host(jitscan.reduce(c, "mul")).shape == ()
    z = b.to_device(np.array([-0.0, -0.0], np.float32), q)
    assert not np.signbit(b.to_host(jitscan.reduce(z)))
    m = b.to_device(np.arange(6, dtype=np.int32).reshape(2, 3), q)
    got = b.to_host(jitscan.cumulative_sum(m, axis=1, include_initial=True))
    np.testing.assert_array_equal(
        got, np.cumulative_sum(np.arange(6).reshape(2, 3), axis=1, include_initial=True)
    )
    w = b.to_device(np.array([np.nan + 1j, 2], np.complex64), q)
    np.testing.assert_array_equal(b.to_host(jitscan.nancumsum(w)), [0, 2])


def test_a_dtype_of_the_other_byte_order_gives_a_native_result_as_numpy_does():
    x = np.arange(5)
    got = jitscan.cumsum(x, dtype=">i8")
    want = np.cumsum(x, dtype=">i8")
    assert got.dtype == want.dtype == np.dtype("int64")
    np.testing.assert_array_equal(got, want)
