"""``-`` among the LOGS of ``xpuperf analyze``: the log comes from standard input.

People pipe what they have (``kubectl logs POD | xpuperf analyze -``, ``ssh node cat log |
…``). The stream is copied, in blocks, to a file named ``<stdin>`` in a private temporary
folder that is removed when the process ends; that file is then read like any other log
(format by content). Nothing is held in memory beyond one block.

Messages, reports and error lines name the copy :data:`LABEL` (``<stdin>``), never its
temporary path: :func:`relabel` rewrites a result before it is rendered, :func:`shown` a line
of text (``main()`` passes every error line through it).
"""

from __future__ import annotations

import atexit
import dataclasses
import enum
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import Any, BinaryIO, TypeVar

from xpuperf.errors import UsageError

STDIN = "-"
"""The LOGS argument that stands for standard input."""
MAX_STDIN_BYTES = 2 << 30
"""More than this on standard input (2 GiB) is refused: `< /dev/zero` never ends."""
BLOCK = 1 << 20
LABEL = "<stdin>"
"""How messages and reports name what came from standard input."""
_COPIES: list[str] = []
"""Paths (as given and resolved) of the copies of standard input this process made."""
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def with_stdin(
    logs: list[str],
    stream: BinaryIO | None = None,
    *,
    what: str = "the log",
    example: str = "kubectl logs POD | xpuperf analyze -",
) -> list[str]:
    """``logs`` with ``-`` replaced by the path of a file holding standard input.

    Args:
        logs: the LOGS (or FILES) arguments.
        stream: the binary stream to read (default ``sys.stdin.buffer``).
        what: what standard input should hold, for the messages (``"the log"``).
        example: a command line that pipes it in, for the message when nothing is piped in.

    Raises:
        UsageError: ``-`` given twice, standard input is a terminal (nothing piped in), empty,
            NUL bytes only, or larger than :data:`MAX_STDIN_BYTES`.
    """
    if STDIN not in logs:
        return logs
    if logs.count(STDIN) > 1:
        raise UsageError("'-' (standard input) given more than once; give it once")
    if stream is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError(
                f"'-' reads {what} from standard input, but nothing is piped in (stdin is a "
                f"terminal): pipe it in, e.g. `{example}`"
            )
        stream = sys.stdin.buffer
    folder = Path(tempfile.mkdtemp(prefix="xpuperf-stdin-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / (LABEL if os.name == "posix" else "stdin")  # `<` is no file name on Windows
    _COPIES.extend(sorted({str(path), str(path.resolve())}, key=len, reverse=True))
    total = 0
    with path.open("wb") as out:
        while block := stream.read(BLOCK):
            if total == 0 and not block.strip(b"\x00"):
                raise UsageError(f"'-': standard input starts with NUL bytes only: not {what}")
            total += len(block)
            if total > MAX_STDIN_BYTES:
                raise UsageError(
                    f"'-': more than {MAX_STDIN_BYTES >> 30} GiB on standard input: save {what} "
                    "to a file and name it (or keep a window of the run)"
                )
            out.write(block)
    if path.stat().st_size == 0:
        raise UsageError("'-': standard input was empty (the command before the | printed nothing)")
    return [str(path) if a == STDIN else a for a in logs]


def reads_stdin(*params: str) -> Callable[[F], F]:
    """Mark a command function whose ``params`` take ``-`` for standard input; ``-`` in any
    other input parameter is refused before the command runs (``cli/app.py`` ``_guard_paths``)."""

    def mark(fn: F) -> F:
        fn.xpuperf_stdin = frozenset(params)  # type: ignore[attr-defined]
        return fn

    return mark


def shown(text: str) -> str:
    """``text`` with the path of each copy of standard input replaced by :data:`LABEL`, or by
    ``-`` where a suggested command names it (``xpuperf formats --explain - --pattern …``)."""
    for path in _COPIES:
        named = f"(?:{re.escape(shlex.quote(path))}|{re.escape(path)})"
        text = re.sub(rf"(xpuperf(?: [a-z-]+)+) {named}", r"\1 -", text).replace(path, LABEL)
    return text


def relabel(obj: T) -> T:
    """``obj`` (a result, a list of paths, …) naming each copy of standard input :data:`LABEL`.

    Strings and paths in it are rewritten by :func:`shown`: dataclass and other xpuperf objects
    in place, lists, tuples, sets and dicts as new containers, DataFrames in their text columns.
    Without a copy (no ``-`` given) ``obj`` is returned untouched.
    """
    return _relabel(obj, set()) if _COPIES else obj


def _relabel(obj: Any, seen: set[int]) -> Any:
    if isinstance(obj, enum.Enum):  # a str enum (Severity) stays itself
        return obj
    if isinstance(obj, str):
        return shown(obj)
    if isinstance(obj, PurePath):
        text = shown(str(obj))
        return obj if text == str(obj) else type(obj)(text)
    if obj is None or isinstance(obj, (bool, int, float, complex, bytes)) or id(obj) in seen:
        return obj
    seen.add(id(obj))
    if isinstance(obj, (list, set, frozenset)):
        return type(obj)(_relabel(x, seen) for x in obj)
    if isinstance(obj, tuple):
        items = [_relabel(x, seen) for x in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, dict):
        return type(obj)((_relabel(k, seen), _relabel(v, seen)) for k, v in obj.items())
    if type(obj).__name__ == "DataFrame":  # pandas, imported by whoever made it
        for col in obj.select_dtypes(include=["object", "string"]).columns:
            obj[col] = obj[col].map(lambda v: _relabel(v, seen))
        return obj
    if dataclasses.is_dataclass(obj) or type(obj).__module__.startswith("xpuperf."):
        names = (
            [f.name for f in dataclasses.fields(obj)]
            if dataclasses.is_dataclass(obj)
            else list(getattr(obj, "__dict__", {}))
        )
        for name in names:
            object.__setattr__(obj, name, _relabel(getattr(obj, name), seen))
    return obj
