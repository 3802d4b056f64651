"""The Markdown tables of a report: the paper's results table, throughput, blocking, and per call."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

from .calls import JITSCAN_CALLS, PIPELINE_CALLS
from .forms import FLAT, FORMS, reference
from .host import PAIRS
from .peers import baseline
from .results import CALL_FIGURES, Report, Result, log2_label
from .schedule import table_size
from .tuples import PAIRS as TUPLE_PAIRS


def _ge(v: float) -> str:
    return "" if v is None or math.isnan(v) else f"{v / 1e9:.3g}" if v < 1e10 else f"{v / 1e9:.1f}"


def _num(v: float, fmt: str = ".3f") -> str:
    return "" if v is None or math.isnan(v) else format(v, fmt)


def _pct(a: float, b: float) -> str:
    return "" if not b or math.isnan(a) or math.isnan(b) else f"{100 * a / b:.1f}%"


def paper_table(report: Report, n: int | None = None) -> str:
    """The paper's results table (rows: metrics; columns: backend and dtype) at one size.

    Harmonic means are over the timed runs at size ``n`` (default :func:`table_size` of
    the sizes measured); the look-back counters are averages over instrumented runs.
    """
    main = [r for r in report.results if r.category == "variant"]
    if not main:
        return "(no jitscan variant was measured)"
    n = n if n is not None else table_size(r.n for r in main)
    cols = sorted({(r.backend, r.dtype) for r in main if r.n == n}, key=lambda c: (c[0], c[1]))

    def get(backend: str, dtype: str, name: str) -> Result | None:
        found = [r for r in main if (r.backend, r.dtype, r.name, r.n) == (backend, dtype, name, n)]
        return found[0] if found else None

    def hm(c: tuple[str, str], name: str) -> float:
        r = get(*c, name)
        return r.hmean_elements_per_s if r else float("nan")

    def per_wg(c: tuple[str, str], counter: str) -> float:
        r = get(*c, "fallback")
        return r.per_workgroup(counter) if r else float("nan")

    def total(c: tuple[str, str], counter: str) -> float:
        r = get(*c, "fallback")
        return r.stats.get(counter, float("nan")) if r else float("nan")

    rows: list[tuple[str, Callable[[tuple[str, str]], str]]] = [
        ("H-mean memcpy (10^9 ele/s)", lambda c: _ge(hm(c, "memcpy"))),
        ("H-mean fallback (10^9 ele/s)", lambda c: _ge(hm(c, "fallback"))),
        ("H-mean RTS (10^9 ele/s)", lambda c: _ge(hm(c, "rts"))),
        ("H-mean lookback (10^9 ele/s)", lambda c: _ge(hm(c, "lookback"))),
        ("fallback / memcpy (%)", lambda c: _pct(hm(c, "fallback"), hm(c, "memcpy"))),
        ("fallback / RTS (%)", lambda c: _pct(hm(c, "fallback"), hm(c, "rts"))),
        ("Avg spins per workgroup", lambda c: _num(per_wg(c, "spins"))),
        ("Avg look-back length per workgroup", lambda c: _num(per_wg(c, "lookback_steps"))),
        ("Avg fallbacks initiated", lambda c: _num(total(c, "fallbacks"), ".1f")),
        ("Avg successful insertions", lambda c: _num(total(c, "insertions"), ".1f")),
        ("Workgroups (tiles)", lambda c: _num(total(c, "tiles"), ".0f")),
    ]
    lines = [
        "| Metric | " + " | ".join(f"{report.devices.get(b, b)} ({b}) {d}" for b, d in cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    lines += [f"| {label} | " + " | ".join(cell(c) for c in cols) + " |" for label, cell in rows]
    caption = f"Inclusive prefix sum, n = 2^{log2_label(n)}."
    return caption + "\n\n" + "\n".join(lines)


def throughput_table(report: Report) -> str:
    """Ge/s of every variant and peer per size (and % of jitscan's memcpy), per backend and dtype."""
    main = [r for r in report.results if r.category in ("variant", "peer")]
    blocks = []
    for backend, dtype in sorted({(r.backend, r.dtype) for r in main if r.backend != "host"}):
        rows = [r for r in main if r.dtype == dtype and r.backend in (backend, "host")]
        sizes = sorted({r.n for r in rows if r.backend == backend})
        rows = [r for r in rows if r.n in sizes]
        base = {r.n: r.elements_per_s for r in rows if r.name == "memcpy" and r.category == "variant"}
        names: list[str] = []
        for r in rows:
            if r.name not in names:
                names.append(r.name)
        head = (
            f"**{report.devices.get(backend, backend)}** ({backend}), {dtype}: 10^9 elements/s (% of memcpy)"
        )
        lines = [
            head,
            "",
            "| algorithm | " + " | ".join(f"2^{log2_label(n)}" for n in sizes) + " | H-mean |",
            "|---|" + "---:|" * (len(sizes) + 1),
        ]
        for name in names:
            cells = []
            speeds = []
            for n in sizes:
                r = next((r for r in rows if r.name == name and r.n == n), None)
                if r is None:
                    cells.append("")
                    continue
                speeds.append(r.elements_per_s)
                pct = _pct(r.elements_per_s, base.get(n, 0.0))
                cells.append(
                    f"{_ge(r.elements_per_s)} ({pct})" if pct and name != "memcpy" else _ge(r.elements_per_s)
                )
            hmean = statistics.harmonic_mean(speeds) if speeds else float("nan")
            host = " (host)" if any(r.timing == "host" for r in rows if r.name == name) else ""
            lines.append(f"| {name}{host} | " + " | ".join(cells) + f" | {_ge(hmean)} |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) if blocks else "(nothing measured)"


def blocking_table(report: Report) -> str:
    """The simulated-blocking sweep: throughput and look-back counters per blocking rate."""
    rows = [r for r in report.results if r.category == "blocking"]
    blocks = []
    for backend, dtype, n in sorted({(r.backend, r.dtype, r.n) for r in rows}):
        mine = [r for r in rows if (r.backend, r.dtype, r.n) == (backend, dtype, n)]
        memcpy = next((r for r in mine if r.name == "memcpy"), None)
        free = next((r for r in mine if r.name == "fallback" and r.block_every == 0), None)
        sweep = sorted(
            (r for r in mine if r.name == "fallback"), key=lambda r: (r.block_every != 0, -r.block_every)
        )
        lines = [
            f"**{report.devices.get(backend, backend)}** ({backend}), fallback, {dtype}, "
            f"n = 2^{log2_label(n)}: simulated blocking (1 in k workgroups never posts)",
            "",
            "| blocking rate | 10^9 ele/s | % of unblocked | % of memcpy | fallbacks / wg | spins / wg "
            "| look-back / wg | insertions / wg |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in sweep:
            rate = f"1/{r.block_every}" if r.block_every else "none"
            lines.append(
                f"| {rate} | {_ge(r.hmean_elements_per_s)} "
                f"| {_pct(r.hmean_elements_per_s, free.hmean_elements_per_s if free else 0.0)} "
                f"| {_pct(r.hmean_elements_per_s, memcpy.hmean_elements_per_s if memcpy else 0.0)} "
                f"| {_num(r.per_workgroup('fallbacks'))} | {_num(r.per_workgroup('spins'))} "
                f"| {_num(r.per_workgroup('lookback_steps'))} | {_num(r.per_workgroup('insertions'))} |"
            )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) if blocks else ""


def _us(seconds: float) -> str:
    """Microseconds with three significant digits or so."""
    if seconds is None or math.isnan(seconds):
        return ""
    us = seconds * 1e6
    return f"{us:.2f}" if us < 10 else f"{us:.1f}" if us < 1000 else f"{us:.0f}"


def figure_notes(calls: int = PIPELINE_CALLS) -> dict[str, str]:
    """What each per-call figure is, as the tables say it (``calls``: calls per pipelined batch)."""
    return {
        "host": "host time of the Python call alone (perf_counter, nothing waits inside)",
        "isolated": "one call on an idle device: event before it, the call, event after it, synchronize",
        "pipelined": f"{calls} calls back to back, one synchronization: time per call",
        "device": "device time of the work the call queues (spin kernel first, as the throughput tables)",
    }


def _figure_rows(value: dict, names: list[str], sizes: list[int], base: str | None = None) -> list[str]:
    """Rows ``| figure | call | µs per size |`` of per-call figures (``value[(name, figure, n)]``
    in seconds), each cell with its ratio to ``base``'s where that is given; empty rows left out."""
    lines = []
    for figure in CALL_FIGURES:
        for name in names:
            cells = []
            for n in sizes:
                t = value.get((name, figure, n))
                if t is None:
                    cells.append("")
                    continue
                ref = value.get((base, figure, n)) if base is not None and name != base else None
                cells.append(f"{_us(t)} ({t / ref:.2f})" if ref else _us(t))
            if any(cells):
                lines.append(f"| {figure} | {name} | " + " | ".join(cells) + " |")
    return lines


def _form_order(rows: list[Result]) -> list[tuple[str, str]]:
    """(form, call) of every per-call row in table order: forms as :data:`FORMS`, jitscan's calls
    first within each (the flat form's as :data:`JITSCAN_CALLS`), then the peers as measured."""
    seen = list(dict.fromkeys((r.call or FLAT, r.name) for r in rows))

    def rank(key: tuple[str, str]) -> tuple[int, int, int]:
        form, name = key
        mine = JITSCAN_CALLS.index(name) if name in JITSCAN_CALLS else len(JITSCAN_CALLS)
        first = mine if name.startswith("jitscan") else len(JITSCAN_CALLS) + 1
        return (FORMS.index(form) if form in FORMS else len(FORMS), first, seen.index(key))

    return sorted(seen, key=rank)


def _reference(backend: str, form: str) -> str | None:
    return reference(backend, form) or (baseline(backend) if form == FLAT else None)


def latency_table(report: Report) -> str:
    """The per-call figures: microseconds per call and size, and each call's ratio to its form's reference.

    One table per backend and dtype; rows are figure, call form (``call``, see
    :mod:`jitscan.bench.forms`) and the contender (jitscan's calls first within each
    form, then the peers); cells ``microseconds (ratio)``, the ratio being the row's
    figure over its form's reference's at the same size (below 1 is faster): CUB's flat
    scan on CUDA for the flat and segmented scans, PyOpenCL's ``InclusiveScanKernel``
    for OpenCL's flat form, and so on (:data:`jitscan.bench.forms.REFERENCES`, listed
    under the tables). A call that could not be timed there says ``error`` (the reason
    is under "Skipped" and in the JSON).
    """
    rows = [r for r in report.results if r.category == "call"]
    pipelined = report.config.get("pipeline", PIPELINE_CALLS) if report.config else PIPELINE_CALLS
    blocks = []
    refs: dict[tuple[str, str], list[str]] = {}  # (backend, reference) -> the forms it is of
    for backend, dtype in sorted({(r.backend, r.dtype) for r in rows}):
        mine = [r for r in rows if (r.backend, r.dtype) == (backend, dtype)]
        sizes = sorted({r.n for r in mine})
        keys = _form_order(mine)
        names = {name for _, name in keys}
        value = {(r.name, r.timing, r.n): r for r in mine}
        lines = [
            f"**{report.devices.get(backend, backend)}** ({backend}), {dtype}: microseconds per call, "
            "ratio to the form's reference (below 1: faster)",
            "",
            "| figure | call | contender | " + " | ".join(f"2^{log2_label(n)}" for n in sizes) + " |",
            "|---|---|---|" + "---:|" * len(sizes),
        ]
        for figure in CALL_FIGURES:
            for form, name in keys:
                ref = _reference(backend, form)
                if ref in names and ref != name:
                    forms = refs.setdefault((backend, ref), [])
                    if form not in forms:
                        forms.append(form)
                else:
                    ref = None
                cells = []
                for n in sizes:
                    r = value.get((name, figure, n))
                    if r is None:
                        cells.append("")
                    elif r.error:
                        cells.append("error")
                    else:
                        base = value.get((ref, figure, n)) if ref else None
                        ok = base is not None and not base.error and base.seconds > 0
                        cells.append(
                            f"{_us(r.seconds)} ({r.seconds / base.seconds:.2f})" if ok else _us(r.seconds)
                        )
                if any(cells):
                    lines.append(f"| {figure} | {form} | {name} | " + " | ".join(cells) + " |")
        blocks.append("\n".join(lines))
    if not blocks:
        return ""
    notes = [f"- **{f}**: {text}" for f, text in figure_notes(pipelined).items()]
    for (backend, ref), forms in refs.items():
        notes.append(f"- **ratio to {ref}** ({backend}): {', '.join(forms)}")
    return "\n\n".join(blocks) + "\n\n" + "\n".join(notes) + "\n\nMedians; contenders measured in turns."


def numpy_table(report: Report) -> str:
    """NumPy to NumPy on a CPU: 10^9 elements/s of every call per size, then jitscan's ratios to NumPy."""
    rows = [r for r in report.results if r.category == "numpy"]
    blocks = []
    for backend, dtype in sorted({(r.backend, r.dtype) for r in rows}):
        mine = [r for r in rows if (r.backend, r.dtype) == (backend, dtype)]
        sizes = sorted({r.n for r in mine})
        names = list(dict.fromkeys(r.name for r in mine))
        rate = {(r.name, r.n): r.elements_per_s for r in mine}
        lines = [
            f"**{report.devices.get(backend, backend)}** ({backend}), {dtype}: NumPy array to NumPy array, "
            "10^9 elements/s (host time of the call)",
            "",
            "| call | " + " | ".join(f"2^{log2_label(n)}" for n in sizes) + " |",
            "|---|" + "---:|" * len(sizes),
        ]
        for name in names:
            cells = [_ge(rate.get((name, n), math.nan)) for n in sizes]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        for mine_, peer in PAIRS:
            if mine_ in names and peer in names:
                cells = [_num(rate[(mine_, n)] / rate[(peer, n)], ".2f") for n in sizes]
                lines.append(f"| {mine_} / {peer} | " + " | ".join(cells) + " |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def tuples_table(report: Report) -> str:
    """Tuple values and Python operators (:mod:`jitscan.bench.tuples`): microseconds per call
    by figure, then each jitscan call's pipelined speed over what it is compared with."""
    rows = [r for r in report.results if r.category == "tuples"]
    blocks = []
    for backend in sorted({r.backend for r in rows}):
        mine = [r for r in rows if r.backend == backend]
        sizes = sorted({r.n for r in mine})
        names = list(dict.fromkeys(r.name for r in mine))
        value = {(r.name, r.timing, r.n): r.seconds for r in mine}
        lines = [
            f"**{report.devices.get(backend, backend)}** ({backend}), float32: microseconds per call",
            "",
            "| figure | call | " + " | ".join(f"2^{log2_label(n)}" for n in sizes) + " |",
            "|---|---|" + "---:|" * len(sizes),
        ]
        lines += _figure_rows(value, names, sizes)
        for mine_, peer in TUPLE_PAIRS:
            if mine_ in names and peer in names:
                cells = [
                    _num(value[(peer, "pipelined", n)] / value[(mine_, "pipelined", n)], ".2f")
                    if (peer, "pipelined", n) in value and (mine_, "pipelined", n) in value
                    else ""
                    for n in sizes
                ]
                lines.append(f"| speed, pipelined | {mine_} / {peer} | " + " | ".join(cells) + " |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def markdown(report: Report, n: int | None = None) -> str:
    """All tables of a report (those with something to show), as Markdown to paste into the README."""
    parts: list[str] = []
    if any(r.category == "variant" for r in report.results):
        parts += ["## Results table (as in the paper)", paper_table(report, n)]
    if any(r.category in ("variant", "peer") for r in report.results):
        parts += ["## Throughput against size", throughput_table(report)]
    blocking = blocking_table(report)
    if blocking:
        parts += ["## Simulated blocking", blocking]
    calls = latency_table(report)
    if calls:
        parts += ["## Per call (what a user sees)", calls]
    host = numpy_table(report)
    if host:
        parts += ["## NumPy to NumPy (a CPU device)", host]
    tuples = tuples_table(report)
    if tuples:
        parts += ["## Tuple values and Python operators", tuples]
    if not parts:
        parts += ["(nothing measured)"]
    if report.skipped:
        parts += ["## Skipped", "\n".join(f"- {s}" for s in report.skipped)]
    return "\n\n".join(parts) + "\n"


def table(results: list[Result], baseline: str = "memcpy") -> str:
    """One row per result: Ge/s and % of ``baseline`` at the same backend, dtype and size."""
    base = {(r.backend, r.dtype, r.n): r.elements_per_s for r in results if r.name == baseline}
    lines = [
        "| backend | dtype | n | algorithm | blocking | Ge/s | % of memcpy | spread | fallbacks | spins |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        pct = _pct(r.elements_per_s, base.get((r.backend, r.dtype, r.n), 0.0))
        lines.append(
            f"| {r.backend} | {r.dtype} | 2^{log2_label(r.n)} | {r.name} | "
            f"{f'1/{r.block_every}' if r.block_every else ''} | {_ge(r.elements_per_s)} | {pct} | "
            f"{100 * r.spread:.1f}% | {_num(r.stats.get('fallbacks', float('nan')), '.1f')} | "
            f"{_num(r.stats.get('spins', float('nan')), '.1f')} |"
        )
    return "\n".join(lines)


__all__ = [
    "figure_notes",
    "blocking_table",
    "latency_table",
    "markdown",
    "numpy_table",
    "paper_table",
    "table",
    "throughput_table",
    "tuples_table",
]
