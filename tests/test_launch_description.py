"""One launch description: the chained scan's LaunchPlan, and the three paths that read it.

The general launch (``Chained.run``), the common one (``plain_launcher``'s ``go``, through
``Program.launcher``) and the compiled call (``backends/_common_call.c``, from the record
cupy.py makes of the plan) must pass the same arguments for the same call, pick the same
epoch and leave the same calls (a wrap of the epochs, a scratch to grow, a carry) to the
plan's own rules. The first two run on the recording backend; the compiled call, where the
extension is built, runs with a recording cuLaunchKernel and the argument block the CUDA
launcher would make (``cupy._Entry``, ``compiled.arg_codes``), so no GPU is needed.
"""

from __future__ import annotations

import ctypes
import os
import threading
from types import SimpleNamespace

import numpy as np
import pytest
from recording import CPU, GPU, Array, Launch, RecordingBackend, RecordingProgram

from jitscan import variants
from jitscan.backends import compiled
from jitscan.backends import cupy as cupy_backend
from jitscan.backends.base import Program
from jitscan.backends.launch import (
    ARG_CARRY,
    ARG_CODE,
    ARG_CONST,
    ARG_DST,
    ARG_EPOCH,
    ARG_N,
    ARG_SCRATCH,
    ARG_SLOTS,
    ARG_SRC,
    FIRE_ORDER,
    NO_CARRY,
    LaunchPlan,
)
from jitscan.dtypes import lookup
from jitscan.kernels import tile_state
from jitscan.kernels.spec import KIND_CARRY, KIND_CARRY_ARGS, KIND_CODES, KIND_STREAM, LaunchArgs, ScanSpec
from jitscan.operators import resolve
from jitscan.plan import tuning
from jitscan.variants import chained
from jitscan.variants.segments import NONE, Segments

#: the argument kind (Chained.signatures) each slot code stands for
KIND_OF = {ARG_SRC: "src", ARG_DST: "dst", ARG_N: "size", ARG_SCRATCH: "buf", ARG_CARRY: "size"}
#: where the compiled call's arrays and scratch lie
X_AT, OUT_AT, SCRATCH_AT = 0x10000, 0x900000, 0xABC000


def spec_of(
    info=GPU, variant: str = "fallback", dtype: str = "int32", kind: str = "inclusive", **knobs
) -> ScanSpec:
    return tuning.spec_for(
        info, variant=variant, kind=kind, dtype=lookup(dtype), monoid=resolve("add"), **knobs
    )


class Case:
    """One chained program bound on the recording backend, a launch's arguments, and arrays."""

    def __init__(
        self, info=GPU, dtype: str = "int32", kind: str = "inclusive", n: int = 3000, **launch
    ) -> None:
        self.rb = RecordingBackend(info)
        self.queue = self.rb.default_queue
        self.spec = spec_of(info, dtype=dtype, kind=kind)
        self.bound = chained.FALLBACK.bind(self.spec, self.rb, self.queue)
        self.plan = self.bound.plan
        self.launch = LaunchArgs(kind, spin_limit=77, block_every=9, **launch)
        self.n = n
        self.src = Array((n,), self.spec.dtype)
        self.dst = Array((n,), self.spec.dtype)

    @property
    def scratch(self):
        return self.rb.scratch_of(self.plan.slot, self.queue)

    def general(self, carry=None) -> Launch:
        """The general path's one launch (Chained.run of a plain, checked scan)."""
        launch = self.launch if carry is None else self.launch.carrying(carry)
        self.rb.clear()
        chained.FALLBACK.run(self.bound, self.queue, launch, self.src, self.dst, self.n, NONE, True)
        (got,) = self.rb.launches()
        return got

    def common(self, carry=None) -> Launch:
        """The common path's one launch (plain_launcher's go, made once)."""
        if not hasattr(self, "go"):
            self.go = chained.FALLBACK.plain_launcher(self.bound, self.queue, self.launch)
        self.rb.clear()
        self.go(self.src, self.dst, self.n, carry)
        (got,) = self.rb.launches()
        return got


# -- the description -------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["packed", "split"])
@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_the_chained_plan_is_its_kernels_signature_its_tile_states_scratch_and_its_control_words(
    dtype, encoding
):
    spec = spec_of(dtype=dtype, tile_state=encoding)
    plan = chained.launch_plan(spec)
    sig = chained.Chained.signatures[chained.KERNEL]
    assert plan.entry == chained.KERNEL and tuple(KIND_OF.get(s, "u32") for s in plan.slots) == sig
    assert plan.nconst == len(chained.constants(LaunchArgs()))
    state = tile_state.of_spec(spec)
    assert (plan.slot, plan.epoch_limit, plan.tile) == (encoding, state.epoch_limit, spec.tile)
    for tiles in (0, 1, 7, 1000):
        assert plan.nbytes(tiles) == state.nbytes(tiles) and plan.tiles_in(plan.nbytes(tiles)) == tiles
    assert plan.carry_at == tile_state.CTRL_CARRY * 4 and plan.carry_bit == KIND_CARRY
    assert plan.stream_bit == KIND_STREAM and plan.fire_order
    # one per spec: bind reads it, never builds it again
    assert chained.launch_plan(spec) is plan


def test_a_plan_refuses_slots_it_does_not_know_or_a_per_call_slot_twice():
    with pytest.raises(ValueError, match="ARG_"):
        LaunchPlan("k", (ARG_SRC, ARG_SRC), 1, 0, 1, "s", 1)
    with pytest.raises(ValueError, match="ARG_"):
        LaunchPlan("k", (len(ARG_SLOTS),), 1, 0, 1, "s", 1)
    with pytest.raises(ValueError, match="positive"):
        LaunchPlan("k", (ARG_SRC,), 0, 0, 1, "s", 1)


def test_a_plan_in_another_order_places_each_argument_by_its_slot():
    # constants among the per-call slots, the arrays last: not the order fire takes them
    slots = (ARG_EPOCH, ARG_CONST, ARG_N, ARG_DST, ARG_CONST, ARG_SCRATCH, ARG_CODE, ARG_SRC)
    plan = LaunchPlan("k", slots, 4, 64, 8, "s", 100)
    assert not plan.fire_order
    got = plan.arguments(["s", 1], ["d", 2], 10, "buf", 5, 6, (70, 80))
    assert got == [6, 70, 10, "d", 2, 80, "buf", 5, "s", 1]
    in_order = LaunchPlan("k", (*FIRE_ORDER, ARG_CONST, ARG_CONST), 4, 64, 8, "s", 100)
    assert in_order.fire_order
    assert in_order.arguments(["s", 1], ["d", 2], 10, "buf", 5, 6, (70, 80)) == [
        "s", 1, "d", 2, 10, "buf", 5, 6, 70, 80
    ]  # fmt: skip


def test_the_generic_launcher_fires_a_plan_of_any_order_as_its_slots_say():
    launched = []

    class Recording(Program):
        def launch(self, entry, groups, args, queue):
            launched.append((entry, groups, list(args), queue))

    slots = (ARG_CONST, ARG_SCRATCH, ARG_SRC, ARG_EPOCH, ARG_DST, ARG_N, ARG_CODE)
    plan = LaunchPlan("k", slots, 4, 64, 8, "s", 100)
    fire = Recording().launcher(plan, "q", lambda a: (a, 0), (42,))
    fire(3, "x", "y", 10, "buf", 5, 6)
    assert launched == [("k", 3, [42, "buf", "x", 0, 6, "y", 0, 10, 5], "q")]
    with pytest.raises(ValueError, match="constants"):
        Recording().launcher(plan, "q", lambda a: (a, 0), ())


# -- the general and the common path ------------------------------------------------------


@pytest.mark.parametrize(
    ("info", "kind", "n", "stream_bytes"),
    [
        (GPU, "inclusive", 3000, 0),
        (GPU, "exclusive", 1, 0),
        (CPU, "inclusive", 999, 4000),  # below the streaming threshold of 1,000 int32
        (CPU, "inclusive", 1000, 4000),  # at it: the stream bit
    ],
)
def test_the_general_and_the_common_path_launch_the_same_arguments_and_epochs(info, kind, n, stream_bytes):
    case = Case(info, kind=kind, n=n, stream_bytes=stream_bytes)
    streams = n >= case.launch.stream_from(case.spec)
    assert streams == bool(stream_bytes and n >= 1000)
    for epoch in (1, 2, 3):
        general = case.general()
        case.scratch.epoch = epoch - 1
        common = case.common()
        assert common == general
        assert general.args[7] == epoch and case.scratch.epoch == epoch
        assert general.args[6] == KIND_CODES[kind] | (KIND_STREAM if streams else 0)
        assert general.args[8:12] == chained.constants(case.launch) and general.args[12:] == NO_CARRY


@pytest.mark.parametrize("carry", [b"\x05\0\0\0", "device"])
def test_a_carry_is_passed_in_the_launch_or_copied_at_the_plans_offset_and_sets_its_bits_on_both_paths(carry):
    case = Case()
    if carry == "device":
        carry = Array((1,), np.int32)
    general = case.general(carry)
    written = [e for e in case.rb.log if e[0] in ("write_bytes", "copy_bytes")]
    case.scratch.epoch -= 1
    common = case.common(carry)
    assert common == general and general.args[6] & KIND_CARRY
    assert [e for e in case.rb.log if e[0] in ("write_bytes", "copy_bytes")] == written
    if isinstance(carry, bytes):  # a value the host knows: in the carry words, no copy queued
        assert not written and general.args[6] & KIND_CARRY_ARGS and general.args[12:] == (5, 0, 0, 0)
        return
    (event,) = written
    assert event[2] == case.plan.carry_at and event[1] is case.scratch.buf
    assert not general.args[6] & KIND_CARRY_ARGS


@pytest.mark.parametrize("start", ["new", "below the limit", "at the limit"])
def test_both_paths_take_the_plans_epoch_rule_zeroing_the_scratch_past_its_limit(start):
    case = Case()
    case.general()  # the scratch exists
    limit = case.plan.epoch_limit
    epoch = {"new": 0, "below the limit": limit - 1, "at the limit": limit}[start]
    seen = []
    for path in (case.general, case.common):
        case.scratch.epoch = epoch
        case.rb.clear()
        path()
        seen.append((case.scratch.epoch, case.rb.events("zero"), case.rb.launches()[0].args[7]))
    assert seen[0] == seen[1]
    wraps = epoch == limit
    assert seen[0] == (1 if wraps else epoch + 1, [(case.scratch.buf, None)] if wraps else [], seen[0][0])


def test_a_common_launch_past_its_scratch_takes_the_grown_one_as_the_general_path_does():
    case = Case(n=1000)
    case.common()
    small = case.scratch.buf
    case.n = 1000 * case.spec.tile
    case.src, case.dst = Array((case.n,), np.int32), Array((case.n,), np.int32)
    common = case.common()
    assert common.args[5] is case.scratch.buf is not small and common.args[7] == 1
    case.scratch.epoch = 0
    assert case.general() == common


# -- the compiled call --------------------------------------------------------------------


class _Function:
    ptr = 0xF00


class CudaLikeProgram(RecordingProgram):
    """A recording program whose launcher also has the argument block the CUDA backend's
    has (cupy._Entry, its constants packed once) and says so as the CUDA one does
    (``fire.native``), for the compiled call to fill in."""

    def launcher(self, plan, queue, buffer, constants=()):
        fire = super().launcher(plan, queue, buffer, constants)
        codes = compiled.arg_codes(plan)
        e = cupy_backend._Entry(_Function(), len(codes), (*constants, *NO_CARRY[: plan.ncarry]))
        fire.entry = e
        fire.native = (codes, e.ptr, e.params_ptr, e.slots.ctypes.data, 0x5EA, 128)
        return fire


class CompiledRig:
    """A compiled common call (with a recording cuLaunchKernel) that remembers ``go``'s launch."""

    def __init__(self, case: Case) -> None:
        ext = pytest.importorskip("jitscan.backends._common_call", reason="the extension is not built here")
        from test_cuda_call import _PROTOTYPE, FakeArray

        self.FakeArray = FakeArray
        self.launches: list[dict] = []

        def launch(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            self.launches.append(dict(function=function, groups=gx, threads=bx, stream=stream))
            return 0

        self._launch = _PROTOTYPE(launch)
        self.loads = {np.dtype(case.spec.dtype): ""}
        self.slow: list = []
        self.stream = object()
        self.call = ext.CommonCall(
            ndarray=FakeArray,
            dtype=np.dtype(case.spec.dtype),
            loads=self.loads,
            stream_of=lambda: self.stream,
            slow=lambda x, out, carry: self.slow.append((x, out, carry)) or "python",
            osize=np.dtype(case.spec.dtype).itemsize,
            align=16,
            one=False,
            launch=ctypes.cast(self._launch, ctypes.c_void_p).value,
        )
        self.record = compiled.launch_record(self.stream, 0, 1 << 40, "", case.go)
        self.call.remember(self.record)
        self.block = case.go.launch_state()[-1].entry.slots


def compiled_case(**kw) -> tuple[Case, CompiledRig]:
    case = Case(**kw)
    case.rb.program = lambda build, queue: CudaLikeProgram(case.rb, build, queue)  # type: ignore[method-assign]
    case.bound = chained.FALLBACK.bind(case.spec, case.rb, case.queue)
    case.common()  # makes go
    return case, CompiledRig(case)


def as_pointer(case: Case) -> None:
    """The scratch's buffer made a device pointer, as the compiled call reads it (its epoch 0)."""
    case.scratch.replace(SCRATCH_AT, case.scratch.nbytes)


@pytest.mark.parametrize(("n", "stream_bytes"), [(3000, 0), (1, 0), (999, 4000), (1000, 4000)])
def test_the_compiled_call_fills_the_argument_block_as_the_general_and_the_common_path_pass_it(
    n, stream_bytes
):
    case, rig = compiled_case(info=CPU if stream_bytes else GPU, n=n, stream_bytes=stream_bytes)
    case.scratch.epoch = 4
    general = case.general()  # the same call on the general path
    pointer = {id(case.src.buf): X_AT, id(case.dst.buf): OUT_AT, id(case.scratch.buf): SCRATCH_AT}
    expected = [a if isinstance(a, int) else pointer[id(a)] for a in general.args]
    as_pointer(case)
    case.scratch.epoch = 4
    x, out = rig.FakeArray(X_AT, n), rig.FakeArray(OUT_AT, n)
    assert rig.call(x, out, None) is out and not rig.slow
    (got,) = rig.launches
    assert (got["function"], got["groups"], got["stream"]) == (0xF00, general.groups, 0x5EA)
    assert case.scratch.epoch == 5 and [int(v) for v in rig.block] == expected


def test_the_compiled_call_takes_the_queues_lock_and_leaves_a_wrap_a_growth_and_a_device_carry_to_python():
    case, rig = compiled_case()
    as_pointer(case)
    lock = case.rb.lock(case.queue)
    assert rig.record[4].__self__ is lock and rig.record[5].__self__ is lock
    x, out = rig.FakeArray(X_AT, case.n), rig.FakeArray(OUT_AT, case.n)
    case.scratch.epoch = case.plan.epoch_limit  # the next would wrap: the plan's rule, Python's
    assert rig.call(x, out, None) == "python" and not rig.launches
    case.scratch.epoch = 0
    assert rig.call(x, out, rig.FakeArray(X_AT * 8, 1)) == "python" and not rig.launches  # on the device
    big = case.plan.tiles_in(case.scratch.nbytes) * case.spec.tile + 1
    assert rig.call(rig.FakeArray(X_AT, big), rig.FakeArray(OUT_AT * 64, big), None) == "python"
    assert not rig.launches and case.scratch.epoch == 0


def test_the_compiled_call_passes_a_carry_the_host_knows_as_the_general_path_does():
    case, rig = compiled_case()
    carry = (5).to_bytes(4, "little")
    case.scratch.epoch = 2
    general = case.general(carry)  # the same call on the general path
    pointer = {id(case.src.buf): X_AT, id(case.dst.buf): OUT_AT, id(case.scratch.buf): SCRATCH_AT}
    expected = [a if isinstance(a, int) else pointer[id(a)] for a in general.args]
    as_pointer(case)
    case.scratch.epoch = 2
    x, out = rig.FakeArray(X_AT, case.n), rig.FakeArray(OUT_AT, case.n)
    assert rig.call(x, out, carry) is out and not rig.slow and len(rig.launches) == 1
    assert [int(v) for v in rig.block] == expected and expected[6] & KIND_CARRY_ARGS


def test_the_compiled_call_fills_slots_of_any_order_by_their_codes():
    case, rig = compiled_case()
    as_pointer(case)
    # the same launch with its block read back to front: every slot filled where its code is
    codes = compiled.arg_codes(case.plan)[::-1]
    block = np.zeros(len(codes), np.uint64)
    params = (ctypes.c_void_p * len(codes))(*(block.ctypes.data + 8 * k for k in range(len(codes))))
    record = list(rig.record)
    record[14], record[16], record[17], record[-1] = codes, ctypes.addressof(params), block.ctypes.data, block
    rig.call.remember(tuple(record))
    case.scratch.epoch = 0
    rig.call(rig.FakeArray(X_AT, case.n), rig.FakeArray(OUT_AT, case.n), None)
    by_code = {
        ARG_SRC: X_AT,
        ARG_DST: OUT_AT,
        ARG_N: case.n,
        ARG_SCRATCH: SCRATCH_AT,
        ARG_CODE: 0,
        ARG_EPOCH: 1,
    }
    assert [int(v) for v in block] == [by_code.get(c, 0) for c in codes]


@pytest.mark.parametrize("codes", [bytes([ARG_SRC, ARG_SRC]), bytes([len(ARG_SLOTS)])])
def test_the_compiled_call_refuses_a_record_of_codes_it_does_not_know_or_a_slot_twice(codes):
    case, rig = compiled_case()
    record = list(rig.record)
    record[14] = codes
    with pytest.raises(ValueError, match="slot code"):
        rig.call.remember(tuple(record))


def test_the_extension_names_the_slot_codes_as_the_plan_does():
    ext = pytest.importorskip("jitscan.backends._common_call", reason="the extension is not built here")
    assert ext.SLOTS == ARG_SLOTS and ext.LAYOUT == compiled.LAYOUT
    if not os.environ.get("JITSCAN_NO_EXTENSION"):  # so cupy.py uses it
        assert compiled.CommonCall is ext.CommonCall and cupy_backend.CommonCall is ext.CommonCall


def test_cudas_codes_give_each_array_its_pointer_and_a_constant_offset():
    plan = chained.launch_plan(spec_of())
    head = [ARG_SRC, ARG_CONST, ARG_DST, ARG_CONST, ARG_N, ARG_SCRATCH, ARG_CODE, ARG_EPOCH]
    assert compiled.arg_codes(plan) == bytes([*head, *[ARG_CONST] * 4, *[ARG_CARRY] * len(NO_CARRY)])


# -- one lock per queue --------------------------------------------------------------------


def test_each_backend_gives_a_queue_one_lock_for_good_and_two_queues_two():
    rb = RecordingBackend()
    q0, q1 = rb.default_queue, rb.queue_for("device 1")
    assert rb.lock(q0) is rb.lock(q0) and rb.lock(q0) is not rb.lock(q1)
    cb = cupy_backend.CupyBackend()
    s0, s1 = SimpleNamespace(ptr=1), SimpleNamespace(ptr=2)
    c0, c1 = cupy_backend.CudaQueue(0, s0), cupy_backend.CudaQueue(0, s1)
    assert cb.lock(c0) is cb.lock(c0) is c0.lock and cb.lock(c1) is not c0.lock
    lock = rb.lock(q0)
    with lock, lock:  # reentrant: a run holds it around helpers that take it too
        pass


def _in_thread(fn) -> threading.Thread:
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("path", ["general", "common", "rts", "by offsets"])
def test_a_launch_on_one_queue_does_not_wait_for_another_queues_lock_and_waits_for_its_own(path):
    rb = RecordingBackend()
    q0, q1 = rb.default_queue, rb.queue_for("device 1")
    n = 5000

    def launcher(queue):
        if path == "by offsets":  # the offsets pre-pass, its check and the queue's alarm too
            spec = spec_of(segmented="offsets")
            bound = chained.FALLBACK.bind(spec, rb, queue)
            src, dst, seg = (
                Array((n,), np.int32),
                Array((n,), np.int32),
                Segments(offsets=Array((9,), np.uint64)),
            )
            return lambda: chained.FALLBACK.run(bound, queue, LaunchArgs(), src, dst, n, seg, True)
        variant = variants.get("rts" if path == "rts" else "fallback")
        spec = spec_of(variant=variant.name)
        bound = variant.bind(spec, rb, queue)
        src, dst = Array((n,), np.int32), Array((n,), np.int32)
        if path == "common":
            go = variant.plain_launcher(bound, queue, LaunchArgs())
            return lambda: go(src, dst, n)
        return lambda: variant.run(bound, queue, LaunchArgs(), src, dst, n, NONE, True)

    on_q0, on_q1 = launcher(q0), launcher(q1)
    held, let_go = threading.Event(), threading.Event()

    def hold():
        with rb.lock(q0):
            held.set()
            let_go.wait(10)

    holder = _in_thread(hold)
    assert held.wait(10)
    try:
        other = _in_thread(on_q1)
        other.join(10)
        assert not other.is_alive()  # another queue's lock held: no wait
        same = _in_thread(on_q0)
        same.join(0.3)
        assert same.is_alive()  # its own queue's lock held: it waits
    finally:
        let_go.set()
    holder.join(10)
    same.join(10)
    assert not same.is_alive()


def test_one_queues_launches_from_many_threads_each_take_an_epoch_of_their_own():
    case = Case()
    case.general()
    go = chained.FALLBACK.plain_launcher(case.bound, case.queue, case.launch)
    case.rb.clear()
    start = case.scratch.epoch
    threads = [_in_thread(lambda: [go(case.src, case.dst, case.n) for _ in range(50)]) for _ in range(4)]
    for t in threads:
        t.join(30)
    # in the order launched: each launch's epoch taken and fired under the lock, none between
    epochs = [launch.args[7] for launch in case.rb.launches()]
    assert epochs == list(range(start + 1, start + 201)) and case.scratch.epoch == start + 200


@pytest.mark.parametrize("name", ["opencl", "cupy"])
def test_threads_scanning_on_queues_of_their_own_at_once_all_get_right_results(name):
    # each queue's lock guards its own scratch: four queues' launches (and their carries,
    # through CuPy's one ring of pinned slots) go on at once
    from concurrent.futures import ThreadPoolExecutor

    import jitscan
    from jitscan import backends

    b = backends.get(name)
    if not b.available():
        pytest.skip(f"backend {name!r} unavailable here: {b.unavailable_reason()}")
    rng = np.random.default_rng(7)
    x = rng.integers(-100, 100, 1 << 16).astype(np.int32)
    want, from_5 = np.cumsum(x, dtype=np.int32), np.cumsum(x, dtype=np.int32) + 5

    if name == "opencl":
        import pyopencl as cl
        import pyopencl.array as cla

        context = b.queue_of(None).context

        def work(_: int) -> bool:
            q = cl.CommandQueue(context)
            dx = cla.to_device(q, x)
            ok = all(
                np.array_equal(jitscan.cumsum(dx).get(), want)
                and np.array_equal(jitscan.scan(dx, initial=5).get(), from_5)
                for _ in range(10)
            )
            q.finish()
            return ok
    else:
        import cupy

        def work(_: int) -> bool:
            with cupy.cuda.Stream(non_blocking=True) as stream:
                dx = cupy.asarray(x)
                dy = cupy.empty_like(dx)
                ok = True
                for _ in range(25):
                    ok &= bool((jitscan.cumsum(dx, out=dy) == cupy.asarray(want)).all())
                    ok &= bool((jitscan.scan(dx, initial=5) == cupy.asarray(from_5)).all())
                stream.synchronize()
                return ok

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(4)))
