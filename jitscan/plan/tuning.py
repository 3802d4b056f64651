"""Default tile shapes and knobs per device class.

These are starting points chosen by reasoning about each class of device, not yet
per-device measurements; every value can be overridden per call.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import replace

from .. import variants
from ..backends import clock
from ..backends.base import DeviceInfo
from ..dtypes import VECTOR_BYTES, DType, Record
from ..kernels.spec import TILE_STATES, LaunchArgs, ScanSpec, check_choice
from ..operators import BUILTIN, Monoid

#: bytes of values a thread of a CPU workgroup of several threads may hold: such tiles are
#: unrolled (PoCL 3 mis-scans them as loops), and PoCL 3.1's LLVM 15 crashes the process
#: (SIGSEGV in its inliner, as it builds the work-group function at the first launch) on
#: unrolled rows of 2 KiB: 512 int32 or 256 int64 items, at 2 and 4 threads; 1 KiB built
#: (tests/test_reliability.py shows the crash on a minimal kernel)
CPU_UNROLLED_BYTES = 1024
#: the same in int32 items, for the tuner's search space
CPU_UNROLLED_ITEMS = CPU_UNROLLED_BYTES // 4
#: the share of a worker thread's stack a CPU workgroup's tile may take. PoCL runs a
#: workgroup of several threads as loops over its work-items on one worker thread, whose
#: stack (the process's RLIMIT_STACK, 8 MiB by default) holds every work-item's live
#: values: past about 512 KiB of tile (threads x items x bytes: 1024 threads x 256 int32,
#: 2048 x 32 int64, segmented scans sooner) the stack overflows and the process dies
#: (SIGSEGV in the kernel); 64 MiB of stack ran them all. A sixty-fourth (128 KiB at 8 MiB)
CPU_STACK_SHARE = 64
#: the largest spin_timeout taken (the kernel's 32-bit count of 1,024 ticks of a 5 GHz clock)
MAX_SPIN_TIMEOUT = 600.0

#: bytes of a CPU tile that holds its vectors as lanes (ScanSpec.lanes): the lanes tile
#: reads its items twice, the second time from the cache, and keeps no array of them.
#: 64 KiB tiles ran 6-16% faster than 16 KiB ones from 2^16 to 2^24 (int32 and float32,
#: pyopencl arrays, 2-core EPYC), 25% faster than 4 KiB at 2^16; 128 KiB matched 64 and
#: 256 KiB was slower
CPU_LANE_BYTES = 1 << 16
#: bytes of a vector of a CPU tile held in lanes (ScanSpec.lanes), where the CPU's vector
#: registers are as wide (DeviceInfo.vector_bytes): its lanes scanned in 16-byte runs, then
#: the runs joined (lanes.scan_steps). The 2-core Zen 5 (AVX-512), one work-item scanning
#: 2^20 int32 in PoCL 3.1's single-thread driver (``experiments/cpu_lanes.py 20``): 16 bytes
#: 7.2 G/s, 32 bytes 10.1, 64 bytes 9.2 (float32 6.4, 8.9, 8.6); 32 bytes shifted whole, 1.7
CPU_LANE_VECTOR_BYTES = 32
#: bytes of a CPU tile of a segmented scan that finds its aggregate without scanning
#: (ScanSpec.seg_store_pass): it keeps no array of its items either. On the 2-core EPYC as
#: installed (``VECTORS=1024,4096,8192,16384 python experiments/cpu_segments.py 20 22 24``,
#: NumPy to NumPy, segments of mean length 1000, by offsets and flags, in turns) 128 KiB
#: took 0.81-0.91 of the time of the 16 KiB tiles segmented scans had kept at 2^20 and
#: 0.55-0.71 at 2^22-2^24; 64 KiB 0.86-0.91 and 0.61-0.78; 256 KiB 0.78-0.91 and 0.60-0.69.
#: PoCL's single-thread driver pays a cost a workgroup too: 0.65-0.77 at 2^22
#: (experiments/cpu_ab.py against the 16 KiB tiles)
CPU_SEG_LANE_BYTES = 1 << 17
#: host calls up to this many bytes of input go to a device that runs kernels in the
#: calling thread, where the CPU has one beside its threaded one (Backend.host_sibling:
#: PoCL with POCL_DEVICES="pthread basic"). The 2-core EPYC, NumPy to NumPy, in turns:
#: the single-thread driver ahead at every size up to 2^22 int32 items (2^16: 40 us
#: against 143), level with the threaded one from 2^23 to 2^24
CPU_IN_THREAD_BYTES = 1 << 24
#: on CPU devices outputs as large as their cache (DeviceInfo.cache_bytes, and at least
#: this: a runtime may report a core's L2 instead of the last level) are stored around it
#: (LaunchArgs.stream_bytes): an ordinary store first reads each line it writes. On the
#: 2-core EPYC (32 MiB of L3), a prepared int32 scan stored so against ordinary stores,
#: in turns (median time): 2^23 items 0.89-0.91x, 2^24 0.76-0.89x, 2^25 0.76-0.78x; 2^22
#: 0.97-1.10x and 2^21 0.93-1.29x, in the cache (experiments/notes/performance-log.md, "Stores around the
#: cache")
CPU_STREAM_BYTES = 1 << 25
#: input sizes in bytes at which geometry() may change the tile shape or the look-back
#: window: a prepared scan keeps one program per class it meets
SIZE_BOUNDS = (1 << 19, 1 << 21, 1 << 24)

#: a plain reduction given no variant runs rts's two passes above this many bytes on
#: GPUs: no tile waits on another, and it reads at the speed of CUB's reduction. On the
#: H100 (in turns) rts reduced 1.04-1.42x faster than the chained scan from 8 MiB
#: (float32, int32, float64), 0.92-0.95x at 4 MiB (experiments/notes/performance-log.md, "Reductions")
RTS_REDUCE_BYTES = 1 << 22
#: the same for a reduction by offsets (segmented reductions, reductions along axes): below
#: it the chained scan's two launches (the offsets' pre-pass and one pass) beat rts's four.
#: On the H200 (int32, a segment per 16 values, in turns; experiments/seg_reduce_small.py,
#: experiments/call_forms_h200.md) fallback took 13.7-20.3 us a call pipelined at 2^20-2^22
#: against rts's 34.8-35.8, 57.8 against 61.0 at 2^24, and 201.7 against 184.7 at 2^26; at
#: a mean length of 1024 too (a reduction along rows: experiments/seg_reduce_shapes.py,
#: 0.34-0.96x rts's time up to 2^24, 1.24x at 2^26, and no tile shape of its own closer)
RTS_SEG_REDUCE_BYTES = 1 << 26
#: a chained scan by offsets on a GPU compiles tiles that search the offsets themselves
#: (ScanSpec.search_segments: no pre-pass launch, each tile two searches of a few rounds
#: and the check of what it reads) for size classes up to this, a reduction by offsets up
#: to SEARCH_SEGMENTS_REDUCE_BYTES; above, the pre-pass's table, and the kernel of old. On
#: the H200 (int32, mean length 100, in turns, pipelined; experiments/search_sweep.py):
#: at 2^14-2^19 the search took 0.41-0.47x the pre-pass's time a call (run F of
#: experiments/call_forms_h200.md), in the 2-16 MiB class 0.72x (2^20) and 0.98x (2^22)
#: for scans, 0.77x and 1.11x for reductions, and in the largest class 1.25-1.41x
SEARCH_SEGMENTS_BYTES = 1 << 24
SEARCH_SEGMENTS_REDUCE_BYTES = 1 << 21
#: tiles of deterministic segmented scans on GPUs in the 2-16 MiB class, by the largest
#: input in bytes each takes on a GPU of DET_SEGMENTED_UNITS multiprocessors: (threads,
#: vectors, min_blocks, window). They run best where their tiles fit in one wave or fill
#: several: a few tiles past one wave, the last ones run alone, and a deterministic tile
#: takes longer than an ordinary one. So the bounds sit just below a wave of each shape
#: (256 x 4 with 4 blocks: 8.25 MiB; 128 x 8 with 5: 10.3 MiB; 128 x 4 with 6: 12.4 MiB,
#: two waves) and move with the multiprocessors of another GPU (det_segmented_rows). On
#: the H100 (by flags, det / ordinary at mean lengths 1000, 10^5, 10^7; experiments/notes/performance-log.md,
#: "Deterministic segmented scans of 2-16 MiB") 128 x 8 with 4 blocks, the class's one
#: tile before, ran float32 at 3 MiB 0.944/0.952/1.066, at 9 MiB 0.866/0.907/0.964, at
#: 10 MiB 0.898/0.952/1.013, at 11 MiB 0.913/0.962/1.013, float64 at 3 MiB
#: 0.948/1.020/1.091 and at 9 MiB 0.902/0.913/1.003; with the tiles below (the run after)
#: float32 at 3 MiB 0.996/1.012/1.174, at 9 MiB 0.960/1.026/1.039, at 10 MiB
#: 0.961/1.052/1.095, at 11 MiB 0.957/0.973/1.024, float64 at 3 MiB 1.023/1.121/1.188 and
#: at 9 MiB 0.994/0.968/1.021. A prepared scan keeps a size class for each.
DET_SEGMENTED_SHAPES: dict[int, tuple[tuple[int, tuple[int, int, int, int]], ...]] = {
    # values of 4 bytes or fewer
    4: (
        (8 << 20, (256, 4, 4, 256)),
        (10 << 20, (128, 8, 5, 128)),
        (12 << 20, (128, 4, 6, 128)),
        (16 << 20, (128, 8, 4, 128)),
    ),
    # wider values: 256 x 4 with 4 blocks at every size of the class
    8: ((16 << 20, (256, 4, 4, 256)),),
}
#: the multiprocessors of the GPU DET_SEGMENTED_SHAPES was measured on (the H100's)
DET_SEGMENTED_UNITS = 132


def det_segmented_rows(info: DeviceInfo, dtype: DType) -> tuple[tuple[int, tuple[int, int, int, int]], ...]:
    """DET_SEGMENTED_SHAPES's rows for ``dtype`` on ``info``'s GPU: the bounds inside the
    class scaled by its multiprocessors (where it reports them), those that leave the
    class dropped; the last row ends the class."""
    rows = DET_SEGMENTED_SHAPES[4 if dtype.packed_bytes <= 4 else 8]
    units = info.compute_units or DET_SEGMENTED_UNITS
    inner = ((bound * units // DET_SEGMENTED_UNITS, shape) for bound, shape in rows[:-1])
    return (*((b, shape) for b, shape in inner if SIZE_BOUNDS[1] < b < SIZE_BOUNDS[2]), rows[-1])


def det_segmented_shape(nbytes: int, dtype: DType, info: DeviceInfo) -> tuple[int, int, int, int]:
    """(threads, vectors, min_blocks, window) of a deterministic segmented scan of
    ``nbytes`` bytes in the 2-16 MiB class on a GPU (DET_SEGMENTED_SHAPES)."""
    if not SIZE_BOUNDS[1] < nbytes <= SIZE_BOUNDS[2]:
        raise ValueError(f"{nbytes} bytes are outside the 2-16 MiB class")
    return next(shape for bound, shape in det_segmented_rows(info, dtype) if nbytes <= bound)


def det_segmented_bounds(dtype: DType, info: DeviceInfo) -> tuple[int, ...]:
    """The size-class bounds in bytes that a deterministic segmented scan on ``info``'s GPU adds."""
    return tuple(bound for bound, _ in det_segmented_rows(info, dtype))


def size_class(nbytes: int) -> int:
    """The class of an input of ``nbytes`` bytes: 0 up to 512 KiB, 1 up to 2 MiB, 2 up to 16 MiB, 3 above."""
    return bisect_left(SIZE_BOUNDS, nbytes)


def geometry(
    info: DeviceInfo,
    dtype: DType,
    n: int | None = None,
    segmented: str = "",
    variant: str = "",
    kind: str = "",
) -> dict[str, int]:
    """threads, vectors, vector_width, min_blocks and lookback_width for a device and element type.

    Measured on an NVIDIA H100 (experiments/sweep.py, int32 at 2^28, fallback): 128
    threads x 16 vectors of 16 bytes with room for 3 blocks per SM reached 95% of
    memcpy, against 81-83% for 256-512 threads x 4-8 vectors. Many independent
    16-byte loads per thread keep enough bytes in flight; more threads per SM did
    not (register-limited to 2 blocks).
    """
    vector_width = VECTOR_BYTES // dtype.vector_itemsize  # the widest accesses (of the widest field)
    min_blocks, window = 0, 0
    if info.is_gpu and info.shuffle_width:
        # NVIDIA through CUDA or OpenCL (PTX shuffles; min_blocks becomes .minnctapersm,
        # see backends/opencl.py), or ROCm. On the H100 the same shapes won on both
        # backends (OpenCL, experiments/seg_bench.py 28 opencl: flat 128 x 16 with 3 blocks
        # 356.8 Ge/s against 288-320 for other shapes; segmented 128 x 4 with 8 blocks
        # 262.5, 128 x 8 with 4 blocks 267.3, uncapped shapes 231-239).
        # Below 2^19 bytes a launch is latency-bound: smaller tiles spread it wider. Up
        # to 16 MiB most tiles start at once and wait on each other: 256 x 8 with 2
        # blocks per SM finishes each tile sooner (experiments/mid_sweep.py, H100, int32:
        # 217-220 Ge/s at 2^22 against 210-211 for 128 x 16 and 213-214 for CUB;
        # 128 x 16 is ahead again from 2^23, 250 against 240-242)
        nbytes = math.inf if n is None else n * dtype.packed_bytes  # unknown size: the large shape
        if nbytes <= 1 << 19:
            threads, vectors, min_blocks = 256, 4, 0
        elif nbytes <= 1 << 24:
            threads, vectors, min_blocks = 256, 8, 2
            # above 2 MiB (64 tiles) tiles walk 40-100 predecessors: a window of four
            # subgroups walked in parallel moves the walk further per trip to L2
            # (experiments/window_sweep.py, H100, at 4-16 MiB: int32 1.045-1.084x the
            # one-subgroup window, float32 1.031-1.072x, 64-bit 1.017-1.048x; at 1 MiB,
            # 32 tiles, the one-subgroup window read 2.5-3% ahead)
            window = 128 if nbytes > 1 << 21 else 0
        else:
            threads, vectors, min_blocks = 128, 16, 3
        if segmented:
            # 64 registers a thread, 1024 threads per SM measured best for every segmented
            # mode (experiments/seg_bench.py, H100, 2^28): 128 x 4 with 8 blocks 290-291 Ge/s
            # int32 + uint8 flags (256 x 4 with 4 blocks 283), 301 float32 rows by
            # heads, 430 chained segmented_reduce; shapes with more registers per
            # thread reached 160-275 on flags
            threads, vectors, min_blocks, window = 128, 4, 8, 0
        if info.amd:
            # ROCm: no H100 occupancy bound (clang then spilled to meet it: the int32
            # scan's 168 VGPRs with 224 bytes of scratch a lane for gfx90a). Unbounded,
            # as its compiler reports them (experiments/amd_shapes.md, int32 and float64):
            # 256 x 8 holds 116-142 VGPRs, no spill, 3-4 waves a SIMD on gfx90a and gfx942
            # and 10-12 on gfx1100; segmented 256 x 4 holds 92-127, no spill, 3-5 and 12-16
            # (128 x 16 and segmented 256 x 8 spill on gfx1100 or run 1-2 waves). Not
            # measured on AMD hardware: chosen to compile without spills at a fair occupancy
            threads, vectors, min_blocks = 256, (4 if segmented or nbytes <= 1 << 19 else 8), 0
    elif info.is_gpu:
        threads, vectors = 128, 8
    else:
        # CPU (PoCL, one worker thread per workgroup): workgroups of one thread, each
        # scanning a run of 16 KiB serially in loops the compiler keeps as loops
        # (ScanSpec.unrolled), 4 KiB up to 512 KiB so that small inputs still make
        # tiles for every core. PoCL runs a workgroup of many threads as loops split at
        # every barrier: 64 x 4 ran at 217 M int32/s at 2^20, one thread x 1024 vectors
        # at 1.1-1.6 G/s when it came, 2.3-2.5 since its tile takes two passes (2-core
        # EPYC, device arrays; experiments/cpu_kernel.py).
        # Segmented scans too: their thread's head bits are words (ScanSpec.head_words)
        threads = 1
        vectors = 256 if n is not None and n * dtype.packed_bytes <= 1 << 19 else 1024
    geo = {"threads": threads, "vectors": vectors, "vector_width": vector_width, "min_blocks": min_blocks}
    if variant:  # the variant's own shape for this device and call, where it has one
        geo |= variants.get(variant).shape(info, segmented, kind)
    threads = geo["threads"] = min(geo["threads"], info.max_threads)
    return geo | {"lookback_width": lookback_window(info, threads, window)}


def record_shape(
    dtype: Record, vectors: int, index_fields: tuple[int, ...] = (), large_gpu: bool = False
) -> dict[str, int]:
    """The tile shape of a tuple value, from the scalar shape's ``vectors``.

    Vectors are 16-byte loads of the narrowest field read from memory (wider fields and
    stores take several 16-byte pieces, values.field_moves), and a thread holds as many
    32-bit words of values as a scalar int32 tile of ``vectors`` vectors: each item is
    ``packed_bytes / 4`` words, index fields included (they live in registers too).

    Large inputs on GPUs with shuffles (``large_gpu``) take the shapes measured best on
    the H100 (experiments/tuples_sweep.py at 2^26, float32 fields): a pair, the linear
    recurrence, 128 threads x 16 vectors without a blocks-per-SM bound (1.05x the
    register rule's 8 vectors with 3 blocks); three words or more, argmax (float32, int64)
    and Welford's triple, 256 threads x 4 vectors with 2 blocks per SM (1.42x the rule on
    their running forms, 1.91x on argmax's reduction).
    """
    loaded = [d for k, d in enumerate(dtype.fields) if k not in index_fields] or list(dtype.fields)
    width = VECTOR_BYTES // min(d.itemsize for d in loaded)
    words_per_item = dtype.packed_bytes // 4
    if large_gpu and width == 4:
        if words_per_item >= 3:
            return {"threads": 256, "vectors": 4, "min_blocks": 2, "vector_width": width}
        return {"vectors": vectors, "min_blocks": 0, "vector_width": width}
    words = vectors * (VECTOR_BYTES // 4) // (width * words_per_item)
    return {"vectors": 1 << max(0, words.bit_length() - 1), "vector_width": width}


def lookback_window(info: DeviceInfo, threads: int, wide: int = 0) -> int:
    """Predecessors read per look-back step: one subgroup when it can shuffle (that window
    is walked in registers), else 32 walked by one thread; ``wide`` asks for a window of
    several subgroups walked in parallel, where the workgroup holds it."""
    sg = info.shuffle_width or threads
    if not info.shuffle_width:
        width = min(32, sg)
        # where partial windows mis-scan (DeviceInfo.partial_windows) the whole workgroup reads
        return width if info.partial_windows or width in (1, threads) else threads
    return wide if sg < wide <= threads else sg


def deterministic_window(n: int | None, dtype: DType, threads: int, kind: str = "inclusive") -> int:
    """The look-back window of a deterministic chained scan on a device with shuffles.

    Its tiles form groups of one window (src/deterministic.h), and a tile past the
    first group waits for its group's anchor, one step of a chain per group. Small and
    mid-size inputs get a window as wide as their tile count allows (a size class of
    at most 32 tiles below 512 KiB, 512 tiles up to 16 MiB), so that few or no tiles
    wait on an anchor. Large inputs get 64: on the H100 (experiments/deterministic.py,
    2^24-2^28, 128 x 16 tiles) windows of 64 ran at 0.97-1.00x the ordinary scan for
    float64 reductions against 0.94-0.99x for 128 and 0.78-0.83x for 32, and 1.04-1.10x
    for float32 (a narrow window's chain of anchors falls behind the tiles; a wide one
    reads more per look). Segmented scans take 128 (256 with the 256-thread tiles of
    2-8 MiB, and of 64-bit values up to 16 MiB; spec_for): their tiles are small, so the
    chain has many steps where segments are long (one window of 32 ran at 0.45-0.66x the
    ordinary scan at mean length 10^7, 128 at 0.87-1.10x), and their looks read the first
    subgroup alone first, which is where most walks end at a head.
    Reductions of 2-16 MiB take 128 (four subgroups of the 256-thread tile): float64 at 2^20
    ran at 1.095-1.106x the ordinary reduction with it against 0.955-0.969x with 256, and
    float32 at 0.995-1.000x against 0.998-1.000x (experiments/notes/performance-log.md,
    "Deterministic scans").
    """
    nbytes = math.inf if n is None else n * dtype.packed_bytes
    if SIZE_BOUNDS[0] < nbytes <= SIZE_BOUNDS[2]:
        return min(threads, 128) if kind == "reduce" and nbytes > SIZE_BOUNDS[1] else threads
    return 64


def default_spin_limit(info: DeviceInfo, variant: str) -> int:
    """Default spin limit: a fallback trigger, or a watchdog (the variant's ``spin_limit``)."""
    return variants.get(variant).spin_limit(info)


def cpu_row_items(threads: int, item_bytes: int, segmented: bool) -> int:
    """Items a thread of a CPU workgroup of ``threads`` (more than one) may hold: within
    CPU_UNROLLED_BYTES a thread, and the whole tile within the worker's stack share
    (CPU_STACK_SHARE). ``item_bytes`` is a value's in registers (a tuple's struct, padded);
    a segmented item counts 8 bytes more (its head and its segment's start or flag: scans by
    offsets of 1 KiB of int64 a thread, and tuples of int32 and float64 by flags at 64 a thread,
    crashed PoCL's compiler as the flat rows of 2 KiB do). 0 where not even one fits."""
    item = item_bytes + (8 if segmented else 0)
    return min(CPU_UNROLLED_BYTES // item, worker_stack() // CPU_STACK_SHARE // (threads * item))


def worker_stack() -> int:
    """Bytes of stack a thread the process starts gets (glibc takes RLIMIT_STACK; 8 MiB
    where it is unlimited or unknown, or larger)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_STACK)[0]
    except (ImportError, OSError, ValueError):  # not POSIX
        return 8 << 20
    return 8 << 20 if soft in (resource.RLIM_INFINITY,) or soft <= 0 else min(soft, 8 << 20)


def spec_for(
    info: DeviceInfo,
    *,
    variant: str,
    dtype: DType,
    monoid: Monoid,
    kind: str = "inclusive",
    tile_state: str | None = None,
    lookback_width: int | None = None,
    threads: int | None = None,
    vectors: int | None = None,
    vector_width: int | None = None,
    min_blocks: int | None = None,
    stats: bool = False,
    n: int | None = None,
    segmented: str = "",
    row_tiles: bool = False,
    deterministic: bool = False,
    in_dtype: str = "",
    index_fields: tuple[int, ...] = (),
    outputs: tuple[int, ...] = (),
) -> ScanSpec:
    """The program for one kind of call: device defaults, overridden by the caller's knobs.

    ``n`` picks the size class (None: the largest inputs); ``kind`` matters only for a
    reduction by offsets, which stages its tile. Knobs that do not affect a variant are
    normalized away so that, for example, every ``rts`` call of one dtype and op shares
    a compiled program, and ``deterministic`` reaches only the chained scans of values
    that round (not the built-in ops on integers, which are exact in any order).
    ``in_dtype`` names an input type the kernels convert as they load; ``index_fields`` and
    ``outputs`` say which fields of a tuple value are the index and which are written
    (``ScanSpec``).
    """
    v = variants.get(variant)
    geo = geometry(info, dtype, n, segmented, variant, kind)
    if isinstance(dtype, Record):
        # the large-input class of a GPU with shuffles (geometry's last shape)
        large = info.is_gpu and info.shuffle_width is not None and not segmented
        large = large and (n is None or n * dtype.packed_bytes > 1 << 24)
        geo.update(record_shape(dtype, geo["vectors"], index_fields, large))
        geo["lookback_width"] = lookback_window(info, geo["threads"]) if large else geo["lookback_width"]
    if threads is not None:
        geo["threads"] = threads
    if vector_width is not None:
        geo["vector_width"] = vector_width
    if vectors is not None:
        geo["vectors"] = vectors
    cpu_rows = not info.is_gpu and geo["threads"] > 1
    most = cpu_row_items(geo["threads"], dtype.itemsize, bool(segmented)) if cpu_rows else 0
    if vectors is None and cpu_rows:
        # the CPU geometry's long rows are for one-thread workgroups (cpu_row_items)
        fit = max(1, most // geo["vector_width"])
        geo["vectors"] = min(geo["vectors"], 1 << (fit.bit_length() - 1))  # a power of two
    items = geo["vectors"] * geo["vector_width"]
    if cpu_rows and items > most:
        raise ValueError(
            f"a CPU device's workgroup of {geo['threads']} threads takes at most {most} items of "
            f"{dtype.name} a thread (vectors x vector_width), not {items}: its tile is unrolled, and "
            f"PoCL's compiler or its worker thread's stack fails on longer ones (the process dies); use "
            "fewer vectors or threads, or threads=1 (the CPU default, which walks its rows in loops)"
        )
    if min_blocks is not None:
        geo["min_blocks"] = min_blocks
    if geo["threads"] > info.max_threads:
        raise ValueError(f"threads={geo['threads']} exceeds the device's workgroup limit {info.max_threads}")
    if dtype.has_f64 and not info.fp64:
        raise TypeError(f"device {info.name} has no float64 support")
    sg = info.shuffle_width or geo["threads"]
    chained = v.caps.tile_state
    if tile_state is None:
        tile_state = "packed" if info.int64_atomics else "split"
    check_choice("tile_state", tile_state, TILE_STATES)
    if tile_state == "packed" and not info.int64_atomics and chained:
        raise ValueError(
            f"tile_state='packed' needs 64-bit atomics, which {info.name} lacks; use tile_state='split'"
        )
    if deterministic not in (True, False):
        raise TypeError(f"deterministic must be True or False, got {deterministic!r}")
    if deterministic and not v.supports("deterministic"):
        raise variants.lacking(v, "deterministic")
    exact = not dtype.is_float and monoid in BUILTIN.values()
    # a variant deterministic as it is compiles no other form
    deterministic = deterministic and v.caps.deterministic == "form" and not exact
    seg_window = 128  # a deterministic segmented scan's (deterministic_window)
    if deterministic and segmented and info.is_gpu and vectors is None and n is not None:
        nbytes = n * dtype.packed_bytes
        if SIZE_BOUNDS[1] < nbytes <= SIZE_BOUNDS[2] and min_blocks is None and threads is None:
            if isinstance(dtype, Record):  # not measured: twice the tile, 4 blocks per SM
                geo["vectors"], geo["min_blocks"] = geo["vectors"] * 2, 4
            else:
                shape = det_segmented_shape(nbytes, dtype, info)
                geo["threads"] = min(shape[0], info.max_threads)
                geo["vectors"], geo["min_blocks"] = shape[1], shape[2]
                seg_window = min(shape[3], geo["threads"])
        elif nbytes <= SIZE_BOUNDS[0]:
            # half the tile in the smallest size class (twice the tiles): on the H100
            # (by flags, det / ordinary at mean lengths 1000, 10^5, 10^7) float32 at 2^16
            # 0.903/0.972/0.974 took 0.969/0.967/0.970 with 128 x 2, at 2^17
            # 0.906/0.915/1.000 took 1.000/0.972/1.059; float64 at 2^16 0.937/1.030 took
            # 0.970/1.026. From 2^18 float32 the default shape is as fast or faster (at
            # 2^19 with long segments 1.05-1.13 against 0.97-0.98). experiments/notes/performance-log.md,
            # "Half the tile for small deterministic segmented scans"
            geo["vectors"] = max(1, geo["vectors"] // 2)
    if not chained:
        tile_state, width, stats = "packed", 1, False
    else:
        width = lookback_width
        if not info.partial_windows and geo["threads"] > 1:
            # DeviceInfo.partial_windows: refused rather than scanned wrong
            if deterministic:
                raise ValueError(
                    f"deterministic=True with threads={geo['threads']}: {info.name} mis-scans deterministic "
                    f"look-backs of workgroups of several threads (PoCL 3.1 and later); leave threads to "
                    f"the device (one a workgroup on a CPU)"
                )
            if width is not None and 1 < width < geo["threads"]:
                raise ValueError(
                    f"lookback_width={width} with threads={geo['threads']}: {info.name} mis-scans a "
                    f"look-back window read by more than one and fewer than all of a workgroup's threads "
                    f"(PoCL 3.1 and later); take a width of 1 or of the workgroup"
                )
        if width is None:  # the size class's window, unless threads was overridden below it
            wide = geo["lookback_width"]
            if deterministic:
                wide = seg_window if segmented else deterministic_window(n, dtype, geo["threads"], kind)
            width = lookback_window(info, geo["threads"], wide)
    if info.amd and min_blocks is None:
        # no occupancy bound measured on NVIDIA reaches ROCm (geometry: clang spills to meet it)
        geo["min_blocks"] = 0
    # small size classes by offsets on GPUs: tiles that search the offsets, no pre-pass
    search = segmented == "offsets" and chained and info.is_gpu and geo["threads"] > 1
    bound = SEARCH_SEGMENTS_REDUCE_BYTES if kind == "reduce" else SEARCH_SEGMENTS_BYTES
    search = search and (math.inf if n is None else n * dtype.packed_bytes) <= bound
    spec = ScanSpec(
        variant=variant,
        dtype=dtype.name,
        monoid=monoid,
        threads=geo["threads"],
        vectors=geo["vectors"],
        vector_width=geo["vector_width"],
        subgroup=sg,
        shuffle=info.shuffle_width is not None,
        tile_state=tile_state,
        lookback_width=width,
        stats=stats,
        min_blocks=geo["min_blocks"],
        segmented=segmented,
        row_tiles=row_tiles,
        stages_tile=segmented == "offsets" and kind == "reduce",
        deterministic=deterministic,
        # loops only in workgroups of one thread: PoCL 3 mis-scans tiles of several
        # threads whose vectors are walked in loops between barriers
        unrolled=info.is_gpu or geo["threads"] > 1,
        in_dtype=in_dtype,
        index_fields=index_fields,
        outputs=outputs,
        clock=info.clock if v.caps.watchdog else "",
        serial=not info.is_gpu and info.compute_units == 1,
        chained=chained,
        lane_tiles=v.lane_tiles,
        search_segments=search,
    )
    if vector_width is None and not info.is_gpu and spec.lanes:
        # the tile's items as they were, in vectors as wide as CPU_LANE_VECTOR_BYTES
        wide = min(CPU_LANE_VECTOR_BYTES, info.vector_bytes) // dtype.vector_itemsize
        if wide > spec.vector_width:
            held = spec.vectors if vectors is not None else max(1, spec.vectors * spec.vector_width // wide)
            spec = replace(spec, vector_width=wide, vectors=held)
    if vectors is None and not info.is_gpu and (spec.lanes and not segmented or spec.seg_store_pass):
        tile_bytes = CPU_SEG_LANE_BYTES if segmented else CPU_LANE_BYTES
        spec = replace(spec, vectors=tile_bytes // (spec.vector_width * dtype.vector_itemsize))
    if rows_in_smem(spec, math.inf if n is None else n * dtype.packed_bytes):
        spec = replace(spec, rows_in_smem=True)
    if info.local_memory is not None and v.local_memory and spec.local_bytes > info.local_memory:
        raise ValueError(
            f"a tile of {spec.threads} threads x {spec.vectors} vectors x {spec.vector_width} items of "
            f"{spec.dtype} needs about {spec.local_bytes} bytes of local memory; {info.name} gives a "
            f"workgroup {info.local_memory}: use fewer threads or vectors"
        )
    check_registers(info, spec)
    return spec


#: the most shared memory a workgroup's rows may take to cross its subgroups there
#: (ScanSpec.rows_in_smem); larger tiles scan their rows by shuffles
SMEM_ROWS_BYTES = 24 << 10


def rows_in_smem(spec: ScanSpec, nbytes: float) -> bool:
    """Whether ``spec``'s tiles, for inputs of up to ``nbytes``, scan their rows through
    shared memory (ScanSpec.rows_in_smem).

    Tiles of 64-bit integers of 0.5-16 MiB (geometry's 256 x 8 tiles) on devices with
    shuffles, of every variant and kind but segmented ones, with at most 8 vectors a
    thread. Each step of a row scan by shuffles is two shuffles and an add of two
    instructions for such values, and there the scans ran faster with their rows read
    across (H100, in turns, experiments/smem_rows.py): with the selects of the C step,
    int64 1.029-1.044x at 2^18-2^21 (2-16 MiB), uint64 1.029-1.055x at 2^17-2^21, float64
    1.000-1.013x, 32-bit types 0.964-1.003x; with NVIDIA's scan step in PTX (kernels/ptx.py),
    int64 and uint64 1.000-1.033x at 2^17-2^21. Tiles of 16 vectors (128 x 16, larger
    inputs) ran 0.96-0.98x (int64), 0.90-0.92x (float64) and 0.96-0.98x (32-bit), the
    256 x 4 tiles of small ones 0.97-1.01x (experiments/notes/performance-log.md, "64-bit integers: rows read
    across in shared memory").
    """
    # (where it cannot apply, without shuffles or rows, ScanSpec drops it)
    if spec.vectors > 8 or spec.segmented or spec.record:
        return False
    if (spec.vectors + 1) * spec.threads * spec.element_bytes > SMEM_ROWS_BYTES:
        return False
    d = spec.dtype_info
    return SIZE_BOUNDS[0] < nbytes <= SIZE_BOUNDS[2] and d.itemsize == 8 and not d.is_float


def check_registers(info: DeviceInfo, spec: ScanSpec) -> None:
    """Refuse a tile whose items alone overfill the registers a thread of ``spec``'s workgroup has.

    On a GPU a thread keeps its items in registers (unrolled loops, constant indices):
    a tile beyond the register file would live in local memory at a fraction of the speed,
    and thousands of unrolled vectors take the compiler minutes. Checked where the device
    says what it has (NVIDIA: 255 a thread, and a workgroup's share of the register file).
    """
    if not (spec.unrolled and info.is_gpu and info.thread_registers and info.registers):
        return
    have = min(info.thread_registers, info.registers // spec.threads)
    if spec.register_words > have:
        raise ValueError(
            f"a tile of {spec.threads} threads x {spec.vectors} vectors x {spec.vector_width} items of "
            f"{spec.dtype} holds {spec.register_words} 32-bit registers of items a thread; {info.name} "
            f"gives a thread of a {spec.threads}-thread workgroup at most {have}: use fewer vectors "
            "or threads"
        )


def launch_for(
    info: DeviceInfo,
    *,
    variant: str,
    kind: str,
    spin_limit: int | None = None,
    simulate_blocking: int | None = None,
    spin_timeout: float | None = None,
) -> LaunchArgs:
    """The launch arguments of one kind of call: the device's spin limit unless given.

    A watchdog (Capabilities.watchdog) also gets ``spin_timeout`` seconds (the variant's
    own unless given) in the units of the device's clock, where it has one.
    """
    v = variants.get(variant)
    if simulate_blocking and v.caps.watchdog:
        raise ValueError(
            f"simulated blocking with variant={variant!r} would deadlock: it waits forever for a tile "
            f"that never posts (the kernel's watchdog would fire). Use variant "
            f"{variants.either(variants.names('blocking'))}."
        )
    if simulate_blocking and not v.caps.blocking:
        raise ValueError(
            f"simulated blocking applies to variant {variants.either(variants.names('blocking'))}, "
            f"not {variant!r}"
        )
    stream = 0 if info.is_gpu else max(info.cache_bytes, CPU_STREAM_BYTES)
    if not v.caps.tile_state:
        return LaunchArgs(kind=kind, stream_bytes=stream)
    spin = spin_limit if spin_limit is not None else v.spin_limit(info)
    wait = 0
    if v.caps.watchdog and info.clock:
        wait = clock.wait_units(info.clock, v.spin_timeout if spin_timeout is None else spin_timeout)
    return LaunchArgs(
        kind=kind, spin_limit=spin, block_every=simulate_blocking or 0, wait_limit=wait, stream_bytes=stream
    )
