"""Command line: ``python -m jitscan bench ...`` and ``python -m jitscan tune ...`` (also
installed as the ``jitscan`` script)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from importlib import metadata
from typing import Any

from . import __version__, backends, bench
from .bench.run import dtype_names
from .errors import JitscanError


def _sizes(text: str) -> list[int]:
    """Exponents to sizes: '16:28:2' -> 2^16, 2^18, ... 2^28; '20,24' -> 2^20, 2^24."""
    try:
        if ":" in text:
            lo, hi, *step = (int(v) for v in text.split(":"))
            return [1 << e for e in range(lo, hi + 1, step[0] if step else 1)]
        return [1 << int(v) for v in text.split(",") if v]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"sizes are exponents of 2: 'lo:hi[:step]' or 'a,b,c', got {text!r}"
        ) from exc


def _names(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _rates(text: str) -> list[int]:
    if text.strip().lower() in ("", "none", "0"):
        return []
    try:
        return [int(v) for v in text.split(",")]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"blocking rates are integers k (1 in k), got {text!r}") from exc


def _exponent(text: str) -> int:
    return _sizes(text)[0]


def _version() -> str:
    """The installed distribution's version; ``jitscan.__version__`` for a source tree on the path."""
    try:
        return metadata.version("jitscan")
    except metadata.PackageNotFoundError:
        return __version__


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jitscan", description="jitscan tools")
    parser.add_argument("--version", action="version", version=f"jitscan {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser(
        "bench",
        help="time variants, calls and peers; print the paper's table; plot throughput",
        description=(
            "Time jitscan's variants and peer libraries on one or more backends (device time), and "
            "the calls a user makes (host time, isolated call, pipelined rate); print the paper's "
            "results table, throughput and per-call tables (Markdown), and write plots and raw "
            "numbers to --out."
        ),
    )
    b.add_argument(
        "--backend",
        default=None,
        help="backend name(s), comma-separated, or 'all' (default: the default backend)",
    )
    b.add_argument(
        "--variants",
        type=_names,
        default=list(bench.VARIANTS),
        help=f"comma-separated (default: {','.join(bench.VARIANTS)})",
    )
    b.add_argument(
        "--dtypes",
        type=_names,
        default=None,
        help=(
            "comma-separated, of int32,uint32,int64,uint64,float32,float64 (default: int32; with "
            "--latency on a GPU int32,float32,int64,float64)"
        ),
    )
    b.add_argument(
        "--sizes",
        type=_sizes,
        default=None,
        help=(
            "exponents of 2: lo:hi[:step] or a,b,c (default: 10:28 on a GPU, 10:20:2 on a CPU; "
            "with --latency 10:28:2 on a GPU, 10:18:2 on a CPU)"
        ),
    )
    b.add_argument(
        "--reps",
        type=int,
        default=None,
        help="timed runs per configuration (30 GPU, 10 CPU; --latency 20 GPU)",
    )
    b.add_argument(
        "--quick",
        action="store_true",
        help="a short run: 3-4 sizes, 5 runs, 4 blocking rates (under two minutes on PoCL)",
    )
    b.add_argument("--no-peers", action="store_true", help="jitscan only, no peer libraries")
    b.add_argument(
        "--deterministic",
        action="store_true",
        help="jitscan's scans with deterministic=True (run once without to compare)",
    )
    b.add_argument(
        "--latency",
        action="store_true",
        help=(
            "only the per-call table (host time, isolated call, pipelined rate, device time of "
            "every call form of jitscan (--forms) and the peers, CUB and torch among them), from "
            "2^10 up, with ratios to each form's reference (CUB's flat scan on cupy, PyOpenCL's "
            "InclusiveScanKernel or jitscan's flat cumsum on opencl)"
        ),
    )
    b.add_argument(
        "--forms",
        type=_names,
        default=None,
        help=(
            "call forms of the per-call table, comma-separated, or 'all': "
            f"{','.join(bench.FORMS)} (default: all with --latency, else flat)"
        ),
    )
    b.add_argument(
        "--tuples",
        action="store_true",
        help=(
            "also tuple values and Python operators as a user calls them (linear recurrence, argmax, "
            "Welford, a Python sum) against CuPy, at every size (the 'Tuple values' table)"
        ),
    )
    b.add_argument(
        "--no-calls",
        action="store_true",
        help="skip the per-call figures in a device-time run (the 'Per call' table)",
    )
    b.add_argument(
        "--pipeline",
        type=int,
        default=bench.PIPELINE_CALLS,
        help=f"calls back to back in one pipelined measurement (default {bench.PIPELINE_CALLS})",
    )
    b.add_argument(
        "--blocking-rates",
        type=_rates,
        default=None,
        help="simulated blocking sweep, k of '1 in k' (default 512,256,...,2; quick 512,64,8,2; 'none')",
    )
    b.add_argument(
        "--blocking-size", type=_exponent, default=None, help="exponent of the blocking sweep's size"
    )
    b.add_argument(
        "--table-size",
        type=_exponent,
        default=None,
        help="exponent of the size of the paper's table (default 25, or the largest size below it)",
    )
    b.add_argument(
        "--out",
        default="bench-out",
        help=(
            "folder for bench.json, bench.csv, table.md and the plots throughput.png, blocking.png, "
            "latency.png (default bench-out)"
        ),
    )
    b.add_argument("--json", default=None, help="also write the JSON here")
    b.add_argument("--no-plots", action="store_true", help="skip the PNGs")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    t = sub.add_parser(
        "tune",
        help="measure this device's best tile shapes; later scans here use them",
        description=(
            "Search the chained scan's tile shapes (threads, vectors, vector width, blocks per "
            "multiprocessor, look-back window, tile-state encoding) for this device, per dtype class, "
            "op class, segmented mode and size class, within a time budget: a coordinate search from "
            "the built-in knobs, every candidate's answer checked before it is timed. The winners go "
            "to the user's cache directory, where every later scan on this device finds them "
            "(JITSCAN_TUNING=off ignores them)."
        ),
    )
    t.add_argument("--backend", default=None, help="backend name (default: the default backend)")
    t.add_argument("--dtypes", type=_names, default=["int32", "float32", "float64"])
    t.add_argument("--ops", type=_names, default=["add", "custom"], help="op classes: add, custom")
    t.add_argument("--segmented", type=_names, default=["none", "flags"], help="segmented modes: none, flags")
    t.add_argument("--sizes", type=_sizes, default=None, help="exponents of 2, 'lo:hi[:step]' or 'a,b'")
    t.add_argument("--budget", type=float, default=300.0, help="seconds for the search (default 300)")
    t.add_argument("--out", default=None, help="write the table here (default: the user's cache)")
    t.add_argument("--no-write", action="store_true", help="report only")
    t.add_argument(
        "--compare",
        action="store_true",
        help="then time the built-in knobs against the table in use at each size, in turns",
    )
    t.add_argument("--compare-only", action="store_true", help="only the comparison (no search)")
    t.add_argument("--no-progress", action="store_true")
    return parser


class _Progress:
    """A tqdm bar on stderr when tqdm is installed and wanted, else one line per step."""

    def __init__(self, enabled: bool) -> None:
        self.bar: Any = None
        self.enabled = enabled
        self.t0 = time.perf_counter()
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=0, unit="step", file=sys.stderr, dynamic_ncols=True)
            except ImportError:
                self.bar = None

    def total(self, steps: int) -> None:
        if self.bar is not None:
            self.bar.total += steps
            self.bar.refresh()

    def step(self, label: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(label, refresh=False)
            self.bar.update()
        elif self.enabled:
            print(f"[{time.perf_counter() - self.t0:6.1f}s] {label}", file=sys.stderr, flush=True)

    def log(self, msg: str) -> None:
        if self.bar is not None:
            self.bar.write(f"  {msg}", file=sys.stderr)
        else:
            print(f"  {msg}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _backend_names(text: str | None) -> list[str]:
    if text is None:
        return [backends.default().name]
    if text == "all":
        names = list(backends.available())
        if not names:
            backends.default()  # raises, saying why
        return names
    names = _names(text)
    for name in names:
        backends.require(name)  # unknown or unavailable: say so before measuring anything
    return names


def _write(what: str, path: str, writer: Callable[[bench.Report, str], None], report: bench.Report) -> None:
    try:
        writer(report, path)
        print(f"wrote {what}: {path}", file=sys.stderr)
    except ImportError as exc:
        print(f"no {what} ({exc}); pip install 'jitscan[bench]'", file=sys.stderr)


def bench_command(args: argparse.Namespace) -> int:
    """Run ``jitscan bench``; returns the exit status."""
    if args.dtypes is not None:
        args.dtypes = dtype_names(args.dtypes)  # int8 and the like: refused before anything starts
    names = _backend_names(args.backend)
    unknown = [v for v in args.variants if v not in bench.VARIANTS]
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; valid variants: {', '.join(bench.VARIANTS)}")
    forms = bench.form_names(args.forms) if args.forms is not None else None  # refused before anything
    if args.pipeline < 1:
        raise ValueError(f"--pipeline takes a positive number of calls, got {args.pipeline}")
    progress = _Progress(not args.no_progress)
    t0 = time.perf_counter()
    try:
        report = bench.run(
            names,
            args.variants,
            args.dtypes,
            args.sizes,
            reps=args.reps,
            peers=not args.no_peers,
            blocking_rates=args.blocking_rates,
            blocking_size=args.blocking_size,
            quick=args.quick,
            progress=progress.step,
            log=progress.log,
            total=progress.total,
            calls=not args.no_calls,
            latency=args.latency,
            tuples=args.tuples,
            forms=forms,
            pipeline=args.pipeline,
            **({"deterministic": True} if args.deterministic else {}),
        )
    finally:
        progress.close()
    report.config["seconds"] = round(time.perf_counter() - t0, 1)
    report.config["argv"] = sys.argv[1:]
    text = bench.markdown(report, args.table_size)
    devices = "; ".join(f"{d} ({b})" for b, d in report.devices.items())
    print(f"\ndevice: {devices}\n")
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "table.md"), "w") as fh:
        fh.write(f"device: {devices}\n\n{text}")
    _write("JSON", os.path.join(args.out, "bench.json"), bench.write_json, report)
    if args.json:
        _write("JSON", args.json, bench.write_json, report)
    _write("CSV", os.path.join(args.out, "bench.csv"), bench.write_csv, report)
    if not args.no_plots:
        categories = {r.category for r in report.results}
        if categories & {"variant", "peer"}:
            _write("throughput plot", os.path.join(args.out, "throughput.png"), bench.plot_throughput, report)
        if "blocking" in categories:
            _write("blocking plot", os.path.join(args.out, "blocking.png"), bench.plot_blocking, report)
        if "call" in categories:
            _write("per-call plot", os.path.join(args.out, "latency.png"), bench.plot_latency, report)
    print(f"bench took {report.config['seconds']:.0f} s", file=sys.stderr)
    return 0 if report.results else 1


def tune_command(args: argparse.Namespace) -> int:
    """Run ``jitscan tune``; returns the exit status."""
    from .tuner import compare, tune

    dtypes = dtype_names(args.dtypes)
    segmented = ["" if s == "none" else s for s in args.segmented]
    if not args.compare_only:
        progress = _Progress(not args.no_progress)
        try:
            report = tune(
                args.backend,
                dtypes=dtypes,
                ops=args.ops,
                segmented=segmented,
                sizes=args.sizes,
                budget=args.budget,
                write=not args.no_write,
                path=args.out,
                progress=progress.step,
                log=progress.log,
            )
        finally:
            progress.close()
        print(f"device: {report.device} ({report.backend}); {report.seconds:.0f} s\n")
        print(report.markdown())
        if not args.no_write:
            print(f"\nwrote {report.path}", file=sys.stderr)
    if args.compare or args.compare_only:
        print("\n| dtype | segments | n | built-in, 10^9 elements/s | tuned | built-in / tuned time |")
        print("|---|---|---:|---:|---:|---:|")
        for seg in segmented:
            for dtype, n, builtin, mine in compare(args.backend, dtypes, args.sizes, seg):
                cells = [dtype, seg or "none", f"2^{n.bit_length() - 1}", f"{n / builtin / 1e9:.2f}"]
                cells += [f"{n / mine / 1e9:.2f}", f"{builtin / mine:.3f}"]
                print("| " + " | ".join(cells) + " |", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m jitscan`` and of the ``jitscan`` console script."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "bench":
        try:
            return bench_command(args)
        except (JitscanError, ValueError) as exc:  # an unknown or unavailable backend, a dtype
            parser.exit(2, f"jitscan bench: {exc}\n")
    if args.command == "tune":
        try:
            return tune_command(args)
        except (JitscanError, ValueError) as exc:
            parser.exit(2, f"jitscan tune: {exc}\n")
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    raise SystemExit(main())
