"""Scans from a value (``initial=``): the value goes on the left of every element.

What the chunks of a Dask scan need (a chunk's scan starts from the carry of the chunks
before it), and useful alone: an inclusive scan from c is the scan of [c, x0, x1, ...]
without its first element, an exclusive one puts c first, a reduction is c combined with
every element, and a segmented scan carries c up to its first head.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FFILL, assert_scan_equal, random_input, reference, tile_size

import jitscan
from jitscan import backends


def from_initial(x: np.ndarray, op: object, kind: str, initial: object) -> np.ndarray:
    """The reference: the scan of ``initial`` followed by ``x``, without its first element."""
    joined = np.concatenate([np.array([initial], x.dtype), x])
    if kind == "exclusive":
        return reference(joined, op, "inclusive")[:-1]
    ref = reference(joined, op, kind)
    return ref[1:] if kind == "inclusive" else ref


@pytest.mark.parametrize("variant", ["fallback", "lookback"])
@pytest.mark.parametrize("tile_state", ["packed", "split"])
@pytest.mark.parametrize("kind", ["inclusive", "exclusive", "reduce"])
def test_a_scan_from_a_value_is_the_scan_with_that_value_in_front(backend, rng, variant, tile_state, kind):
    for dtype, op, initial in (("int32", "add", -17), ("float64", "max", 0.25), ("uint32", FFILL, 9)):
        n = 23 * tile_size(backend, dtype) + 5
        x = random_input(rng, n, dtype, op)
        got = jitscan.scan(x, op, kind=kind, variant=variant, tile_state=tile_state, initial=initial)
        assert_scan_equal(got, from_initial(x, op, kind, initial), x, op)


@pytest.mark.parametrize("every", [2, 3, 17])
def test_the_value_reaches_tiles_whose_walk_falls_back_to_the_first_tile(backend, rng, every):
    # 1 in `every` tiles never posts, tile 0 among them: successors reduce the first tile
    # themselves, see it READY (without the value) and must put the value in front
    x = random_input(rng, 40 * tile_size(backend, "int32", op=FFILL) + 3, "int32", FFILL)
    got = jitscan.scan(x, FFILL, simulate_blocking=every, initial=5)
    assert_scan_equal(got, from_initial(x, FFILL, "inclusive", 5), x, FFILL)


def test_one_tile_and_no_elements(backend, rng):
    x = random_input(rng, 7, "int64")
    assert_scan_equal(jitscan.scan(x, backend=backend, initial=3), from_initial(x, "add", "inclusive", 3), x)
    empty = np.zeros(0, np.int64)
    assert jitscan.scan(empty, backend=backend, initial=3).size == 0
    assert jitscan.reduce(empty, backend=backend, initial=3) == 3
    assert jitscan.reduce(x, "max", backend=backend, initial=10**12) == 10**12


def test_a_segmented_scan_carries_the_value_up_to_its_first_head(backend, rng):
    n = 9 * tile_size(backend, "int32", "flags") + 11
    x = random_input(rng, n, "int32")
    flags = np.zeros(n, np.uint8)
    flags[[n // 3, n // 3 + 1, n - 1]] = 1
    got = jitscan.segmented_scan(x, flags=flags, backend=backend, initial=1000)
    want = jitscan.segmented_scan(x, flags=flags, backend=backend)
    want[: n // 3] += 1000  # the first segment, which goes on from before, takes it
    np.testing.assert_array_equal(got, want)
    flags[0] = 1  # a head first: nothing carries in
    np.testing.assert_array_equal(
        jitscan.segmented_scan(x, flags=flags, backend=backend, initial=1000),
        jitscan.segmented_scan(x, flags=flags, backend=backend),
    )


def test_a_prepared_scan_takes_a_value_per_call_on_device_arrays(backend, rng):
    b = backends.get(backend)
    q = b.queue_of(None)
    p = jitscan.plan("float32", "add", backend=backend)
    x = random_input(rng, 5 * tile_size(backend, "float32"), "float32")
    d = b.to_device(x, q)
    for initial in (0.5, -3.0):
        np.testing.assert_allclose(
            b.to_host(p(d, initial=initial)), initial + np.cumsum(x, dtype=np.float64), 1e-4
        )
    np.testing.assert_allclose(b.to_host(p(d)), np.cumsum(x, dtype=np.float64), 1e-4)  # and none again


def test_a_loops_value_is_converted_once_python_number_or_numpy_scalar(backend, rng, monkeypatch):
    # a loop over a dtype passes dt.type(1) as often as 1: both are checked on their first
    # call only; -0.0 keeps its own bytes beside 0.0, and values of other types their own
    from jitscan.plan import arrays

    made = []
    real = arrays.initial_value
    monkeypatch.setattr(arrays, "initial_value", lambda v, dt: made.append(v) or real(v, dt))
    b = backends.get(backend)
    q = b.queue_of(None)
    p = jitscan.plan("float32", "add", backend=backend)
    x = random_input(rng, 3 * tile_size(backend, "float32"), "float32")
    d = b.to_device(x, q)
    ref = np.cumsum(x, dtype=np.float64)
    for initial in (np.float32(1.5), 1.5, np.float64(1.5), np.float32(-0.0), np.float32(0.0)):
        for _ in range(3):
            np.testing.assert_allclose(b.to_host(p(d, initial=initial)), float(initial) + ref, 1e-4)
    assert len(made) == 5, made
    negative_zero = b.to_device(np.array([-0.0], np.float32), q)
    signs = [np.signbit(b.to_host(p(negative_zero, initial=v))[0]) for v in (np.float32(-0.0), 0.0)]
    assert signs == [True, False]


def test_a_value_on_the_device_is_read_there_without_the_host_waiting(backend, rng):
    # one scan starts from the end of another: the Dask chain of one device's chunks
    b = backends.get(backend)
    q = b.queue_of(None)
    n = 7 * tile_size(backend, "int32") + 3
    x = random_input(rng, 2 * n, "int32")
    first = jitscan.scan(b.to_device(x[:n], q), backend=backend)
    rest = jitscan.scan(b.to_device(x[n:], q), backend=backend, initial=first[-1:])
    np.testing.assert_array_equal(b.to_host(rest), reference(x, "add", "inclusive")[n:])
    end = b.to_host(first)[-1]
    for kind in ("exclusive", "reduce"):
        got = jitscan.scan(b.to_device(x[n:], q), FFILL, kind=kind, initial=first[-1:])
        assert_scan_equal(b.to_host(got), from_initial(x[n:], FFILL, kind, end), x[n:], FFILL)
    wide = b.to_device(np.array([[2**40 + 5]], np.int64), q)  # one element of another dtype: cast
    h, carried = n // 2, np.int32(5)  # 2**40 + 5 as int32
    flags = np.zeros(n, np.uint8)
    flags[h] = 1
    got = jitscan.segmented_scan(b.to_device(x[:n], q), flags=flags, initial=wide)
    want = np.r_[carried + np.cumsum(x[:h], dtype=np.int32), np.cumsum(x[h:n], dtype=np.int32)]
    np.testing.assert_array_equal(b.to_host(got), want)
    empty = b.to_device(np.zeros(0, np.int32), q)
    assert int(b.to_host(jitscan.reduce(empty, initial=first[-1:]))) == end
    with pytest.raises(TypeError, match="one real element"):
        jitscan.scan(b.to_device(x[n:], q), initial=first[-2:])
    with pytest.raises(TypeError, match="cannot carry into a int32 scan"):
        jitscan.scan(b.to_device(x[n:], q), initial=b.to_device(np.array([2.5]), q))


def test_a_one_element_host_array_carries_its_value(rng):
    # the host side of a device array's last element: x[-1:] of a NumPy scan
    x = random_input(rng, 5000, "int32")
    first = jitscan.scan(x[:3000], dtype=np.int32)
    got = jitscan.scan(x[3000:], dtype=np.int32, initial=first[-1:])
    np.testing.assert_array_equal(np.r_[first, got], np.cumsum(x, dtype=np.int32))
    assert jitscan.reduce(x[:0], initial=np.array([[7]], np.int32)) == 7


def test_a_value_written_in_another_queue_is_waited_for():
    b = backends.get("opencl")
    if not b.available():
        pytest.skip(f"backend 'opencl' unavailable here: {b.unavailable_reason()}")
    import pyopencl as cl

    q1 = b.default_queue()
    q2 = cl.CommandQueue(q1.context)
    n = 1 << 22
    big = b.to_device(np.ones(n, np.int32), q2)
    small = b.to_device(np.ones(1 << 10, np.int32), q1)
    for t in range(5):
        first = jitscan.scan(big, initial=1000 * t)  # in q2, while q1 scans from its end
        rest = jitscan.scan(small, initial=first[-1:])
        assert b.to_host(rest)[0] == n + 1 + 1000 * t


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda x: jitscan.scan(x, variant="rts", initial=1), "needs variant 'fallback' or 'lookback'"),
        (lambda x: jitscan.scan(x.astype(np.float32), deterministic=True, initial=1), "not deterministic"),
        (lambda x: jitscan.scan(x, axis=0, initial=1), "axis"),
        (lambda x: jitscan.segmented_scan(x, offsets=[0, 3, x.size], initial=1), "give flags="),
        (lambda x: jitscan.scan(x, initial=1.5), "is not an integer"),
        (lambda x: jitscan.scan(x, initial=2**40), "out of int32's range"),
        (lambda x: jitscan.scan(x.astype(np.uint64), initial=2**64), "out of uint64's range"),
        (lambda x: jitscan.scan(x, initial=[1, 2]), "one real number"),
        (lambda x: jitscan.scan(x.astype(np.complex64), initial=1), "complex"),
        (
            lambda x: jitscan.scan((x, jitscan.index), jitscan.operator(_pick, identity=(0, 0)), initial=1),
            "tuple",
        ),
        (lambda x: jitscan.reduce(x.reshape(2, -1), axis=0, initial=1), "whole array"),
    ],
)
def test_a_value_where_it_cannot_carry_is_refused_naming_why(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call(np.arange(10, dtype=np.int32))


_PAIRS = jitscan.operator(lambda x, y: (x[0] + y[0], x[1] + y[1]), identity=(0, 0))
_HEADS = np.arange(10) % 6 == 0


@pytest.mark.parametrize(
    "call",
    [
        lambda x: jitscan.scan((x, x), _PAIRS, initial=(100, 100)),
        lambda x: jitscan.scan((x, x), _PAIRS, kind="exclusive", initial=(100, 100)),
        lambda x: jitscan.reduce((x, x), _PAIRS, initial=(100, 100)),
        lambda x: jitscan.segmented_scan((x, x), flags=_HEADS, op=_PAIRS, initial=(100, 100)),
        lambda x: jitscan.segmented_scan((x, x), offsets=[0, 6, 10], op=_PAIRS, initial=(100, 100)),
        lambda x: jitscan.segmented_scan((x, x), flags=_HEADS, op=_PAIRS, kind="exclusive", initial=(1, 1)),
    ],
)
def test_tuple_values_refuse_a_value_in_every_function_that_takes_one_rather_than_ignore_it(call):
    with pytest.raises(ValueError, match="tuple values do not take one yet"):
        call(np.arange(1, 11, dtype=np.int32))


def _pick(a, b):
    return b
