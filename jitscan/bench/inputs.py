"""The data a bench scans: random values, and head flags of random segments."""

from __future__ import annotations

import numpy as np

#: bytes that rotating inputs should span, so that no run finds its input in L2
ROTATE_BYTES = 256 << 20
#: mean segment length of the segmented inputs (head flags)
SEGMENT_LENGTH = 10


def random_values(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    """``n`` random values: uniform in [-1, 1) for floats, small integers (no overflow worry) otherwise."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.uniform(-1, 1, n).astype(dt)
    return rng.integers(-1000 if dt.kind == "i" else 0, 1000, n).astype(dt)


def rotation(n: int, dtype: str) -> int:
    """How many input buffers of ``n`` elements span :data:`ROTATE_BYTES` (2 to 64)."""
    nbytes = n * np.dtype(dtype).itemsize
    return max(2, min(64, -(-ROTATE_BYTES // max(nbytes, 1))))


def head_flags(n: int, rng: np.random.Generator, mean_length: int = SEGMENT_LENGTH) -> np.ndarray:
    """uint8 segment-head flags, segments of mean length ``mean_length``; element 0 is a head."""
    flags = (rng.random(n) < 1.0 / mean_length).astype(np.uint8)
    if n:
        flags[0] = 1
    return flags


__all__ = ["ROTATE_BYTES", "SEGMENT_LENGTH", "head_flags", "random_values", "rotation"]
