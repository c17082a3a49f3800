"""The one error hierarchy of xpuperf.

Every error a user can cause is an :class:`XpuperfError` subclass carrying its exit code; the CLI's
``main()`` is the only place that catches them and prints one line to stderr (style.md rule 1).

Exit codes: 0 ran fine, 1 a gate the user asked for failed, 2 usage or input error,
3 internal error.
"""

from __future__ import annotations

import errno
from pathlib import Path

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3


class XpuperfError(Exception):
    """Base class of all xpuperf errors; ``exit_code`` is what the CLI exits with."""

    exit_code = EXIT_INTERNAL


class InputError(XpuperfError):
    """Bad input: a file that cannot be read, a malformed log, an unusable column layout.

    The message is one line: what is wrong, where (``file:line`` when known), what to do.

    Args:
        message: what is wrong and what to do.
        path: the offending file, if any.
        line: 1-based line number in ``path``, if known.
    """

    exit_code = EXIT_INPUT

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        return f"{where}{self.message}"


class EmptyLogError(InputError):
    """A step log with no rows at all (an empty file, a header only): beside other inputs it is
    skipped with a warning, alone it is an error (exit code 2)."""


class UsageError(XpuperfError):
    """Bad options or arguments (exit code 2)."""

    exit_code = EXIT_INPUT


class GateFailedError(XpuperfError):
    """A gate the user asked for (``--fail-on``) failed (exit code 1)."""

    exit_code = EXIT_GATE_FAILED


PATH_REMEDIES: dict[int, str] = {
    errno.ENAMETOOLONG: "shorten the file name (at most 255 bytes per part)",
    errno.ENOENT: "check the path",
    errno.ENOTDIR: "a part of the path is a file, not a folder; check the path",
    errno.EISDIR: "it is a folder: name the file inside it",
    errno.ELOOP: "fix or remove the looping symbolic link",
    errno.EFBIG: "the file is too large for this file system; write elsewhere",
    errno.EINVAL: "check the path (a name this file system refuses)",
    errno.EACCES: "check its permissions",
    errno.EPERM: "check its permissions",
}
"""What to do about a path the OS refused, by errno: the user's setup, exit 2 (the CLI's last
resort in ``cli/app.py`` and :func:`read_hint`)."""


def read_hint(e: OSError) -> str:
    """What to do about a file that could not be read, as ``"; …"`` to append to a message
    (:data:`PATH_REMEDIES`; else check the path)."""
    return "; " + PATH_REMEDIES.get(e.errno or 0, "check the path")
