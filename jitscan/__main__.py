"""Command line: ``python -m jitscan bench ...``."""

from __future__ import annotations

import argparse
import json
import sys

from . import backends, bench


def _sizes(text: str) -> list[int]:
    """'16:28:2' -> 2^16, 2^18, ... 2^28; '20,24' -> 2^20, 2^24."""
    if ":" in text:
        lo, hi, *step = (int(v) for v in text.split(":"))
        return [1 << e for e in range(lo, hi + 1, step[0] if step else 1)]
    return [1 << int(v) for v in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jitscan", description="jitscan tools")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench", help="time variants and peers on one backend")
    b.add_argument("--backend", default=None, help="default: the default backend")
    b.add_argument("--variants", default="memcpy,rts,lookback,fallback")
    b.add_argument("--dtypes", default="int32")
    b.add_argument("--sizes", default="16:28:2", help="exponents: lo:hi[:step] or a,b,c")
    b.add_argument("--reps", type=int, default=30)
    b.add_argument("--no-peers", action="store_true")
    b.add_argument("--json", default=None, help="write raw results here")
    args = parser.parse_args(argv)

    name = args.backend or backends.default().name
    results = bench.run(
        name,
        args.variants.split(","),
        args.dtypes.split(","),
        _sizes(args.sizes),
        reps=args.reps,
        peers=not args.no_peers,
        progress=lambda msg: print(msg, file=sys.stderr, flush=True),
    )
    timer_info = backends.get(name).device_info(backends.get(name).queue_of(None))
    print(f"\ndevice: {timer_info.name} (backend {name})\n")
    print(bench.table(results))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([r.as_dict() for r in results], fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
