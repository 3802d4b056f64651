"""What a Dask scan's plans share: Dask itself, the carries' arithmetic, the refusals, the plan choice."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ... import backends, variants
from ...operators import Monoid
from ...plan.arrays import astype, to_host
from .. import runner, warm
from ..cache import call_key, shortcut
from ..call import Call

#: the ``dask.config`` key of a 1-D scan's plan: "chain", "tree", "placed" or "auto" (the default)
PLAN_KEY = "jitscan.dask-plan"
PLANS = ("auto", "chain", "tree", "placed")

#: the NumPy ufunc of each built-in op (the carries' fold computes with them)
UFUNCS = {
    "add": np.add,
    "mul": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


def dask_modules() -> Any:
    try:
        import dask.array as da
        from dask.base import tokenize
        from dask.highlevelgraph import HighLevelGraph
    except ImportError as exc:  # pragma: no cover - is_dask() was true
        raise ImportError("Dask arrays need dask[array]: pip install 'jitscan[dask]'") from exc
    return da, tokenize, HighLevelGraph


def like(host: np.ndarray, device: Any) -> Any:
    """``host`` on the device and queue of ``device`` when that is a backend's array, else itself."""
    b = backends.for_array(device)
    return host if b is None else b.to_device(host, b.queue_of(device))


def host_scalar(v: Any) -> Any:
    """A 0-d or one-element result as a NumPy scalar (a device's comes to the host)."""
    return np.asarray(to_host(v)).reshape(-1)[0]


def combine(a: Any, b: Any, op: str | Monoid, dtype: np.dtype) -> Any:
    """``op(a, b)`` of two values of ``dtype``: by NumPy for a built-in op, else by jitscan."""
    if a is None:
        return b
    if isinstance(op, str) and op in UFUNCS:
        return UFUNCS[op](np.asarray(a, dtype), np.asarray(b, dtype), dtype=dtype)[()]
    return host_scalar(runner.run(np.array([a, b], dtype), Call(op=op, kind="reduce", dtype=dtype)))


def known_chunks(values: Any) -> None:
    """Segments are placed by chunk sizes: refuse chunks of unknown size (NaN), as Dask does."""
    if any(c != c for c in values.chunks[0]):
        raise ValueError(
            "the chunk sizes of this Dask array are unknown (NaN); segments are placed by them: "
            "call values.compute_chunk_sizes() first"
        )


def check_carried(dtype: np.dtype, variant: Any, knobs: dict[str, Any]) -> None:
    """A chunk is scanned from its carry: refuse what takes none, at graph construction."""
    v = variants.require(variant)
    if not v.takes_carry(knobs.get("deterministic")):
        raise variants.lacking(v, "carry", knobs.get("deterministic"))
    if dtype.kind == "c":
        raise TypeError(
            "a Dask array of complex values is not scanned yet (a chunk's carry is one real value)"
        )


def chained(values: Any, kind: str, nan: Any = None) -> bool:
    """Whether a scan's chunks take their carries along a chain (see the module's notes)."""
    plan = plan_setting()
    if any(c != c for c in values.chunks[0]) or (kind == "exclusive" and nan is not None):
        return False  # a chain finds its links by the chunk sizes; NaN exclusive: no such call
    if plan != "auto":
        return plan == "chain"
    return _in_process()


def plan_setting() -> str:
    """The plan ``dask.config`` asks for (checked)."""
    import dask

    plan = dask.config.get(PLAN_KEY, "auto")
    if plan not in PLANS:
        names = ", ".join(map(repr, PLANS))
        raise ValueError(f"dask.config {PLAN_KEY!r} must be one of {names}, got {plan!r}")
    return plan


def _in_process() -> bool:
    """Whether a compute now would run its tasks in this process (Dask's threads or
    synchronous scheduler). Elsewhere each link of a chain would wait for its predecessor's
    result to travel: through a distributed scheduler, or between the processes of
    ``scheduler="processes"``."""
    import dask.base
    import dask.local
    import dask.threaded

    try:
        scheduler = dask.base.get_scheduler()
    except RuntimeError:  # the default is an asynchronous distributed client: not here
        return False
    return scheduler in (None, dask.threaded.get, dask.local.get_sync)


def carry_after(
    done: Any, done_in: Any, kind: str, op: Any, variant: Any, backend: Any, result: np.dtype
) -> Any:
    """The running value at the end of a scanned chunk: its result ``done`` of input ``done_in``.

    One element, left on the device that holds it (the next scan reads it there); of an
    exclusive scan, the last result combined with the last input.
    """
    on_device = backends.for_array(done)
    if kind == "inclusive":
        return done[-1:] if on_device else done[-1]
    last_in = astype(done_in[-1:], result)
    if not on_device:
        return combine(done[-1], last_in[0], op, result)
    both = on_device.concatenate([done[-1:], last_in])
    return runner.run(both, Call(op=op, kind="reduce", variant=variant, backend=backend, dtype=result))


def chunk_call(call: Call) -> Call:
    """What a chunk's task takes of a Dask array's call: its options, none of its arrays."""
    return replace(call, out=None, stats=None, axis=None, initial=None, flags=None, offsets=None)


def run_chunk(
    block: Any, calls: Call, kind: str, *, axis: Any = None, first: bool = False, initial: Any = None
) -> Any:
    """``calls`` on one chunk, as ``kind``; ``first``: the chunk that takes ``include_initial``.

    The call is looked up once per process as a public function's common call is
    (``warm.py``), keyed on the chunk's type and dtype and the kind: a chain's or a
    tree's chunks then go straight to the prepared scan.
    """
    call = replace(
        calls, kind=kind, axis=axis, initial=initial, include_initial=calls.include_initial and first
    )
    key = call_key(block, None, call.knobs, call.op, kind, call.rule, call.variant, call.backend, call.dtype)
    key += (axis, len(block.shape), initial is None, call.include_initial, call.nan)
    try:
        go = _CHUNK_CALLS[key]
    except (KeyError, TypeError):
        return warm.through(_CHUNK_CALLS, key, block, call, runner.run)
    if go is None:
        return runner.run(block, call)
    return go(block, None, None, None, initial)


#: the warm calls of chunk calls (run_chunk), per call and chunk type
_CHUNK_CALLS: dict = shortcut()
