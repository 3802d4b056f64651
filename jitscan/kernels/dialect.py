"""Per-backend preludes: the macros that lower the portable kernel dialect.

Kernel bodies in ``src/`` use only the JS_* names defined here, so one body text
becomes OpenCL C or CUDA C (HIP-compatible) by prepending a different prelude.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

from ..dtypes import INPUTS, VECTOR_BYTES, DType
from . import lanes, ptx, storage, tile_state
from .spec import KIND_CARRY, KIND_CARRY_ARGS, KIND_CODES, KIND_STREAM, ScanSpec
from .transform import ARRAY_CTYPES
from .values import ValueSpelling

#: an OpenCL vector's components, up to its 16
_COMPONENTS_CL = tuple(f"s{c}" for c in lanes.LANE_DIGITS)
_COMPONENTS_CUDA = ("x", "y", "z", "w")


def _segment_params(mode: str, keys: str = "") -> list[str]:
    """Kernel parameters that say where segments start, per segmented mode.

    ``flags``/``rows``: a uint8 head array, or a row length. ``offsets``: the CSR
    offsets (as js_size) with each tile's first segment (``js_seg_first``; the offsets
    themselves where tiles search), the segment count and the queue's alarm (the words a
    tile that searched raises for a bad offset); heads are then marked in local memory,
    so loading takes ``sh``, the segments' storage (``js_seg_storage``, the kernel's
    ``sh.seg``). ``keys``: by flags, the C type of an array of keys whose changes are the
    heads (``ScanSpec.head_keys``, ``JS_HEAD_KEYS``), read in place of uint8 flags.
    """
    if mode == "offsets":
        params = (
            ", JS_GLOBAL const js_size* offsets, JS_GLOBAL const js_size* seg_first, js_size nseg,"
            " JS_GLOBAL js_u32* alarm_word, JS_GLOBAL js_u32* alarm_flag"
        )
        return [
            "#define JS_SEG_OFFSETS 1",
            f"#define JS_SEG_PARAMS {params}",
            "#define JS_SEG_ARGS , offsets, seg_first, nseg, alarm_word, alarm_flag",
            "#define JS_SEG_LOAD_PARAMS JS_SEG_PARAMS, JS_LOCAL_PTR js_seg_storage* sh",
            "#define JS_SEG_LOAD_ARGS JS_SEG_ARGS, &sh.seg",
            "#define JS_SEG_LOAD_FWD JS_SEG_ARGS, sh",
        ]
    if keys:
        return [
            "#define JS_SEG_OFFSETS 0",
            "/* heads where the key differs from the one before it, read from the keys themselves */",
            "#define JS_HEAD_KEYS 1",
            f"typedef {keys} js_key;",
            "#define JS_SEG_PARAMS , JS_GLOBAL const js_key* heads, js_size row_len",
            "#define JS_SEG_ARGS , heads, row_len",
            "#define JS_SEG_LOAD_PARAMS JS_SEG_PARAMS",
            "#define JS_SEG_LOAD_ARGS JS_SEG_ARGS",
            "#define JS_SEG_LOAD_FWD JS_SEG_ARGS",
        ]
    return [
        "#define JS_SEG_OFFSETS 0",
        "#define JS_HEAD_KEYS 0",
        "#define JS_SEG_PARAMS , JS_GLOBAL const js_u8* heads, js_size row_len",
        "#define JS_SEG_ARGS , heads, row_len",
        "#define JS_SEG_LOAD_PARAMS JS_SEG_PARAMS",
        "#define JS_SEG_LOAD_ARGS JS_SEG_ARGS",
        "#define JS_SEG_LOAD_FWD JS_SEG_ARGS",
    ]


class Dialect(ValueSpelling, ABC):
    """Base of the backend dialects; subclasses fill in the target-specific text."""

    name = "abstract"
    #: suffix of an unsigned 64-bit integer literal
    u64_suffix = "UL"
    #: the names of a vector type's components, in order
    components: tuple[str, ...] = ()

    @abstractmethod
    def ctype(self, dtype: DType) -> str:
        """The C name of an element type."""

    @abstractmethod
    def opaque_index(self, spec: ScanSpec) -> str:
        """``#define JS_OPAQUE_I64(x)``: the compiler forgets what it knows of ``x``, so that
        a bounds check of an index is made on the value the code computed. A transform's
        index may overflow a signed type (undefined in C): a compiler that assumes it does
        not can fold the check away."""

    def literal(self, value: np.generic, dtype: DType, ctype: str = "js_val") -> str:
        """A C literal of type ``ctype`` for a NumPy scalar."""
        if dtype.is_float:
            v = float(value)
            if math.isnan(v):
                return f"(({ctype})NAN)"
            if math.isinf(v):
                return f"(({ctype})INFINITY)" if v > 0 else f"(({ctype})-INFINITY)"
            return f"(({ctype}){v.hex()}{'f' if dtype.itemsize == 4 else ''})"
        bits = int(value) & ((1 << (8 * dtype.itemsize)) - 1)
        return f"(({ctype}){hex(bits)}{self.u64_suffix})"

    def shuffles(self, spec: ScanSpec) -> str:
        """JS_SHFL_UP / JS_SHFL_IDX on T, from the dialect's value and u32 shuffles."""
        if not spec.shuffle:
            return ""
        head = self.field_shuffles(spec) if spec.record else ""
        if not spec.segmented:
            return head + (
                "#define JS_SHFL_UP(x, d) JS_SHFL_UP_V(x, d)\n#define JS_SHFL_IDX(x, s) JS_SHFL_IDX_V(x, s)\n"
            )
        return (
            head
            + """JS_DEVICE_FN T js_shfl_up_pair(T x, js_u32 d)
{
    return js_pair(JS_SHFL_UP_U32(x.h, d), JS_SHFL_UP_V(x.v, d));
}
JS_DEVICE_FN T js_shfl_idx_pair(T x, js_u32 s)
{
    return js_pair(JS_SHFL_IDX_U32(x.h, s), JS_SHFL_IDX_V(x.v, s));
}
#define JS_SHFL_UP(x, d) js_shfl_up_pair(x, d)
#define JS_SHFL_IDX(x, s) js_shfl_idx_pair(x, s)
"""
        )

    def vector_load(self, macro: str, dtype: DType, width: int, cast: str = "") -> str:
        """``macro(dst, ptr, vi)``: vector ``vi`` of ``dtype`` through the element pointer
        ``ptr``, its items into ``dst[0 .. width)``, each through ``cast``."""
        if width == 1:
            return f"#define {macro}(dst, ptr, vi) ((dst)[0] = {cast}(ptr)[vi])"
        vec = self.vector_type(dtype, width)
        items = " ".join(f"(dst)[{i}] = {cast}_v.{c};" for i, c in enumerate(self.components[:width]))
        return f"#define {macro}(dst, ptr, vi) do {{ {vec} _v = {self.vector_at(vec)}; {items} }} while (0)"

    def load_input(self, spec: ScanSpec) -> str:
        """JS_VLOAD_IN: JS_VLOAD of the input's type, each item converted to js_val."""
        if spec.input_info is spec.dtype_info:
            return "#define JS_VLOAD_IN JS_VLOAD"
        return self.vector_load("JS_VLOAD_IN", spec.input_info, spec.vector_width, "(js_val)")

    @abstractmethod
    def vector_type(self, dtype: DType, width: int) -> str:
        """The C name of a vector of ``width`` elements of ``dtype``."""

    @abstractmethod
    def vector_at(self, vec: str) -> str:
        """Vector ``vi`` of type ``vec`` read through the element pointer ``ptr``."""

    @abstractmethod
    def prelude(self, spec: ScanSpec) -> str:
        """Target text before the common defines: types, qualifiers, ids, atomics, vectors."""

    def epilogue(self, spec: ScanSpec) -> str:
        """Target text that needs T and js_bits (placed after the common defines)."""
        return ""

    def clock(self, spec: ScanSpec) -> list[str]:
        """JS_HAVE_CLOCK, and JS_CLOCK() reading the spec's clock (a js_u64 of ticks)."""
        if not spec.clock:
            return ["#define JS_HAVE_CLOCK 0"]
        read = {
            # nanoseconds, the same on every SM (PTX ISA: a 64-bit global timer)
            "globaltimer": "js_clock_ptx()",
            # the host CPU's invariant time-stamp counter: a CPU device runs on the host
            "tsc": "__builtin_readcyclecounter()",
            # HIP's constant-rate counter on AMD GPUs (ROCm: hipDeviceAttributeWallClockRate)
            "wall_clock64": "wall_clock64()",
        }[spec.clock]
        lines = ["#define JS_HAVE_CLOCK 1", f"#define JS_CLOCK() ((js_u64){read})"]
        if spec.clock == "globaltimer":
            lines += [
                "JS_DEVICE_FN js_u64 js_clock_ptx(void)",
                "{",
                "    js_u64 t;",
                '    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));',
                "    return t;",
                "}",
            ]
        return lines

    def common(self, spec: ScanSpec) -> str:
        """Defines shared by every dialect: geometry, knobs, type, identity, operator."""
        dt = spec.dtype_info
        packed = spec.tile_state == "packed"
        unroll = '_Pragma("unroll")' if spec.unrolled else ""
        lines = [
            f"#define JS_T {spec.threads}",
            f"#define JS_P {spec.vectors}",
            f"#define JS_V {spec.vector_width}",
            f"#define JS_SG {spec.subgroup}",
            f"#define JS_HAS_SHUFFLE {int(spec.shuffle)}",
            *(f"#define JS_KIND_{kind.upper()} {code}" for kind, code in KIND_CODES.items()),
            "/* or'ed into a chained launch's kind: a scan from a carry, stores around the cache, the"
            " carry in the arguments */",
            f"#define JS_CARRY_BIT {KIND_CARRY}u",
            f"#define JS_STREAM_BIT {KIND_STREAM}u",
            f"#define JS_CARRY_ARGS_BIT {KIND_CARRY_ARGS}u",
            f"#define JS_LB_W {spec.lookback_width}",
            f"#define JS_STATS {int(spec.stats)}",
            f"#define JS_ROW_TILES {int(spec.row_tiles)}",
            f"#define JS_SEG_STAGE {int(spec.stages_tile)}",
            f"#define JS_SEARCH_SEGMENTS {int(spec.searches_segments)}",
            f"#define JS_LANE_TOTALS {int(spec.lane_totals)}",
            f"#define JS_DETERMINISTIC {int(spec.deterministic)}",
            f"#define JS_PARK {spec.parked_vectors}",
            f"#define JS_OUTPUTS_FIRST {int(spec.outputs_first)}",
            f"#define JS_POSITIVE_ZERO {int(spec.positive_zero)}",
            f"#define JS_SERIAL {int(spec.one_pass_tiles)}",
            f"#define JS_SEG_STORE_PASS {int(spec.seg_store_pass)}",
            f"#define JS_ROWS_IN_SMEM {int(spec.rows_in_smem)}",
            *self.clock(spec),
            # the loops over a thread's vectors: unrolled where the tile lives in
            # registers (GPUs), kept as loops where it lives in memory (CPUs: a long
            # unrolled tile only slows the compile); items are always unrolled
            f"#define JS_UNROLL {unroll}",
            f"typedef {'js_u64' if packed else 'js_u32'} js_sw;",
            f"#define JS_FLAG_SHIFT {32 if packed else 16}",
            f"#define JS_PART_BITS {32 if packed else 16}",
            f"#define JS_NPARTS {tile_state.of_spec(spec).parts}",
            *tile_state.defines(),
            *(self.record_types(spec) if spec.record else self.scalar_types(spec)),
            *self.io(spec),
            "/* a complex64 held in 64 bits, real part low (NumPy's layout): for user ops too */",
            "#define JS_C64_RE(x) JS_F32_FROM_BITS((js_u32)(x))",
            "#define JS_C64_IM(x) JS_F32_FROM_BITS((js_u32)((x) >> 32))",
            "#define JS_C64(re, im) (((js_u64)JS_F32_TO_BITS(im) << 32) | (js_u64)JS_F32_TO_BITS(re))",
            "",
            f"/* op {spec.monoid.name}: its first argument combines the earlier elements */",
            spec.monoid.c_function(dt.fields if spec.record else dt),
            *ptx.scan_step(spec),  # NVIDIA's: PTX's shuffles are its dialects' only ones
            *self.lanes(spec),
        ]
        if spec.segmented:
            lines += [
                "",
                "/* segmented: scan (head, value) pairs with the lifted operator */",
                "#define JS_SEGMENTED 1",
                "typedef struct { js_val v; js_u32 h; } T;",
                # a thread's head bits: one word, or words where a thread holds more than
                # 64 items (CPUs' one-thread tiles); segments.h reads them
                f"#define JS_HEAD_WORDS {spec.head_words}",
                "typedef js_u64 js_heads;"
                if spec.head_words == 1
                else "typedef struct { js_u64 w[JS_HEAD_WORDS]; } js_heads;",
                *_segment_params(spec.segmented, ARRAY_CTYPES.get(spec.head_keys, "")),
                "JS_DEVICE_FN T js_pair(js_u32 h, js_val v) { T r; r.v = v; r.h = h; return r; }",
                "#define JS_IDENTITY js_pair(0u, JS_VIDENTITY)",
                "/* a head in b cuts off everything before it */",
                "JS_DEVICE_FN T js_op(T a, T b) { return js_pair(a.h | b.h, b.h ? b.v : js_vop(a.v, b.v)); }",
                "#define JS_VALUE_OF(x) ((x).v)",
                "#define JS_PREFIX_DONE(p) ((p).h)",
                "#define JS_STATE_BITS(x) JS_TO_BITS((x).v)",
                "#define JS_STATE_EXTRA(x) ((x).h)",
                "#define JS_STATE_MAKE(b, e) js_pair((e), JS_FROM_BITS(b))",
            ]
            if spec.element_bytes * spec.vector_width == 32 and not spec.record:
                lines += [
                    "/* the spine of rts holds pairs: a vector of JS_V pairs is 32 bytes, moved as two",
                    "   16-byte words (pair by pair, one SM's spine scan was bound by its L1). Words go",
                    "   through a union of plain u32 (HIP's uint4 may not sit in a union). */",
                    "typedef char js_pair_vector_is_32_bytes[sizeof(T) * JS_V == 32 ? 1 : -1];",
                    "typedef union { js_u32 w[8]; T t[JS_V]; } js_pair_words;",
                    "#define JS_VLOAD_T(dst, ptr, vi) do { js_pair_words _w; "
                    "for (js_u32 _k = 0; _k < 2; ++_k) { "
                    "uint4 _q = ((JS_GLOBAL const uint4*)(ptr))[2 * (vi) + _k]; "
                    "_w.w[4 * _k] = _q.x; _w.w[4 * _k + 1] = _q.y; "
                    "_w.w[4 * _k + 2] = _q.z; _w.w[4 * _k + 3] = _q.w; } "
                    "for (js_u32 _e = 0; _e < JS_V; ++_e) (dst)[_e] = _w.t[_e]; } while (0)",
                    "#define JS_VSTORE_T(src, ptr, vi) do { js_pair_words _w; "
                    "for (js_u32 _e = 0; _e < JS_V; ++_e) _w.t[_e] = (src)[_e]; "
                    "for (js_u32 _k = 0; _k < 2; ++_k) { uint4 _q; "
                    "_q.x = _w.w[4 * _k]; _q.y = _w.w[4 * _k + 1]; "
                    "_q.z = _w.w[4 * _k + 2]; _q.w = _w.w[4 * _k + 3]; "
                    "((JS_GLOBAL uint4*)(ptr))[2 * (vi) + _k] = _q; } } while (0)",
                ]
            else:  # other vector widths (a knob): pair by pair
                lines += [
                    "#define JS_VLOAD_T(dst, ptr, vi) do { for (js_u32 _e = 0; _e < JS_V; ++_e) "
                    "(dst)[_e] = (ptr)[(vi) * JS_V + _e]; } while (0)",
                    "#define JS_VSTORE_T(src, ptr, vi) do { for (js_u32 _e = 0; _e < JS_V; ++_e) "
                    "(ptr)[(vi) * JS_V + _e] = (src)[_e]; } while (0)",
                ]
        else:
            lines += [
                "#define JS_SEGMENTED 0",
                "#define JS_SEG_OFFSETS 0",
                "#define JS_SEG_LOAD_PARAMS",
                "#define JS_SEG_LOAD_ARGS",
                "#define JS_SEG_LOAD_FWD",
                "typedef js_val T;",
                "typedef js_u32 js_heads;",
                "#define JS_SEG_PARAMS",
                "#define JS_SEG_ARGS",
                "#define JS_IDENTITY JS_VIDENTITY",
                "#define js_op js_vop",
                "#define JS_VALUE_OF(x) (x)",
                "#define JS_PREFIX_DONE(p) 0",
                "#define JS_STATE_BITS(x) JS_TO_BITS(x)",
                "#define JS_STATE_EXTRA(x) 0u",
                "#define JS_STATE_MAKE(b, e) JS_FROM_BITS(b)",
                "#define JS_VLOAD_T JS_VLOAD",
                "#define JS_VSTORE_T JS_VSTORE",
            ]
        lines += ["", *storage.defines(spec)]
        return "\n".join(lines) + "\n"

    def lanes(self, spec: ScanSpec) -> list[str]:
        """JS_LANES, and where it is 1 the vector type ``js_vec`` of a tile's vector and its
        moves and shifts (``ScanSpec.lanes``); a dialect without vector types says 0."""
        return ["#define JS_LANES 0"]

    @abstractmethod
    def vector_store(self, macro: str, dtype: DType, width: int) -> str:
        """``macro(src, ptr, vi)``: ``src[0 .. width)`` stored as vector ``vi`` of ``ptr``."""


class OpenCLDialect(Dialect):
    def opaque_index(self, spec: ScanSpec) -> str:
        # NVIDIA's OpenCL (the only one with shuffles here) compiles inline PTX; a CPU's
        # clang takes a register operand; elsewhere a volatile copy does it, at a memory
        # round trip
        if spec.shuffle:
            return '#define JS_OPAQUE_I64(x) asm volatile("" : "+l"(x))'
        return "\n".join(
            [
                "#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__arm__)",
                '#define JS_OPAQUE_I64(x) __asm__ volatile("" : "+r"(x))',
                "#else",
                "#define JS_OPAQUE_I64(x) do { volatile js_i64 js_o = (x); (x) = js_o; } while (0)",
                "#endif",
            ]
        )

    """OpenCL C 1.2 (plus the 64-bit atomics extensions for the packed encoding).

    OpenCL C 1.2 has no portable subgroup shuffles, so the workgroup is one
    subgroup and rows are scanned in local memory.
    """

    name = "opencl"
    u64_suffix = "UL"
    components = _COMPONENTS_CL

    def ctype(self, dtype: DType) -> str:
        return dtype.opencl

    def vector_type(self, dtype: DType, width: int) -> str:
        # wider than the 16 bytes the host aligns arrays to (CPU lanes, ScanSpec.lanes):
        # a name that promises only those 16 (vector_aliases), so that the compiler moves
        # it with unaligned accesses
        if width * dtype.itemsize > VECTOR_BYTES:
            return f"js_{dtype.opencl}{width}_a16"
        return f"{dtype.opencl}{width}"

    def vector_aliases(self, spec: ScanSpec) -> str:
        """The typedefs of vector_type's names for vectors wider than VECTOR_BYTES."""
        v = spec.vector_width
        lines = []
        for d in dict.fromkeys((spec.dtype_info, spec.input_info)):
            if not spec.record and v * d.itemsize > VECTOR_BYTES:
                aligned = f"__attribute__((aligned({VECTOR_BYTES})))"
                lines.append(f"typedef {d.opencl}{v} {self.vector_type(d, v)} {aligned};")
        return "\n".join(lines)

    def vector_at(self, vec: str) -> str:
        # a vector pointer, not vload/vstore: those only promise element alignment, so
        # NVIDIA's compiler splits them into scalar accesses. The host passes 16-byte
        # aligned arrays only (OpenCLBackend.contiguous / aligned).
        return f"((__global const {vec}*)(ptr))[vi]"

    def vector_store(self, macro: str, dtype: DType, width: int) -> str:
        if width == 1:
            return f"#define {macro}(src, ptr, vi) ((ptr)[vi] = (src)[0])"
        # a vector pointer, as for the loads (vector_at)
        packs = ", ".join(f"(src)[{i}]" for i in range(width))
        vec = self.vector_type(dtype, width)
        return f"#define {macro}(src, ptr, vi) (((__global {vec}*)(ptr))[vi] = ({vec})({packs}))"

    def lanes(self, spec: ScanSpec) -> list[str]:
        if not spec.lanes:
            return super().lanes(spec)
        return lanes.opencl_lines(spec, self.vector_type)

    def shuffle_field(self, macro: str, d: DType, x: str) -> str:
        fn = "js_shfl_up_u32" if macro == "JS_SHFL_UP_FIELD" else "js_shfl_idx_u32"
        if d.itemsize == 4:
            return self.from_u32(d, f"{fn}({self.to_u32(d, x)}, d)")
        u = self.to_u64(d, x)
        return self.from_u64(d, f"(((js_u64){fn}((uint)({u} >> 32), d) << 32) | {fn}((uint)({u}), d))")

    def prelude(self, spec: ScanSpec) -> str:
        dt = spec.dtype_info
        v = spec.vector_width
        head = ["#pragma OPENCL FP_CONTRACT OFF"]
        if dt.has_f64:
            head.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
        if spec.tile_state == "packed" and spec.chained:
            head.append("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable")
            head.append("#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable")
        if spec.record:
            moves, bits = self.element_moves(), ""
        else:
            moves = self.vector_load("JS_VLOAD", dt, v) + "\n" + self.vector_store("JS_VSTORE", dt, v)
            u = "uint" if dt.itemsize == 4 else "ulong"
            bits = f"#define JS_TO_BITS(x) as_{u}(x)\n#define JS_FROM_BITS(b) as_{dt.opencl}(b)"
        vload_u8 = self.vector_load("JS_VLOAD_U8", INPUTS["uint8"], v)
        sw_max = (
            "atom_max((volatile __global ulong*)(p), (v))"
            if spec.tile_state == "packed"
            else "atomic_max((volatile __global uint*)(p), (v))"
        )
        sw_load = (
            "atom_or((volatile __global ulong*)(p), 0UL)"
            if spec.tile_state == "packed"
            else "atomic_or((volatile __global uint*)(p), 0u)"
        )
        if spec.shuffle:
            lanes = "#define JS_LANE (JS_LID % JS_SG)\n#define JS_SG_ID (JS_LID / JS_SG)"
        else:
            lanes = "#define JS_LANE JS_LID\n#define JS_SG_ID 0u"
        body = f"""
typedef uchar js_u8;
typedef uint js_u32;
typedef ulong js_u64;
typedef long js_i64;
typedef ulong js_size;
#define JS_KERNEL __kernel __attribute__((reqd_work_group_size({spec.threads}, 1, 1)))
#define JS_KERNEL_SINGLE JS_KERNEL
#define JS_GLOBAL __global
#define JS_LOCAL_DECL __local
#define JS_LOCAL_PTR __local
#define JS_PRIVATE __private
#define JS_DEVICE_FN static inline
#define JS_LID ((js_u32)get_local_id(0))
#define JS_GROUP_ID ((js_u32)get_group_id(0))
#define JS_GROUPS ((js_u32)get_num_groups(0))
{lanes}
#define JS_ONE_SCAN_SITE {int(not spec.shuffle)}
/* orders local memory only: workgroups talk through atomics, never through barriers */
#define JS_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define JS_ATOMIC_ADD_U32(p, v) atomic_add((volatile __global uint*)(p), (v))
#define JS_ATOMIC_XCHG_U32(p, v) atomic_xchg((volatile __global uint*)(p), (v))
#define JS_ATOMIC_MAX_U32(p, v) atomic_max((volatile __global uint*)(p), (v))
#define JS_ATOMIC_MAX_SW(p, v) {sw_max}
#define JS_ATOMIC_OR_LOCAL(p, v) atomic_or((volatile __local uint*)(p), (v))
#define JS_ATOMIC_ADD_LOCAL(p, v) atomic_add((volatile __local uint*)(p), (v))
/* OpenCL C 1.2 has no atomic load, and a plain (even volatile) load of a word that
   other workgroups update with atomics is a data race in its memory model (Oclgrind
   reports it): words written by atomics are read by an atomic that changes nothing */
#define JS_LOAD_U32(p) atomic_or((volatile __global uint*)(p), 0u)
#define JS_LOAD_SW(p) {sw_load}
{bits}
#define JS_F32_TO_BITS(x) as_uint(x)
#define JS_F32_FROM_BITS(b) as_float(b)
#define JS_F64_TO_BITS(x) as_ulong(x)
#define JS_F64_FROM_BITS(b) as_double(b)
#define JS_SPIN_PAUSE() ((void)0)
{self.vector_aliases(spec)}
{moves}
{vload_u8}
{self.load_input(spec)}
"""
        return "\n".join(head) + body

    def epilogue(self, spec: ScanSpec) -> str:
        if not spec.shuffle:
            return ""
        # NVIDIA's OpenCL has no subgroup shuffles, but it compiles inline PTX.
        # 64-bit values travel as two 32-bit halves; tuples field by field (field_shuffles)
        wide = spec.dtype_info.itemsize == 8
        up = "js_shfl_up_u32(v, d)"
        idx = "js_shfl_idx_u32(v, s)"
        if wide:
            up = "((js_bits)js_shfl_up_u32((uint)(v >> 32), d) << 32) | js_shfl_up_u32((uint)v, d)"
            idx = "((js_bits)js_shfl_idx_u32((uint)(v >> 32), s) << 32) | js_shfl_idx_u32((uint)v, s)"
        return """
static inline uint js_shfl_up_u32(uint v, uint d)
{
    uint r;
    asm volatile("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;" : "=r"(r) : "r"(v), "r"(d));
    return r;
}
static inline uint js_shfl_idx_u32(uint v, uint s)
{
    uint r;
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, 31, 0xffffffff;" : "=r"(r) : "r"(v), "r"(s));
    return r;
}
#define JS_SHFL_UP_U32(x, d) js_shfl_up_u32((x), (d))
#define JS_SHFL_IDX_U32(x, s) js_shfl_idx_u32((x), (s))
#define JS_SUBGROUP_SYNC() asm volatile("bar.warp.sync 0xffffffff;" ::: "memory")
""" + (
            ""
            if spec.record
            else f"""
static inline js_bits js_shfl_up_bits(js_bits v, uint d) {{ return {up}; }}
static inline js_bits js_shfl_idx_bits(js_bits v, uint s) {{ return {idx}; }}
#define JS_SHFL_UP_V(x, d) JS_FROM_BITS(js_shfl_up_bits(JS_TO_BITS(x), (d)))
#define JS_SHFL_IDX_V(x, s) JS_FROM_BITS(js_shfl_idx_bits(JS_TO_BITS(x), (s)))
"""
        )


class CUDADialect(Dialect):
    def opaque_index(self, spec: ScanSpec) -> str:
        # the same text is HIP: a VGPR operand on AMD, a 64-bit PTX register on NVIDIA
        return "\n".join(
            [
                "#if defined(__HIP_DEVICE_COMPILE__) || defined(__AMDGCN__)",
                '#define JS_OPAQUE_I64(x) asm volatile("" : "+v"(x))',
                "#else",
                '#define JS_OPAQUE_I64(x) asm volatile("" : "+l"(x))',
                "#endif",
            ]
        )

    """CUDA C++ for NVRTC; the same text compiles as HIP for ROCm (hipRTC).

    The subgroup is the warp (wavefront), its size read from the device and baked
    in as JS_SG; shuffles go through the intrinsics both toolchains provide. A program
    compiled for a target whose subgroup is another width stops the compile (epilogue).
    """

    def epilogue(self, spec: ScanSpec) -> str:
        # a scan rendered for another width would compile and give wrong results: the
        # compiler's own width decides (HIP: the target's wavefront; CUDA: the warp is 32)
        sg = spec.subgroup
        fix = "render it for this device (jitscan.source(..., device=TARGET))"
        hip = f"this program was rendered for subgroups of {sg} lanes, but this target's wavefront is not"
        cuda = f"this program was rendered for subgroups of {sg} lanes, but CUDA's warps are 32 lanes"
        return (
            "#if defined(__HIP_DEVICE_COMPILE__)\n"
            "#if __AMDGCN_WAVEFRONT_SIZE != JS_SG\n"
            f'#error "jitscan: {hip} {sg} lanes wide: {fix}"\n'
            "#endif\n"
            "#elif defined(__CUDA_ARCH__)\n"
            "#if JS_SG != 32\n"
            f'#error "jitscan: {cuda} wide: {fix}"\n'
            "#endif\n"
            "#endif\n"
        )

    name = "cuda"
    u64_suffix = "ULL"
    components = _COMPONENTS_CUDA

    #: CUDA's vector types by element type (char4 holds signed chars)
    _VECTORS = {
        "bool": "uchar",
        "int8": "char",
        "uint8": "uchar",
        "int16": "short",
        "uint16": "ushort",
        "int32": "int",
        "uint32": "uint",
        "float32": "float",
        "int64": "longlong",
        "uint64": "ulonglong",
        "float64": "double",
    }

    def ctype(self, dtype: DType) -> str:
        return dtype.cuda

    def vector_type(self, dtype: DType, width: int) -> str:
        return f"{self._VECTORS[dtype.name]}{width}"

    def vector_at(self, vec: str) -> str:
        return f"reinterpret_cast<const {vec}*>(ptr)[vi]"

    def vector_store(self, macro: str, dtype: DType, width: int) -> str:
        if width == 1:
            return f"#define {macro}(src, ptr, vi) ((ptr)[vi] = (src)[0])"
        vt = self.vector_type(dtype, width)
        stores = " ".join(f"_v.{c} = (src)[{i}];" for i, c in enumerate(self.components[:width]))
        store = f"reinterpret_cast<{vt}*>(ptr)[vi] = _v;"
        return f"#define {macro}(src, ptr, vi) do {{ {vt} _v; {stores} {store} }} while (0)"

    def prelude(self, spec: ScanSpec) -> str:
        dt = spec.dtype_info
        v = spec.vector_width
        if v * dt.vector_itemsize > VECTOR_BYTES and not spec.record:
            raise ValueError(
                f"vector_width={v} of {dt.name} is {v * dt.vector_itemsize} bytes; CUDA's vectors hold at "
                f"most {VECTOR_BYTES} (wider ones are for a CPU's one-thread tiles, on OpenCL)"
            )
        vload_u8 = self.vector_load("JS_VLOAD_U8", INPUTS["uint8"], v)
        if spec.record:
            moves, bits = self.element_moves(), ""
        else:
            moves = self.vector_load("JS_VLOAD", dt, v) + "\n" + self.vector_store("JS_VSTORE", dt, v)
            to_bits, from_bits = {
                "int32": ("(js_u32)(x)", "(int)(b)"),
                "uint32": ("(js_u32)(x)", "(unsigned int)(b)"),
                "int64": ("(js_u64)(x)", "(long long)(b)"),
                "uint64": ("(js_u64)(x)", "(unsigned long long)(b)"),
                "float32": ("__float_as_uint(x)", "__uint_as_float(b)"),
                "float64": ("(js_u64)__double_as_longlong(x)", "__longlong_as_double((long long)(b))"),
            }[dt.name]
            bits = f"#define JS_TO_BITS(x) {to_bits}\n#define JS_FROM_BITS(b) {from_bits}"
        launch_bounds = f"{spec.threads}, {spec.min_blocks}" if spec.min_blocks else f"{spec.threads}"
        return f"""typedef unsigned char js_u8;
typedef unsigned int js_u32;
typedef unsigned long long js_u64;
typedef long long js_i64;
typedef unsigned long long js_size;
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#define JS_KERNEL extern "C" __global__ __launch_bounds__({launch_bounds})
#define JS_KERNEL_SINGLE extern "C" __global__ __launch_bounds__({spec.threads}, 1)
#define JS_GLOBAL
#define JS_LOCAL_DECL __shared__
#define JS_LOCAL_PTR
#define JS_PRIVATE
#define JS_DEVICE_FN static __device__ __forceinline__
#define JS_F32_TO_BITS(x) __float_as_uint(x)
#define JS_F32_FROM_BITS(b) __uint_as_float(b)
#define JS_F64_TO_BITS(x) ((js_u64)__double_as_longlong(x))
#define JS_F64_FROM_BITS(b) __longlong_as_double((long long)(b))
#define JS_LID ((js_u32)threadIdx.x)
#define JS_GROUP_ID ((js_u32)blockIdx.x)
#define JS_GROUPS ((js_u32)gridDim.x)
#define JS_LANE (JS_LID % JS_SG)
#define JS_SG_ID (JS_LID / JS_SG)
#define JS_ONE_SCAN_SITE 0
#define JS_BARRIER() __syncthreads()
#define JS_ATOMIC_ADD_U32(p, v) atomicAdd((js_u32*)(p), (js_u32)(v))
#define JS_ATOMIC_XCHG_U32(p, v) atomicExch((js_u32*)(p), (js_u32)(v))
#define JS_ATOMIC_MAX_U32(p, v) atomicMax((js_u32*)(p), (js_u32)(v))
#define JS_ATOMIC_MAX_SW(p, v) atomicMax((js_sw*)(p), (js_sw)(v))
#define JS_ATOMIC_OR_LOCAL(p, v) atomicOr((js_u32*)(p), (js_u32)(v))
#define JS_ATOMIC_ADD_LOCAL(p, v) atomicAdd((js_u32*)(p), (js_u32)(v))
/* volatile loads are not cached in L1: the relaxed load look-back needs */
#define JS_LOAD_U32(p) (*(volatile js_u32*)(p))
#define JS_LOAD_SW(p) (*(volatile js_sw*)(p))
{bits}
/* the shuffle intrinsics take every scalar type: values, head words, tuple fields */
#define JS_SHFL_UP_V JS_SHFL_UP_FIELD
#define JS_SHFL_IDX_V JS_SHFL_IDX_FIELD
#define JS_SHFL_UP_U32 JS_SHFL_UP_FIELD
#define JS_SHFL_IDX_U32 JS_SHFL_IDX_FIELD
#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC_RTC__)
#define JS_SHFL_UP_FIELD(x, d) __shfl_up((x), (d), JS_SG)
#define JS_SHFL_IDX_FIELD(x, s) __shfl((x), (s), JS_SG)
/* the wave barrier alone orders no memory for the compiler: fences around it do, for the
   subgroup's exchanges through local memory (lookback.h, scan.h's js_scan_rows_smem) */
#define JS_SUBGROUP_SYNC() \
    (__builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront"), __builtin_amdgcn_wave_barrier(), \
     __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront"))
#define JS_SPIN_PAUSE() __builtin_amdgcn_s_sleep(1)
#else
#define JS_SHFL_UP_FIELD(x, d) __shfl_up_sync(0xffffffffu, (x), (d))
#define JS_SHFL_IDX_FIELD(x, s) __shfl_sync(0xffffffffu, (x), (s))
#define JS_SUBGROUP_SYNC() __syncwarp()
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
#define JS_SPIN_PAUSE() __nanosleep(32)
#else
#define JS_SPIN_PAUSE() ((void)0)
#endif
#endif
{moves}
{vload_u8}
{self.load_input(spec)}
"""


DIALECTS: dict[str, Dialect] = {"opencl": OpenCLDialect(), "cuda": CUDADialect()}
