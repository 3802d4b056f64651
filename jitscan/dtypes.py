"""The element types jitscan scans, and what each backend calls them."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: the widest vector access of the kernels (16 bytes); backends hand them arrays aligned to it
VECTOR_BYTES = 16


@dataclass(frozen=True)
class DType:
    """One supported element type."""

    name: str
    opencl: str
    cuda: str
    is_float: bool
    is_signed: bool
    #: the NumPy dtype and its size, looked up once (they are read on every call)
    numpy: np.dtype = field(init=False, compare=False, repr=False)
    itemsize: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "numpy", np.dtype(self.name))
        object.__setattr__(self, "itemsize", self.numpy.itemsize)


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
