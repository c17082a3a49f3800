"""Lone UTF-16 surrogates from JSON and YAML escapes, replaced where they enter.

``json.loads('"\\ud800"')`` and ``yaml.safe_load('"\\ud800"')`` return a Python string holding a
lone surrogate (U+D800–U+DFFF without its pair). Such a string cannot be encoded as UTF-8: the
first terminal line, JSON report or pandas string column holding it raises
``UnicodeEncodeError``. The readers of JSON/JSONL logs and topology descriptions pass what they
parsed through :func:`clean_parsed`, which replaces each lone surrogate by U+FFFD (``�``), the
replacement character the text readers already use for bytes that are not UTF-8. A valid pair
(``\\ud83d\\ude00``) is kept as the one character it encodes.
"""

from __future__ import annotations

import re
from typing import Any

_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F]")
"""A JSON (``\\udXXX``) or YAML (``\\udXXX``, ``\\U0000dXXX``) escape of a surrogate code point."""
_LONE = re.compile("[\ud800-\udfff]")


def fix(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (pairs joined into one character)."""
    if not _LONE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _fix_any(obj: Any) -> Any:
    if isinstance(obj, str):
        return fix(obj)
    if isinstance(obj, dict):
        return {_fix_any(k): _fix_any(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_fix_any(x) for x in obj]
    return obj


def clean_parsed(obj: Any, text: str) -> Any:
    """``obj`` parsed from ``text`` (JSON or YAML) with lone surrogates in its keys and strings
    replaced (:func:`fix`); ``obj`` itself, unwalked, when ``text`` escapes no surrogate.

    Raises:
        RecursionError: ``obj`` nested about as deep as Python's recursion limit (callers
            already refuse such documents as nested too deeply).
    """
    if "\\" not in text or not _ESCAPE.search(text):
        return obj
    return _fix_any(obj)
