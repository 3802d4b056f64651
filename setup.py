"""The one compiled part: the common call of a prepared scan on CUDA (jitscan/backends/_cuda_call.c).

Optional: where it cannot be built (no C compiler, no Python headers) the install goes on
without it and the same call runs in Python (jitscan/backends/cupy.py). Everything else is
in pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("jitscan.backends._cuda_call", ["jitscan/backends/_cuda_call.c"], optional=True),
    ]
)
