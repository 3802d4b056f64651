"""jitscan's Dask scans on one worker per GPU (``dask_cuda.LocalCUDACluster``): checks, then scaling.

Usage: python experiments/dask_cuda_scaling.py [--gpus 1,2] [--sizes 30:33] [--chunk 26,28]
       [--dtypes int32,float32] [--rounds 3] [--no-check] [--plans tree] [--profile 32]

For each GPU count, a ``LocalCUDACluster`` of that many workers (one per GPU, TCP between
them, NVLink multicast left off) and a client on it:

- checks (all GPUs only, unless ``--no-check``): ``cumsum``, an exclusive scan with a
  non-commutative operator, ``segmented_cumsum`` with segments crossing chunk and GPU
  boundaries, and ``cumsum(axis=0)`` of a 2-D array chunked along axis 0, each compared
  with NumPy on a sample of chunks;
- scaling: ``jitscan.cumsum(d).persist()`` and ``dask.array.cumsum(d).persist()`` of
  2^SIZE elements in CuPy chunks of 2^CHUNK made on the workers, each timed from the call
  until every task is done and every worker's GPU is idle, taking turns; the median of
  the rounds. jitscan's scan takes the plan ``jitscan.dask-plan="auto"`` gives under a
  distributed client (the placed tree: persisted chunks, a total per worker); ``--plans``
  times other plans in the same turns (default: ``tree``, a total per chunk; ``chain``;
  ``none``). Dask's floor beside them: ``map_blocks`` returning each block, a task per
  chunk and no GPU work.

Prints a table per dtype and chunk size: time, G elements/s, the ratio to
``dask.array.cumsum`` and the speed-up over one GPU. The samples of jitscan's cumsum are
checked against NumPy. ``--profile SIZE``: after the rounds of 2^SIZE, one more call of each
under ``distributed``'s task stream, summed per task group (tasks, compute, transfers, the
span from the first task's start): where the time of a distributed scan goes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

# NVLink multicast off for anything the workers start (the machines' rule)
for _var, _off in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ.setdefault(_var, _off)
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import cupy  # noqa: E402
import dask  # noqa: E402
import dask.array as da  # noqa: E402
import numpy as np  # noqa: E402
from dask.utils import key_split  # noqa: E402
from dask_cuda import LocalCUDACluster  # noqa: E402
from distributed import Client, get_task_stream, wait  # noqa: E402

import jitscan  # noqa: E402


def _make(dtype: str, block_info: dict | None = None) -> cupy.ndarray:
    """A chunk made on the worker's GPU: small integers (sums stay exact), or floats in [0, 1)."""
    start, stop = block_info[None]["array-location"][0]
    rng = cupy.random.default_rng(start)
    if np.dtype(dtype).kind == "f":
        return rng.random(stop - start, dtype=dtype)
    return rng.integers(0, 8, stop - start, dtype=dtype)


def device_array(n: int, chunk: int, dtype: str, client: Client) -> da.Array:
    chunks = ((chunk,) * (n // chunk) + ((n % chunk,) if n % chunk else ()),)
    d = da.map_blocks(_make, dtype, dtype=dtype, chunks=chunks, meta=cupy.empty(0, dtype))
    d = client.persist(d)
    wait(d)
    return d


def _idle() -> None:
    cupy.cuda.runtime.deviceSynchronize()


def timed(client: Client, make) -> float:  # noqa: ANN001
    """Seconds from the call until the result is on the workers and their GPUs are idle."""
    client.run(_idle)
    t = time.perf_counter()
    y = client.persist(make())
    wait(y)
    client.run(_idle)
    dt = time.perf_counter() - t
    del y
    return dt


def task_profile(client: Client, make) -> list[str]:  # noqa: ANN001
    """One call under the task stream: per task group, tasks, compute, transfers, span."""
    with get_task_stream(client=client) as stream:
        wall = timed(client, make)
    groups: dict = {}
    first = min((s["start"] for r in stream.data for s in r["startstops"]), default=0.0)
    for rec in stream.data:
        g = groups.setdefault(key_split(rec["key"]), {"n": 0, "compute": 0.0, "transfer": 0.0, "end": 0.0})
        g["n"] += 1
        for s in rec["startstops"]:
            kind = "compute" if s["action"] == "compute" else "transfer"
            g[kind] += s["stop"] - s["start"]
            g["end"] = max(g["end"], s["stop"] - first)
    lines = [f"wall {wall * 1e3:.1f} ms; per task group: tasks, compute, transfers (sums), last end, ms"]
    for name, g in sorted(groups.items(), key=lambda kv: kv[1]["end"]):
        sums = f"{g['compute'] * 1e3:9.1f} {g['transfer'] * 1e3:9.1f} {g['end'] * 1e3:9.1f}"
        lines.append(f"  {name[:40]:40s} {g['n']:5d} {sums}")
    # each worker's computes in order: the gaps between one's end and the next's start
    # (the worker's own cost of a task, and its waits on the scheduler), in ms
    spans: dict = {}
    for rec in stream.data:
        for s in rec["startstops"]:
            if s["action"] == "compute":
                spans.setdefault(rec.get("worker", "?"), []).append((s["start"], s["stop"]))
    for w, ss in sorted(spans.items()):
        ss.sort()
        gaps = [b[0] - a[1] for a, b in zip(ss, ss[1:], strict=False)]
        if gaps:
            q = statistics.quantiles(gaps, n=10) if len(gaps) > 1 else gaps * 9
            lines.append(
                f"  worker {w[-5:]}: {len(ss)} computes, gaps between them: median "
                f"{statistics.median(gaps) * 1e3:.2f}, 10%-90% {q[0] * 1e3:.2f}-{q[-1] * 1e3:.2f}, "
                f"sum {sum(gaps) * 1e3:.1f} ms"
            )
    return lines


def sample_check(d: da.Array, y: da.Array, blocks: list[int]) -> bool:
    """Chunks of jitscan's cumsum against NumPy (int64 sums for integers; float64 for floats)."""
    starts = np.cumsum((0, *d.chunks[0]))
    for i in blocks:
        before = d[: starts[i]].sum(dtype=np.float64 if d.dtype.kind == "f" else np.int64).compute()
        part = cupy.asnumpy(d.blocks[i].compute())
        acc = np.float64 if d.dtype.kind == "f" else np.int64
        want = (cupy.asnumpy(before).astype(acc) + np.cumsum(part, dtype=acc)).astype(y.dtype)
        got = cupy.asnumpy(y.blocks[i].compute())
        if d.dtype.kind == "f":
            if not np.allclose(got, want, rtol=1e-3):
                return False
        elif not np.array_equal(got, want):
            return False
    return True


def _ffill(a, b):  # noqa: ANN001, ANN202
    return b if b != 0 else a


def checks(client: Client, gpus: int) -> None:
    """The four forms against NumPy, with chunks on every GPU (boundaries between GPUs included)."""
    n, chunk = 1 << 24, 1 << 20
    rng = np.random.default_rng(3)
    host = rng.integers(-50, 50, n).astype(np.int32)
    host[rng.random(n) < 0.9] = 0  # a forward fill's gaps
    d = client.persist(da.from_array(host, chunks=chunk).map_blocks(cupy.asarray))
    wait(d)
    where = {k: v for k, v in client.who_has(d).items()}
    sample = [0, 1, len(d.chunks[0]) // 2, len(d.chunks[0]) - 1]
    results = []
    y = jitscan.cumsum(d)
    results.append(("cumsum", sample_check(d, y, sample)))
    ffill = jitscan.operator(_ffill, identity=0)
    ex = jitscan.scan(d, ffill, kind="exclusive").compute().get()
    filled = host[np.maximum.accumulate(np.where(host != 0, np.arange(n), 0))]
    want = np.r_[0, filled[:-1]]
    results.append(("exclusive forward fill (Python operator)", bool(np.array_equal(ex, want))))
    offsets = np.unique(np.r_[0, rng.integers(0, n, 40), np.arange(0, n, 3 * chunk + 17), n])
    seg = jitscan.segmented_cumsum(d, offsets=offsets).compute().get()
    bounds = zip(offsets[:-1], offsets[1:], strict=True)
    want = np.concatenate([np.cumsum(host[a:b], dtype=np.int64) for a, b in bounds])
    results.append(("segmented_cumsum, segments across chunks and GPUs", bool(np.array_equal(seg, want))))
    m = host.reshape(1 << 12, 1 << 12)
    dm = client.persist(da.from_array(m, chunks=(1 << 8, 1 << 12)).map_blocks(cupy.asarray))
    got = jitscan.cumsum(dm, axis=0).compute().get()
    results.append(("cumsum(axis=0) of 2-D, chunked on axis 0", bool(np.array_equal(got, np.cumsum(m, 0)))))
    workers = len({w for ws in where.values() for w in ws})
    print(f"\nchecks on {gpus} GPU(s), int32 2^24 in chunks of 2^20 on {workers} worker(s):")
    for name, ok in results:
        print(f"| {name} | {'ok' if ok else 'WRONG'} |")


def measure(
    client: Client,
    g: int,
    dtype: str,
    log_n: int,
    chunk: int,
    rounds: int,
    profile: bool = False,
    extra: tuple[str, ...] = (),
) -> dict:
    """Median seconds of each contender on ``g`` GPUs, and whether jitscan's samples are right."""
    try:
        d = device_array(1 << log_n, 1 << chunk, dtype, client)
    except Exception as exc:  # noqa: BLE001 - out of device memory: say so, go on
        print(f"{g} GPU(s), {dtype} 2^{log_n}: not made ({type(exc).__name__})")
        return {}
    plans = {"jitscan": "auto", **{f"jitscan, {p}": p for p in extra}}
    others = {"dask.array": lambda: da.cumsum(d), "floor": lambda: d.map_blocks(_same)}

    def scan(plan: str) -> float:
        with dask.config.set({"jitscan.dask-plan": plan}):
            return timed(client, lambda: jitscan.cumsum(d))

    for plan in plans.values():  # warm-up: compiles, pools
        scan(plan)
    times: dict = {}
    for _ in range(rounds):
        for key, plan in plans.items():
            times.setdefault(key, []).append(scan(plan))
        for key, make in others.items():
            try:
                times.setdefault(key, []).append(timed(client, make))
            except Exception as exc:  # noqa: BLE001
                print(f"{key}: {type(exc).__name__} at 2^{log_n} on {g} GPU(s)")
    out = {key: statistics.median(v) for key, v in times.items() if v}
    if profile:
        for who, make in (("jitscan", lambda: jitscan.cumsum(d)), ("dask.array", lambda: da.cumsum(d))):
            lines = task_profile(client, make)
            print(f"profile, {who}, {dtype} 2^{log_n} in chunks of 2^{chunk} on {g} GPU(s): {lines[0]}")
            print("\n".join(lines[1:]), flush=True)
    k = len(d.chunks[0])
    out["ok"] = sample_check(d, jitscan.cumsum(d), sorted({0, 1, k // 2, k - 1} & set(range(k))))
    return out


def _same(block: Any) -> Any:
    """Dask's floor: a task per chunk that returns its block (no GPU work)."""
    return block


def table(rows: dict, dtype: str, chunk: int, sizes: list[int], counts: list[int]) -> None:
    head = (
        "| n | GPUs | jitscan ms | G el/s | dask.array ms | vs dask.array | over 1 GPU | checked | floor ms |"
    )
    print(head)
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|")
    for log_n in sizes:
        for g in counts:
            r = rows.get((dtype, chunk, log_n, g), {})
            t, ref = r.get("jitscan"), r.get("dask.array")
            if t is None:
                continue
            one = rows.get((dtype, chunk, log_n, 1), {}).get("jitscan")
            cells = [f"2^{log_n}", str(g), f"{t * 1e3:.1f}", f"{(1 << log_n) / t / 1e9:.1f}"]
            cells += [f"{ref * 1e3:.1f}", f"{ref / t:.2f}x"] if ref else ["-", "-"]
            cells += [f"{one / t:.2f}x" if one else "-", "ok" if r.get("ok") else "WRONG"]
            cells += [f"{r['floor'] * 1e3:.1f}" if r.get("floor") else "-"]
            print("| " + " | ".join(cells) + " |")
            for key in sorted(k for k in r if k.startswith("jitscan, ")):
                other, one_other = r[key], rows.get((dtype, chunk, log_n, 1), {}).get(key)
                cells = [f"({key.split(', ')[1]})", str(g), f"{other * 1e3:.1f}"]
                cells += [f"{(1 << log_n) / other / 1e9:.1f}", "", f"{ref / other:.2f}x" if ref else "-"]
                cells += [f"{one_other / other:.2f}x" if one_other else "-", "", ""]
                print("| " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", default=None, help="GPU counts, e.g. 1,2 (default: 1 and all)")
    ap.add_argument("--sizes", default="30:33", help="log2 sizes, A:B inclusive or a list")
    ap.add_argument("--chunk", default="26", help="log2 of the chunk size, or a list: 26,28")
    ap.add_argument("--dtypes", default="int32,float32")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--plans", default="tree", help="other plans timed in turns: tree, chain, none")
    ap.add_argument("--profile", type=int, default=None, help="log2 size to profile (task stream)")
    ap.add_argument(
        "--saturation",
        default=None,
        help="the scheduler's distributed.scheduler.worker-saturation (default: Dask's; 'inf' sends "
        "every ready task to its worker at once instead of queuing root-ish tasks)",
    )
    args = ap.parse_args()
    total = cupy.cuda.runtime.getDeviceCount()
    counts = sorted({1, total}) if args.gpus is None else [int(g) for g in args.gpus.split(",")]
    if ":" in args.sizes:
        a, b = map(int, args.sizes.split(":"))
        sizes = list(range(a, b + 1))
    else:
        sizes = [int(s) for s in args.sizes.split(",")]
    chunks = [int(c) for c in args.chunk.split(",")]
    import dask_cuda
    import distributed

    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"{total} x {name}; dask {dask.__version__}, distributed {distributed.__version__},")
    print(f"dask-cuda {dask_cuda.__version__}, CuPy {cupy.__version__}, jitscan {jitscan.__version__}")
    saturation = args.saturation or dask.config.get("distributed.scheduler.worker-saturation")
    print(f"worker-saturation {saturation}")
    rows: dict = {}
    for g in counts:
        visible = ",".join(str(i) for i in range(g))
        config = (
            {} if args.saturation is None else {"distributed.scheduler.worker-saturation": args.saturation}
        )
        with dask.config.set(config):
            cluster = LocalCUDACluster(
                CUDA_VISIBLE_DEVICES=visible, threads_per_worker=1, dashboard_address=None
            )
        with cluster, Client(cluster) as client:
            if g == max(counts) and not args.no_check:
                checks(client, g)
            for chunk in chunks:
                for dtype in args.dtypes.split(","):
                    for log_n in sizes:
                        prof = log_n == args.profile and dtype == args.dtypes.split(",")[0]
                        extra = tuple(p for p in args.plans.split(",") if p not in ("", "none"))
                        rows[(dtype, chunk, log_n, g)] = row = measure(
                            client, g, dtype, log_n, chunk, args.rounds, prof, extra
                        )
                        t, ref = row.get("jitscan"), row.get("dask.array")
                        if t and ref:  # progress, in case the run is cut short
                            where = f"{g} GPU(s) {dtype} 2^{log_n}/2^{chunk}"
                            floor = f", floor {row['floor'] * 1e3:.1f}" if row.get("floor") else ""
                            others = "".join(
                                f", {k.split(', ')[1]} {v * 1e3:.1f}"
                                for k, v in row.items()
                                if k.startswith("jitscan, ")
                            )
                            print(
                                f"{where}: {t * 1e3:.1f} ms{others}, dask {ref * 1e3:.1f}{floor}", flush=True
                            )
    for chunk in chunks:
        for dtype in args.dtypes.split(","):
            print(f"\n{dtype}, chunks of 2^{chunk}, median of {args.rounds} rounds")
            table(rows, dtype, chunk, sizes, counts)


if __name__ == "__main__":
    main()
