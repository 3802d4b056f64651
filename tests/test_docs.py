"""The examples in the docstrings run and print what they show."""

from __future__ import annotations

import doctest

import pytest

import jitscan
from jitscan import backends
from jitscan.api import flat, partition, running, runs, segmented, selection, transforms
from jitscan.operators import python
from jitscan.plan import prepared

MODULES = [jitscan, flat, running, segmented, prepared, python, selection, partition, runs, transforms]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    if not any(backends.get(name).available() for name in backends.names()):
        pytest.skip("no backend with a device here")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {module.__name__}"


def test_every_public_function_has_an_example():
    names = [
        "cumsum",
        "cumprod",
        "cummax",
        "cummin",
        "nancumsum",
        "nancumprod",
        "cumulative_sum",
        "cumulative_prod",
        "scan",
        "reduce",
        "segmented_scan",
        "segmented_cumsum",
        "segmented_reduce",
        "extract",
        "flatnonzero",
        "nonzero",
        "copy_if",
        "stable_partition",
        "unique_consecutive",
        "reduce_by_key",
        "scan_by_key",
        "ScanKernel",
        "plan",
        "operator",
    ]
    missing = [n for n in names if ">>> " not in (getattr(jitscan, n).__doc__ or "")]
    assert not missing, f"no example in the docstrings of {missing}"
