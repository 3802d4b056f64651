"""Exceptions raised by jitscan.

Each pickles (a worker process's error reaches its client whole): its attributes are
plain values, and what it is raised from is too.
"""

from __future__ import annotations


class JitscanError(RuntimeError):
    """Base class of the errors jitscan raises at run time."""


class CompileError(JitscanError, ValueError):
    """A rendered kernel did not compile.

    The message names the program, the compiler's first error and the generated line
    it points at (for a user monoid, the line with its ``combine`` expression); the
    whole compiler log is the exception's ``__cause__``, a RuntimeError of its text
    (not the driver's exception, which may not pickle: the error crosses processes
    whole, as dask.distributed sends a worker's error with its cause).
    """


class DeadlockError(JitscanError):
    """A look-back scan waited on a predecessor past its watchdog limit.

    Decoupled look-back needs a forward-progress guarantee. When the device does
    not give one (or simulated blocking withholds a posting), the kernel stops
    waiting, flags the deadlock, and jitscan raises this instead of hanging.

    Attributes
    ----------
    cause : {"spins", "time"}
        What fired the watchdog: the spin limit ran out (the wait may only have been
        long: raise ``spin_limit``), or a predecessor posted nothing for ``spin_timeout``
        seconds (the device did not run it: no forward-progress guarantee).
    waited : float or None
        How long the wait that fired it lasted, in seconds; None where the device has
        no clock the kernel can read.
    """

    def __init__(self, message: str, cause: str = "spins", waited: float | None = None) -> None:
        super().__init__(message)
        self.cause = cause
        self.waited = waited


class DeviceMemoryError(JitscanError, MemoryError):
    """A buffer the call needs is larger than the device allocates, or than its free memory.

    The message names the buffer's size, the device's limit and how to scan the input in
    pieces instead (a Dask array of smaller chunks, or calls carrying ``initial=``); the
    driver's own error is the ``__cause__``.
    """


class BackendUnavailableError(JitscanError):
    """The requested backend cannot run here (package or device missing)."""
