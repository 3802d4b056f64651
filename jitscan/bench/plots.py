"""PNG figures of a report (matplotlib, without pyplot): throughput, simulated blocking, per call."""

from __future__ import annotations

import os
from typing import Any

from .calls import JITSCAN_CALLS
from .forms import FLAT
from .results import Report, log2_label


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global state

    return Figure(figsize=(width, height), layout="constrained")


def _size_panel(ax: Any, ylabel: str, title: str) -> None:
    """Log-log axes of a quantity against the number of elements, with grid and legend."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("elements")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def _hide_unused(axes: Any, used: int) -> None:
    for ax in list(axes.flat)[used:]:
        ax.set_visible(False)


def plot_throughput(report: Report, path: str | os.PathLike) -> None:
    """PNG of throughput against size: one panel per backend and dtype, a line per algorithm.

    Raises
    ------
    ImportError
        Without matplotlib.
    """
    main = [r for r in report.results if r.category in ("variant", "peer")]
    panels = list(dict.fromkeys((r.backend, r.dtype) for r in main if r.backend != "host"))
    colors = {name: f"C{i % 10}" for i, name in enumerate(dict.fromkeys(r.name for r in main))}
    cols = min(2, max(1, len(panels)))
    rows = max(1, -(-len(panels) // cols))
    fig = _figure(6.5 * cols, 4.5 * rows)
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, (backend, dtype) in zip(axes.flat, panels, strict=False):
        mine = [r for r in main if r.dtype == dtype and r.backend in (backend, "host")]
        names: list[str] = []
        for r in mine:
            if r.name not in names:
                names.append(r.name)
        for name in names:
            pts = sorted((r.n, r.elements_per_s / 1e9) for r in mine if r.name == name)
            is_variant = any(r.category == "variant" for r in mine if r.name == name)
            ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                marker="o" if is_variant else ".",
                linestyle="-" if is_variant else "--",
                color=colors[name],
                label=name if is_variant else f"{name} (peer)",
            )
        device = report.devices.get(backend, backend)
        _size_panel(ax, "10^9 elements / s", f"{device} ({backend}), {dtype} inclusive sum")
    _hide_unused(axes, len(panels))
    fig.savefig(path, dpi=110)


def plot_blocking(report: Report, path: str | os.PathLike) -> None:
    """PNG of the simulated-blocking sweep, as in the paper's figure: fallbacks, spins and
    look-back length per workgroup, and throughput against the unblocked run and memcpy.

    Raises
    ------
    ImportError
        Without matplotlib.
    """
    rows = [r for r in report.results if r.category == "blocking"]
    fig = _figure(11, 8)
    axes = fig.subplots(2, 2, squeeze=False)
    panels = [
        (axes[0][0], "fallbacks initiated per workgroup", lambda r: r.per_workgroup("fallbacks")),
        (axes[0][1], "spins per workgroup", lambda r: r.per_workgroup("spins")),
        (axes[1][0], "look-back length per workgroup", lambda r: r.per_workgroup("lookback_steps")),
        (axes[1][1], "10^9 elements / s", lambda r: r.hmean_elements_per_s / 1e9),
    ]
    groups = sorted({(r.backend, r.dtype, r.n) for r in rows})
    for backend, dtype, n in groups:
        mine = [r for r in rows if (r.backend, r.dtype, r.n) == (backend, dtype, n)]
        sweep = sorted(
            (r for r in mine if r.name == "fallback" and r.block_every), key=lambda r: -r.block_every
        )
        label = f"{backend} {dtype} 2^{log2_label(n)}"
        for ax, ylabel, value in panels:
            ax.plot([1 / r.block_every for r in sweep], [value(r) for r in sweep], marker="o", label=label)
            ax.set_ylabel(ylabel)
        ax = axes[1][1]
        for name, block, style in (("fallback", 0, ":"), ("memcpy", 0, "--")):
            ref = next((r for r in mine if r.name == name and r.block_every == block), None)
            if ref is not None:
                ax.axhline(
                    ref.hmean_elements_per_s / 1e9,
                    linestyle=style,
                    color="gray",
                    label=f"{name}, no blocking ({backend})",
                )
    rates = sorted({r.block_every for r in rows if r.block_every}, reverse=True)
    # a log scale: a CPU's 10^8 elements/s stays readable beside its memcpy line and a GPU's
    axes[1][1].set_yscale("log")
    for ax, _, _ in panels:
        ax.set_xscale("log", base=2)
        ax.set_xticks([1 / k for k in rates], [f"1/{k}" for k in rates], minor=False)
        ax.set_xticks([], minor=True)
        ax.set_xlabel("simulated blocking rate (1 in k workgroups never posts)")
        ax.grid(True, alpha=0.3)
        if groups:
            ax.legend(fontsize=7)
    devices = ", ".join(f"{d} ({b})" for b, d in report.devices.items())
    fig.suptitle(f"Simulated blocking, fallback variant: {devices}", fontsize=10)
    fig.savefig(path, dpi=110)


def plot_latency(report: Report, path: str | os.PathLike) -> None:
    """PNG of the per-call figures of the flat form against size: one panel per backend and dtype,
    a colour per call; the isolated call solid, the pipelined rate dashed, the host time dotted.

    Raises
    ------
    ImportError
        Without matplotlib.
    """
    # the flat form only (the other forms are in the per-call table): a readable plot
    rows = [r for r in report.results if r.category == "call" and r.call in ("", FLAT) and not r.error]
    panels = list(dict.fromkeys((r.backend, r.dtype) for r in rows))
    names = [c for c in JITSCAN_CALLS if any(r.name == c for r in rows)]
    names += [r.name for r in rows if r.name not in names]
    names = list(dict.fromkeys(names))
    colors = {name: f"C{i % 10}" for i, name in enumerate(names)}
    cols = min(2, max(1, len(panels)))
    nrows = max(1, -(-len(panels) // cols))
    fig = _figure(6.5 * cols, 4.5 * nrows)
    axes = fig.subplots(nrows, cols, squeeze=False)
    for ax, (backend, dtype) in zip(axes.flat, panels, strict=False):
        mine = [r for r in rows if (r.backend, r.dtype) == (backend, dtype)]
        for name in names:
            for figure, style in (("isolated", "-"), ("pipelined", "--"), ("host", ":")):
                pts = sorted((r.n, r.seconds * 1e6) for r in mine if r.name == name and r.timing == figure)
                if not pts:
                    continue
                ax.plot(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    linestyle=style,
                    marker="o" if figure == "isolated" else None,
                    color=colors[name],
                    label=name if figure == "isolated" else None,
                )
        _size_panel(
            ax, "microseconds per call", f"{report.devices.get(backend, backend)} ({backend}), {dtype}"
        )
    _hide_unused(axes, len(panels))
    fig.suptitle("Per call: isolated (solid), pipelined (dashed), host time (dotted)", fontsize=10)
    fig.savefig(path, dpi=110)


__all__ = ["plot_blocking", "plot_latency", "plot_throughput"]
