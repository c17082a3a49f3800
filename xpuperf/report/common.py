"""Shared by every renderer: the schema name of ``xpuperf analyze`` documents and :func:`safe`.

A leaf module (it imports no other renderer), so that renderers may use each other's output
without importing each other both ways.
"""

from __future__ import annotations

import re

from rich.markup import escape

ANALYZE_SCHEMA = "xpuperf.analyze/1"
"""``schema`` of the JSON document ``xpuperf analyze`` writes (report/json_report.py)."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def safe(text: object) -> str:
    """``text`` for rich markup: control characters (ANSI escapes, newlines) → ``?``, markup
    brackets escaped. Every string that comes from a log or a topology file goes through it."""
    return escape(_CONTROL.sub("?", str(text)))
