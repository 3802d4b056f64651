"""Models of the chained scans' tile-state protocol, checked without a GPU.

``protocol`` runs the protocol of ``kernels/src/tile_state.h`` and ``lookback.h`` as a
Numba-compiled state machine (``machine``) under fair, random and adversarial schedulers;
``tilestate.pml`` is a Promela model of a few tiles that SPIN checks exhaustively
(``spin`` runs it). ``hip`` compiles programs for AMD targets with clang-19 (CI's check of
the ROCm builds). None is imported by the scans themselves.
"""
