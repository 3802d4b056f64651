"""Which tile shapes compile without spills for AMD's targets, and at what occupancy?

Usage: python experiments/amd_shapes.py ARCH[,ARCH...] [DTYPE,...]

Renders the fallback scan (flat, by flags, by offsets; the large-input size class) for
each target of ``backends.targets`` at several shapes, with no blocks-per-CU bound,
compiles it with clang-19 as HIP (jitscan.verify.hip) and prints clang's kernel-resource-usage
remarks for js_chained: VGPRs, spilled VGPRs, scratch bytes a lane, waves a SIMD. No AMD
GPU is needed, and none was: what the shapes run at is not measured here.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from jitscan import variants
from jitscan.backends import targets
from jitscan.dtypes import lookup
from jitscan.operators import resolve
from jitscan.plan import tuning
from jitscan.verify import hip

SHAPES = ((256, 4), (256, 8), (128, 8), (128, 16))


def main() -> None:
    arches = sys.argv[1].split(",") if len(sys.argv) > 1 else ["gfx90a", "gfx942", "gfx1100"]
    dtypes = sys.argv[2].split(",") if len(sys.argv) > 2 else ["int32", "float64"]
    print("| target | dtype | form | threads x vectors | VGPRs | spilled | scratch B/lane | waves/SIMD |")
    print("|---|---|---|---|---|---|---|---|")
    add = resolve("add")
    with tempfile.TemporaryDirectory() as d:
        libs = hip.device_libs(Path(d))
        for arch in arches:
            info = targets.target(arch)
            for dt in dtypes:
                for seg in ("", "flags", "offsets"):
                    for threads, vectors in SHAPES:
                        shape = {"threads": threads, "vectors": vectors, "min_blocks": 0}
                        spec = tuning.spec_for(
                            info,
                            variant="fallback",
                            kind="inclusive",
                            dtype=lookup(dt),
                            monoid=add,
                            segmented=seg,
                            **shape,
                        )
                        with tempfile.TemporaryDirectory() as w:
                            _, _, kernels = hip.compile_hip(
                                variants.get("fallback").source(spec, "cuda"), arch, libs, Path(w)
                            )
                        got = kernels.get("js_chained", {})
                        cells = [
                            got.get(k, "?") for k in ("VGPRs", "VGPRs Spill", "ScratchSize [bytes/lane]")
                        ]
                        waves = got.get("Occupancy [waves/SIMD]", "?")
                        row = [arch, dt, seg or "flat", f"{threads} x {vectors}", *cells, waves]
                        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
