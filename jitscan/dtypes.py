"""The element types jitscan scans, and what each backend calls them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    """One supported element type."""

    name: str
    opencl: str
    cuda: str
    is_float: bool
    is_signed: bool

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(self.name)

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("int32", "int", "int", False, True),
        DType("uint32", "uint", "unsigned int", False, False),
        DType("int64", "long", "long long", False, True),
        DType("uint64", "ulong", "unsigned long long", False, False),
        DType("float32", "float", "float", True, True),
        DType("float64", "double", "double", True, True),
    )
}


def lookup(dtype: object) -> DType:
    """Return the supported type for anything ``np.dtype`` accepts.

    Raises
    ------
    TypeError
        For types jitscan does not scan (bool, complex, object, ...).
    """
    try:
        name = np.dtype(dtype).name  # type: ignore[call-overload]
    except TypeError as exc:
        raise TypeError(f"not a dtype: {dtype!r}") from exc
    if name not in DTYPES:
        raise TypeError(f"jitscan does not scan dtype {name}; supported dtypes: {', '.join(DTYPES)}")
    return DTYPES[name]
