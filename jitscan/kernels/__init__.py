"""Kernel sources in the portable dialect, and their rendering for a backend."""

from __future__ import annotations

from functools import cache
from importlib import resources

from ..spec import ScanSpec
from .dialect import DIALECTS, Dialect

#: kernel entry points of each variant, in launch order
ENTRY_POINTS = {
    "memcpy": ("js_memcpy",),
    "rts": ("js_rts_reduce", "js_rts_spine", "js_rts_scan"),
    "lookback": ("js_chained",),
    "fallback": ("js_chained",),
}

#: entry points launched as one workgroup: no occupancy bound applies to them, so
#: they are declared with JS_KERNEL_SINGLE and may use every register
SINGLE_WORKGROUP = ("js_rts_spine",)

#: argument kinds of each entry point: a buffer, a 64-bit js_size, a 32-bit js_u32
SIGNATURES = {
    "js_memcpy": ("buf", "size", "buf", "size", "size"),
    "js_rts_reduce": ("buf", "size", "size", "buf"),
    "js_rts_spine": ("buf", "size", "buf", "size", "u32"),
    "js_rts_scan": ("buf", "size", "buf", "size", "size", "buf", "u32"),
    "js_chained": ("buf", "size", "buf", "size", "size", "buf", "u32", "u32", "u32", "u32", "u32"),
}

#: what says where segments start, per segmented mode
SEGMENT_ARGS = {
    "flags": ("buf", "size"),  # head flags (row length 0)
    "rows": ("buf", "size"),  # unused buffer, row length
    "offsets": ("buf", "buf", "size"),  # CSR offsets, each tile's first segment, nseg
}
#: the pre-pass of segmented="offsets": each tile's first segment
SEG_FIRST = "js_seg_first"
SIGNATURES[SEG_FIRST] = ("buf", "size", "size", "buf")
#: segmented="offsets" also checks device offsets where they are
CHECK_OFFSETS = "js_check_offsets"
SIGNATURES[CHECK_OFFSETS] = ("buf", "size", "size", "buf")
#: rts's segmented reduction: js_rts_reduce also stores whole segments (out, out_off,
#: carry), then a fix-up completes the segments that cross into a tile
_RTS_STAGE_ARGS = ("buf", "size", "buf")
SIGNATURES["js_rts_seg_fixup"] = ("buf", "buf", "buf", "size", "size", "buf")


def entry_points(spec: ScanSpec) -> tuple[str, ...]:
    """Kernel entry points compiled for ``spec``."""
    names = ENTRY_POINTS[spec.variant]
    if spec.segmented != "offsets":
        return names
    if spec.variant == "rts" and spec.stages_tile:
        names = names + ("js_rts_seg_fixup",)
    return names + (SEG_FIRST, CHECK_OFFSETS)


def signature(entry: str, spec: ScanSpec) -> tuple[str, ...]:
    """Argument kinds of ``entry`` as compiled for ``spec``."""
    sig = SIGNATURES[entry]
    if entry == "js_rts_reduce" and spec.stages_tile:
        sig = sig + _RTS_STAGE_ARGS
    if spec.segmented and entry in ("js_chained", "js_rts_reduce", "js_rts_scan"):
        sig = sig + SEGMENT_ARGS[spec.segmented]
    return sig


_FILES = {
    "memcpy": ("tile.h", "memcpy.c"),
    "rts": ("tile.h", "rts.c"),
    "lookback": ("tile.h", "tile_state.h", "lookback.h", "chained.c"),
    "fallback": ("tile.h", "tile_state.h", "lookback.h", "chained.c"),
}


@cache
def _read(name: str) -> str:
    return resources.files(__package__).joinpath("src", name).read_text()


def render(spec: ScanSpec, dialect: str | Dialect) -> str:
    """Return the complete source of ``spec``'s kernels in ``dialect``.

    Launch arguments (kind, spin limit, simulated blocking) are not part of the text, so
    every value of them shares one source and one compiled program.
    """
    d = DIALECTS[dialect] if isinstance(dialect, str) else dialect
    spec = spec.program_spec()
    header = (
        f"/* jitscan {spec.variant} scan of {spec.dtype} with op {spec.monoid.name}, "
        f"lowered to {d.name}.\n"
        f" * tile {spec.threads} threads x {spec.vectors} vectors x {spec.vector_width} items, "
        f"subgroup {spec.subgroup}, tile state {spec.tile_state}, look-back width "
        f"{spec.lookback_width}{', segmented by ' + spec.segmented if spec.segmented else ''}. */\n"
    )
    parts = [header, d.prelude(spec), d.common(spec), d.epilogue(spec), d.shuffles(spec)]
    parts += [_read(name) for name in _FILES[spec.variant]]
    return "\n".join(parts)


__all__ = [
    "ENTRY_POINTS",
    "SIGNATURES",
    "SEGMENT_ARGS",
    "SEG_FIRST",
    "CHECK_OFFSETS",
    "entry_points",
    "render",
    "signature",
    "DIALECTS",
]
