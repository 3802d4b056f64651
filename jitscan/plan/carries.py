"""``initial=`` as a launch carries it: the carry of a prepared scan's call.

A mixin of :class:`~jitscan.plan.prepared.PreparedScan`: what a value to scan from becomes
(the bytes of a value, or a one-element device array the kernels copy in queue order),
refused where the variant, the deterministic form, the segmented mode or tuple values take
none, and kept for Python numbers, which a loop passes again and again.
"""

from __future__ import annotations

from math import copysign
from typing import Any

import numpy as np

from .. import variants
from ..kernels.spec import LaunchArgs
from . import arrays

#: the types of initial= whose carries a prepared scan keeps (NumPy's real scalars too,
#: which a loop over a dtype passes: ``dt.type(1)``), and how many it keeps
_NUMBERS = (int, float, bool)
_SCALARS = (np.bool_, np.integer, np.floating)
_CARRIES = 16


class Carries:
    """The carry part of a prepared scan. It reads the prepared scan's ``backend``,
    ``knobs``, ``segmented``, and its ``_variant``, ``_record``, ``_np`` and ``_carries``."""

    def _carry_of(self, initial: Any) -> bytes | Any:
        """``initial=`` as a launch carries it: its bytes, or a one-element device array.

        The bytes of a Python number or a NumPy real scalar are kept (up to ``_CARRIES`` of
        them): a loop that scans from the same value converts and checks it once.
        """
        t = type(initial)
        key = None
        if t in _NUMBERS or isinstance(initial, _SCALARS):
            # -0.0 == 0.0 and they hash alike, but carry other bytes: a float keys on its sign too
            floating = t is float or isinstance(initial, np.floating)
            key = (t, initial, copysign(1.0, initial) if floating else 0)
        if key is not None:
            made = self._carries.get(key)
            if made is not None:
                return made
        made = self._carry_made(initial)
        if key is not None and len(self._carries) < _CARRIES:
            self._carries[key] = made
        return made

    def carry_of(self, initial: Any) -> bytes | Any:
        """``initial=`` as :attr:`common` takes it (``common(x, out, carry_of(initial))``):
        see :meth:`_carry_of`; raises what the call with ``initial=`` raises."""
        return self._carry_of(initial)

    def _carry_made(self, initial: Any) -> bytes | Any:
        if not self._variant.takes_carry(self.knobs.get("deterministic")):
            raise variants.lacking(self._variant, "carry", self.knobs.get("deterministic"))
        if self.segmented in ("offsets", "rows"):
            # their first element starts a segment, which no carry reaches
            raise ValueError(
                f"initial= carries into a segmented scan up to its first head: give flags= (flags[0] == 0 "
                f"for a segment that goes on from before), not segments by {self.segmented}"
            )
        if self._record:
            raise ValueError("initial= takes one value; tuple values do not take one yet")
        value = arrays.initial_value(initial, self._np)
        if isinstance(value, np.generic):
            return value.tobytes()
        if not self.backend.owns(value):
            raise ValueError(f"initial= as a device array must be a {self.backend.name} array")
        return value

    def _carried(self, launch: LaunchArgs) -> np.generic:
        """The value ``launch`` carries, on the host (a reduction of nothing returns it)."""
        if launch.carry_from is not None:
            return arrays.to_host(launch.carry_from).reshape(-1)[0]
        return np.frombuffer(launch.carry, self._np)[0]
