"""The compiled common calls on OpenCL: :meth:`OpenCLBackend.common_call` and
:meth:`OpenCLBackend.form_call` through ``_common_call.c`` (``api=`` OpenCL's).

A warm call in Python costs a fair part of a launch on OpenCL too: on NVIDIA's driver an
enqueue is about 9 µs, and the Python of a tuple value's call or a segmented one added
8-12 µs to it (experiments/call_forms_h200.md, runs I-K). The compiled call takes the
calls like the last one the Python call launched: arrays of the same type, dtype, queue
(``x.queue``, by identity) and size class, whose buffers the kernels take as they are. It
launches through a kernel object of its own, setting the arguments that changed since its
last launch (``clSetKernelArg``) and enqueueing with no event, as the ICD loader exports
them (``opencl_icd.entry_points``). Behind a launch by offsets that are not jitscan's own
it copies the alarm's flag to the host as Python's call does (``OpenCLBackend.alarm``),
where that copy is the driver's own read; where it is PyOpenCL's (an event to ask after),
such calls stay Python's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..dtypes import VECTOR_BYTES
from . import compiled, opencl_icd

try:
    import pyopencl as cl
    import pyopencl.array as cl_array
except ImportError:  # the backend says why it is unavailable (opencl.py)
    cl = cl_array = None

#: the types of an array's base_data that are buffers a kernel argument takes as a cl_mem
#: (an SVM allocation is set otherwise: such arrays take Python's call)
_BUFFERS = tuple(
    t for t in (getattr(cl, "Buffer", None), getattr(getattr(cl, "_cl", None), "PooledBuffer", None)) if t
)


def _compiled(
    backend: Any, slow: Callable[..., Any], dtype: np.dtype, one: bool, loads: Any, **form: Any
) -> Any:
    """A CommonCall of OpenCL's API, or None where the extension, the ICD loader's entry
    points or a dict of loads are missing."""
    points = opencl_icd.entry_points()
    if compiled.CommonCall is None or points is None or type(loads) is not dict or not _BUFFERS:
        return None
    set_arg, enqueue = points
    return compiled.CommonCall(
        ndarray=cl_array.Array, dtype=dtype, loads=loads, stream_of=None, slow=slow, osize=dtype.itemsize,
        align=VECTOR_BYTES, one=one, launch=enqueue, api=compiled.API_OPENCL, set_arg=set_arg,
        empty=backend.empty, buffer_types=_BUFFERS, **form,
    )  # fmt: skip


def common_call(
    backend: Any,
    dtype: np.dtype,
    one: bool,
    loads: Mapping[np.dtype, str],
    launchers: Mapping[tuple, Callable[..., None]],
    classes: Sequence[int],
    make: Callable[[Any, int, str], Callable[..., None]],
) -> Callable[[Any, Any, Any], Any]:
    """Backend.common_call, compiled where it can be: Python's call (the base's) tells the
    compiled one what it launched after each launch of its own."""
    fast: Any = None
    #: what the compiled call was last told of: a call it leaves to this one (a reduction
    #: without out=, another class in turns) tells it again only of another launch
    told: tuple = ()

    def launched(x: Any, queue: Any, cls: int, load: str, go: Any, carry: Any) -> None:
        nonlocal told
        if fast is None or x.queue is not queue or not (carry is None or type(carry) is bytes):
            return
        state = getattr(go, "launch_state", None)
        now = (queue, cls, load, go, state and state()[1])  # its Scratch, which a queue's may replace
        if told != now:
            lo, hi = classes[cls - 1] if cls else 0, classes[cls] if cls < len(classes) else sys.maxsize
            fast.remember(compiled.launch_record(queue, lo, hi, load, go))
            told = now

    call = backend._python_call(dtype, one, loads, launchers, classes, make, launched)
    # a reduction's result without out=: the 0-d view Python's call makes (Backend.scalar)
    fast = _compiled(backend, call, dtype, one, loads, **({"scalar": backend.scalar} if one else {}))
    return call if fast is None else fast


def form_call(
    backend: Any,
    slow: Callable[..., Any],
    dtype: np.dtype,
    one: bool,
    loads: Mapping[np.dtype, str],
    fields: tuple | None = None,
    outputs: tuple[np.dtype, ...] = (),
    transform: tuple | None = None,
) -> tuple[Callable[..., Any], Callable[..., None] | None]:
    """Backend.form_call, compiled where it can be (see the module text)."""
    arrays, values = compiled.form_arrays(fields, outputs, transform)
    fast = _compiled(
        backend, slow, dtype, one, loads, form=True, flag_types=compiled.FLAG_TYPES,
        offset_types=compiled.OFFSET_TYPES, **values,
    )  # fmt: skip
    if fast is None:
        return slow, None

    #: the launch functions no record is made of (their calls stay Python's), by identity,
    #: with the call's mode: so that none is looked for again on every call
    unfit: dict[int, tuple[Any, str, bool]] = {}

    def remember(queue: Any, lo: int, hi: int, load: str, mode: str, whole: bool, tile: int, go: Any) -> None:
        if unfit.get(id(go)) == (go, mode, whole):
            return fast.remember(None)
        fires, pre = _launchers(go)
        watch, record = None, None
        copy = pre.alarm.copy if mode == "offsets" and pre is not None else None
        if copy is not None:  # the driver's read: (entry point, buffer); PyOpenCL's has an event to ask after
            native = getattr(copy, "native", None)
            watch = None if native is None else (*native, pre.copy_due)
        if copy is None or watch is not None:
            record = compiled.form_record(
                queue, lo, hi, load, mode, whole, tile, go, arrays, queue.int_ptr, watch
            )
        if record is None:
            if len(unfit) >= 64:
                unfit.clear()
            unfit[id(go)] = (go, mode, whole)
        else:  # the slots it keeps as they are: this call's (in the blocks the record names),
            # under the queue's lock, which a compiled launch reading them holds
            with backend.lock(queue):
                for fire in fires:
                    fire.settle()
        fast.remember(record)

    return fast, remember


def _launchers(go: Any) -> tuple[list[Any], Any]:
    """The launchers of ``go``'s launches that keep their last arguments for the compiled
    call (CLProgram._native: ``settle()`` writes them into their blocks), and its Prepass
    (None: not by offsets)."""
    stages = getattr(go, "stages_state", None)
    if stages is not None:
        state = stages()
        fires, pre = [fire for fire, _, _ in state[6]], state[7]
    else:
        state = go.launch_state() if hasattr(go, "launch_state") else ()
        fires, pre = list(state[5:6]), state[6] if len(state) > 6 else None
    if pre is not None:
        fires.append(pre.fire)
    return [f for f in fires if hasattr(f, "settle")], pre
