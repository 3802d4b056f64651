"""How fast one CPU thread scans in OpenCL vector lanes, by vector width and shift form.

Usage: POCL_DEVICES="pthread basic" python experiments/cpu_lanes.py [LOG2N] [int|float]

One work-item (PoCL's single-thread driver where ``POCL_DEVICES`` names it, else PoCL's
first device) scans 2^LOG2N items (default 2^20, int) in a loop over vectors of 16, 32 and
64 bytes, each vector scanned by shifted adds and then added to a running carry. The
carry's chain from vector to vector is one add (the scan's last lane is splatted beside
it). The vector's own scan takes one of two forms:

- ``whole``: Hillis-Steele over the whole vector, lanes moved up by 1, 2, 4, ...;
- ``runs``: the same within each 16-byte run of lanes, then the runs joined, each lane
  adding the last lane of the run d runs back (``jitscan.kernels.lanes.scan_steps``).

Both are written with clang's ``__builtin_shufflevector``. Prints the best of 30 launches
(waited for), in G items/s, with the input 16 bytes past a 32-byte boundary as NumPy's
large arrays are; the launch's own cost is included (a few µs).
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pyopencl as cl

from jitscan.kernels.lanes import scan_steps

WIDTHS = (16, 32, 64)


def whole_steps(v: int) -> list[list[tuple[str, int]]]:
    """Hillis-Steele over the whole vector: lane i adds lane i - d, for d = 1, 2, 4, ..."""
    steps, d = [], 1
    while d < v:
        steps.append([("f", i) if i < d else ("x", i - d) for i in range(v)])
        d *= 2
    return steps


def source(ty: str, v: int, steps: list[list[tuple[str, int]]], pad: int) -> str:
    """The kernel: ``nv`` vectors of ``v`` lanes scanned, from ``pad`` items into the buffers."""
    vec = f"{ty}{v}"
    lines = []
    for step in steps:
        index = ", ".join(str(j if src == "x" else v + j) for src, j in step)
        lines.append(f"s = s + __builtin_shufflevector(s, z, {index});")
    last = ", ".join([str(v - 1)] * v)
    body = "\n        ".join(lines)
    return f"""
typedef {vec} vec_a16 __attribute__((aligned(16)));
__kernel void k(__global const {ty}* in0, __global {ty}* out0, uint nv)
{{
    __global const {ty}* in = in0 + {pad};
    __global {ty}* out = out0 + {pad};
    {vec} c = ({vec})(0), z = ({vec})(0);
    for (uint j = 0; j < nv; ++j) {{
        {vec} s = ((__global const vec_a16*)in)[j];
        {body}
        ((__global vec_a16*)out)[j] = c + s;
        c = c + __builtin_shufflevector(s, s, {last});
    }}
}}
"""


def main() -> None:
    log2n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    ty = sys.argv[2] if len(sys.argv) > 2 else "int"
    dtype = {"int": np.int32, "float": np.float32}[ty]
    pocl = next(p for p in cl.get_platforms() if "Portable Computing Language" in p.name)
    devices = pocl.get_devices()
    dev = next((d for d in devices if d.max_compute_units == 1), devices[0])
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    n = 1 << log2n
    x = (np.arange(n) % 7).astype(dtype)
    pad = 4  # items: 16 bytes past a 32-byte boundary
    host = np.zeros(n + 64, dtype)
    host[pad : pad + n] = x
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)
    ob = cl.Buffer(ctx, mf.READ_WRITE, size=host.nbytes)
    want = np.cumsum(x, dtype=np.float64 if ty == "float" else dtype)
    print(f"device: {dev.name}; 2^{log2n} {ty}, G items/s (best of 30 launches)")
    print("| vector bytes | whole | runs |")
    print("|---:|---:|---:|")
    for nbytes in WIDTHS:
        v = nbytes // 4
        row = []
        for steps in (whole_steps(v), scan_steps(v, 4)):
            k = cl.Program(ctx, source(ty, v, steps, pad)).build().k
            args = (xb, ob, np.uint32(n // v))
            k(q, (1,), (1,), *args)
            q.finish()
            got = np.empty_like(host)
            cl.enqueue_copy(q, got, ob)
            assert np.allclose(got[pad : pad + n], want, rtol=1e-3), (nbytes, steps)
            best = float("inf")
            for _ in range(30):
                t = time.perf_counter()
                k(q, (1,), (1,), *args)
                q.finish()
                best = min(best, time.perf_counter() - t)
            row.append(n / best / 1e9)
        print(f"| {nbytes} | {row[0]:.2f} | {row[1]:.2f} |")


if __name__ == "__main__":
    main()
