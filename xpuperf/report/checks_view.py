"""Checks and their evidence, shared by the terminal, Markdown and HTML renderers (issue 16).

Presentation only: what the analyses decided is in :class:`~xpuperf.findings.Check` records; this
module words them. ``clean`` is the only status that may read as an all-clear.
"""

from __future__ import annotations

from collections.abc import Sequence

from xpuperf.findings import Check, CheckStatus

LABEL = {
    CheckStatus.PROBLEM: "problem",
    CheckStatus.CLEAN: "clean",
    CheckStatus.NOT_CHECKED: "not checked",
}
ORDER = {CheckStatus.PROBLEM: 0, CheckStatus.CLEAN: 1, CheckStatus.NOT_CHECKED: 2}


def ordered(checks: Sequence[Check]) -> list[Check]:
    """Problems first, then clean checks, then those without evidence (stable within each)."""
    return sorted(checks, key=lambda c: ORDER[c.status])


def counts_line(checks: Sequence[Check]) -> str:
    """``"2 problem(s) · 5 clean · 4 not checked (no evidence)"``."""
    n = {s: sum(1 for c in checks if c.status is s) for s in CheckStatus}
    return (
        f"{n[CheckStatus.PROBLEM]} problem(s) · {n[CheckStatus.CLEAN]} clean · "
        f"{n[CheckStatus.NOT_CHECKED]} not checked (no evidence)"
    )


def rows(checks: Sequence[Check]) -> list[list[str]]:
    """``[status, title, evidence or what is missing, codes]`` per check, ordered."""
    return [[LABEL[c.status], c.title, c.evidence, ", ".join(c.codes)] for c in ordered(checks)]


def straggler_verdict(checks: Sequence[Check], default: str) -> str:
    """What to print where a straggler table is empty: the all-clear ``default`` only when the
    ``steps.stragglers`` check is clean, else why no verdict could be given."""
    for c in checks:
        if c.name == "steps.stragglers" and c.status is CheckStatus.NOT_CHECKED:
            return f"not checked: {c.evidence}"
    return default
