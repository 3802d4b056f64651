"""A variant is its module and one registry line: variants defined here, registered, run by
every public call form, and refused by each the same way for what they state they lack.

Nothing outside this file knows the variants below: what they can do comes from their
``Capabilities`` and their defaults from their own methods (variants/base.py).
"""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest

import jitscan
from jitscan import variants
from jitscan.variants.base import Capabilities
from jitscan.variants.chained import Chained

N = 10_000


class Patient(Chained):
    """The fallback scan under another name, with spin limits of its own."""

    def __init__(self) -> None:
        super().__init__("patient", fallback=True)

    def spin_limit(self, info) -> int:
        return 200 if info.is_gpu else 7


class Limited(Chained):
    """A chained scan that states less than its kernel could do: no reductions, no carry,
    segments by flags only, no deterministic form."""

    def __init__(self) -> None:
        super().__init__("limited", fallback=True)
        self.caps = Capabilities(
            reduces=False, segmented=frozenset({"flags"}), carry=False, tile_state=True, blocking=True
        )


PATIENT = Patient()
LIMITED = Limited()


@pytest.fixture(scope="module", autouse=True)
def registered():
    with variants.registered(PATIENT), variants.registered(LIMITED):
        yield
    jitscan.api.clear_cache()  # the public functions' prepared scans of these names


@pytest.fixture
def x(rng) -> np.ndarray:
    return rng.integers(-50, 50, N).astype(np.int32)


@pytest.fixture
def offsets() -> np.ndarray:
    return np.array([0, 7, 7, 3_000, 3_001, 9_000, N])


def segmented_reference(x: np.ndarray, starts: np.ndarray, exclusive: bool = False) -> np.ndarray:
    out = np.empty_like(x)
    for a, b in zip(starts[:-1], starts[1:], strict=True):
        part = np.cumsum(x[a:b], dtype=x.dtype)
        out[a:b] = np.r_[np.zeros(1, x.dtype), part[:-1]] if exclusive and b > a else part
    return out


# -- the registry -----------------------------------------------------------------------


def test_a_registered_variant_is_listed_found_by_capability_and_removed_again():
    assert "patient" in variants.names() and "patient" not in variants.VARIANTS
    assert variants.get("patient") is PATIENT
    assert "patient" in variants.names("carry", "offsets", "deterministic")
    assert "limited" not in variants.names("carry") and "limited" in variants.names("flags")
    assert variants.default().name == variants.VARIANTS[0]  # registering changes no default
    with pytest.raises(ValueError, match="'patient' is registered already"):
        variants.register(Patient())
    with pytest.raises(ValueError, match="built in"):
        variants.unregister(variants.VARIANTS[0])
    with pytest.raises(TypeError, match="takes a Variant"):
        variants.register(object())  # type: ignore[arg-type]
    with variants.registered(Chained("for-a-moment", fallback=False)) as v:
        assert variants.get("for-a-moment") is v and v.caps.watchdog
    with pytest.raises(ValueError, match="unknown variant 'for-a-moment'; valid variants: .*patient"):
        variants.get("for-a-moment")


def test_a_capability_record_refuses_what_cannot_go_together():
    with pytest.raises(ValueError, match="copies"):
        Capabilities(copies=True)  # reduces and segments by default
    with pytest.raises(ValueError, match="deadlock"):
        Capabilities(tile_state=True, watchdog=True, blocking=True)
    with pytest.raises(ValueError, match="tile state"):
        Capabilities(watchdog=True)
    with pytest.raises(ValueError, match="segmented modes"):
        Capabilities(segmented=frozenset({"heads"}))


# -- every public call form with the registered variant -------------------------------------


def test_its_own_defaults_reach_the_launch():
    p = jitscan.plan("int32", variant="patient")
    info = p.backend.device_info(p.backend.queue_for(None))
    assert (
        p.launch_args.spin_limit == PATIENT.spin_limit(info) != jitscan.plan("int32").launch_args.spin_limit
    )
    assert p.variant_for(N) == "patient"
    assert "#define JS_FALLBACK 1" in jitscan.source(variant="patient")


def test_flat_scans_reductions_and_the_numpy_named_functions(x):
    v = "patient"
    np.testing.assert_array_equal(jitscan.scan(x, variant=v), np.cumsum(x, dtype=np.int32))
    np.testing.assert_array_equal(jitscan.cumsum(x, dtype=x.dtype, variant=v), np.cumsum(x, dtype=np.int32))
    want = np.r_[0, np.cumsum(x, dtype=np.int32)[:-1]].astype(np.int32)
    np.testing.assert_array_equal(jitscan.scan(x, kind="exclusive", variant=v), want)
    assert jitscan.reduce(x, variant=v) == x.sum(dtype=np.int32)
    assert jitscan.scan(x, kind="reduce", variant=v) == x.sum(dtype=np.int32)
    np.testing.assert_array_equal(jitscan.cummax(x, variant=v), np.maximum.accumulate(x))
    np.testing.assert_array_equal(
        jitscan.cumulative_sum(x, include_initial=True, variant=v), np.r_[0, np.cumsum(x)]
    )
    f = x.astype(np.float64)
    f[::7] = np.nan
    np.testing.assert_allclose(jitscan.nancumsum(f, variant=v), np.nancumsum(f))
    c = (x + 1j * x[::-1]).astype(np.complex128)
    np.testing.assert_allclose(jitscan.cumsum(c, variant=v), np.cumsum(c))
    out = np.empty_like(x)
    assert jitscan.scan(x, variant=v, out=out) is out
    np.testing.assert_array_equal(out, np.cumsum(x, dtype=np.int32))


def test_a_scan_from_initial(x):
    np.testing.assert_array_equal(
        jitscan.scan(x, variant="patient", initial=5), np.cumsum(x, dtype=np.int32) + 5
    )
    assert jitscan.reduce(x, variant="patient", initial=5) == x.sum(dtype=np.int32) + 5


def test_segmented_scans_by_flags_offsets_and_rows_and_segmented_reductions(x, offsets):
    v = "patient"
    want = segmented_reference(x, offsets)
    np.testing.assert_array_equal(jitscan.segmented_scan(x, offsets=offsets, variant=v), want)
    flags = np.zeros(N, np.uint8)
    flags[offsets[:-1]] = 1
    np.testing.assert_array_equal(jitscan.segmented_cumsum(x, flags=flags, variant=v), want)
    np.testing.assert_array_equal(
        jitscan.segmented_cumsum(x, offsets=offsets, exclusive=True, variant=v),
        segmented_reference(x, offsets, exclusive=True),
    )
    sums = np.add.reduceat(x, offsets[:-1]).astype(np.int32)
    sums[np.diff(offsets) == 0] = 0  # reduceat gives the element at an empty segment
    np.testing.assert_array_equal(jitscan.segmented_reduce(x, offsets=offsets, variant=v), sums)
    rows = jitscan.plan("int32", variant=v, segmented="rows")(x, row_len=100)
    np.testing.assert_array_equal(rows, np.cumsum(x.reshape(-1, 100), axis=1, dtype=np.int32).ravel())


def test_scans_and_reductions_along_an_axis(x):
    m = x.reshape(40, 250)
    v = "patient"
    np.testing.assert_array_equal(jitscan.cumsum(m, axis=1, dtype=m.dtype, variant=v), np.cumsum(m, axis=1))
    np.testing.assert_array_equal(jitscan.cumsum(m, axis=0, dtype=m.dtype, variant=v), np.cumsum(m, axis=0))
    np.testing.assert_array_equal(jitscan.reduce(m, axis=1, variant=v), m.sum(axis=1, dtype=np.int32))
    np.testing.assert_array_equal(jitscan.reduce(m, axis=0, variant=v), m.sum(axis=0, dtype=np.int32))


def test_deterministic_scans_as_it_states(rng):
    assert PATIENT.caps.deterministic == "form"
    f = rng.normal(size=N).astype(np.float32)
    first = jitscan.scan(f, variant="patient", deterministic=True)
    np.testing.assert_allclose(first, np.cumsum(f, dtype=np.float64), rtol=1e-3, atol=1e-3)
    for _ in range(3):
        np.testing.assert_array_equal(jitscan.scan(f, variant="patient", deterministic=True), first)


numba = importlib.util.find_spec("numba")


@pytest.mark.skipif(numba is None, reason="tuple values are combined by operators typed by Numba")
def test_tuple_values(rng, offsets):
    @jitscan.operator(identity=(1.0, 0.0))
    def affine(p, q):  # h_t = a_t * h_{t-1} + b_t as pairs (a, b)
        return (p[0] * q[0], p[1] * q[0] + q[1])

    @jitscan.operator(identity=(-np.inf, -1))
    def argmax(p, q):
        return q if q[0] > p[0] else p

    a, b = rng.uniform(0.5, 1.0, N), rng.normal(size=N)
    h, want = 0.0, np.empty(N)
    for i in range(N):
        h = a[i] * h + b[i]
        want[i] = h
    v = "patient"
    np.testing.assert_allclose(jitscan.scan((a, b), op=affine, output=1, variant=v), want, rtol=1e-9)
    out = np.empty(N)
    assert jitscan.scan((a, b), op=affine, output=1, out=out, variant=v) is out
    np.testing.assert_allclose(out, want, rtol=1e-9)
    seg = jitscan.segmented_scan((a, b), offsets=offsets, op=affine, output=1, variant=v)
    first = offsets[3]  # the segment [3000, 3001) is one element: h = b
    assert seg[first] == pytest.approx(b[first])
    best, at = jitscan.segmented_reduce((b, jitscan.index), offsets=offsets, op=argmax, variant=v)
    np.testing.assert_array_equal(at[[0, 2]], [np.argmax(b[:7]), 7 + np.argmax(b[7:3000])])
    assert at[1] == -1 and best[1] == -np.inf
    m = b.reshape(40, 250)
    _, i = jitscan.scan((m, jitscan.index), op=argmax, axis=1, variant=v)
    assert (i[:, -1] == np.argmax(m, axis=1)).all()
    _, i = jitscan.reduce((m, jitscan.index), op=argmax, axis=0, variant=v)
    np.testing.assert_array_equal(i, np.argmax(m, axis=0))


def test_awkward_lists():
    ak = pytest.importorskip("awkward", reason="awkward is an optional dependency")
    arr = ak.Array([[1, 2, 3], [], [4, 5], [6]])
    assert jitscan.segmented_cumsum(arr, variant="patient").tolist() == [[1, 3, 6], [], [4, 9], [6]]
    assert jitscan.segmented_reduce(arr, variant="patient").tolist() == [6, 0, 9, 6]


def test_dask_arrays(x, offsets):
    da = pytest.importorskip("dask.array", reason="needs dask[array]")
    d = da.from_array(x, chunks=3_000)
    np.testing.assert_array_equal(jitscan.cumsum(d, dtype=x.dtype, variant="patient").compute(), np.cumsum(x))
    assert jitscan.reduce(d, variant="patient").compute() == x.sum(dtype=np.int32)
    got = jitscan.segmented_cumsum(d, offsets=offsets, variant="patient").compute()
    np.testing.assert_array_equal(got, segmented_reference(x, offsets))


# -- a variant lacking a capability: refused the same way by every function -------------


def refused(lacks: str) -> str:
    return rf"variant 'limited' {re.escape(lacks)}: .* needs variant '"


def test_what_it_states_it_can_do_runs(x, offsets):
    flags = np.zeros(N, np.uint8)
    flags[offsets[:-1]] = 1
    v = "limited"
    np.testing.assert_array_equal(jitscan.cumsum(x, dtype=x.dtype, variant=v), np.cumsum(x))
    np.testing.assert_array_equal(
        jitscan.segmented_cumsum(x, flags=flags, variant=v), segmented_reference(x, offsets)
    )
    np.testing.assert_array_equal(jitscan.scan(x, variant=v, simulate_blocking=4), np.cumsum(x))


def refusals(x: np.ndarray, offsets: np.ndarray) -> list:
    v = "limited"
    m = x.reshape(40, 250)
    cases = [
        ("does not reduce", lambda: jitscan.reduce(x, variant=v)),
        ("does not reduce", lambda: jitscan.scan(x, kind="reduce", variant=v)),
        ("does not reduce", lambda: jitscan.plan("int32", kind="reduce", variant=v)),
        ("does not reduce", lambda: jitscan.source(kind="reduce", variant=v)),
        ("takes no carry", lambda: jitscan.scan(x, initial=1, variant=v)),
        ("has no segmented form by offsets", lambda: jitscan.segmented_scan(x, offsets=offsets, variant=v)),
        ("has no segmented form by offsets", lambda: jitscan.segmented_cumsum(x, offsets=offsets, variant=v)),
        ("has no segmented form by offsets", lambda: jitscan.segmented_reduce(x, offsets=offsets, variant=v)),
        ("has no segmented form by offsets", lambda: jitscan.plan("int32", segmented="offsets", variant=v)),
        ("has no segmented form by rows", lambda: jitscan.cumsum(m, axis=1, variant=v)),
        ("has no segmented form by rows", lambda: jitscan.scan(m, axis=0, variant=v)),
        ("has no segmented form by offsets", lambda: jitscan.reduce(m, axis=1, variant=v)),
        (
            "has no deterministic form",
            lambda: jitscan.scan(x.astype(np.float32), deterministic=True, variant=v),
        ),
    ]
    if importlib.util.find_spec("awkward") is not None:
        import awkward as ak

        lists = ak.Array([[1, 2], [], [3]])
        cases.append(("has no segmented form by offsets", lambda: jitscan.segmented_cumsum(lists, variant=v)))
    if importlib.util.find_spec("dask") is not None:
        import dask.array as da

        d = da.from_array(x, chunks=3_000)
        cases.append(("takes no carry", lambda: jitscan.cumsum(d, variant=v)))
        cases.append(("takes no carry", lambda: jitscan.segmented_cumsum(d, offsets=offsets, variant=v)))
    return cases


def test_what_it_lacks_is_refused_by_every_function_naming_it(x, offsets):
    for lacks, call in refusals(x, offsets):
        with pytest.raises(ValueError, match=refused(lacks)):
            call()


def test_the_built_in_copy_is_refused_where_a_scan_is_needed(x):
    copy = variants.names("copy")[0]
    for call in (
        lambda: jitscan.cumsum(x, variant=copy),
        lambda: jitscan.segmented_cumsum(x, offsets=[0, N], variant=copy),
    ):
        with pytest.raises(ValueError, match=rf"variant '{copy}' (copies|has no segmented form)"):
            call()
    np.testing.assert_array_equal(jitscan.memcpy(x), x)
