"""Rich consoles for the CLI: no emoji codes (a path with ``:100:`` stays a path), no
auto-highlighting, and stderr lines that do not wrap (one warning = one line)."""

from __future__ import annotations

import os
import sys

from rich.console import Console


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """stdout closed early (``| head``): stop quietly with exit 0, not rich's exit 1
        (exit 1 means a gate failed)."""
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(0)


def out_console() -> Console:
    """Console for results on stdout."""
    return _Console(highlight=False, emoji=False)


def err_console() -> Console:
    """Console for warnings and notes on stderr; long lines are not wrapped."""
    return Console(stderr=True, highlight=False, emoji=False, soft_wrap=True)
