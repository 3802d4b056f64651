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

#: argument kinds of each entry point: a buffer, a 64-bit js_size, a 32-bit js_u32
SIGNATURES = {
    "js_memcpy": ("buf", "size", "buf", "size", "size"),
    "js_rts_reduce": ("buf", "size", "size", "buf"),
    "js_rts_spine": ("buf", "size", "buf", "size", "u32"),
    "js_rts_scan": ("buf", "size", "buf", "size", "size", "buf", "u32"),
    "js_chained": ("buf", "size", "buf", "size", "size", "buf", "u32", "u32", "u32", "u32"),
}

_SEGMENT_ARGS = ("buf", "size")  # head flags, row length


def signature(entry: str, spec: ScanSpec) -> tuple[str, ...]:
    """Argument kinds of ``entry`` as compiled for ``spec``."""
    sig = SIGNATURES[entry]
    if spec.segmented and entry in ("js_chained", "js_rts_reduce", "js_rts_scan"):
        sig = sig + _SEGMENT_ARGS
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


__all__ = ["ENTRY_POINTS", "SIGNATURES", "render", "signature", "DIALECTS"]
