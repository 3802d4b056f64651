"""OpenCL programs: building one (with the compiler's log as a warning), NVIDIA's occupancy
directive patched into its PTX, and the kernel objects a program launches through.

Apart from the backend (opencl.py), as the device choice is (opencl_devices.py).
"""

from __future__ import annotations

import operator
import re
import struct
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import CompileError
from . import compiled, opencl_icd
from .base import Build, Program, build_failure
from .launch import NO_CARRY, LaunchPlan

try:
    import pyopencl as cl
except ImportError:  # the backend says why it is unavailable (opencl.py)
    cl = None


# element i of a C-order view with the given shape and element strides (any sign)
GATHER = """
__kernel void js_gather(__global const WORD* src, long offset, __global WORD* dst,
                        __global const long* dims, int ndim, ulong n)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    ulong rest = i;
    long at = offset;
    for (int d = ndim - 1; d >= 0; --d) {
        ulong extent = (ulong)dims[d];
        at += (long)(rest % extent) * dims[ndim + d];
        rest /= extent;
    }
    dst[i] = src[at];
}
"""


_ARG_DTYPES = {"buf": None, "size": np.uint64, "u32": np.uint32}
#: each kind's bytes as clSetKernelArg takes it (a buffer: its cl_mem handle)
_ARG_BYTES = {"buf": struct.calcsize("P"), "size": 8, "u32": 4}
#: the type characters PyOpenCL's packing setter takes for each scalar argument (its
#: struct codes of native sizes: no 8-byte unsigned one where a C long has 4 bytes)
_PACKED = {np.uint64: b"L", np.uint32: b"I"} if struct.calcsize("L") == 8 else None

#: what a compiler logs of a program that says nothing wrong of its source: NVIDIA's OpenCL
#: driver (580), for every kernel, a note on its own handling of kernels; PoCL's clang, for
#: 64-byte vectors (a CPU's one-thread tiles) on a processor without AVX-512, that passing
#: them by value changes the ABI, which matters only across separately built objects and a
#: program is one
_DRIVER_NOTES = (
    re.compile(r"Function \w+ is a kernel, so overriding noinline attribute"),
    re.compile(r"AVX vector (argument|return) of type .* without '\w+' enabled changes the ABI"),
)


def build_program(program: Any, device: Any) -> Any:
    """``program`` built for ``device``; a CompilerWarning with the log when it says anything.

    PyOpenCL's own warning names no line of the log (unless $PYOPENCL_COMPILER_OUTPUT
    is set) and fires on the driver's notes too; this one quotes the log, without them.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        built = program.build(devices=[device])
    log = built.get_build_info(device, cl.program_build_info.LOG) or ""
    said = [
        line for line in log.splitlines() if line.strip() and not any(n.search(line) for n in _DRIVER_NOTES)
    ]
    if said:
        warnings.warn(
            "jitscan: the OpenCL compiler's log of a program that built:\n" + "\n".join(said),
            cl.CompilerWarning,
            stacklevel=3,
        )
    return built


class CLProgram(Program):
    def __init__(self, program: Any, build: Build) -> None:
        self.program = program
        self.local = (build.threads,)
        # a kernel's arguments are state of the kernel object, shared by every queue of
        # the context: setting them and enqueueing is one step
        self._lock = threading.Lock()
        self._signatures = {name: [_ARG_DTYPES[a] for a in sig] for name, sig in build.entries.items()}
        self._bytes = {name: [_ARG_BYTES[a] for a in sig] for name, sig in build.entries.items()}
        self._memory = {name: [a == "buf" for a in sig] for name, sig in build.entries.items()}
        self.kernels = {name: self._kernel(name) for name in build.entries}

    def _kernel(self, entry: str) -> Any:
        k = cl.Kernel(self.program, entry)
        k.set_scalar_arg_dtypes(self._signatures[entry])
        return k

    def launch(self, entry: str, groups: int, args: Sequence[Any], queue: Any) -> None:
        with self._lock:
            self.kernels[entry](queue, (groups * self.local[0],), self.local, *args)

    def _native(
        self, fire: Any, entry: str, head: int, constants: Sequence[Any], last: list[Any] | None = None
    ) -> tuple | None:
        """What the compiled call launches ``entry`` with as ``fire`` does (see
        backends/compiled.py): a kernel object of its own, whose arguments only the
        compiled call sets, its table, and a block of the argument values holding the
        ``constants`` from argument ``head`` on (a carry's words after them: zeros), as
        (kernel, table, values) addresses, kept alive by ``fire.keep``; None where the
        extension or the ICD loader's entry points are not at hand.

        The slots a compiled call keeps as they are (constants, a carry's words, the
        alarm's buffers, a spine's launch code) are the last Python launch's, as in CUDA's
        argument blocks, which both write: a fire that takes them per call keeps its last
        arguments in ``last[0]``, and ``fire.settle()`` (before a record is made of it:
        opencl_calls.py) writes them into the block."""
        if compiled.CommonCall is None or opencl_icd.entry_points() is None:
            return None
        sizes = self._bytes[entry]
        kernel = self._kernel(entry)
        table = compiled.kernel_table(sizes, self._memory[entry])
        values = np.zeros(len(sizes), np.uint64)
        values[head : head + len(constants)] = [_handle(c) for c in constants]

        def settle() -> None:
            if last is None:  # a fire whose block holds all it keeps from the start
                return
            args, last[0] = last[0], None
            if args is not None and len(args) == len(values):
                values[:] = [_handle(a) for a in args]

        fire.keep, fire.settle = (kernel, table, values), settle
        return kernel.int_ptr, table.ctypes.data, values.ctypes.data

    def launcher(
        self,
        plan: LaunchPlan,
        queue: Any,
        buffer: Callable[[Any], tuple[Any, int]],
        constants: Sequence[int] = (),
    ) -> Callable[..., None]:
        if not plan.fire_order:  # another layout: the arguments placed on every call
            return super().launcher(plan, queue, buffer, constants)
        kernel = self._kernel(plan.entry)  # a kernel object of its own: its arguments are its own
        local = self.local
        width = local[0]
        consts = tuple(constants)
        tail = (*consts, *NO_CARRY[: plan.ncarry])  # the carry's words: zeros but for a carry
        signature = self._signatures[plan.entry]
        if len(signature) != 8 + len(tail):  # two arrays of two arguments each, n, scratch, code, epoch
            raise ValueError(
                f"{plan.entry} takes {len(signature)} arguments, not 8 and {len(tail)} constants and words"
            )
        last = len(signature) - len(tail) - 1  # the last argument a call passes: the epoch
        # PyOpenCL's own setters, which its generated invokers call: its public
        # Kernel.set_arg costs more for one argument than the invoker for all of them
        set_buffers = getattr(kernel, "_set_arg_multi", None)
        set_packed = getattr(kernel, "_set_arg_buf_pack_multi", None)
        if set_buffers is None or set_packed is None or signature[last] is None:

            def fire(
                groups: int,
                src: Any,
                dst: Any,
                n: int,
                scratch: Any,
                code: int,
                epoch: int,
                carry: Any = None,
            ) -> None:
                s, s_off = buffer(src)
                d, d_off = buffer(dst)
                rest = tail if carry is None else (*consts, *carry)
                kernel(queue, (groups * width,), local, s, s_off, d, d_off, n, scratch, code, epoch, *rest)

            return fire

        last_type = np.dtype(signature[last]).char.encode()  # packed as PyOpenCL's invokers do
        enqueue = cl.enqueue_nd_range_kernel
        held: tuple | None = None  # the arguments set, but the arrays and the last one
        carried: Any = None  # calls from a carry: a launch of their own (_setter), made on the first

        def fire_changed(
            groups: int, src: Any, dst: Any, n: int, scratch: Any, code: int, epoch: int, carry: Any = None
        ) -> None:
            nonlocal held, carried
            s, s_off = buffer(src)
            d, d_off = buffer(dst)
            if carry is not None:
                # a carry's words are the last arguments: another kernel object, whose
                # arguments are its own, sets what changed since its last call (this one's
                # stay as they were for the calls without a carry)
                if carried is None:
                    carried = self._setter(plan.entry, queue)
                carried(groups, (s, s_off, d, d_off, n, scratch, code, epoch, *consts, *carry))
                return
            rest = (s_off, d_off, n, scratch, code)
            if rest == held:
                # a kernel keeps its arguments from one enqueue to the next: a call in a loop
                # sets its arrays (not held here, so that they may be freed) and the last
                # argument it passes, the epoch, which changes on every call
                set_buffers((0, s, 2, d))
                set_packed((last, last_type, epoch))
                enqueue(queue, kernel, (groups * width,), local)
            else:
                held = None  # a call that fails part way leaves arguments of both calls
                kernel(queue, (groups * width,), local, s, s_off, d, d_off, n, scratch, code, epoch, *tail)
                held = rest

        native = self._native(fire_changed, plan.entry, last + 1, consts)
        if native is not None:  # the compiled call's launch of the plan (compiled.launch_record)
            fire_changed.native = (compiled.arg_codes(plan), *native, queue.int_ptr, width)  # type: ignore[attr-defined]
        return fire_changed

    def packer(self, plan: LaunchPlan, queue: Any, constants: Sequence[int] = ()) -> Callable[..., None]:
        if plan.tail is None or len(constants) != plan.nconst:
            return super().packer(plan, queue, constants)
        launch = self._setter(plan.entry, queue)
        held = tuple(constants)
        zeros = NO_CARRY[: plan.ncarry]
        last: list[Any] = [None]  # the compiled call's (_native), where there is one

        def fire(
            groups: int, head: Sequence[Any], tail: Sequence[Any], constants: Any = None, carry: Any = None
        ) -> None:
            consts = held if constants is None else constants
            last[0] = args = (*head, *consts, *(zeros if carry is None else carry), *tail)
            launch(groups, args)

        # the constants' place: after the per-call head, whose arrays a tuple value has
        # several of (its codes are then compiled.form_record's, which knows how many)
        count = len(self._signatures[plan.entry])
        native = self._native(
            fire, plan.entry, count - len(plan.tail) - plan.ncarry - plan.nconst, held, last
        )
        if native is not None:
            codes = compiled.arg_codes(plan)
            fire.native = (codes if len(codes) == count else None, *native, queue.int_ptr, self.local[0])  # type: ignore[attr-defined]
        return fire

    def fixed(self, entry: str, queue: Any, constants: Sequence[int] = ()) -> Callable[..., None]:
        launch, held = self._setter(entry, queue), tuple(constants)
        last: list[Any] = [None]  # the compiled call's (_native), where there is one

        def fire(groups: int, *head: Any) -> None:
            last[0] = args = (*head, *held)
            launch(groups, args)

        native = self._native(fire, entry, len(self._signatures[entry]) - len(held), held, last)
        if native is not None:  # the pre-pass's launch, a stage's: (kernel, table, values, threads)
            fire.native = (*native, self.local[0])  # type: ignore[attr-defined]
        return fire

    def _setter(self, entry: str, queue: Any) -> Callable[[int, Sequence[Any]], None]:
        """``launch(groups, args)``: ``entry`` on ``queue`` with all of its arguments,
        through a kernel object of its own that keeps them from one enqueue to the next.

        The first call sets every argument through PyOpenCL's invoker (which checks their
        count and kinds); later calls set every buffer (not held here, so that they may be
        freed), the scalars where any differs from the last call's, all in one call, and
        enqueue. As :meth:`Program.launcher`'s ``fire``, calls of one must not overlap
        (the queue's lock).
        """
        kernel = self._kernel(entry)
        local = self.local
        width = local[0]
        signature = self._signatures[entry]
        set_buffers = getattr(kernel, "_set_arg_multi", None)
        set_packed = getattr(kernel, "_set_arg_buf_pack_multi", None)
        buffers = tuple(i for i, t in enumerate(signature) if t is None)
        scalars = tuple(i for i, t in enumerate(signature) if t is not None)
        # (an itemgetter of one index gives the value, not a tuple: such kernels take the invoker)
        plain = set_buffers is None or set_packed is None or _PACKED is None
        if plain or len(buffers) < 2 or len(scalars) < 2:

            def every(groups: int, args: Sequence[Any]) -> None:
                kernel(queue, (groups * width,), local, *args)

            return every

        count = len(signature)
        # the setters' flat tuples as templates: the values go in by slice, at C's speed
        # (a loop over the arguments in Python cost more than PyOpenCL's own invoker)
        buffers_of, scalars_of = operator.itemgetter(*buffers), operator.itemgetter(*scalars)
        buffer_row: list[Any] = [x for i in buffers for x in (i, None)]
        no_buffers = (None,) * len(buffers)
        scalar_row: list[Any] = [x for i in scalars for x in (i, _PACKED[signature[i]], None)]
        enqueue = cl.enqueue_nd_range_kernel
        held: tuple | None = None  # the scalars set
        #: the one scalar (its place among the scalars) that alone changed from the call
        #: before: in a loop, the epoch, set alone while the others stay (setting every
        #: scalar cost PoCL 5.9 us a call against 1.0 for one)
        alone = -1
        alone_row: list[Any] = [0, b"", None]

        def changed(groups: int, args: Sequence[Any]) -> None:
            nonlocal held, alone
            last, held = held, None  # a call that fails part way leaves arguments of both calls
            if last is None or len(args) != count:
                kernel(queue, (groups * width,), local, *args)
                held = scalars_of(args)
                return
            buffer_row[1::2] = buffers_of(args)
            set_buffers(tuple(buffer_row))
            buffer_row[1::2] = no_buffers  # the arrays are the caller's to free
            values = scalars_of(args)
            if values != last:
                k = alone
                if k >= 0 and values[:k] == last[:k] and values[k + 1 :] == last[k + 1 :]:
                    alone_row[2] = values[k]
                    set_packed(tuple(alone_row))
                else:
                    scalar_row[2::3] = values
                    set_packed(tuple(scalar_row))
                    differ = [j for j, (v, w) in enumerate(zip(values, last, strict=True)) if v != w]
                    alone = differ[0] if len(differ) == 1 else -1
                    if alone >= 0:
                        alone_row[:2] = scalar_row[3 * alone : 3 * alone + 2]
            enqueue(queue, kernel, (groups * width,), local)
            held = values

        return changed


def _handle(value: Any) -> int:
    """An argument as the compiled call's block holds it: a buffer's cl_mem handle (None:
    a null one), a scalar's value."""
    if value is None:
        return 0
    ptr = getattr(value, "int_ptr", None)
    return int(value) if ptr is None else ptr


def with_occupancy(program: Any, build: Build, device: Any) -> Any:
    """NVIDIA: the program rebuilt from its own PTX with CUDA's occupancy directive.

    NVIDIA's OpenCL has no ``__launch_bounds__``, and on driver 580 it accepts
    ``-cl-nv-maxrregcount=N`` but ignores it (the H100 build of the 128 x 16 scan used
    243 registers under every cap). Its program binary is PTX, though, and a program
    can be built from PTX: adding ``.minnctapersm`` after each kernel's ``.reqntid``
    asks ptxas for ``min_blocks`` workgroups per multiprocessor, as
    ``__launch_bounds__(threads, min_blocks)`` does in the CUDA build. Other devices,
    and PTX without the expected directive, keep the program as built.
    """
    if not build.min_blocks or "cl_nv_compiler_options" not in device.extensions:
        return program
    # one binary per device of the context, in the context's order
    index = list(program.get_info(cl.program_info.DEVICES)).index(device)
    ptx = program.get_info(cl.program_info.BINARIES)[index].rstrip(b"\0")
    parts = re.split(rb"(?=\.entry )", ptx)
    bound = rb"\1.minnctapersm %d\n" % build.min_blocks
    patched, wanted = [parts[0]], 0
    for part in parts[1:]:
        name = part[len(b".entry ") :].split(b"(")[0].strip().decode(errors="replace")
        if name not in build.single:  # as JS_KERNEL_SINGLE in the CUDA build
            part = re.sub(rb"(\.reqntid [^\n]*\n)", bound, part, count=1)
            wanted += 1
        patched.append(part)
    out = b"".join(patched)
    if len(parts) < 2 or out.count(b".minnctapersm") != wanted:
        warnings.warn(
            "jitscan: the OpenCL program's PTX has no .reqntid to bound; using it as built "
            "(without the occupancy its tile shape was chosen for)",
            RuntimeWarning,
            stacklevel=2,
        )
        return program
    try:
        return build_program(cl.Program(program.context, [device], [out + b"\0"]), device)
    except (cl.RuntimeError, cl.LogicError) as exc:  # an occupancy hint is not worth failing over
        warnings.warn(
            f"jitscan: rebuilding the OpenCL program with .minnctapersm failed; using it as built ({exc})",
            RuntimeWarning,
            stacklevel=2,
        )
        return program


#: PoCL: "error: <file>:L:C: msg"; clang-based drivers: "<file>:L:C: error: msg". NVIDIA's
#: front end only warns of an undeclared function (the link then fails): without an error
#: line, its first located warning is the one to show
ERRORS = (
    r"\s*(?:fatal )?error: (?:.*?:(\d+):(\d+): )?(.*)",
    r".*?:(\d+):(\d+): (?:fatal )?error: (.*)",
    r".*?:(\d+):(\d+): warning: (.*)",
)


#: LLVM's words for a processor it does not know. PoCL builds for the host's CPU: a PoCL
#: whose LLVM is older than the processor fails every build with them (PyOpenCL's wheel
#: bundles PoCL 3.0 with LLVM 14: "unknown target CPU 'generic'" on an AMD Zen 5)
_UNKNOWN_CPU = re.compile(r"unknown target CPU '[^']*'")


def build_message(what: str, src: str, log: str, platform_version: str = "") -> str:
    """The CompileError message of a failed OpenCL build of the ``what`` from ``src``.

    As :func:`~jitscan.backends.base.build_failure` words it, and where the log says the
    compiler does not know the processor, why no kernel will build and how to mend it:
    that is no fault of the kernel, and the fix is outside jitscan.

    Parameters
    ----------
    what, src, log : str
        The program's name in messages, its source, and the compiler's log.
    platform_version : str
        The device's platform's version string, whose PoCL release and LLVM version the
        advice names ("OpenCL 3.0 PoCL 3.0-rc2  Linux, Release, RELOC, LLVM 14.0.6, ...").
    """
    msg = build_failure("OpenCL", what, src, log, ERRORS)
    if not _UNKNOWN_CPU.search(log):
        return msg
    named = ", ".join(
        m.group(0)
        for m in (re.search(r"\bPoCL \S+", platform_version), re.search(r"\bLLVM \d[\d.]*", platform_version))
        if m
    )
    compiler = f"This OpenCL compiler ({named})" if named else "This OpenCL compiler"
    return (
        f"{msg}\n  {compiler} does not know this processor, so it builds no kernel here: PoCL"
        " compiles for the host's CPU with its LLVM, and this LLVM is older than the CPU."
        " Install a PoCL built with a newer LLVM (Debian/Ubuntu: apt-get install pocl-opencl-icd;"
        " conda-forge: pocl): PyOpenCL's ICD loader finds it, and jitscan then prefers the newest PoCL"
        " (where PYOPENCL_CTX does not choose another device)."
    )


def compile_program(build: Build, queue: Any, dialect: str) -> CLProgram:
    """``build``'s program for ``queue``'s device, ready to launch; a CompileError names its line."""
    src = build.source(dialect)
    try:
        built = build_program(cl.Program(queue.context, src), queue.device)
        built = with_occupancy(built, build, queue.device)
    except (cl.RuntimeError, cl.LogicError) as exc:
        log = str(exc)
    else:
        return CLProgram(built, build)
    # raised outside the handler, with the log's text as its cause: PyOpenCL's error holds
    # a record that does not pickle, and tblib (dask.distributed sending a worker's error
    # to the client) pickles an exception's cause and context with it
    msg = build_message(build.what, src, log, queue.device.platform.version)
    raise CompileError(msg) from RuntimeError(log)
