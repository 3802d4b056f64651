"""Shared fixtures: backends (skipped with the reason when absent), references, poison."""

from __future__ import annotations

import os

import numpy as np
import pytest

# The suite checks the built-in knobs: a tuned table (the user's cache, or one shipped for
# this device) would change the programs under test from machine to machine.
# test_tuning.py turns tables back on where it tests them.
os.environ["JITSCAN_TUNING"] = "off"

import jitscan
from jitscan import backends
from jitscan.api.chunked import UFUNCS as BUILTIN_UFUNCS
from jitscan.dtypes import lookup
from jitscan.errors import BackendUnavailableError
from jitscan.operators import resolve
from jitscan.plan import tuning

INT_DTYPES = ("int32", "uint32", "int64", "uint64")
FLOAT_DTYPES = ("float32", "float64")
DTYPES = INT_DTYPES + FLOAT_DTYPES
OPS = ("add", "mul", "min", "max", "and", "or", "xor")
FFILL = jitscan.Monoid("ffill", combine="b != 0 ? b : a", identity=0)
#: the NumPy ufunc of each built-in op
UFUNCS = BUILTIN_UFUNCS


def pytest_configure(config: pytest.Config) -> None:
    """Fail on any warning of the OpenCL compiler about jitscan's programs: they must build cleanly.

    jitscan warns with the build log itself (``backends/opencl.py``, "jitscan: ..."); the
    warnings PyOpenCL gives for its own kernels (``astype``, copies), where NVIDIA's
    driver logs a note for every kernel, stay warnings.
    """
    try:
        import pyopencl  # noqa: F401 - only whether it is there
    except ImportError:
        return
    config.addinivalue_line("filterwarnings", "error:jitscan:pyopencl.CompilerWarning")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    """A test that needs a device where jitscan has no backend at all is skipped, with why.

    Tests of one backend skip through the ``backend`` fixture; the others call the default
    backend, which raises ``BackendUnavailableError`` when neither CuPy nor PyOpenCL can
    run. Where one can, that error stays a failure.
    """
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is None or not call.excinfo.errisinstance(BackendUnavailableError):
        return
    if any(backends.get(name).available() for name in backends.PREFERENCE):
        return
    report.outcome = "skipped"
    path, line, _ = item.location
    why = f"Skipped: the test needs a device ({call.excinfo.value})"
    report.longrepr = (path, (line or 0) + 1, why)


def op_dtype_pairs() -> list[tuple[str, str]]:
    """Every built-in op with every dtype it applies to."""
    return [
        (op, dt) for op in OPS for dt in DTYPES if not (op in ("and", "or", "xor") and dt in FLOAT_DTYPES)
    ]


@pytest.fixture(params=backends.names())
def backend(request) -> str:
    name = request.param
    b = backends.get(name)
    if not b.available():
        pytest.skip(f"backend {name!r} unavailable here: {b.unavailable_reason()}")
    return name


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


def alarm_copied_every_call(backend: str, queue: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Have the offsets alarm of ``queue`` come back to the host behind every launch: on an
    OpenCL GPU its copy runs at most once an interval (``opencl.ALARM_COPY_EVERY``), which
    a test of the call right after a bad one would otherwise meet (the interval has tests of
    its own); elsewhere the host sees the flag itself and nothing changes."""
    alarm = backends.get(backend).alarm(queue)
    monkeypatch.setattr(alarm, "_every", 0.0)


def device_info(backend: str):
    b = backends.get(backend)
    return b.device_info(b.queue_of(None))


def geometries(backend: str, dtype: str, op: object = "add") -> list[dict[str, int]]:
    """The default tile shapes of this backend's default device for ``op`` (one per size class)."""
    info = device_info(backend)
    shapes = []
    dt = lookup(dtype)
    monoid = op if isinstance(op, jitscan.Monoid) else resolve(op)
    for n in (1, (1 << 22) // dt.itemsize, None):  # small, mid-size (4 MiB) and large inputs
        spec = tuning.spec_for(info, variant="fallback", dtype=dt, monoid=monoid, n=n)
        geo = {k: getattr(spec, k) for k in ("threads", "vectors", "vector_width", "min_blocks")}
        geo["lookback_width"] = spec.lookback_width
        if geo not in shapes:
            shapes.append(geo)
    return shapes


def tile_of(geo: dict[str, int]) -> int:
    return geo["threads"] * geo["vectors"] * geo["vector_width"]


def tile_size(
    backend: str, dtype: str, segmented: str = "", variant: str = "", kind: str = "", op: object = "add"
) -> int:
    """Elements per tile of the default spec for large inputs (of a segmented mode, variant, kind, op)."""
    if not segmented:
        return tile_of(geometries(backend, dtype, op)[-1])
    monoid = op if isinstance(op, jitscan.Monoid) else resolve(op)
    spec = tuning.spec_for(
        device_info(backend),
        variant=variant or "fallback",
        dtype=lookup(dtype),
        monoid=monoid,
        kind=kind or "inclusive",
        segmented=segmented,
    )
    return spec.tile


def random_input(rng: np.random.Generator, n: int, dtype: str, op: object = "add") -> np.ndarray:
    """Random data suited to ``op``: never all zeros or all ones.

    Floats for add/min/max are small integers, so every partial sum is exact in any
    order and a float scan can be checked exactly; mul gets values near 1.
    """
    dt = np.dtype(dtype)
    name = op.name if isinstance(op, jitscan.Monoid) else op
    if name == "ffill":
        vals = rng.integers(1, 100, n).astype(dt)
        vals[rng.random(n) < 0.7] = 0  # gaps to fill
        return vals
    if dt.kind == "f":
        if name == "mul":
            return rng.uniform(0.999, 1.001, n).astype(dt)
        return rng.integers(-8, 9, n).astype(dt)
    if name in ("and", "or", "xor", "min", "max"):
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    if name == "mul":
        return rng.choice(np.array([1, 1, 1, 3, 5, 7, 2], dtype=dt), n)  # wraps, exact in integers
    lo = -1000 if dt.kind == "i" else 0
    return rng.integers(lo, 1000, n).astype(dt)


def reference(x: np.ndarray, op: object, kind: str) -> np.ndarray:
    """NumPy reference (float64 arithmetic for floats) of a scan or a reduction."""
    dt = x.dtype
    m = op if isinstance(op, jitscan.Monoid) else jitscan.BUILTIN_OPS[op]
    work = x.astype(np.float64) if dt.kind == "f" else x
    if m.name == "ffill":
        idx = np.maximum.accumulate(np.where(x != 0, np.arange(x.size), 0))
        inc = x[idx] if x.size else x
    else:
        ufunc = UFUNCS[m.name]
        inc = ufunc.accumulate(work, dtype=work.dtype) if x.size else work
    ident = np.array([m.identity_for(lookup(dt.name))]).astype(inc.dtype)
    if kind == "inclusive":
        return inc
    if kind == "exclusive":
        return np.concatenate([ident, inc[:-1]])
    return inc[-1] if x.size else ident[0]


def assert_scan_equal(y: object, ref: np.ndarray, x: np.ndarray, op: object = "add") -> None:
    """Exact, except float products (tolerance: their rounding depends on the order)."""
    y = np.asarray(y)
    assert y.shape == np.shape(ref), f"shape {y.shape} != {np.shape(ref)}"
    assert y.dtype == x.dtype, f"dtype {y.dtype} != {x.dtype}"
    name = op.name if isinstance(op, jitscan.Monoid) else op
    if x.dtype.kind == "f" and name == "mul":
        rtol = 1e-3 if x.dtype == np.float32 else 1e-9
        np.testing.assert_allclose(y, ref, rtol=rtol, atol=0)
    else:
        np.testing.assert_array_equal(y, np.asarray(ref).astype(x.dtype))


def poison(n: int, dtype: str) -> np.ndarray:
    """A garbage pattern (NaN for floats) to fill outputs with before a run."""
    if np.dtype(dtype).kind == "f":
        return np.full(n, np.nan, dtype)
    return np.frombuffer(b"\xa5" * (n * np.dtype(dtype).itemsize), dtype=dtype).copy()
