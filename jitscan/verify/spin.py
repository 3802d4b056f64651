"""Check ``tilestate.pml``, the Promela model of the tile-state protocol, with SPIN.

Each check copies the model to a temporary folder, generates the verifier (``spin -a``
with the model's defines), compiles ``pan.c`` with gcc and runs it:

``safety``
    assertions and invalid end states, without the LTL claim (``-DNOCLAIM -DSAFETY``):
    no torn value accepted, every combination in order, every tile INCLUSIVE with the
    right value at the end.
``termination``
    the claim ``<> all_done`` (every tile finishes), searched for acceptance cycles
    (``pan -a``) with weak fairness off: a counterexample is a run in which some tile
    never finishes, whatever the scheduler does.

``python -m jitscan.verify.spin`` prints a table of the checks. Nothing here is imported
by the scans.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

#: the model, beside this module
MODEL = Path(__file__).with_name("tilestate.pml")
PROPERTIES = ("safety", "termination")
#: the model's ENCODING define of each tile-state encoding
ENCODINGS = {"split": 0, "packed": 1}
#: what pan prints when it did not search the whole state space, and why
_TRUNCATIONS = {
    "max search depth too small": "depth limit (-m)",
    "out of memory": "out of memory",
    "reached -DMEMLIM bound": "memory limit (-DMEMLIM)",
}


@dataclass(frozen=True)
class SpinResult:
    """What one run of pan found.

    Attributes
    ----------
    prop, tiles, fallback, broken_reader, encoding, reorder : the check asked for.
    defines : list of str
        The ``-D`` options given to ``spin -a``.
    errors : int
        Errors pan found (it stops at the first one).
    states, transitions : int
        States stored and transitions taken.
    depth : int
        Depth of the search reached.
    exhaustive : bool
        The whole state space was searched: no error cut it short and it was not
        truncated by the depth limit or by memory.
    truncated : str or None
        Why the search was truncated, None when it was not.
    violation : str or None
        pan's line for the error found ("assertion violated ...", "acceptance cycle ...").
    trail : str or None
        The counterexample trail pan wrote (``tilestate.pml.trail``), when it wrote one.
    replay : str or None
        ``spin -t -p -g`` on that trail, when asked for.
    seconds : float
        Wall time of the whole check: generation, compilation and search.
    output : str
        pan's output.
    """

    prop: str
    tiles: int
    fallback: bool
    broken_reader: bool
    encoding: str
    reorder: bool
    defines: list[str]
    errors: int
    states: int
    transitions: int
    depth: int
    exhaustive: bool
    truncated: str | None
    violation: str | None
    trail: str | None
    replay: str | None
    seconds: float
    output: str

    @property
    def holds(self) -> bool:
        """The property holds: no error, over the whole state space."""
        return self.errors == 0 and self.exhaustive

    @property
    def variant(self) -> str:
        """``fallback`` or ``lookback``, with ``+broken-reader`` and ``+reorder`` where asked."""
        name = "fallback" if self.fallback else "lookback"
        return name + "+broken-reader" * self.broken_reader + "+reorder" * self.reorder

    @property
    def verdict(self) -> str:
        """One word for the table: holds, FAILS or truncated."""
        if self.errors:
            return "FAILS"
        return "holds" if self.exhaustive else "truncated"


def _tool(name: str, what: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(
            f"`{name}` ({what}) is not on PATH: checking tilestate.pml needs SPIN and a C compiler"
            " (Debian/Ubuntu: apt-get install spin gcc)"
        )
    return path


def _run(cmd: list[str], cwd: str, timeout: float) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    out = done.stdout + done.stderr
    if done.returncode != 0 and cmd[0] != "./pan":
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {done.returncode}):\n{out}")
    return out


def _number(pattern: str, text: str) -> int:
    m = re.search(pattern, text, re.MULTILINE)
    return int(float(m.group(1))) if m else 0


def check(
    prop: str,
    tiles: int = 3,
    fallback: bool = True,
    broken_reader: bool = False,
    encoding: str = "split",
    *,
    dynamic_ids: bool | None = None,
    stale: bool = True,
    reorder: bool = False,
    replay: bool = False,
    max_depth: int = 100_000,
    memlim_mb: int = 8192,
    timeout: float = 600.0,
) -> SpinResult:
    """Check one property of the model with SPIN, exhaustively.

    Parameters
    ----------
    prop : {"safety", "termination"}
        ``safety``: assertions (no torn value, combinations in order, every tile ends
        INCLUSIVE with the right value) and invalid end states. ``termination``: every run
        ends with every tile done (LTL ``<> all_done``, ``pan -a``, no fairness).
    tiles : int
        Tiles, one process each: 2, 3 or 4.
    fallback : bool
        Decoupled fallback (True) or decoupled look-back (False).
    broken_reader : bool
        A reader that accepts a descriptor on its first word's flag alone.
    encoding : {"split", "packed"}
        Two words a descriptor, or one.
    dynamic_ids : bool, optional
        Tiles taken from the atomic counter (True) or process k holding tile k - 1; the
        same runs up to renaming processes (see the model). By default dynamic up to
        3 tiles; at 4 the static one, 26 times fewer states.
    stale : bool
        Start with every word either zeroed or left INCLUSIVE by an earlier launch.
    reorder : bool
        Posters and readers take a descriptor's words in either order.
    replay : bool
        When pan writes a trail, also replay it (``spin -t -p -g``) into ``replay``.
    max_depth : int
        pan's search depth limit (``-m``); reaching it makes the result not exhaustive.
    memlim_mb : int
        pan's memory limit in MB (``-DMEMLIM``).
    timeout : float
        Seconds allowed to each command.

    Returns
    -------
    SpinResult

    Raises
    ------
    RuntimeError
        When ``spin`` or ``gcc`` is not on PATH, or one of them fails.
    ValueError
        For an unknown property or encoding, or tiles outside 2..4.
    """
    if prop not in PROPERTIES:
        raise ValueError(f"prop must be one of {PROPERTIES}, not {prop!r}")
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {tuple(ENCODINGS)}, not {encoding!r}")
    if not 2 <= tiles <= 4:
        raise ValueError(f"the model holds 2 to 4 tiles (values are 2-bit tile numbers), not {tiles}")
    spin = _tool("spin", "the SPIN model checker")
    gcc = _tool("gcc", "to compile SPIN's verifier pan.c")
    if dynamic_ids is None:
        dynamic_ids = tiles <= 3
    defines = [
        f"-DN={tiles}",
        f"-DFALLBACK={int(fallback)}",
        f"-DBROKEN_READER={int(broken_reader)}",
        f"-DENCODING={ENCODINGS[encoding]}",
        f"-DDYNAMIC_IDS={int(dynamic_ids)}",
        f"-DSTALE={int(stale)}",
        f"-DREORDER={int(reorder)}",
    ]
    # the small state spaces search in a blink: compile them fast; 4 tiles search longer
    cflags = ["-O2" if tiles >= 4 else "-O0", "-w", f"-DMEMLIM={memlim_mb}"]
    cflags += ["-DNOCLAIM", "-DSAFETY"] if prop == "safety" else []
    pan_flags = ["-n", f"-m{max_depth}"] + (["-a"] if prop == "termination" else [])
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="jitscan-spin-") as tmp:
        shutil.copy(MODEL, Path(tmp) / MODEL.name)
        _run([spin, *defines, "-a", MODEL.name], tmp, timeout)
        _run([gcc, *cflags, "-o", "pan", "pan.c"], tmp, timeout)
        out = _run(["./pan", *pan_flags], tmp, timeout)
        trail_path = Path(tmp) / f"{MODEL.name}.trail"
        trail = trail_path.read_text() if trail_path.exists() else None
        replayed = None
        if replay and trail is not None:
            replayed = _run([spin, *defines, "-t", "-p", "-g", MODEL.name], tmp, timeout)
    seconds = time.perf_counter() - start
    errors = _number(r"errors: (\d+)", out)
    truncated = next((why for text, why in _TRUNCATIONS.items() if text in out), None)
    if truncated is None and errors == 0 and "Search not completed" in out:
        truncated = "search not completed"
    violation = re.search(r"^pan:\d+: (.*)$", out, re.MULTILINE)
    return SpinResult(
        prop=prop,
        tiles=tiles,
        fallback=fallback,
        broken_reader=broken_reader,
        encoding=encoding,
        reorder=reorder,
        defines=defines,
        errors=errors,
        states=_number(r"^\s*([\d.e+]+) states, stored", out),
        transitions=_number(r"^\s*([\d.e+]+) transitions", out),
        depth=_number(r"depth reached (\d+)", out),
        exhaustive=errors == 0 and truncated is None and "Full statespace search" in out,
        truncated=truncated,
        violation=violation.group(1) if violation else None,
        trail=trail,
        replay=replayed,
        seconds=seconds,
        output=out,
    )


def expected_to_fail(prop: str, fallback: bool, broken_reader: bool, encoding: str) -> bool:
    """Whether SPIN should find a counterexample to this check.

    Look-back does not terminate without fairness (a tile waits forever on a predecessor
    the scheduler never runs), and the broken reader accepts torn values where there are
    two words to tear. Everything else holds.
    """
    if prop == "termination" and not fallback:
        return True
    return prop == "safety" and broken_reader and encoding == "split"


def _matrix(tiles: Sequence[int]) -> list[dict]:
    checks = []
    for n in tiles:
        for encoding in ENCODINGS:
            for prop in PROPERTIES:
                checks.append(dict(prop=prop, tiles=n, fallback=True, encoding=encoding))
                checks.append(dict(prop=prop, tiles=n, fallback=False, encoding=encoding))
            checks.append(dict(prop="safety", tiles=n, fallback=True, broken_reader=True, encoding=encoding))
        for prop in PROPERTIES:
            checks.append(dict(prop=prop, tiles=n, fallback=True, encoding="split", reorder=True))
    return checks


def main(argv: Sequence[str] | None = None) -> int:
    """Print a table: property x variant x encoding x tiles -> result, states, errors, seconds.

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments (``--tiles``, ``--jobs``); ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        0 when every check came out as expected (see `expected_to_fail`), else 1.
    """
    doc = (__doc__ or "").splitlines()[0]
    parser = argparse.ArgumentParser(prog="python -m jitscan.verify.spin", description=doc)
    parser.add_argument("--tiles", type=int, nargs="+", default=[2, 3, 4], help="tile counts (2 to 4)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="checks run at once")
    args = parser.parse_args(argv)
    checks = _matrix(args.tiles)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda kw: check(**kw), checks))
    head = (
        "property",
        "variant",
        "encoding",
        "tiles",
        "ids",
        "expected",
        "result",
        "states",
        "errors",
        "depth",
        "seconds",
    )
    rows = []
    unexpected = 0
    for r in results:
        want_fail = expected_to_fail(r.prop, r.fallback, r.broken_reader, r.encoding)
        ok = (r.errors > 0) == want_fail and (r.errors > 0 or r.exhaustive)
        unexpected += not ok
        result = r.verdict + ("" if ok else " (UNEXPECTED)")
        if r.violation:
            result += ": " + r.violation.split("(")[0].strip()
        ids = "dynamic" if "-DDYNAMIC_IDS=1" in r.defines else "static"
        expected = "fails" if want_fail else "holds"
        rows.append(
            (
                r.prop,
                r.variant,
                r.encoding,
                str(r.tiles),
                ids,
                expected,
                result,
                str(r.states),
                str(r.errors),
                str(r.depth),
                f"{r.seconds:.1f}",
            )
        )
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    for row in [head, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    print(f"\n{len(results)} checks, {unexpected} unexpected; SPIN model {MODEL}")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
