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

    #: what a tuple value (:class:`Record`) has too: one field, moved in vectors of its size
    @property
    def fields(self) -> tuple[DType, ...]:
        return (self,)

    @property
    def vector_itemsize(self) -> int:
        return self.itemsize

    @property
    def packed_bytes(self) -> int:
        return self.itemsize

    @property
    def has_f64(self) -> bool:
        return self.name == "float64"


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


@dataclass(frozen=True)
class Record:
    """A tuple value: 1 to 4 fields of the scanned types, a C struct ``js_val`` in the kernels.

    Its arrays are a structure of arrays: one array per field in and out. ``itemsize``
    is the struct's (C alignment, as NumPy's ``align=True``); ``packed_bytes`` the
    fields' without padding, as the tile state holds them; ``vector_itemsize`` the
    widest field's, which sets how many items a vector load moves.
    """

    fields: tuple[DType, ...]
    name: str = field(init=False)
    is_float: bool = field(default=False, init=False)
    is_signed: bool = field(default=False, init=False)
    numpy: np.dtype = field(init=False, compare=False, repr=False)
    itemsize: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not 1 <= len(self.fields) <= 4:
            raise TypeError(f"a tuple value has 1 to 4 fields, not {len(self.fields)}")
        object.__setattr__(self, "name", "(" + ", ".join(d.name for d in self.fields) + ")")
        layout = np.dtype([(f"f{k}", d.numpy) for k, d in enumerate(self.fields)], align=True)
        object.__setattr__(self, "numpy", layout)
        object.__setattr__(self, "itemsize", layout.itemsize)

    @property
    def vector_itemsize(self) -> int:
        return max(d.itemsize for d in self.fields)

    @property
    def packed_bytes(self) -> int:
        return sum(d.itemsize for d in self.fields)

    @property
    def has_f64(self) -> bool:
        return any(d.has_f64 for d in self.fields)


def value_type(dtype: object) -> DType | Record:
    """A scalar type (as :func:`lookup`), or a :class:`Record` for a tuple of types or its name."""
    if isinstance(dtype, Record):
        return dtype
    if isinstance(dtype, str) and dtype.startswith("("):
        dtype = tuple(part.strip() for part in dtype.strip("()").split(",") if part.strip())
    if isinstance(dtype, (tuple, list)):
        return Record(tuple(lookup(d) for d in dtype))
    return lookup(dtype)


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
