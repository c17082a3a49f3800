"""XP316 and the ``scaling.superlinear`` check of a scaling table: efficiency above 1.05.

Every multi-card row above it: the one-card row looks slow (it is every row's denominator).
Only some rows above it while the others are not: those rows disagree with the rest of the
table, which agrees with the one-card row — remeasure them; :mod:`.scaling_checks` then judges
efficiency on the other rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xpuperf.findings import Check, CheckStatus, Finding, Severity

if TYPE_CHECKING:
    from xpuperf.analysis.scaling_model import ScalingResult

SUPERLINEAR = 1.05
"""Efficiency above which a row is superlinear (XP316)."""


def _f(x: float) -> str:
    return f"{x:.3f}"


def _c(x: float) -> str:
    return f"{int(x)}" if float(x).is_integer() else f"{x:g}"


def _list(rows) -> str:
    """``1.406 at 16 cards (line 4), …``: the rows' efficiency, card count and line."""
    return ", ".join(
        f"{_f(x['efficiency'])} at {_c(x['cards'])} cards (line {int(x['line'])})"
        for _, x in rows.sort_values(["cards", "line"]).iterrows()
    )


def superlinear(res: ScalingResult, f: list[Finding], checks: list[Check]) -> None:
    """XP316: every multi-card row above 1.05 → the one-card row looks slow; only some → those
    rows disagree with the others (a slow one-card row would lift every row): remeasure them.
    Appends to ``f`` (findings) and ``checks``."""
    r = res.rows
    judged = r[r["efficiency"].notna() & (r["cards"] > 1)]
    over = judged[judged["efficiency"] > SUPERLINEAR]
    rest = judged[judged["efficiency"] <= SUPERLINEAR]
    title = "efficiency not above 1 (measurement sanity)"
    if over.empty:
        checks.append(Check("scaling.superlinear", title, CheckStatus.CLEAN,
                            f"no row above {SUPERLINEAR:.2f}"))  # fmt: skip
        return
    top = over.loc[over["efficiency"].idxmax()]
    data = {"cards": top["cards"], "efficiency": top["efficiency"], "threshold": SUPERLINEAR,
            "suspect": "one-card row" if rest.empty else "rows",
            "rows": [{"cards": float(x["cards"]), "efficiency": float(x["efficiency"]),
                      "line": int(x["line"])} for _, x in over.iterrows()]}  # fmt: skip
    if rest.empty:
        msg = (
            f"efficiency {_f(top['efficiency'])} at {_c(top['cards'])} cards (line "
            f"{int(top['line'])}) is above {SUPERLINEAR:.2f}: more than linear usually means "
            "the one-card run was slow (warm-up or data loading inside the measurement, another "
            "batch, memory pressure, a cache that fits only when the data is split); remeasure "
            "the one-card row the same way"
        )
        evidence = f"{len(over)} row(s) above {SUPERLINEAR:.2f}, no multi-card row at or below it"
    else:
        n = "row" if len(over) == 1 else "rows"
        msg = (
            f"efficiency {_list(over)} {'is' if len(over) == 1 else 'are'} above "
            f"{SUPERLINEAR:.2f} while the other rows are not "
            f"({_list(rest)}): the {n} {'is' if len(over) == 1 else 'are'} inconsistent with "
            "the other rows (a slow one-card row would lift every row) — remeasure that "
            f"{n} (another batch or sample count, a shorter or cached run, a misread figure); "
            "the efficiency check judges the other rows"
        )
        evidence = f"{len(over)} row(s) above {SUPERLINEAR:.2f}, inconsistent with the others"
    f.append(Finding("XP316", Severity.WARNING, msg, data))
    checks.append(Check("scaling.superlinear", title, CheckStatus.PROBLEM, evidence, ("XP316",)))
