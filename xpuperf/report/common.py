"""Shared by every renderer: the schema name of ``xpuperf analyze`` documents, :func:`safe`, and
the findings and checks blocks of the terminal renderers (:func:`print_findings`,
:func:`print_checks`).

A leaf module (it imports no other renderer), so that renderers may use each other's output
without importing each other both ways.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from xpuperf.findings import Check, Finding
from xpuperf.report.checks_view import counts_line, rows

ANALYZE_SCHEMA = "xpuperf.analyze/1"
"""``schema`` of the JSON document ``xpuperf analyze`` writes (report/json_report.py)."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def safe(text: object) -> str:
    """``text`` for rich markup: control characters (ANSI escapes, newlines) → ``?``, markup
    brackets escaped. Every string that comes from a log or a topology file goes through it."""
    return escape(_CONTROL.sub("?", str(text)))


SEV_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
CHECK_STYLE = {"problem": "yellow", "clean": "green", "not checked": "dim"}


def _plain(text: object) -> Text:
    """``text`` as rich Text (never read as markup), control characters → ``?``."""
    return Text(_CONTROL.sub("?", str(text)))


def _block(console: Console, rows: list[tuple[Text, str, Text]]) -> None:
    """Rows of (label, tag, message): one line each on a pipe (``soft_wrap``: grep finds a whole
    message); on a terminal a grid, so a wrapped message keeps its indent."""
    if console.soft_wrap:
        for label, tag, msg in rows:
            line = Text("  ") + label + Text(" " + tag + ("  " if tag else "")) + msg
            console.print(line)
        return
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=1)
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    for label, tag, msg in rows:
        grid.add_row("", label, tag, msg)
    console.print(grid)


def print_findings(findings: Sequence[Finding], console: Console) -> None:
    """The findings block: severity, code, message (value, threshold, remedy)."""
    if not findings:
        return
    console.print("[bold]findings[/]")
    rows = [
        (Text(f"{f.severity.value:<7}", style=SEV_STYLE.get(f.severity.value, "")), f.code,
         _plain(f.message))
        for f in findings
    ]  # fmt: skip
    _block(console, rows)


def print_checks(checks: Sequence[Check], console: Console) -> None:
    """The checks block: status, title and the evidence (or what is missing), codes."""
    if not checks:
        return
    console.print(f"[bold]checks[/] — {counts_line(checks)}")
    out = []
    for status, title, evidence, codes in rows(checks):
        tail = f" [{codes}]" if codes else ""
        out.append(
            (
                Text(f"{status:<11}", style=CHECK_STYLE[status]),
                "",
                _plain(f"{title}: {evidence}{tail}"),
            )
        )
    _block(console, out)
