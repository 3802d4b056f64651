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


#: types the kernels read and convert as they load (``ScanSpec.in_dtype``): the scanned
#: types and the narrow integers; a bool is a byte of 0 or 1
INPUTS: dict[str, DType] = {
    **DTYPES,
    **{
        d.name: d
        for d in (
            DType("bool", "uchar", "unsigned char", False, False),
            DType("int8", "char", "signed char", False, True),
            DType("uint8", "uchar", "unsigned char", False, False),
            DType("int16", "short", "short", False, True),
            DType("uint16", "ushort", "unsigned short", False, False),
        )
    },
}


def loaded_as(src: np.dtype, scan: DType) -> DType | None:
    """The input type of a scan in ``scan`` that reads ``src`` and converts it on load.

    None where the input must be converted first: the same type (nothing to convert),
    types the kernels do not read, narrowing (a vector of the input would be wider than
    the kernels' aligned accesses) and float to integer, where C's cast and NumPy's
    ``astype`` disagree out of range. What is left (integer to integer or float, float
    to wider float) gives NumPy's ``astype`` bits in C: integers wrap in two's
    complement, floats round to nearest even.
    """
    d = INPUTS.get(src.name)
    if d is None or d.name == scan.name or d.itemsize > scan.itemsize:
        return None
    if d.is_float and not scan.is_float:
        return None
    return d
