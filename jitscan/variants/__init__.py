"""Scan variants, one module each, found by name through :data:`REGISTRY`.

A variant owns its kernel sources (``files``), entry points and argument signatures,
scratch buffers and launch sequence (``run``), and states what it can do
(:class:`~jitscan.variants.base.Capabilities`) and its own defaults (``spin_limit``,
``shape``). Nothing outside this package asks a variant's name what it can do: the
functions here answer by capability. To add one: write its module (a
:class:`~jitscan.variants.base.Variant` subclass and its kernel source in
``kernels/src``) and add one line to :data:`REGISTRY`, or :func:`register` it at run time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..kernels.spec import ScanSpec
from . import segments
from .base import NEEDS, Bound, Capabilities, Variant
from .chained import FALLBACK, LOOKBACK
from .memcpy import MEMCPY
from .rts import RTS
from .segments import NONE, Segments

#: every variant by name; the first is the default
REGISTRY: dict[str, Variant] = {v.name: v for v in (FALLBACK, LOOKBACK, RTS, MEMCPY)}

#: the built-in variants' names, the default first (:func:`names` also lists registered ones)
VARIANTS = tuple(REGISTRY)
#: the built-in variants with tile state (Capabilities.tile_state): the chained scans
CHAINED = tuple(name for name, v in REGISTRY.items() if v.caps.tile_state)
_BUILT_IN = frozenset(VARIANTS)


def get(name: str) -> Variant:
    """The variant called ``name``; ValueError listing the choices if there is none."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown variant {name!r}; valid variants: {', '.join(REGISTRY)}") from None


def default() -> Variant:
    """The variant a call given none runs (the first registered)."""
    return next(iter(REGISTRY.values()))


def for_reductions() -> Variant:
    """The variant a reduction given none is picked to run (Capabilities.reductions), else the default."""
    return next((v for v in REGISTRY.values() if v.caps.reductions), default())


def names(*needs: str) -> tuple[str, ...]:
    """Names of the registered variants that have every one of ``needs`` (keys of ``NEEDS``)."""
    return tuple(name for name, v in REGISTRY.items() if all(v.supports(need) for need in needs))


def supports(name: str, *needs: str) -> bool:
    """Whether ``name`` is a registered variant that has every one of ``needs``."""
    v = REGISTRY.get(name)
    return v is not None and all(v.supports(need) for need in needs)


def either(have: tuple[str, ...]) -> str:
    """``'a'``, ``'a' or 'b'``, ``'a', 'b' or 'c'``: variant names as a refusal lists them."""
    quoted = [repr(n) for n in have]
    if len(quoted) < 2:
        return quoted[0] if quoted else "none registered"
    return f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def lacking(v: Variant, need: str, deterministic: bool = False) -> ValueError:
    """The refusal of a call that needs ``need`` of ``v``: it names the variant, what it
    lacks, what in the call needs it and the variants that have it. Every public function
    refuses through this, so a variant lacking a capability is refused the same way by each.

    ``deterministic``: the call asked for the deterministic form (which takes no carry).
    """
    lacks, what = NEEDS[need]
    if need == "carry" and deterministic and v.caps.carry:
        lacks = "takes no carry in its deterministic form"
    tail = ", not deterministic" if need == "carry" else ""
    return ValueError(f"variant {v.name!r} {lacks}: {what} needs variant {either(names(need))}{tail}")


def require(name: str | None, *needs: str) -> Variant:
    """The variant called ``name`` (None: the default), refused (:func:`lacking`) where it
    lacks one of ``needs``; an unknown name lists the valid ones."""
    v = default() if name is None else get(name)
    for need in needs:
        if not v.supports(need):
            raise lacking(v, need)
    return v


def choose(name: str | None, *needs: str, reduction: bool = False) -> str | None:
    """The name of the variant a call runs: ``name`` checked for ``needs`` (:func:`require`),
    or where it is None the default; with ``reduction`` (a reduction by segments) None
    stays None: the prepared scan picks by size (the default below
    ``tuning.RTS_SEG_REDUCE_BYTES`` on GPUs, :func:`for_reductions` from there and on CPUs)."""
    if name is None and reduction:
        return None
    return require(name, *needs).name


def register(variant: Variant) -> Variant:
    """Add ``variant`` to the registry under its ``name``, after the built-in ones.

    Every public function then takes ``variant=variant.name``. A name is registered once:
    prepared scans the public functions keep (per call signature, variant name included)
    hold the variant they were made with, so a name must not come back as another variant
    in one process.
    """
    if not isinstance(variant, Variant):
        raise TypeError(f"register takes a Variant, got {type(variant).__name__}")
    if not isinstance(variant.caps, Capabilities):
        raise TypeError(f"variant {variant.name!r}: caps must be a Capabilities record")
    if variant.name in REGISTRY:
        raise ValueError(f"a variant named {variant.name!r} is registered already")
    REGISTRY[variant.name] = variant
    return variant


def unregister(name: str) -> Variant:
    """Remove the variant called ``name`` from the registry (not a built-in one); returns it."""
    if name in _BUILT_IN:
        raise ValueError(f"variant {name!r} is built in; only registered variants are removed")
    v = get(name)
    del REGISTRY[name]
    return v


@contextmanager
def registered(variant: Variant) -> Iterator[Variant]:
    """``with registered(v):`` every public function takes ``variant=v.name`` inside the block."""
    register(variant)
    try:
        yield variant
    finally:
        unregister(variant.name)


def source(spec: ScanSpec, dialect: str) -> str:
    """The complete source of ``spec``'s program in ``dialect``."""
    return get(spec.variant).source(spec, dialect)


__all__ = [
    "CHAINED",
    "NEEDS",
    "NONE",
    "REGISTRY",
    "VARIANTS",
    "Bound",
    "Capabilities",
    "Segments",
    "Variant",
    "choose",
    "default",
    "either",
    "for_reductions",
    "get",
    "lacking",
    "names",
    "register",
    "registered",
    "require",
    "segments",
    "source",
    "supports",
    "unregister",
]
