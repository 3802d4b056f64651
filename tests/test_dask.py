"""Dask arrays: every scan function returns a lazy Dask array of the same chunks, right on any scheduler.

Two plans (``jitscan/api/chunked/``), each test run under both: the *tree* (a total per
chunk, one task folding them in order into carries, and each chunk scanned from its
carry) and the *chain* (each chunk scanned from the end of the one before, read on the
device); on a ``distributed`` cluster a persisted array's tree takes one total per worker
(the placed tree). Checked against NumPy on chunks of unequal sizes, empty chunks and a single
chunk, with segments crossing one, two and all chunk boundaries and operators that are
not commutative, under the threaded scheduler and a ``distributed.LocalCluster`` of two
worker processes.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FFILL

import jitscan

da = pytest.importorskip("dask.array", reason="needs dask[array] (pip install 'jitscan[dask]')")
dask = pytest.importorskip("dask")

CHUNKS = ((3000, 0, 1000, 4000, 2007),)  # unequal, one empty
N = sum(CHUNKS[0])


@pytest.fixture(autouse=True, params=["chain", "tree"])
def plan(request):
    with dask.config.set({"scheduler": "threads", "jitscan.dask-plan": request.param}):
        yield request.param


@pytest.fixture
def x(rng):
    return rng.integers(-50, 50, N).astype(np.int32)


def ffill_reference(g: np.ndarray) -> np.ndarray:
    return g[np.maximum.accumulate(np.where(g != 0, np.arange(g.size), 0))]


def test_the_call_builds_a_graph_and_computes_nothing(x):
    ran = []

    def noted(block):
        ran.append(block.size)
        return block

    d = da.from_array(x, chunks=CHUNKS).map_blocks(noted, dtype=x.dtype)
    for y in (
        jitscan.cumsum(d),
        jitscan.scan(d, "max", kind="exclusive"),
        jitscan.reduce(d),
        jitscan.cumsum(d.reshape(1, -1), axis=1),
        jitscan.segmented_scan(d, offsets=[0, 5, N]),
    ):
        assert isinstance(y, da.Array)
    assert ran == [0] * len(ran)  # at most Dask's probe of the meta, on empty blocks
    y = jitscan.cumsum(d)
    assert y.chunks == CHUNKS and y.dtype == np.cumsum(x).dtype


@pytest.mark.parametrize(
    "chunks",
    [CHUNKS, ((N,),), ((1,) * 5 + (N - 5,),), ((0, 0, 4000, N - 4000),)],
    ids=["unequal", "one", "tiny", "empty first"],
)
def test_scans_and_running_functions_match_numpy_across_chunks(x, chunks):
    d = da.from_array(x, chunks=chunks)
    np.testing.assert_array_equal(jitscan.cumsum(d).compute(), np.cumsum(x))
    np.testing.assert_array_equal(jitscan.cummax(d).compute(), np.maximum.accumulate(x))
    np.testing.assert_array_equal(jitscan.cumsum(d, dtype=np.int32).compute(), np.cumsum(x, dtype=np.int32))
    np.testing.assert_array_equal(
        jitscan.scan(d, "add", kind="exclusive").compute(), np.r_[0, np.cumsum(x, dtype=np.int32)[:-1]]
    )
    np.testing.assert_array_equal(jitscan.cumsum(d, include_initial=True).compute(), np.r_[0, np.cumsum(x)])
    np.testing.assert_array_equal(jitscan.scan(d, initial=100).compute(), 100 + np.cumsum(x, dtype=np.int32))


def test_the_plan_is_a_chain_on_a_local_scheduler_and_a_tree_on_a_distributed_one(x, cluster):
    d = da.from_array(x, chunks=CHUNKS)
    with dask.config.set({"jitscan.dask-plan": "auto"}):
        with dask.config.set(scheduler="threads"):
            assert jitscan.cumsum(d).name.startswith("jitscan-chain-")
            assert jitscan.segmented_cumsum(d, offsets=[0, 5, N]).name.startswith("jitscan-segchain-")
        with dask.config.set(scheduler=cluster.get):
            assert jitscan.cumsum(d).name.startswith("jitscan-scan-")
            assert "jitscan-total" in _task_names(jitscan.cumsum(d))  # not persisted: a total per chunk
        with dask.config.set(scheduler="processes"):
            assert jitscan.cumsum(d).name.startswith("jitscan-scan-")
    with dask.config.set({"jitscan.dask-plan": "fastest"}), pytest.raises(ValueError, match="'placed'"):
        jitscan.cumsum(d)


def test_float_chunks_and_nan_functions(rng):
    f = rng.standard_normal(N)
    f[::97] = np.nan
    d = da.from_array(f, chunks=CHUNKS)
    np.testing.assert_allclose(jitscan.nancumsum(d).compute(), np.nancumsum(f))
    np.testing.assert_allclose(jitscan.reduce(jitscan.nancumsum(d)).compute(), np.nancumsum(f).sum())


def test_a_non_commutative_operator_keeps_the_order_across_chunks(x):
    g = np.where(x % 7 == 0, x, 0)
    d = da.from_array(g, chunks=CHUNKS)
    np.testing.assert_array_equal(jitscan.scan(d, FFILL).compute(), ffill_reference(g))
    python = jitscan.operator(lambda a, b: b if b != 0 else a, identity=0)
    np.testing.assert_array_equal(jitscan.scan(d, python).compute(), ffill_reference(g))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_axis_scans_carry_across_the_chunks_of_that_axis(rng, axis):
    m = rng.integers(0, 9, (13, 21, 17)).astype(np.int64)
    d = da.from_array(m, chunks=(5, (7, 0, 14), 6))
    np.testing.assert_array_equal(jitscan.cumsum(d, axis=axis).compute(), np.cumsum(m, axis=axis))
    np.testing.assert_array_equal(
        jitscan.cumprod(d % 2 + 1, axis=axis, exclusive=True).compute(),
        np.concatenate(
            [np.ones_like(np.take(m, [0], axis)), np.cumprod(m % 2 + 1, axis=axis)], axis=axis % 3
        ).take(range(m.shape[axis]), axis=axis),
    )
    np.testing.assert_array_equal(jitscan.cumsum(d).compute(), np.cumsum(m))


def test_reductions_whole_along_axes_and_from_a_value(rng, x):
    d = da.from_array(x, chunks=CHUNKS)
    assert int(jitscan.reduce(d).compute()) == x.sum()
    assert int(jitscan.reduce(d, "min", initial=-1000).compute()) == -1000
    m = rng.integers(0, 9, (13, 21)).astype(np.int64)
    dm = da.from_array(m, chunks=(5, 8))
    np.testing.assert_array_equal(jitscan.reduce(dm, axis=0).compute(), m.sum(0))
    np.testing.assert_array_equal(
        jitscan.reduce(dm, "max", axis=1, keepdims=True).compute(), m.max(1, keepdims=True)
    )


def _segmented_reference(x: np.ndarray, starts: list[int], kind: str = "inclusive") -> np.ndarray:
    bounds = [*starts, x.size]
    parts = [np.cumsum(x[a:b], dtype=x.dtype) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    if kind == "exclusive":
        parts = [np.r_[np.zeros(1, x.dtype), p[:-1]] if p.size else p for p in parts]
    return np.concatenate(parts)


@pytest.mark.parametrize(
    "starts",
    [[0, 2999, 3001], [0, 2500, 8500], [0, N - 1], [0]],
    ids=["crossing one boundary", "crossing two", "crossing two, then all", "one segment, all"],
)
def test_segments_cross_chunk_boundaries_by_offsets_and_by_flags(x, starts):
    d = da.from_array(x, chunks=CHUNKS)
    offsets = np.array([*starts, N])
    flags = np.zeros(N, np.uint8)
    flags[starts] = 1
    want = _segmented_reference(x, starts)
    for seg in (
        {"offsets": offsets},
        {"offsets": da.from_array(offsets, chunks=2)},
        {"flags": flags},
        {"flags": da.from_array(flags, chunks=1234)},
    ):
        np.testing.assert_array_equal(jitscan.segmented_scan(d, dtype=np.int32, **seg).compute(), want)
    np.testing.assert_array_equal(
        jitscan.segmented_scan(d, offsets=offsets, kind="exclusive", dtype=np.int32).compute(),
        _segmented_reference(x, starts, "exclusive"),
    )
    np.testing.assert_array_equal(
        jitscan.segmented_cumsum(d, offsets=offsets).compute(), want.astype(np.int64)
    )


def test_errors_are_raised_when_the_graph_is_built(x):
    d = da.from_array(x, chunks=CHUNKS)
    with pytest.raises(jitscan.AxisError):
        jitscan.cumsum(d, axis=1)
    with pytest.raises(ValueError, match="offsets"):
        jitscan.segmented_scan(d, offsets=[0, 5, N + 1])
    with pytest.raises(ValueError, match="flags has 3 entries"):
        jitscan.segmented_scan(d, flags=np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match="unknown op|not a"):
        jitscan.scan(d, "median")
    with pytest.raises(ValueError, match="out= does not apply"):
        jitscan.cumsum(d, out=np.empty(N))
    with pytest.raises(ValueError, match="stats= does not apply"):
        jitscan.scan(d, stats={})
    unknown = d[d > 0]  # chunk sizes NaN: a plain scan is fine, segments need the sizes
    np.testing.assert_array_equal(jitscan.cumsum(unknown).compute(), np.cumsum(x[x > 0]))
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        jitscan.segmented_scan(unknown, flags=np.zeros(1, np.uint8))


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed", reason="needs distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as c,
        distributed.Client(c) as client,
    ):
        yield client


def test_a_local_cluster_of_two_workers_runs_the_same_graphs(cluster, x):
    d = da.from_array(x, chunks=CHUNKS)
    np.testing.assert_array_equal(cluster.compute(jitscan.cumsum(d)).result(), np.cumsum(x))
    g = np.where(x % 7 == 0, x, 0)
    np.testing.assert_array_equal(
        cluster.compute(jitscan.scan(da.from_array(g, chunks=CHUNKS), FFILL)).result(), ffill_reference(g)
    )
    offsets = np.array([0, 2500, 8500, N])
    np.testing.assert_array_equal(
        cluster.compute(jitscan.segmented_scan(d, offsets=offsets, dtype=np.int32)).result(),
        _segmented_reference(x, [0, 2500, 8500]),
    )
    np.testing.assert_array_equal(
        cluster.compute(jitscan.segmented_reduce(d, offsets=offsets)).result(),
        np.add.reduceat(x, offsets[:-1]).astype(np.int32),
    )
    m = x[:10000].reshape(100, 100)
    dm = da.from_array(m, chunks=(30, 40))
    np.testing.assert_array_equal(cluster.compute(jitscan.cumsum(dm, axis=0)).result(), np.cumsum(m, axis=0))
    assert int(cluster.compute(jitscan.reduce(d, "max")).result()) == x.max()


def _task_names(y) -> set[str]:
    return {(k[0] if isinstance(k, tuple) else k).rsplit("-", 1)[0] for k in dict(y.dask)}


def test_a_persisted_array_on_a_cluster_takes_one_total_per_worker(cluster, x):
    distributed = pytest.importorskip("distributed")
    d = cluster.persist(da.from_array(x, chunks=CHUNKS))
    f = np.random.default_rng(5).standard_normal(N)
    f[::97] = np.nan
    df = cluster.persist(da.from_array(f, chunks=CHUNKS))
    distributed.wait([d, df])  # chunks still being made are nowhere yet: those take the tree
    workers = {w for ws in cluster.who_has(d).values() for w in ws}
    with dask.config.set({"jitscan.dask-plan": "auto", "scheduler": cluster.get}):
        y = jitscan.cumsum(d)
        keys = [k for k in dict(y.dask) if isinstance(k, tuple) and k[0].startswith("jitscan-worker-totals-")]
        assert 1 <= len(keys) <= len(workers) == 2  # the last chunk's worker may hold no other
        np.testing.assert_array_equal(cluster.compute(y).result(), np.cumsum(x))
        for got, want in [
            (jitscan.scan(d, "add", kind="exclusive"), np.r_[0, np.cumsum(x, dtype=np.int32)[:-1]]),
            (jitscan.cumsum(d, include_initial=True), np.r_[0, np.cumsum(x)]),
            (jitscan.scan(d, initial=100), 100 + np.cumsum(x, dtype=np.int32)),
            (jitscan.cummax(d), np.maximum.accumulate(x)),
            (jitscan.scan(d, "min", kind="exclusive", initial=3), np.minimum.accumulate(np.r_[3, x[:-1]])),
        ]:
            assert "jitscan-worker-totals" in _task_names(got)
            np.testing.assert_array_equal(cluster.compute(got).result(), want)
        placed = cluster.compute(jitscan.nancumsum(df)).result()
    with dask.config.set({"jitscan.dask-plan": "tree", "scheduler": cluster.get}):
        tree = jitscan.nancumsum(df)
        assert "jitscan-worker-totals" not in _task_names(tree)
        # the carries fold the same totals in the same order: the same bits
        np.testing.assert_array_equal(placed, cluster.compute(tree).result())
    np.testing.assert_allclose(placed, np.nancumsum(f))


def test_where_no_worker_can_be_asked_the_graph_is_the_tree_built_without_error(cluster, x):
    import pickle

    from jitscan.api.chunked import placed

    distributed = pytest.importorskip("distributed")
    d = cluster.persist(da.from_array(x, chunks=CHUNKS))
    doomed = cluster.persist(da.from_array(x + 1, chunks=CHUNKS))
    distributed.wait([d, doomed])
    unpickled = pickle.loads(pickle.dumps(d))  # its futures have no client
    cluster.cancel(doomed)
    with dask.config.set({"jitscan.dask-plan": "placed", "scheduler": cluster.get}):
        for y in (jitscan.cumsum(unpickled), jitscan.cumsum(doomed)):
            assert "jitscan-total" in _task_names(y) and "jitscan-worker-totals" not in _task_names(y)
        np.testing.assert_array_equal(cluster.compute(jitscan.cumsum(unpickled)).result(), np.cumsum(x))
    assert placed.placement(cluster.persist(da.from_array(x[:10000].reshape(100, 100), chunks=50))) is None


def test_an_asynchronous_client_gets_the_tree_without_blocking(x):
    import asyncio

    distributed = pytest.importorskip("distributed")

    async def main() -> np.ndarray:
        async with (
            distributed.LocalCluster(
                n_workers=2, processes=False, asynchronous=True, dashboard_address=None
            ) as c,
            distributed.Client(c, asynchronous=True) as client,
        ):
            d = client.persist(da.from_array(x, chunks=CHUNKS))
            await distributed.wait(d)
            with dask.config.set({"jitscan.dask-plan": "auto", "scheduler": "dask.distributed"}):
                y = jitscan.cumsum(d)  # the default scheduler is the asynchronous client
            assert "jitscan-total" in _task_names(y)
            return await client.compute(y)

    np.testing.assert_array_equal(asyncio.run(main()), np.cumsum(x))


def test_the_placed_tree_needs_a_built_in_op_and_fewer_workers_than_chunks_at_most_eight():
    from jitscan.api.chunked import placed

    assert placed.applies("add", ["a", "b", "a"]) and placed.applies("max", ["a"] * 5)
    assert not placed.applies("add", None)  # places unknown
    assert not placed.applies(FFILL, ["a", "b", "a"])  # a Python operator: the tree's fold task
    assert not placed.applies("add", ["a", "b"])  # as many workers as chunks
    many = [str(i) for i in range(placed.MAX_WORKERS + 1)]
    assert not placed.applies("add", many * 2) and placed.applies("add", many[:-1] * 2)


def test_the_tree_takes_a_total_per_chunk_where_the_places_are_unknown_or_the_operator_is_python(cluster, x):
    lazy = da.from_array(x, chunks=CHUNKS)  # not persisted: its chunks are nowhere yet
    g = np.where(x % 7 == 0, x, 0)
    persisted = cluster.persist(da.from_array(g, chunks=CHUNKS))
    pytest.importorskip("distributed").wait(persisted)
    with dask.config.set({"jitscan.dask-plan": "placed", "scheduler": cluster.get}):
        for y in (jitscan.cumsum(lazy), jitscan.scan(persisted, FFILL), jitscan.cumsum(persisted + 1)):
            assert "jitscan-total" in _task_names(y) and "jitscan-worker-totals" not in _task_names(y)
        filled = cluster.compute(jitscan.scan(persisted, FFILL)).result()
        np.testing.assert_array_equal(filled, ffill_reference(g))


@pytest.mark.parametrize(
    "offsets",
    [[0, 2500, 2999, 3000, 3000, 9000, N], [0, N], [0, 0, 5, N, N], list(range(0, N, 7)) + [N]],
    ids=["crossing one and two", "one over all", "empty ones", "many short"],
)
def test_segmented_reductions_combine_the_pieces_of_segments_that_cross_chunks(x, offsets):
    d = da.from_array(x, chunks=CHUNKS)
    offsets = np.array(offsets)
    got = jitscan.segmented_reduce(d, offsets=offsets)
    assert sum(got.chunks[0]) == offsets.size - 1
    want = np.array([x[a:b].sum() for a, b in zip(offsets[:-1], offsets[1:], strict=True)], np.int32)
    np.testing.assert_array_equal(got.compute(), want)
    g = np.where(x % 7 == 0, x, 0)
    pieces = (g[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True))
    last = [s[s != 0][-1] if (s != 0).any() else 0 for s in pieces]
    ffill = jitscan.segmented_reduce(da.from_array(g, chunks=CHUNKS), offsets=offsets, op=FFILL)
    np.testing.assert_array_equal(ffill.compute(), np.array(last, np.int32))


def test_a_segmented_reduction_of_dask_offsets_says_why_it_needs_numpy_ones(x):
    d = da.from_array(x, chunks=CHUNKS)
    with pytest.raises(ValueError, match="takes offsets as a NumPy array"):
        jitscan.segmented_reduce(d, offsets=da.from_array(np.array([0, N])))


@pytest.mark.gpu
def test_cupy_chunks_are_scanned_on_the_gpu_that_holds_them(x):
    cupy = pytest.importorskip("cupy", reason="CuPy chunks need CuPy and a GPU")
    if not jitscan.backends.get("cupy").available():
        pytest.skip("no CUDA device")
    d = da.from_array(x, chunks=CHUNKS).map_blocks(cupy.asarray)
    y = jitscan.cumsum(d)
    assert isinstance(y._meta, cupy.ndarray)
    np.testing.assert_array_equal(y.compute().get(), np.cumsum(x))
    # exclusive carries combine the last result with the last input on the device
    np.testing.assert_array_equal(
        jitscan.scan(d, "add", kind="exclusive").compute().get(), np.r_[0, np.cumsum(x, dtype=np.int32)[:-1]]
    )
    g = np.where(x % 7 == 0, x, 0)
    dg = da.from_array(g, chunks=CHUNKS).map_blocks(cupy.asarray)
    np.testing.assert_array_equal(
        jitscan.scan(dg, FFILL, kind="exclusive").compute().get(), np.r_[0, ffill_reference(g)[:-1]]
    )
    from_seven = jitscan.scan(d, initial=7).compute().get()
    np.testing.assert_array_equal(from_seven, 7 + np.cumsum(x, dtype=np.int32))
    offsets = np.array([0, 2500, 8500, N])
    np.testing.assert_array_equal(
        jitscan.segmented_scan(d, offsets=offsets, dtype=np.int32).compute().get(),
        _segmented_reference(x, [0, 2500, 8500]),
    )
    np.testing.assert_array_equal(
        jitscan.segmented_reduce(d, offsets=offsets).compute().get(),
        np.add.reduceat(x, offsets[:-1]).astype(np.int32),
    )
    m = da.from_array(x[:10000].reshape(100, 100), chunks=(30, 40)).map_blocks(cupy.asarray)
    np.testing.assert_array_equal(
        jitscan.cumsum(m, axis=0).compute().get(), np.cumsum(x[:10000].reshape(100, 100), 0)
    )
    assert int(jitscan.reduce(d).compute()) == x.sum()


def test_an_empty_first_block_along_the_axis_carries_nothing():
    m = np.arange(1, 7, dtype=np.int32).reshape(3, 2)
    d = da.from_array(m, chunks=((0, 3), (2,)))
    np.testing.assert_array_equal(jitscan.cumsum(d, axis=0).compute(), np.cumsum(m, axis=0))
    np.testing.assert_array_equal(
        jitscan.cumsum(d, axis=0, include_initial=True).compute(), np.r_[[[0, 0]], np.cumsum(m, axis=0)]
    )


def test_a_whole_reduction_from_a_value_keeps_its_dims():
    d = da.from_array(np.ones((2, 2), np.int32), chunks=1)
    got = jitscan.reduce(d, keepdims=True, initial=5)
    assert got.shape == (1, 1)
    np.testing.assert_array_equal(got.compute(), [[9]])


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda d: jitscan.cumsum(d, variant="rts"), "needs variant 'fallback' or 'lookback'"),
        (lambda d: jitscan.cumsum(d.astype(np.float32), deterministic=True), "not deterministic"),
        (
            lambda d: jitscan.segmented_scan(d, flags=np.zeros(N, np.uint8), variant="rts"),
            "from their carries",
        ),
        (lambda d: jitscan.cumsum(d.astype(np.complex128)), "complex"),
        (lambda d: jitscan.reduce(d, initial=1.5), "is not an integer"),
        (lambda d: jitscan.segmented_scan(d, offsets=[0, N], initial=1), "give flags="),
    ],
)
def test_what_a_chunk_cannot_be_scanned_with_is_refused_when_the_graph_is_built(x, call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call(da.from_array(x, chunks=CHUNKS))
