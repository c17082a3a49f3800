"""Markdown renderer (CI job summaries) and GitHub workflow annotations.

:func:`render_markdown` writes a short GitHub-flavoured summary of an analysis: a headline table,
the stragglers and the findings, capped so the text stays well under GitHub's 1 MiB limit for
``$GITHUB_STEP_SUMMARY`` (:data:`MAX_BYTES`). Every string from a log is escaped: GitHub renders
inline HTML in Markdown, so ``<``, ``>`` and ``&`` become entities and table/markup characters are
backslash-escaped.

:func:`github_annotations` turns the top findings into workflow commands
(``::warning title=XP101::rank 5 …``) with the data and property escapes GitHub defines, so a log
line cannot inject another command.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from xpuperf.analysis.results import AnalyzeResult
from xpuperf.report.checks_view import counts_line, straggler_verdict
from xpuperf.report.checks_view import rows as check_rows
from xpuperf.report.figures import pct, summary_rows

if TYPE_CHECKING:
    from xpuperf.compare import CompareResult

MAX_BYTES = 512 * 1024
MAX_FINDINGS = 30
MAX_STRAGGLERS = 20
MAX_ANNOTATIONS = 10

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_ANNOTATION_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def md_escape(s: object) -> str:
    """Escape a string for a Markdown table cell: HTML entities, markup characters, newlines."""
    t = str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    t = _MD_SPECIAL.sub(r"\\\1", t)
    return " ".join(t.split())


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]
    return out


def _cap(lines: list[str], limit: int = MAX_BYTES) -> str:
    """Join lines, dropping trailing ones (with a note) if the text would exceed ``limit``."""
    out: list[str] = []
    size = 0
    for i, line in enumerate(lines):
        n = len(line.encode("utf-8")) + 1
        if size + n > limit - 200:
            out.append(f"\n*… {len(lines) - i} more line(s) cut to keep the summary small.*")
            break
        out.append(line)
        size += n
    return "\n".join(out) + "\n"


def render_markdown(result: AnalyzeResult, title: str = "xpuperf analyze") -> str:
    """A short Markdown summary: headline table, stragglers, findings (< :data:`MAX_BYTES`)."""
    lines = [f"## {md_escape(title)}", ""]
    lines += _table(["", "value"], [[k, v] for k, v in summary_rows(result)])
    sr = result.stragglers
    if sr is not None:
        lines += ["", "### Stragglers", ""]
        if sr.stragglers:
            rows = [
                [
                    x.kind,
                    "" if x.rank is None else str(x.rank),
                    x.node or "",
                    pct(x.slowdown),
                    f"{pct(x.slowdown_ci[0])} – {pct(x.slowdown_ci[1])}" if x.slowdown_ci else "",
                    pct(x.cost_fraction),
                ]
                for x in sr.stragglers[:MAX_STRAGGLERS]
            ]
            lines += _table(["kind", "rank", "node", "slowdown", "95% CI", "cost"], rows)
            if len(sr.stragglers) > MAX_STRAGGLERS:
                lines.append(f"\n*{len(sr.stragglers) - MAX_STRAGGLERS} more in the JSON.*")
        else:
            default = (
                f"No straggler ({sr.n_steps} steps, threshold {pct(sr.threshold)}, "
                f"work = {sr.work_source})."
            )
            lines.append(md_escape(straggler_verdict(result.checks, default)))
    if result.findings:
        lines += ["", "### Findings", ""]
        rows = [[f.severity.value, f.code, f.message] for f in result.findings[:MAX_FINDINGS]]
        lines += _table(["severity", "code", "message"], rows)
        if len(result.findings) > MAX_FINDINGS:
            lines.append(f"\n*{len(result.findings) - MAX_FINDINGS} more in the JSON.*")
    if result.checks:
        lines += ["", f"### Checks — {counts_line(result.checks)}", ""]
        lines += _table(["status", "check", "evidence", "codes"], check_rows(result.checks))
    return _cap(lines)


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github_annotations(result: AnalyzeResult, limit: int = MAX_ANNOTATIONS) -> list[str]:
    """Workflow commands for the top findings at warning or above (most severe first)."""
    out = []
    for f in result.findings:
        if f.severity.value == "info":
            continue
        level = _ANNOTATION_LEVEL[f.severity.value]
        title = _escape_property(f"{f.code} {f.title}")
        out.append(f"::{level} title={title}::{_escape_data(f.message)}")
        if len(out) >= limit:
            break
    return out


def render_compare_markdown(result: CompareResult) -> str:
    """A Markdown summary of a comparison: verdict, metric table, findings in one run only,
    breakdown and the ranks that changed most (< :data:`MAX_BYTES`)."""
    from xpuperf.report import html as h

    lines = [
        "## xpuperf compare",
        "",
        f"base: {md_escape(result.base.source)} · current: {md_escape(result.current.source)}",
        "",
        md_escape(h.compare_verdict(result)),
        "",
    ]
    t = h.compare_table(result)
    lines += _table(t["columns"], t["rows"])
    if result.findings:
        t = h.compare_findings_table(result)
        lines += ["", "### Findings in one run only", "", *_table(t["columns"], t["rows"])]
    if result.breakdown:
        t = h.compare_breakdown_table(result)
        lines += ["", "### Breakdown", "", *_table(t["columns"], t["rows"])]
    if result.ranks:
        t = h.compare_ranks_table(result)
        rows = t["rows"][:MAX_STRAGGLERS]
        lines += ["", "### Ranks that changed most (median work)", ""]
        lines += _table(t["columns"], rows)
    lines += ["", *[f"*{md_escape(n)}*" for n in result.notes]]
    return _cap(lines)


def render_plan_markdown(doc: dict) -> str:
    """A Markdown summary of a plan from its ``xpuperf.plan/1`` document (< :data:`MAX_BYTES`).

    The data of the HTML page's three figures as tables: speedup vs cards for the current
    settings and with each fix (``fix_curves``), the step-time breakdown vs cards (ms), and the
    ranked fixes; then the assumptions and notes. Every string is escaped (:func:`md_escape`).
    """
    from xpuperf.report import figures_plan as fp

    target = doc["target_cards"]
    w, c = doc["workload"], doc["cluster"]
    lines = [f"## xpuperf plan — {md_escape(w['name'])} on {md_escape(c['name'])}", ""]
    lines += _table(["", "value"], [[k, v] for k, v in fp.summary_rows(doc)])
    lines += _forecast_lines(doc)
    curves = doc.get("fix_curves")
    if curves:
        lines += ["", "### Speedup vs cards (current settings and with each fix)", ""]
        head = ["cards", "current", *[f"with {f['name']}" for f in curves["fixes"]]]
        rows = [
            [
                f"{n} (target)" if n == target else str(n),
                *[
                    "n/a" if y is None else f"{y:.3f}"
                    for y in (curves["current"][i], *[f["speedup"][i] for f in curves["fixes"]])
                ],
            ]
            for i, n in enumerate(curves["cards"])
        ]
        lines += _table(head, rows)
    t = fp.scaling_table(doc)
    lines += ["", "### Step time breakdown vs cards", ""]
    lines += _table(t["columns"], t["rows"])
    t = fp.fixes_table(doc)
    lines += ["", f"### Ranked fixes at {target} cards", ""]
    lines += _table(t["columns"], t["rows"]) if t["rows"] else [t["empty"]]
    notes = [
        *(doc.get("assumptions") or []),
        *(doc.get("notes") or []),
        *((curves or {}).get("notes") or []),
    ]
    if notes:
        lines += ["", *[f"- {md_escape(n)}" for n in notes]]
    return _cap(lines)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def _forecast_lines(doc: dict) -> list[str]:
    """``plan --measured``: the forecast with its 90 % interval, the measured rungs with their
    loss split, the fitted parameters and the fixes re-scored on the calibrated model, as tables
    (none without ``forecast`` in ``doc``; the terminal's :func:`render_forecast` in Markdown)."""
    if not doc.get("forecast"):
        return []
    lines = ["", "### Forecast from the measured ladder (90 % interval; times in ms per step)", ""]
    rows = []
    for p in doc["forecast"]:
        b = p["breakdown"]
        rows.append(
            [
                str(p["cards"]),
                f"{p['speedup']:.3f}",
                f"{p['low']:.3f} – {p['high']:.3f}",
                *map(_ms, (p["step_time_s"], b["comm_s"], b["sync_s"])),
                *map(_ms, (b["intra_node_s"], b["inter_node_s"])),
            ]
        )
    head = ["cards", "speedup", "90 % interval", "step", "comm", "sync", "intra-node", "inter-node"]
    lines += _table(head, rows)
    lines += ["", "Measured rungs (speedup = per-card throughput / one card alone):", ""]
    rows = [
        [
            str(r["cards"]),
            f"{r['speedup']:.3f}",
            f"{r['fitted_speedup']:.3f}",
            *map(_ms, (r["loss_s"], r["comm_s"], r["sync_s"], r["residual_s"])),
            r["source"],
        ]
        for r in doc["measured"]
    ]
    head = ["cards", "measured", "fitted", "loss", "comm", "sync", "residual", "source"]
    lines += _table(head, rows)
    rows = [
        [
            f["name"],
            f"{f['value'] * 1e3:.2f} ± {f['stderr'] * 1e3:.2f} ms",
            f["level"],
            f["meaning"],
        ]
        for f in doc.get("fitted") or []
    ]
    if rows:
        lines += ["", *_table(["fitted", "value", "level", "meaning"], rows)]
    fixes = sorted(doc.get("calibrated_fixes") or [], key=lambda f: -f["gain"])
    if fixes:
        rows = [
            [
                f["name"],
                f"{f['speedup_before']:.3f}",
                f"{f['speedup_after']:.3f}",
                f"{f['gain']:+.3f}",
            ]
            for f in fixes
        ]
        target = doc["target_cards"]
        lines += ["", f"Fixes on the calibrated model at {target} cards:", ""]
        lines += _table(["fix", "before", "after", "gain"], rows)
    notes = (doc.get("forecast_model") or {}).get("notes") or []
    lines += ["", *[f"- {md_escape(n)}" for n in notes]] if notes else []
    return lines
