"""PTX that NVIDIA's dialects add: a subgroup scan's step as one predicated instruction.

A step of an inclusive subgroup scan (``js_scan_step`` in ``src/scan.h``) combines a lane's
value with the one shuffled up from ``d`` lanes below, where there is one. Written in C
that is the op and a select (two selects for a 64-bit value, whose op may be two
instructions too); the shuffle's own predicate, whether the source lane exists, can guard
the op instead. For the built-in operators on integers, one PTX instruction each, the step
is then the shuffles and that instruction: a tile's row scans are most of a 64-bit scan's
instructions (experiments/notes/performance-log.md, "A scan step without selects").
"""

from __future__ import annotations

from ..operators.monoid import BUILTIN
from .spec import ScanSpec

#: the PTX instruction of each built-in operator on integers by signedness (``{w}``: its
#: bits), operands in js_op's order, the earlier value first. Floats keep the C step: on
#: the H100 a float64 sum in PTX ran 1.5% faster from 2^24 and 1-1.5% slower at
#: 2^18-2^20 on CUDA, and 1.5% slower at 2^22-2^26 on NVIDIA's OpenCL (float32 even on
#: CUDA); their min and max keep NumPy's NaNs and signed zeros, which PTX's do not
_OPS = {
    "add": {"i": "add.s{w}", "u": "add.u{w}"},
    "mul": {"i": "mul.lo.s{w}", "u": "mul.lo.u{w}"},
    "min": {"i": "min.s{w}", "u": "min.u{w}"},
    "max": {"i": "max.s{w}", "u": "max.u{w}"},
    "and": {"i": "and.b{w}", "u": "and.b{w}"},
    "or": {"i": "or.b{w}", "u": "or.b{w}"},
    "xor": {"i": "xor.b{w}", "u": "xor.b{w}"},
}
#: inline-asm constraint and PTX register type of a value, by its bits
_REGS = {32: ("r", "b32"), 64: ("l", "b64")}


def scan_step(spec: ScanSpec) -> list[str]:
    """The definition of ``JS_PTX_SCAN_STEP`` for ``spec``, or nothing where the portable
    step stays: floats, tuple values, segmented (head, value) pairs, and operators of
    their own. A spec with shuffles is lowered for NVIDIA (CUDA, or its OpenCL, whose
    shuffles are PTX too) or for ROCm by the same CUDA text: the definition is kept from
    hipRTC, which takes no PTX."""
    dt = spec.dtype_info
    if spec.record or spec.segmented or not spec.shuffle or dt.is_float:
        return []
    name = spec.monoid.name
    op = _OPS.get(name, {}).get("i" if dt.is_signed else "u")
    if op is None or BUILTIN.get(name) is not spec.monoid:
        return []
    bits = 8 * dt.itemsize
    constraint, reg = _REGS[bits]
    op = op.format(w=bits)
    if bits == 32:
        body = [
            f'"{{ .reg .pred p; .reg .{reg} t; "',
            '"shfl.sync.up.b32 t|p, %0, %1, 0, 0xffffffff; "',
            f'"@p {op} %0, t, %0; }}"',
        ]
    else:  # a 64-bit value crosses lanes as two 32-bit halves
        body = [
            f'"{{ .reg .pred p; .reg .b32 lo, hi, a, b; .reg .{reg} t; "',
            '"mov.b64 {lo, hi}, %0; "',
            '"shfl.sync.up.b32 a|p, lo, %1, 0, 0xffffffff; "',
            '"shfl.sync.up.b32 b, hi, %1, 0, 0xffffffff; "',
            '"mov.b64 t, {a, b}; "',
            f'"@p {op} %0, t, %0; }}"',
        ]
    # Not volatile, so the compiler may schedule it with the rest (the form measured): it
    # may then move or merge it, which is safe while every caller runs it in a whole,
    # converged subgroup and every lane uses the result (js_scan_step's callers do; CUB
    # writes the same step volatile)
    return [
        "#if !(defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC_RTC__))",
        "/* a subgroup scan's step: the shuffle's predicate (the source lane exists) guards",
        "   the op, which needs no select then (kernels/ptx.py); the whole subgroup calls it */",
        "JS_DEVICE_FN js_val js_ptx_scan_step(js_val s, js_u32 d)",
        "{",
        "    asm(" + "\n        ".join(body) + f'\n        : "+{constraint}"(s) : "r"(d));',
        "    return s;",
        "}",
        "#define JS_PTX_SCAN_STEP(s, d) js_ptx_scan_step((s), (d))",
        "#endif",
    ]
