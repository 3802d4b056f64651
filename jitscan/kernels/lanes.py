"""The lanes of a CPU's one-thread tiles in OpenCL C (``ScanSpec.lanes``, ``JS_LANES``).

A one-thread tile of a built-in operator holds each vector as the lanes of an OpenCL vector
type, ``js_vec`` (``src/lanes.h``). This module writes what the tile functions take of it:
the type, its moves, a lane-wise condition on head bits, and the steps of a vector's own
inclusive scan, each a shuffle of the vector's lanes (``scan_steps``).
"""

from __future__ import annotations

from collections.abc import Callable

from ..dtypes import VECTOR_BYTES, DType
from .spec import ScanSpec

#: a vector lane's name in OpenCL C: s and its hex digit
LANE_DIGITS = "0123456789abcdef"
#: the lengths a swizzle of OpenCL C may have
_SWIZZLES = (16, 8, 4, 3, 2, 1)


def scan_steps(v: int, chunk: int) -> list[list[tuple[str, int]]]:
    """The shifted combines of a vector's inclusive scan (Hillis-Steele), as the lane each
    lane combines with: ``("x", j)``, lane j of the vector, or ``("f", i)``, lane i of a
    filler (the identity), where no lane before it reaches.

    Within each run of ``chunk`` lanes (16 bytes) the lanes move up by 1, 2, 4, ...: on x86
    and ARM a shift of a 16-byte register, one instruction. The runs are then joined the
    same way, each lane combining with the last lane of the run d runs back, for d = 1, 2,
    ...: a broadcast of a lane. A vector of one run (16 bytes or less) is plain
    Hillis-Steele. Shifts of a whole wider vector compiled to instructions that are slow on
    AMD's Zen 5 (vpexpand, with PoCL 3.1's LLVM 15: 8 lanes of int32 scanned at a sixth of
    the speed of these). Each step combines a lane with the combination of the items just
    before its own, so the masked steps of a segmented scan (lanes.h, js_lanes_scan) hold.
    """
    steps = []
    d = 1
    while d < min(chunk, v):
        steps.append([("f", i) if i % chunk < d else ("x", i - d) for i in range(v)])
        d *= 2
    d = 1
    while d * chunk < v:
        steps.append(
            [("f", i) if i // chunk < d else ("x", (i // chunk - d) * chunk + chunk - 1) for i in range(v)]
        )
        d *= 2
    return steps


def lane_picks(name: str, picks: list[tuple[str, int]]) -> list[str]:
    """``#define name(t, x, f)``: a vector of type ``t`` whose lane i is ``picks[i]``, lane j
    of ``x`` or of ``f``: one shuffle where the compiler is clang, else a vector literal."""
    v = len(picks)
    index = ", ".join(str(j if src == "x" else v + j) for src, j in picks)
    return [
        "#if JS_VEC_SHUFFLES",
        f"#define {name}(t, x, f) __builtin_shufflevector((t)(x), (t)(f), {index})",
        "#else",
        f"#define {name}(t, x, f) {literal_picks(picks)}",
        "#endif",
    ]


def literal_picks(picks: list[tuple[str, int]]) -> str:
    """``lane_picks`` as a vector literal of type ``t``, in swizzles of the lengths
    OpenCL C allows."""
    parts = []
    i = 0
    while i < len(picks):
        run = 1
        while i + run < len(picks) and picks[i + run][0] == picks[i][0]:
            run += 1
        size = next(s for s in _SWIZZLES if s <= run)
        parts.append(f"({picks[i][0]}).s{''.join(LANE_DIGITS[j] for _, j in picks[i : i + size])}")
        i += size
    return f"((t)({', '.join(parts)}))"


def opencl_lines(spec: ScanSpec, vector_type: Callable[[DType, int], str]) -> list[str]:
    """The lines that define ``js_vec`` and its moves and scan steps for ``spec``, whose
    vector types ``vector_type`` names (``OpenCLDialect.vector_type``)."""
    v = spec.vector_width
    vec = vector_type(spec.dtype_info, v)
    src = vector_type(spec.input_info, v)
    load = f"(((__global const {src}*)(ptr))[vi])"
    if spec.input_info is not spec.dtype_info:  # C's conversions, as JS_SRC_ITEM's cast
        load = f"convert_{spec.dtype_info.opencl}{v}({load})"
    to = " ".join(f"(a)[{e}] = (x).s{LANE_DIGITS[e]};" for e in range(v))
    bits = ", ".join(str(1 << e) for e in range(v))
    mask = f"{'int' if spec.dtype_info.itemsize == 4 else 'long'}{v}"  # integers of the lanes' width
    combine = spec.monoid.expression
    steps = scan_steps(v, max(1, VECTOR_BYTES // spec.dtype_info.itemsize))
    assert len(steps) <= 4, "lanes.h's js_lanes_scan takes up to four steps"
    lines = [
        "/* one-thread tiles hold each vector as the lanes of js_vec (lanes.h) */",
        "#define JS_LANES 1",
        # the lanes' moves as clang's shuffles where it is the compiler: PoCL 3.1's
        # LLVM 15 lowered vector literals of the same lanes to two instructions where
        # one does
        "#ifndef JS_VEC_SHUFFLES",
        "#if defined(__has_builtin)",
        "#if __has_builtin(__builtin_shufflevector)",
        "#define JS_VEC_SHUFFLES 1",
        "#endif",
        "#endif",
        "#endif",
        "#ifndef JS_VEC_SHUFFLES",
        "#define JS_VEC_SHUFFLES 0",
        "#endif",
        f"typedef {vec} js_vec;",
        f"typedef {mask} js_vmask;  /* a lane-wise condition: -1 or 0 */",
        f"#define JS_VEC_HEADS(b) (((js_vmask)(b) & (js_vmask)({bits})) != (js_vmask)(0))",
        f"#define JS_VEC_LOAD(ptr, vi) {load}",
        f"#define JS_VEC_STORE(x, ptr, vi) (((__global {vec}*)(ptr))[vi] = (x))",
        "#define JS_VEC_SPLAT(s) ((js_vec)(s))",
        f"#define JS_VEC_OF(a) ((js_vec)({', '.join(f'(a)[{e}]' for e in range(v))}))",
        f"#define JS_VEC_TO(a, x) do {{ {to} }} while (0)",
        f"#define JS_VEC_LAST(x) ((x).s{LANE_DIGITS[v - 1]})",
        f"#define JS_VEC_STEPS {len(steps)}",
    ]
    # the lanes moved up by one, the first taken from f (an exclusive scan's shift)
    lines += lane_picks("JS_VEC_UP1", [("f", 0)] + [("x", e) for e in range(v - 1)])
    for k, step in enumerate(steps):
        lines += lane_picks(f"JS_VEC_STEP{k}", step)
    # the built-in operators' expressions hold for vectors too, lane by lane
    lines.append(f"JS_DEVICE_FN js_vec js_vec_op(js_vec a, js_vec b) {{ return ({combine}); }}")
    return lines
