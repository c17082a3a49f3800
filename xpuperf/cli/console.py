"""Rich consoles for the CLI: no emoji codes (a path with ``:100:`` stays a path), no
auto-highlighting, and stderr lines that do not wrap (one warning = one line).

Piped stdout (CI logs, ``| grep``, a file) is not hard-wrapped either: a message stays on one
line, so ``grep XP101`` finds the whole finding; tables are laid out :data:`PIPED_WIDTH` wide
(or ``$COLUMNS`` when set) instead of rich's 80 columns."""

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


PIPED_WIDTH = 160
"""Columns for tables when stdout is not a terminal and ``$COLUMNS`` is unset."""


def out_console(quiet: bool = False) -> Console:
    """Console for results on stdout; on a pipe or file, lines are not wrapped; ``quiet``
    (``-q``) prints nothing."""
    con = _Console(highlight=False, emoji=False, quiet=quiet)
    if not con.is_terminal:
        con.soft_wrap = True
        if not os.environ.get("COLUMNS", "").isdigit():
            con.width = PIPED_WIDTH
    return con


def err_console(quiet: bool = False) -> Console:
    """Console for warnings and notes on stderr; long lines are not wrapped; ``quiet`` (``-q``)
    prints nothing."""
    return Console(stderr=True, highlight=False, emoji=False, soft_wrap=True, quiet=quiet)
