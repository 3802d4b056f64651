"""Inputs of another type are converted by the kernels as they load, not in a pass before.

``jitscan.cumsum`` of int32 sums in int64, as NumPy does; the kernels read the int32
items and widen them in registers, so the call moves 4 + 8 bytes per item instead of
4 + 8 + 8 + 8. Which pairs qualify is ``dtypes.loaded_as``: integers into any wider
or equal integer or float, floats into a wider float. The result is NumPy's, bit for
bit, wherever the input lives and whichever path the call takes.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import geometries, tile_of

import jitscan
from jitscan import backends
from jitscan.dtypes import loaded_as, lookup
from jitscan.plan import arrays


@pytest.mark.parametrize(
    ("src", "scan", "loads"),
    [
        ("int32", "int64", True),
        ("bool", "int64", True),
        ("uint8", "uint64", True),
        ("int16", "float32", True),
        ("uint32", "float64", True),
        ("float32", "float64", True),
        ("int64", "int64", False),  # nothing to convert
        ("int64", "int32", False),  # narrowing
        ("float64", "float32", False),
        ("float32", "int64", False),  # C's cast and NumPy's disagree out of range
        ("float16", "float32", False),  # not a type the kernels read
    ],
)
def test_which_inputs_the_kernels_convert(src, scan, loads):
    assert (loaded_as(np.dtype(src), lookup(scan)) is not None) is loads


def _spy_programs(monkeypatch, backend: str) -> list[str]:
    """The in_dtype of every program the backend is asked for from now on."""
    b = backends.get(backend)
    seen: list[str] = []
    real = b.program

    def program(build, queue):
        seen.append(build.key.in_dtype)
        return real(build, queue)

    monkeypatch.setattr(b, "program", program)
    return seen


def _sizes(backend: str, dtype: str) -> list[int]:
    """Around the tile of small inputs: one item, a partial tile, one over, several and a part."""
    tile = tile_of(geometries(backend, dtype)[0])
    return [1, tile - 1, tile + 1, 5 * tile + 3]


@pytest.mark.parametrize(("src", "kw"), [("int32", {}), ("bool", {}), ("int16", {"dtype": "float32"})])
def test_cumsum_of_host_input_widens_as_it_loads(backend, rng, monkeypatch, src, kw):
    seen = _spy_programs(monkeypatch, backend)
    result = np.cumsum(np.zeros(1, src), **kw).dtype
    scan = jitscan.plan(result, backend=backend)  # a new plan: its programs are made here
    for n in _sizes(backend, result.name):
        x = rng.integers(-50, 50, n).astype(src)
        want = np.cumsum(x, **kw)
        got = jitscan.cumsum(x, backend=backend, **kw)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(scan(x), want)
    assert set(seen) == {src}


def test_every_variant_and_kind_widens_device_input(backend, rng, monkeypatch):
    b = backends.get(backend)
    q = b.queue_of(None)
    n = _sizes(backend, "int64")[-1]
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    d = b.to_device(x, q)

    def converted(*args, **kwargs):
        raise AssertionError("converted before the scan")

    monkeypatch.setattr(arrays, "astype", converted)
    for variant in ("fallback", "lookback", "rts"):
        for kind in ("inclusive", "exclusive"):
            got = jitscan.plan("int64", kind=kind, variant=variant, backend=backend)(d)
            want = np.cumsum(x, dtype=np.int64)
            if kind == "exclusive":
                want = np.concatenate([[0], want[:-1]])
            np.testing.assert_array_equal(b.to_host(got), want)
        total = jitscan.plan("int64", kind="reduce", variant=variant, backend=backend)(d)
        assert int(b.to_host(total)) == int(x.sum(dtype=np.int64))
    copied = jitscan.plan("int64", variant="memcpy", backend=backend)(d)
    np.testing.assert_array_equal(b.to_host(copied), x.astype(np.int64))


def test_out_and_simulated_blocking_with_a_converted_input(backend, rng):
    n = _sizes(backend, "float64")[-1]
    x = rng.integers(-8, 9, n).astype(np.float32)
    out = np.empty(n, np.float64)
    scan = jitscan.plan("float64", backend=backend, simulate_blocking=3)
    assert scan(x, out=out) is out
    np.testing.assert_array_equal(out, np.cumsum(x, dtype=np.float64))


def test_segmented_scans_widen_their_values(backend, rng):
    n = _sizes(backend, "int64")[-1]
    x = rng.integers(0, 2, n).astype(np.bool_)
    offsets = np.array([0, 3, 3, n // 2, n - 1, n], np.int64)
    got = jitscan.segmented_cumsum(x, offsets=offsets, dtype=np.int64, backend=backend)
    want = np.concatenate(
        [np.cumsum(x[a:b], dtype=np.int64) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    )
    np.testing.assert_array_equal(got, want)


def test_narrowing_and_float_to_integer_still_convert_first(backend, rng):
    x = rng.integers(-12, 13, 1000) / 4  # quarters: every float32 partial sum is exact
    np.testing.assert_array_equal(
        jitscan.cumsum(x, dtype=np.int64, backend=backend), np.cumsum(x.astype(np.int64))
    )
    np.testing.assert_array_equal(
        jitscan.cumsum(x, dtype=np.float32, backend=backend), np.cumsum(x, dtype=np.float32)
    )
