"""``-`` among the LOGS of ``xpuperf analyze``: the log comes from standard input.

People pipe what they have (``kubectl logs POD | xpuperf analyze -``, ``ssh node cat log |
…``). The stream is copied, in blocks, to a file named ``stdin`` in a private temporary folder
that is removed when the process ends; that file is then read like any other log (format by
content). Nothing is held in memory beyond one block.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO

from xpuperf.errors import UsageError

STDIN = "-"
"""The LOGS argument that stands for standard input."""
MAX_STDIN_BYTES = 2 << 30
"""More than this on standard input (2 GiB) is refused: `< /dev/zero` never ends."""
BLOCK = 1 << 20


def with_stdin(logs: list[str], stream: BinaryIO | None = None) -> list[str]:
    """``logs`` with ``-`` replaced by the path of a file holding standard input.

    Args:
        logs: the LOGS arguments.
        stream: the binary stream to read (default ``sys.stdin.buffer``).

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
                "'-' reads the log from standard input, but nothing is piped in (stdin is a "
                "terminal): pipe a log in, e.g. `kubectl logs POD | xpuperf analyze -`"
            )
        stream = sys.stdin.buffer
    folder = Path(tempfile.mkdtemp(prefix="xpuperf-stdin-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / "stdin"
    total = 0
    with path.open("wb") as out:
        while block := stream.read(BLOCK):
            if total == 0 and not block.strip(b"\x00"):
                raise UsageError("'-': standard input starts with NUL bytes only: not a log")
            total += len(block)
            if total > MAX_STDIN_BYTES:
                raise UsageError(
                    f"'-': more than {MAX_STDIN_BYTES >> 30} GiB on standard input: save the log "
                    "to a file and name it (or keep a window of the run)"
                )
            out.write(block)
    if path.stat().st_size == 0:
        raise UsageError("'-': standard input was empty (the command before the | printed nothing)")
    return [str(path) if a == STDIN else a for a in logs]
