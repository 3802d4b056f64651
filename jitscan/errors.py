"""Exceptions raised by jitscan."""

from __future__ import annotations


class JitscanError(RuntimeError):
    """Base class of the errors jitscan raises at run time."""


class CompileError(JitscanError, ValueError):
    """A rendered kernel did not compile.

    The message names the program, the compiler's first error and the generated line
    it points at (for a user monoid, the line with its ``combine`` expression); the
    whole compiler log is the exception's ``__cause__``.
    """


class DeadlockError(JitscanError):
    """A look-back scan waited on a predecessor past its watchdog limit.

    Decoupled look-back needs a forward-progress guarantee. When the device does
    not give one (or simulated blocking withholds a posting), the kernel stops
    waiting, flags the deadlock, and jitscan raises this instead of hanging.
    """


class BackendUnavailableError(JitscanError):
    """The requested backend cannot run here (package or device missing)."""
