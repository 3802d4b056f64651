"""Scan variants, one module each, found by name through :data:`REGISTRY`.

A variant owns its kernel sources (``files``), entry points and argument signatures,
scratch buffers and launch sequence (``run``). To add one: write its module (a
:class:`~jitscan.variants.base.Variant` subclass and its kernel source in
``kernels/src``) and add one line to :data:`REGISTRY`.
"""

from __future__ import annotations

from ..kernels.spec import ScanSpec
from . import segments
from .base import Bound, Variant
from .chained import FALLBACK, LOOKBACK
from .memcpy import MEMCPY
from .rts import RTS
from .segments import NONE, Segments

#: every variant by name; the first is the default
REGISTRY: dict[str, Variant] = {v.name: v for v in (FALLBACK, LOOKBACK, RTS, MEMCPY)}

#: variant names, the default first
VARIANTS = tuple(REGISTRY)


def get(name: str) -> Variant:
    """The variant called ``name``; ValueError listing the choices if there is none."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown variant {name!r}; valid variants: {', '.join(REGISTRY)}") from None


def source(spec: ScanSpec, dialect: str) -> str:
    """The complete source of ``spec``'s program in ``dialect``."""
    return get(spec.variant).source(spec, dialect)


__all__ = ["REGISTRY", "VARIANTS", "Bound", "NONE", "Segments", "Variant", "get", "segments", "source"]
