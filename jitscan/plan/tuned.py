"""Tuned tile shapes: what ``jitscan tune`` measured on this device, used without asking.

A table maps a *case* (the scan's dtype class, op class, segmented mode and size class)
to the knobs that ran fastest there. Two places hold tables; for each case the user's
entry wins over the shipped one:

- the user's cache (``platformdirs.user_cache_dir("jitscan")/tuning``, or
  ``$JITSCAN_CACHE_DIR/tuning``), written by :func:`jitscan.tune`. A file counts only for
  the device, driver version and jitscan build that wrote it (``build_tag``: the version
  and a digest of the kernel sources); any other is ignored, never trusted. A file that
  does not parse is ignored with a warning, and the next tuning run rewrites it.
- the tables shipped in ``jitscan/plan/tables/``, made by the same command on the devices
  the project has measured, keyed by backend and device name only.

``JITSCAN_TUNING=off`` ignores both. A prepared scan looks its cases up once per size
class when it is made (``PreparedScan.spec``): a table written later, or the switch
turned later, reaches the prepared scans made after it (a new process, or
``jitscan.api.cache.clear()`` for the public functions' cached ones). Knobs given by the
caller win, and a caller who gives any tile-shape knob gets none of the table's. Tables
apply to the chained variants (``fallback``, ``lookback``) of scalar values, not to
deterministic scans or tuple values.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import warnings
from pathlib import Path
from typing import Any

from ..backends.base import DeviceInfo
from ..dtypes import DType
from ..kernels.spec import TILE_STATES, check_choice
from ..operators import BUILTIN, Monoid
from .knobs import check_knobs

#: the knobs a table may set, each with what it is and the values the tuner tries
#: (``jitscan.tuner.space`` narrows them per device: limits, registers, local memory)
TUNABLES: dict[str, str] = {
    "threads": "work-items per workgroup: 64, 128, 256, 512 (GPUs); 1, 2, 4 (CPUs)",
    "vectors": "vectors each work-item loads per tile: 1-32 on GPUs, 64-2048 on CPUs (powers of two)",
    "vector_width": "elements per vector: 16 bytes' worth (the default) or half of it",
    "min_blocks": "workgroups per multiprocessor the compiler must fit (NVIDIA): 0 (no bound), 1-8",
    "lookback_width": "predecessors one look-back step reads: one subgroup (32) up to 256, at most threads",
    "tile_state": "the tile descriptor's encoding: 'packed' (one 64-bit word) or 'split' (two words)",
}
#: Not tuned: ``spin_limit`` (its cost shows only when a workgroup stalls, which timing an
#: idle device does not see; the variant's own spin_limit and experiments/spin_sweep.py set it),
#: and the scan inside a workgroup, of which jitscan has one (subgroup row scans, then the
#: subgroups' totals; devices without shuffles scan in local memory).
#: knobs that shape the tile: a caller who gives one of them gets none from a table
SHAPE_KNOBS = frozenset(TUNABLES)
#: file format of a table
FORMAT = 1
#: the environment switch that ignores every table
SWITCH = "JITSCAN_TUNING"

_SRC = Path(__file__).resolve().parent.parent / "kernels" / "src"
_SHIPPED = Path(__file__).resolve().parent / "tables"


def case(dtype: DType, monoid: Monoid, segmented: str, size_class: int) -> str:
    """The name of a case: ``"4-byte/builtin/flags/2"`` (dtype class, op class, segments, size class)."""
    ops = "builtin" if monoid in BUILTIN.values() else "custom"
    return f"{dtype.packed_bytes}-byte/{ops}/{segmented or 'none'}/{size_class}"


@functools.cache
def build_tag() -> str:
    """This build of jitscan: its version and a digest of its kernel sources."""
    from .. import __version__

    digest = hashlib.sha256()
    for path in sorted(_SRC.iterdir()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:12]}"


def cache_dir() -> Path:
    """Where tuning runs write their tables: ``$JITSCAN_CACHE_DIR/tuning``, else the user's cache."""
    root = os.environ.get("JITSCAN_CACHE_DIR")
    if root is None:
        try:
            import platformdirs
        except ImportError:  # pragma: no cover - a dependency; kept for vendored installs
            root = os.path.join(os.path.expanduser("~"), ".cache", "jitscan")
        else:
            root = platformdirs.user_cache_dir("jitscan", appauthor=False)
    return Path(root) / "tuning"


def file_name(info: DeviceInfo) -> str:
    """A device's table file: its backend and name, made safe for a file system."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", info.name).strip("-").lower()
    return f"{info.backend}--{slug}.json"


def header(info: DeviceInfo) -> dict[str, Any]:
    """What a table of ``info`` says about where it was made (matched before it is trusted)."""
    return {
        "format": FORMAT,
        "build": build_tag(),
        "backend": info.backend,
        "device": info.name,
        "driver": info.driver,
    }


def enabled() -> bool:
    """False when ``$JITSCAN_TUNING`` is ``off`` (or ``0``, ``no``, ``false``)."""
    return os.environ.get(SWITCH, "on").strip().lower() not in ("off", "0", "no", "false")


def read(path: Path) -> dict[str, Any] | None:
    """A table file's contents, or None if it is missing; a broken one warns and reads as None."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.warn(f"jitscan: cannot read tuning table {path}: {exc}; ignored", stacklevel=3)
        return None
    try:
        table = json.loads(raw.decode("utf-8"))
        if not isinstance(table, dict) or not isinstance(table.get("cases"), dict):
            raise ValueError("no 'cases' mapping")
        for name, entry in table["cases"].items():
            if not isinstance(entry, dict) or not isinstance(entry.get("knobs"), dict):
                raise ValueError(f"case {name!r} has no 'knobs' mapping")
            _check_knobs(name, entry["knobs"])
    except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError are ones
        warnings.warn(
            f"jitscan: tuning table {path} is corrupt ({exc}); ignored (the next `jitscan tune` rewrites it)",
            stacklevel=3,
        )
        return None
    return table


def _check_knobs(name: str, knobs: dict[str, Any]) -> None:
    """A case's knobs: tile-shape knobs only, of the values every scan's knobs take, else ValueError."""
    unknown = set(knobs) - SHAPE_KNOBS
    if unknown:
        raise ValueError(f"case {name!r} sets unknown knobs {sorted(unknown)}")
    try:
        check_knobs(knobs)
        if "tile_state" in knobs:
            check_choice("tile_state", knobs["tile_state"], TILE_STATES)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"case {name!r}: {exc}") from exc


def user_table(info: DeviceInfo) -> dict[str, Any] | None:
    """The user's table of this device, if its file was made here (same driver and build)."""
    table = read(cache_dir() / file_name(info))
    if table is None:
        return None
    want = header(info)
    if any(table.get(k) != v for k, v in want.items()):
        return None  # another device, driver or build wrote it: never trusted
    return table


def shipped_table(info: DeviceInfo) -> dict[str, Any] | None:
    """The table shipped with jitscan for this backend and device name, if there is one."""
    table = read(_SHIPPED / file_name(info))
    if table is None or table.get("backend") != info.backend or table.get("device") != info.name:
        return None
    return table


@functools.cache
def _cases(info: DeviceInfo, stamp: tuple) -> dict[str, dict[str, Any]]:
    """Each case's knobs: the user's entry where the user's table has the case, else the
    shipped table's."""
    cases: dict[str, dict[str, Any]] = {}
    for table in (shipped_table(info), user_table(info)):
        if table is not None:
            cases.update({k: dict(v["knobs"]) for k, v in table["cases"].items()})
    return cases


def _stamp(info: DeviceInfo) -> tuple:
    """What invalidates the lookup cache: the switch, the cache directory and the file's mtime."""
    path = cache_dir() / file_name(info)
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        mtime = None
    return (enabled(), str(path), mtime)


def knobs_for(
    info: DeviceInfo, dtype: DType, monoid: Monoid, segmented: str, size_class: int
) -> dict[str, Any]:
    """The tuned knobs of one case on ``info``'s device (empty: the built-in defaults)."""
    stamp = _stamp(info)
    if not stamp[0]:
        return {}
    return _cases(info, stamp).get(case(dtype, monoid, segmented, size_class), {})


def forget() -> None:
    """Drop the lookups made so far (a test or a tuning run changed the tables)."""
    _cases.cache_clear()
