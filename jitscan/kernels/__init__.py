"""Kernel sources in the portable dialect, and their rendering for a backend.

``src/`` holds the kernel bodies, written once; ``dialect.py`` the per-backend
preludes that lower them; ``spec.py`` the description a rendering is a function of.
Which files make up a variant's program is the variant's own business
(``jitscan.variants``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib import resources

from .dialect import DIALECTS, Dialect
from .spec import ScanSpec


@cache
def read(name: str) -> str:
    """The text of one source file of ``src/``."""
    return resources.files(__package__).joinpath("src", name).read_text()


def render(spec: ScanSpec, dialect: str | Dialect, files: Sequence[str], defines: Sequence[str] = ()) -> str:
    """Return the complete source of ``spec``'s kernels in ``dialect``.

    The dialect's prelude and common defines come first, then the variant's own
    ``defines`` (whole ``#define`` lines), then the source ``files`` of ``src/``.

    Launch arguments (kind, spin limit, simulated blocking) are not part of the text, so
    every value of them shares one source and one compiled program.
    """
    d = DIALECTS[dialect] if isinstance(dialect, str) else dialect
    header = (
        f"/* jitscan {spec.variant} scan of {spec.dtype} with op {spec.monoid.name}, "
        f"lowered to {d.name}.\n"
        f" * tile {spec.threads} threads x {spec.vectors} vectors x {spec.vector_width} items, "
        f"subgroup {spec.subgroup}, tile state {spec.tile_state}, look-back width "
        f"{spec.lookback_width}{', segmented by ' + spec.segmented if spec.segmented else ''}. */\n"
    )
    parts = [header, d.prelude(spec), d.common(spec), d.epilogue(spec), d.shuffles(spec), *defines]
    parts += [read(name) for name in files]
    return "\n".join(parts)


__all__ = ["DIALECTS", "Dialect", "ScanSpec", "read", "render"]
