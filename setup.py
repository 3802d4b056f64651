"""The one compiled part: the common call of a prepared scan on CUDA and OpenCL
(jitscan/backends/_common_call.c).

Optional: where it cannot be built (no C compiler, no Python headers) the install goes on
without it and the same call runs in Python (jitscan/backends/cupy.py, opencl_calls.py). A
build with it is a wheel of one platform and Python; ``JITSCAN_PURE_PYTHON=1`` leaves it
out, for a wheel of any (py3-none-any). Everything else is in pyproject.toml.
"""

import os

from setuptools import Extension, setup

pure = os.environ.get("JITSCAN_PURE_PYTHON", "0") not in ("", "0")
setup(
    ext_modules=[]
    if pure
    else [Extension("jitscan.backends._common_call", ["jitscan/backends/_common_call.c"], optional=True)]
)
