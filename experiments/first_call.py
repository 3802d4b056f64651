"""How long the first scan of a new process takes: imports, then one call (program load or compile).

Usage: python experiments/first_call.py   (run it twice: the second process finds the
program in CuPy's disk cache, ``$CUPY_CACHE_DIR``, default ``~/.cupy/kernel_cache``).
"""

from __future__ import annotations

import time

t0 = time.perf_counter()
import cupy  # noqa: E402
import numpy as np  # noqa: E402

t1 = time.perf_counter()
import jitscan  # noqa: E402

t2 = time.perf_counter()
x = cupy.arange(1 << 20, dtype=np.int32)
cupy.cuda.Device().synchronize()
t3 = time.perf_counter()
y = jitscan.cumsum(x)
cupy.cuda.Device().synchronize()
t4 = time.perf_counter()
print(
    f"import cupy {t1 - t0:.3f} s, import jitscan {t2 - t1:.3f} s, "
    f"first cumsum (program load or compile included) {t4 - t3:.3f} s"
)
