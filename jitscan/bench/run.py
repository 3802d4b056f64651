"""A whole bench run: every backend asked for, its plan of steps, one report."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ..dtypes import DTYPES
from .calls import PIPELINE_CALLS
from .cases import VARIANTS
from .forms import FLAT, form_names
from .results import Report
from .schedule import Plan, preset
from .timing import Timer


def dtype_names(dtypes: Iterable[str]) -> list[str]:
    """The NumPy names of ``dtypes``; ValueError naming the supported ones for any other."""
    names, refused = [], []
    for d in dtypes:
        try:
            name = np.dtype(d).name
        except TypeError:
            name = None
        if name in DTYPES:
            names.append(name)
        else:
            refused.append(str(d))
    if refused:
        what = "dtypes" if len(refused) > 1 else "dtype"
        raise ValueError(f"cannot bench {what} {', '.join(refused)}; supported dtypes: {', '.join(DTYPES)}")
    return names


def run(
    backend: str | Sequence[str],
    variants: Iterable[str] = VARIANTS,
    dtypes: Iterable[str] | None = None,
    sizes: Iterable[int] | None = None,
    reps: int | None = None,
    peers: bool = True,
    blocking_rates: Iterable[int] | None = None,
    blocking_size: int | None = None,
    quick: bool = False,
    progress: Callable[[str], None] | None = None,
    log: Callable[[str], None] | None = None,
    total: Callable[[int], None] | None = None,
    calls: bool = True,
    latency: bool = False,
    pipeline: int = PIPELINE_CALLS,
    tuples: bool = False,
    forms: Iterable[str] | None = None,
    **knobs: Any,
) -> Report:
    """Measure variants, peers and calls at every dtype and size, then the blocking sweep.

    Parameters
    ----------
    backend : str or sequence of str
        Backend name(s); each is measured on its default device.
    variants : iterable of str
    dtypes : iterable of str, optional
        Default from :func:`preset`: int32, or (``latency`` on a GPU) int32, float32,
        int64 and float64.
    sizes : iterable of int, optional
        Element counts; default :func:`preset`'s for the device. Sizes beyond the
        device memory are skipped.
    reps : int, optional
        Timed runs per configuration (default from :func:`preset`).
    peers : bool
        Also the peers (:func:`peer_functions`), and NumPy's ``cumsum``.
    blocking_rates : iterable of int, optional
        The simulated-blocking sweep of the ``fallback`` variant (1 in k tiles never
        posts) on the first dtype, with the unblocked ``fallback`` and ``memcpy`` as
        baselines; empty for none. Default from :func:`preset`.
    blocking_size : int, optional
        Elements of the blocking sweep (default from :func:`preset`).
    quick : bool
        Use the quick preset for whatever is not given.
    progress : callable, optional
        Called with a label after every step.
    log : callable, optional
        Called with a message for every configuration skipped or failed.
    total : callable, optional
        Called once per backend with the number of steps it adds.
    calls : bool
        Also the per-call figures (host time, isolated call, pipelined rate) of
        ``jitscan.cumsum``, a prepared scan and the peers at every size.
    latency : bool
        Only the per-call figures, with :func:`preset`'s latency sizes and dtypes
        (no device-time sweep, no blocking).
    pipeline : int
        Calls back to back in one pipelined measurement.
    tuples : bool
        Also tuple values and Python operators as a user calls them, against CuPy
        (:mod:`jitscan.bench.tuples`), at every size.
    forms : iterable of str, optional
        The call forms of the per-call figures (:data:`jitscan.bench.forms.FORMS`, or
        ``"all"``); default every form with ``latency``, else only ``"flat"``.
    **knobs
        Passed to every variant (``tile_state``, ``spin_limit``, ...).

    Returns
    -------
    Report

    Raises
    ------
    ValueError
        For a dtype jitscan does not scan, or an unknown call form (before anything is
        measured).
    """
    if dtypes is not None:
        dtypes = dtype_names(dtypes)
    forms = form_names(forms) if forms is not None else form_names(None) if latency else [FLAT]
    names = [backend] if isinstance(backend, str) else list(backend)
    variants = list(variants)
    report = Report(devices={})
    report.config = {
        "backends": names,
        "variants": [] if latency else variants,
        "dtypes": {},
        "quick": quick,
        "peers": peers,
        "calls": calls or latency,
        "latency": latency,
        "pipeline": pipeline,
        "tuples": tuples,
        "forms": forms,
        "knobs": knobs,
        "sizes": {},
        "reps": {},
        "blocking": {},
    }

    def note(msg: str) -> None:
        report.skipped.append(msg)
        if log:
            log(msg)

    numpy_done: set[tuple[str, int]] = set()
    if latency:
        blocking_rates = []
    for name in names:
        try:
            timer = Timer(name)
        except Exception as exc:  # noqa: BLE001 - an unavailable backend is reported, not fatal
            note(f"backend {name}: {exc}")
            continue
        report.devices[name] = timer.info.name
        pre = preset(timer.info.is_gpu, quick, latency)
        plan = Plan(
            timer=timer,
            variants=variants,
            dtypes=list(dtypes) if dtypes is not None else pre.dtypes,
            sizes=sorted(set(sizes)) if sizes is not None else pre.sizes,
            reps=reps if reps is not None else pre.reps,
            peers=peers,
            rates=list(blocking_rates) if blocking_rates is not None else pre.blocking_rates,
            blocking_size=blocking_size if blocking_size is not None else pre.blocking_size,
            knobs=knobs,
            note=note,
            numpy_done=numpy_done,
            calls=calls or latency,
            pipeline=pipeline,
            device_time=not latency,
            tuples=tuples,
            forms=forms,
        )
        report.config["dtypes"][name] = plan.dtypes
        report.config["sizes"][name] = plan.sizes
        report.config["reps"][name] = plan.reps
        report.config["blocking"][name] = {"rates": plan.rates, "n": plan.blocking_size}
        tasks = plan.tasks()
        if total:
            total(len(tasks))
        for task in tasks:
            report.results.extend(task.run())
            if progress:
                progress(task.label)
        timer.release()
    return report


__all__ = ["run"]
