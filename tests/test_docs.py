"""Docs stay true to the code: every accepted column alias and finding code is documented."""

from __future__ import annotations

from pathlib import Path

from xpuperf.findings import CODES
from xpuperf.readers.columns import ALIASES

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_every_alias_is_in_docs_analyze() -> None:
    text = (DOCS / "analyze.md").read_text(encoding="utf-8")
    for field, names in ALIASES.items():
        row = next((ln for ln in text.splitlines() if ln.startswith(f"| `{field}` |")), None)
        assert row is not None, field
        for name in names:
            assert f" {name}," in row or f" {name} |" in row, (field, name)


def test_analysis_finding_codes_are_documented() -> None:
    text = (DOCS / "analyze.md").read_text(encoding="utf-8")
    for code in CODES:
        if code[2] in "1234":
            assert code in text, code
