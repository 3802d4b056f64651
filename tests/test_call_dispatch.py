"""One call path: every public function's call is one value, dispatched once on its input's kind.

The refusals are one table, so a combination is refused the same way in every function;
a warm call goes from the public function to the prepared scan through one lookup; and
the package imports in no cycle, function-level imports included.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

import jitscan
from jitscan import backends
from jitscan.api import call as call_module
from jitscan.api import dispatch

PACKAGE = Path(jitscan.__file__).parent

# -- imports ------------------------------------------------------------------------------


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def import_graph() -> dict[str, set[str]]:
    """Each module of the package and the modules of the package it imports: at the top, in
    functions, under ``if TYPE_CHECKING`` alike. ``from a import b`` imports ``a.b`` where
    that is a module, else ``a`` (a name defined or handed on there). A module's import of
    a package that encloses it (``from .. import __version__``, a compiled module of its
    own package) is no arrow: that package is being imported already when its modules are."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [
                    f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names
                ]
            else:
                continue
            edges.update(t for t in targets if t in modules and t != name and not name.startswith(t + "."))
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_sees_function_level_imports():
    graph = import_graph()
    # plan/tuned.py and the tuner import lazily; a graph without them would miss cycles
    assert "jitscan.tuner.search" in graph["jitscan"]  # tune()'s import inside the function


def test_the_api_imports_in_no_cycle_lazy_imports_included():
    api = [c for c in cycles(import_graph()) if any(m.startswith("jitscan.api") for m in c)]
    assert api == []


def test_the_package_imports_in_no_cycle_at_all():
    # type-only imports too: kernels/storage and variants/segments name their callers' types
    # in words, since spec.py and variants/base.py import them
    assert cycles(import_graph()) == []


def test_dask_sits_above_the_runner_and_nothing_below_imports_it():
    graph = import_graph()
    chunked = {m for m in graph if m.startswith("jitscan.api.chunked")}
    importers = {m for m, edges in graph.items() if edges & chunked and m not in chunked}
    assert importers == {"jitscan.api.dispatch"}
    # the chunks run through the runner, not the public functions nor the dispatch
    for m in chunked:
        assert not graph[m] & {
            "jitscan.api.flat",
            "jitscan.api.running",
            "jitscan.api.segmented",
            "jitscan.api.dispatch",
        }


# -- the dispatch -------------------------------------------------------------------------


def test_every_kind_of_input_has_one_handler():
    assert set(dispatch.HANDLERS) == set(call_module.KINDS_OF_INPUT)
    from jitscan.api import runner

    assert set(runner.HANDLERS) == set(call_module.IN_MEMORY)


@pytest.mark.parametrize(
    "x, call, kind",
    [
        ((np.ones(3), np.ones(3)), call_module.Call(), "tuple"),
        (np.ones(3, np.complex64), call_module.Call(), "complex"),
        (np.ones(3), call_module.Call(dtype=np.complex128), "complex"),
        (np.ones((2, 3)), call_module.Call(axis=1), "axis"),
        (np.ones((2, 3)), call_module.Call("reduce", axis=(1, 0)), "plain"),
        (np.ones((2, 3)), call_module.Call("reduce", axis=-1), "axis"),
        (np.ones(3), call_module.Call("reduce", axis=()), "axis"),
        ([1, 2, 3], call_module.Call(), "plain"),
    ],
)
def test_the_kind_of_an_input_is_picked_in_one_place(x, call, kind):
    assert call_module.kind_of(x, call)[0] == kind


def test_every_refusal_names_the_argument_it_refuses():
    for r in call_module.REFUSALS:
        assert "=" in r.message, r.message
        assert set(r.kinds) <= set(call_module.KINDS_OF_INPUT)


@jitscan.operator(identity=(0, 0))
def _pairs(x, y):
    return (x[0] + y[0], x[1] + y[1])


X = np.arange(1, 11, dtype=np.int32)
F = np.arange(10) % 4 == 0
OFF = np.array([0, 4, 10])


@pytest.mark.parametrize(
    "call",
    [
        lambda: jitscan.scan((X, X), _pairs, initial=(1, 1)),
        lambda: jitscan.reduce((X, X), _pairs, initial=(1, 1)),
        lambda: jitscan.segmented_scan((X, X), flags=F, op=_pairs, initial=(1, 1)),
        lambda: jitscan.segmented_scan((X, X), offsets=OFF, op=_pairs, initial=(1, 1)),
        lambda: jitscan.segmented_scan((X, X), flags=F, op=_pairs, kind="exclusive", initial=1),
    ],
)
def test_tuple_values_refuse_initial_in_every_function_after_a_warm_call_too(call):
    # the warm calls of the same functions without initial= must not answer these
    jitscan.scan((X, X), _pairs)
    jitscan.segmented_scan((X, X), flags=F, op=_pairs)
    jitscan.segmented_scan((X, X), offsets=OFF, op=_pairs)
    for _ in range(2):
        with pytest.raises(ValueError, match="tuple values do not take one yet"):
            call()


@pytest.mark.parametrize(
    "call",
    [
        lambda: jitscan.scan(X, output=0),
        lambda: jitscan.reduce(X, output=0),
        lambda: jitscan.segmented_scan(X, flags=F, output=0),
        lambda: jitscan.segmented_reduce(X, offsets=OFF, output=0),
    ],
)
def test_output_of_one_array_is_refused_the_same_way_by_every_function(call):
    with pytest.raises(TypeError, match="output= selects fields of a tuple value; (x|values) is one array"):
        call()


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda c: jitscan.scan(c, initial=1), "complex scans do not take one yet"),
        (lambda c: jitscan.reduce(c, initial=1), "complex scans do not take one yet"),
        (lambda c: jitscan.cumsum(c, stats={}), "not available for complex input"),
        (lambda c: jitscan.scan(c, stats={}), "not available for complex input"),
        (lambda c: jitscan.reduce(c, stats={}), "not available for complex input"),
    ],
)
def test_complex_input_refuses_initial_and_stats_in_every_function(call, message):
    with pytest.raises(ValueError, match=message):
        call(np.ones(4, np.complex64))


def test_a_refused_segmented_call_after_a_warm_one_is_still_refused():
    jitscan.segmented_scan(X, flags=F, initial=1)  # warm: by flags, from a value
    with pytest.raises(ValueError, match="give flags="):
        jitscan.segmented_scan(X, offsets=OFF, initial=1)
    with pytest.raises(ValueError, match="exactly one"):
        jitscan.segmented_scan(X, offsets=OFF, flags=F)
    with pytest.raises(ValueError, match="unknown kind"):
        jitscan.segmented_scan(X, flags=F, kind="reduce")
    with pytest.raises(ValueError, match="variant 'memcpy' has no segmented form"):
        jitscan.segmented_reduce(X, offsets=OFF, variant="memcpy")


@pytest.mark.parametrize(
    "call",
    [
        lambda d: jitscan.scan(d, out=np.empty(10, np.int32)),
        lambda d: jitscan.cumsum(d, out=np.empty(10, np.int64)),
        lambda d: jitscan.segmented_scan(d, flags=F, out=np.empty(10, np.int32)),
    ],
)
def test_a_dask_array_refuses_out_in_every_function(call):
    da = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match="out= does not apply to a Dask array"):
        call(da.from_array(X, chunks=4))


@pytest.mark.parametrize(
    "call",
    [
        lambda d: jitscan.scan(d, stats={}),
        lambda d: jitscan.reduce(d, stats={}),
        lambda d: jitscan.cumsum(d, stats={}),
        lambda d: jitscan.segmented_scan(d, flags=F, stats={}),
    ],
)
def test_a_dask_array_refuses_stats_in_every_function(call):
    da = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match="stats= does not apply to a Dask array"):
        call(da.from_array(X, chunks=4))


# -- warm calls ---------------------------------------------------------------------------

#: the api functions a warm call may run besides the public ones: its key (a tuple's fields:
#: a comprehension, a frame of its own before Python 3.12), the warm call, and after the
#: prepared scan NumPy's sign of a float sum's zero (segmented reductions)
WARM_FRAMES = {"call_key", "host_tag", "<listcomp>", "go", "<lambda>", "numpy_sum_zero", "_form"}
#: the public functions a public function calls (segmented_cumsum is segmented_scan's)
PUBLIC = {"segmented_cumsum": {"segmented_cumsum", "segmented_scan"}}
API = str(PACKAGE / "api")


def _api_frames(fn) -> list[str]:
    """The functions defined under jitscan/api that one call of ``fn`` runs (in order)."""
    seen: list[str] = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(API):
            seen.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


def _forms(b, q):
    n = 3000
    rng = np.random.default_rng(1)
    on = (lambda a: b.to_device(np.ascontiguousarray(a), q)) if b is not None else (lambda a: a)
    x = on(rng.integers(0, 9, n).astype(np.int32))
    y = on(np.empty(n, np.int32))
    xf = on(rng.random((16, 40)).astype(np.float32))
    yf = on(np.empty((16, 40), np.float32))
    a, c = on(rng.random(n)), on(rng.random(n))
    h = on(np.empty(n))
    offs = np.r_[0, np.sort(rng.integers(0, n, 20)), n].astype(np.int64)
    flags = np.zeros(n, np.uint8)
    flags[offs[:-1]] = 1
    d_offs, d_flags = on(offs), on(flags)

    @jitscan.operator(identity=(1.0, 0.0))
    def affine(u, v):
        return (u[0] * v[0], u[1] * v[0] + v[1])

    return {
        "cumsum": lambda: jitscan.cumsum(x, out=y, dtype=np.int32),
        "scan": lambda: jitscan.scan(x, "max", out=y),
        "scan initial=": lambda: jitscan.scan(x, out=y, initial=np.int32(3)),
        "reduce": lambda: jitscan.reduce(x),
        "scan of tuples": lambda: jitscan.scan((a, c), affine, output=1, out=h),
        "segmented by flags": lambda: jitscan.segmented_cumsum(x, flags=d_flags, out=y),
        "segmented by offsets": lambda: jitscan.segmented_cumsum(x, offsets=d_offs, out=y),
        "segmented from a value": lambda: jitscan.segmented_scan(
            x, flags=d_flags, out=y, initial=np.int32(2)
        ),
        "segmented_reduce": lambda: jitscan.segmented_reduce(x, offsets=d_offs),
        "segmented tuples": lambda: jitscan.segmented_scan((a, c), flags=d_flags, op=affine, output=1, out=h),
        "cumsum along the last axis": lambda: jitscan.cumsum(xf, axis=1, out=yf),
        "reduce along the last axis": lambda: jitscan.reduce(xf, axis=-1),
    }


@pytest.mark.parametrize("where", ["numpy", "device"])
def test_a_warm_call_of_every_form_builds_no_call_and_dispatches_nothing(where):
    b = backends.get("opencl")
    if not b.available():
        pytest.skip("no OpenCL device")
    forms = _forms(b if where == "device" else None, b.queue_of(None) if where == "device" else None)
    jitscan.api.cache.clear()
    for name, fn in forms.items():
        fn()  # the miss: the warm call made (checked, refused or not) and remembered
        frames = _api_frames(fn)
        rest = [f for f in frames if f not in PUBLIC.get(frames[0], {frames[0]})]
        assert set(rest) <= WARM_FRAMES, (name, frames)
        assert len(rest) <= 4, (name, frames)


def test_warm_calls_give_the_long_ways_results():
    rng = np.random.default_rng(2)
    x2 = rng.random((6, 33)).astype(np.float32)
    for _ in range(2):  # the first call makes the warm call, the second takes it
        out = np.empty_like(x2)
        assert jitscan.cumsum(x2, axis=1, out=out) is out
        np.testing.assert_allclose(out, np.cumsum(x2, axis=1), rtol=1e-5)
        np.testing.assert_allclose(jitscan.cumsum(x2, axis=-1), np.cumsum(x2, axis=1), rtol=1e-5)
        strided = np.empty((6, 66), np.float32)[:, ::2]  # not its own flat view: the long way
        jitscan.cumsum(x2, axis=1, out=strided)
        np.testing.assert_allclose(strided, np.cumsum(x2, axis=1), rtol=1e-5)
        assert jitscan.cumsum(np.ones((3, 0), np.float32), axis=1).shape == (3, 0)
        np.testing.assert_allclose(jitscan.reduce(x2, axis=1), x2.sum(axis=1), rtol=1e-5)
        assert jitscan.reduce(x2, axis=1, keepdims=True).shape == (6, 1)
        assert jitscan.reduce(x2[:2, :4], axis=1).shape == (2,)  # another shape, its own offsets
        np.testing.assert_array_equal(jitscan.reduce(np.zeros((0, 4), np.float32), axis=1), [])
        zeros = -np.zeros(4)
        got = jitscan.segmented_reduce(zeros, offsets=[0, 2, 2, 4])
        assert not np.signbit(got).any()  # NumPy's sums of negative zeros and of nothing are +0.0
