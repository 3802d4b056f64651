"""memcpy: the speed-of-light baseline. The scans' loads and stores, with no scan between them.

Launch sequence: one launch of ``js_memcpy``, a workgroup per tile.
"""

from __future__ import annotations

from typing import Any

from ..kernels.spec import LaunchArgs
from . import segments
from .base import Bound, Capabilities, Variant, operands

KERNEL = "js_memcpy"


class Memcpy(Variant):
    name = "memcpy"
    files = ("tile.h", "lanes.h", "memcpy.c")
    signatures = {KERNEL: ("src", "dst", "size", "u32")}
    # the same bits every run: it computes nothing
    caps = Capabilities(copies=True, reduces=False, segmented=frozenset(), deterministic="always")
    # its tiles move as the chained scans' do, lanes included (the yardstick of their loads
    # and stores), and stage nothing
    lane_tiles = True
    local_memory = False

    def run(
        self,
        bound: Bound,
        queue: Any,
        launch: LaunchArgs,
        src: Any,
        dst: Any,
        n: int,
        seg: segments.Segments,
        check: bool = True,
    ) -> None:
        b = bound.backend
        # stores around the cache where a scan's would go around it (LaunchArgs.stream_from)
        stream = int(n >= launch.stream_from(bound.spec))
        args = [*operands(b, src), *operands(b, dst), n, stream]
        bound.program.launch(KERNEL, -(-n // bound.spec.tile), args, queue)


MEMCPY = Memcpy()
