"""Complex input: sums as real scans of the parts, complex64 products on 64-bit words.

The kernels scan no complex type. Complex addition adds the parts, so the real and
imaginary parts scanned apart give the bits of a complex scan that adds in the same
order; a complex64 value fits a uint64 word, which the built-in ``CMUL64`` monoid
multiplies. complex128 products would need 16-byte values.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from .. import backends
from ..operators import CMUL64, Monoid
from . import conventions


def is_complex(x: Any, dtype: Any) -> bool:
    return np.dtype(x.dtype).kind == "c" or (dtype is not None and np.dtype(dtype).kind == "c")


def by_parts(x: Any, op: str | Monoid, dtype: Any, out: Any, nan: float | None, each: Any) -> Any:
    """A complex scan or reduction from ``each(part, op, dtype)`` over real arrays.

    Complex addition adds the parts, so the real and imaginary parts scanned apart
    give the bits of a complex scan that adds in the same order. A complex64 product
    combines the parts: it runs on the values' bits as uint64 words with the built-in
    ``CMUL64`` monoid. complex128 products need 16-byte values, which the kernels do
    not have (tuple-valued scans).
    """
    if op not in ("add", "mul"):
        raise TypeError(f"complex input takes op='add' or 'mul', not {op!r}")
    result = np.dtype(dtype) if dtype is not None else np.result_type(x.dtype, np.complex64)
    if result.kind != "c":
        raise TypeError(f"cannot scan complex input in dtype {result}: name a complex dtype")
    if op == "mul" and result != np.complex64:
        raise TypeError(
            f"complex products in {result} need 16-byte values (tuple-valued scans, not in jitscan "
            "yet); complex64 products work (dtype=np.complex64)"
        )
    conventions.check_out_cast(result, out)
    if nan is not None and np.dtype(x.dtype).kind in "fc":
        x = conventions.replace_nan(x, nan)  # a value with a NaN part counts as zero (one), as in NumPy
    if op == "mul":
        words = contiguous(x.astype(result) if x.dtype != result else x).view(np.uint64)
        res = as_complex64(each(words, CMUL64, np.dtype(np.uint64)))
    elif np.dtype(x.dtype).kind == "c":
        part_dtype = np.dtype("float32") if result == np.complex64 else np.dtype("float64")
        res = from_parts(each(x.real, "add", part_dtype), each(x.imag, "add", part_dtype), result)
    else:
        res = each(x, "add", np.dtype(result.char.lower())).astype(result)
    return res if out is None else conventions.put(out, res)


def from_parts(re: Any, im: Any, dtype: np.dtype) -> Any:
    """The complex values with real parts ``re`` and imaginary parts ``im``, set part by part.

    Not ``re + 1j * im``: that turns an infinite imaginary part into a NaN real one and
    loses the sign of a zero real part.
    """
    if isinstance(re, np.generic):
        return dtype.type(complex(re, im))
    if isinstance(re, np.ndarray) or backends.for_array(re).name != "opencl":
        xp = np if isinstance(re, np.ndarray) else importlib.import_module(type(re).__module__.split(".")[0])
        res = xp.empty(re.shape, dtype)
        res.real[...] = re
        res.imag[...] = im
        return res
    b = backends.for_array(re)  # PyOpenCL's .real is a copy: set the parts on the host
    return b.to_device(from_parts(b.to_host(re), b.to_host(im), dtype), b.queue_of(re))


def contiguous(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return np.ascontiguousarray(x)
    return backends.for_array(x).contiguous(x)


def as_complex64(words: Any) -> Any:
    """uint64 words (an array or a scalar) as the complex64 values they hold."""
    if isinstance(words, np.generic):
        return np.array(words).view(np.complex64)[()]
    b = backends.for_array(words)
    if words.ndim == 0 and b.name == "opencl":  # PyOpenCL views no 0-d array
        return b.to_device(b.to_host(words).view(np.complex64), b.queue_of(words))
    return words.view(np.complex64)
