"""Scans of tuple values on a CUDA GPU, each call as a user makes it, against its peers.

Usage: python experiments/tuples_gpu.py [LOG2N ...]   (default 24 26 28)

Cases (float32 fields):

- ``recurrence``: h_t = a_t h_{t-1} + b_t as ``jitscan.scan((a, b), op=affine, output=1,
  out=h)`` (8 bytes read, 4 written an element) against a CuPy elementwise kernel moving
  the same bytes (``h = a + b``: the memcpy rate for them) and CUB's scan through
  ``cuda.compute`` (``cuda_compute_recurrence``: the affine map in C++, since its Python
  operators need numba-cuda-mlir).
- ``argmax``: ``jitscan.reduce((x, jitscan.index), op=argmax)`` against ``cupy.argmax(x)``;
  the running form, ``jitscan.scan((x, jitscan.index), op=argmax, output=1)``, against the
  same bytes in CuPy (4 read, 8 written).
- ``welford``: (count, mean, M2) from arrays (ones, x, zeros): the reduction against
  ``x.mean()`` and ``x.var()`` in CuPy, the running mean and M2 (``output=(1, 2)``)
  against the same bytes in CuPy (12 read, 8 written).
- ``python add``: ``jitscan.operator(lambda x, y: x + y)`` against ``op="add"`` on int32 and
  float32: a Python operator that is a built-in should run at the built-in's speed.

Per call, microseconds: ``host`` is the Python call alone (median of 50 warm calls, no wait
inside), ``piped`` 20 calls back to back between two events, one synchronization.
Contenders of a case take turns in 5 rounds, the order rotating; medians over the rounds.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable

import cupy
import numpy as np

import jitscan
from jitscan.bench.studies import host_and_piped
from jitscan.bench.tuples import affine, argmax, welford


def race(case: str, e: int, fns: dict[str, Callable[[], object]], nbytes: int, base: str) -> None:
    for fn in fns.values():
        fn()  # compile and warm
    rounds: dict[str, list[tuple[float, float]]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(5):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            rounds[name].append(host_and_piped(fns[name], 50, 20))
    med = {
        k: (statistics.median(h for h, _ in v), statistics.median(p for _, p in v)) for k, v in rounds.items()
    }
    for name, (h, p) in med.items():
        gbs = nbytes / (p * 1e-6) / 1e9
        print(f"{case} | 2^{e} | {name} | {h:.1f} | {p:.1f} | {gbs:.0f} | {med[base][1] / p:.3f}", flush=True)


#: the affine map and the read of ``b`` in C++, for cuda.compute's RawOp (see the module text)
_CPP = """
struct JsPair { float a; float b; };
extern "C" __device__ void js_affine(void* x, void* y, void* r)
{
    const JsPair p = *(const JsPair*)x, q = *(const JsPair*)y;
    JsPair o;
    o.a = p.a * q.a;
    o.b = p.b * q.a + q.b;
    *(JsPair*)r = o;
}
extern "C" __device__ void js_take_b(void* x, void* r) { *(float*)r = ((const JsPair*)x)->b; }
"""


def cuda_compute_recurrence(
    a: cupy.ndarray, b: cupy.ndarray, h: cupy.ndarray
) -> tuple[str, Callable[[], None]]:
    """CUB's scan (cuda.compute) of (a, b) pairs with the affine map, in the first layout that builds.

    Its Python operators need numba-cuda-mlir, which the GPU machine lacks, so the map is
    the same arithmetic in C++ (RawOp). Layouts tried in order: the two arrays zipped and
    ``b`` written through a TransformOutputIterator (jitscan's bytes), the two zipped and
    the pairs written (8 more bytes an element), an array of pairs in and out.
    """
    import cuda.compute as cc
    from cuda.compute._cpp_compile import compile_cpp_op_code
    from cuda.compute.op import RawOp

    n = a.size
    code = compile_cpp_op_code(_CPP)
    op = RawOp(ltoir=code, name="js_affine")
    pair = np.dtype([("a", np.float32), ("b", np.float32)])
    aos = cupy.empty(n, pair)
    flat = cupy.ndarray((2 * n,), cupy.float32, memptr=aos.data)
    flat[0::2], flat[1::2] = a, b

    def zipped_b_out():
        z = cc.ZipIterator(a, b)
        out = cc.TransformOutputIterator(h, RawOp(ltoir=code, name="js_take_b"), z.value_type)
        return z, out, "CUB, zipped in, b out"

    def zipped_pairs_out():
        return cc.ZipIterator(a, b), cupy.empty(n, pair), "CUB, zipped in, pairs out"

    def pairs():
        return aos, cupy.empty(n, pair), "CUB, pairs in and out"

    for layout in (zipped_b_out, zipped_pairs_out, pairs):
        try:
            d_in, d_out, what = layout()
            algo = cc.make_inclusive_scan(d_in=d_in, d_out=d_out, op=op, init_value=None)
            nbytes = algo(temp_storage=None, d_in=d_in, d_out=d_out, op=op, num_items=n, init_value=None)
            tmp = cupy.empty(max(int(nbytes), 1), np.uint8)

            def fn(algo=algo, d_in=d_in, d_out=d_out, tmp=tmp) -> None:
                algo(temp_storage=tmp, d_in=d_in, d_out=d_out, op=op, num_items=n, init_value=None)

            fn()
            cupy.cuda.get_current_stream().synchronize()
            return what, fn
        except Exception as exc:  # noqa: BLE001 - report, try the next layout
            print(f"# {layout.__name__}: {type(exc).__name__}: {str(exc)[:240]}")
    raise RuntimeError("no cuda.compute layout built")


#: the same bytes as each scan moves, in CuPy elementwise kernels: the memcpy rate to compare with
SAME_BYTES = {
    "recurrence": ("float32 a, float32 b", "float32 h", "h = a + b"),
    "argmax": ("float32 x", "int64 k", "k = (long long)x"),
    "welford": ("float32 c, float32 x, float32 z", "float32 m, float32 q", "m = c + x; q = z + x"),
}


def same_bytes(case: str) -> cupy.ElementwiseKernel:
    ins, outs, body = SAME_BYTES[case]
    return cupy.ElementwiseKernel(ins, outs, body, f"js_same_bytes_{case}")


def main() -> None:
    exps = [int(a) for a in sys.argv[1:]] or [24, 26, 28]
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    try:
        import cuda.compute  # noqa: F401
        import numba

        peers = f"numba {numba.__version__}"
    except ImportError as exc:
        peers = f"cuda.compute unavailable ({exc})"
    print(f"{name}; CuPy {cupy.__version__}; jitscan {jitscan.__version__}; {peers}")
    print("case | n | call | host µs | piped µs | GB/s | speed / first")
    rng = cupy.random.default_rng(0)
    for e in exps:
        one_size(e, rng)


def one_size(e: int, rng: cupy.random.Generator) -> None:
    n = 1 << e
    a = rng.uniform(0.5, 1.0, n, dtype=cupy.float32)
    b = rng.standard_normal(n, dtype=cupy.float32)
    h = cupy.empty(n, cupy.float32)
    # a check of the result first: a reference recurrence in float64 on 2^16 items
    small = jitscan.scan((a[:65536], b[:65536]), op=affine, output=1)
    ah, bh, ref, acc = cupy.asnumpy(a[:65536]), cupy.asnumpy(b[:65536]), np.empty(65536), 0.0
    for i in range(65536):
        acc = float(ah[i]) * acc + float(bh[i])
        ref[i] = acc
    assert np.allclose(cupy.asnumpy(small), ref, rtol=1e-3, atol=1e-3)
    fns: dict[str, Callable[[], object]] = {
        "jitscan": lambda: jitscan.scan((a, b), op=affine, output=1, out=h),
        "same bytes (CuPy)": lambda: same_bytes("recurrence")(a, b, h),
    }
    try:
        what, fn = cuda_compute_recurrence(a, b, cupy.empty(n, cupy.float32))
        fns[what] = fn
    except Exception as exc:  # noqa: BLE001 - the peer is optional
        print(f"# cuda.compute: {type(exc).__name__}: {str(exc)[:300]}")
    race("recurrence", e, fns, 12 * n, "jitscan")

    x = rng.standard_normal(n, dtype=cupy.float32)
    _, at = jitscan.reduce((x, jitscan.index), op=argmax)
    assert int(at) == int(cupy.argmax(x))
    i_out = cupy.empty(n, cupy.int64)
    race(
        "argmax reduce",
        e,
        {
            "jitscan": lambda: jitscan.reduce((x, jitscan.index), op=argmax),
            "cupy.argmax": lambda: cupy.argmax(x),
        },
        4 * n,
        "jitscan",
    )
    race(
        "argmax scan",
        e,
        {
            "jitscan": lambda: jitscan.scan((x, jitscan.index), op=argmax, output=1, out=i_out),
            "same bytes (CuPy)": lambda: same_bytes("argmax")(x, i_out),
        },
        12 * n,
        "jitscan",
    )

    ones, zeros = cupy.ones(n, cupy.float32), cupy.zeros(n, cupy.float32)
    cnt, mean, m2 = jitscan.reduce((ones, x, zeros), op=welford)
    assert abs(float(mean) - float(x.mean())) < 1e-3 and abs(float(m2) / n - float(x.var())) < 1e-2
    race(
        "welford reduce",
        e,
        {
            "jitscan": lambda: jitscan.reduce((ones, x, zeros), op=welford),
            "cupy mean + var": lambda: (x.mean(), x.var()),
        },
        12 * n,
        "jitscan",
    )
    mo, m2o = cupy.empty(n, cupy.float32), cupy.empty(n, cupy.float32)
    race(
        "welford scan",
        e,
        {
            "jitscan": lambda: jitscan.scan((ones, x, zeros), op=welford, output=(1, 2), out=(mo, m2o)),
            "same bytes (CuPy)": lambda: same_bytes("welford")(ones, x, zeros, mo, m2o),
        },
        20 * n,
        "jitscan",
    )

    add = jitscan.operator(lambda x, y: x + y, identity=0)
    for dt in (cupy.int32, cupy.float32):
        v = (rng.integers(-100, 100, n) if dt == cupy.int32 else rng.standard_normal(n)).astype(dt)
        out = cupy.empty(n, dt)
        assert bool((jitscan.scan(v, op=add) == jitscan.scan(v, op="add")).all()) or dt == cupy.float32
        race(
            f"python add {np.dtype(dt).name}",
            e,
            {
                "op='add'": lambda v=v, out=out: jitscan.scan(v, op="add", out=out),
                "python x + y": lambda v=v, out=out: jitscan.scan(v, op=add, out=out),
            },
            8 * n,
            "op='add'",
        )


if __name__ == "__main__":
    main()
