"""Renderers of an ``analyze`` whose inputs hold no step records (``pipeline.NoSteps``):
NCCL debug logs and the job's stdout/stderr: terminal, JSON, Markdown and a self-contained HTML
page (the analyze report's machinery, :func:`xpuperf.report.html.render_page`). Presentation only.

The JSON is an ``xpuperf.analyze/1`` document whose step keys are null (``summary``,
``jitter``, ``stragglers``, ``breakdown``: a gate on them is refused, never passed), with
``findings`` (NCCL and framework), ``checks`` (every check, the step-log ones ``not_checked``),
``nccl`` (when an input has NCCL lines, :mod:`xpuperf.report.nccl_section`) and ``events``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console

from xpuperf import __version__
from xpuperf.report.checks_view import counts_line
from xpuperf.report.checks_view import rows as check_rows
from xpuperf.report.common import ANALYZE_SCHEMA, print_checks, print_findings
from xpuperf.report.markdown import _table, md_escape

if TYPE_CHECKING:
    from xpuperf.pipeline import NoSteps


def document(ns: NoSteps) -> dict[str, Any]:
    """The ``xpuperf.analyze/1`` document (see the module docstring)."""
    from xpuperf.report.nccl_section import to_dict as nccl_dict

    doc: dict[str, Any] = {
        "schema": ANALYZE_SCHEMA,
        "xpuperf_version": __version__,
        "sources": list(ns.sources),
        "summary": None,
        "jitter": None,
        "stragglers": None,
        "breakdown": None,
        "findings": [f.to_dict() for f in ns.findings],
        "checks": [c.to_dict() for c in ns.checks],
        "warnings": list(ns.notes),
    }
    if ns.nccl is not None:
        doc["nccl"] = nccl_dict(ns.nccl)  # type: ignore[arg-type]
    if ns.events is not None:
        ev = ns.events.to_dict()
        doc["events"] = {k: v for k, v in ev.items() if k not in ("findings", "checks")}
    return doc


def render_terminal(ns: NoSteps, console: Console) -> None:
    """The NCCL section (when there is one), the findings and the checks block."""
    console.print(
        f"[bold]xpuperf analyze[/] — {len(ns.sources)} file(s) without step records "
        "(NCCL debug logs, job output)"
    )
    if ns.nccl is not None:
        from xpuperf.report.nccl_section import render_nccl

        render_nccl(ns.nccl, console, findings=False, checks=False)  # type: ignore[arg-type]
    print_findings(ns.findings, console)
    print_checks(ns.checks, console)


def render_markdown(ns: NoSteps, title: str = "xpuperf analyze") -> str:
    """A Markdown summary: findings and checks."""
    lines = [f"## {md_escape(title)}", "", f"{len(ns.sources)} file(s) without step records.", ""]
    if ns.findings:
        rows = [[f.severity.value, f.code, f.message] for f in ns.findings]
        lines += ["### Findings", "", *_table(["severity", "code", "message"], rows), ""]
    lines += [f"### Checks — {counts_line(ns.checks)}", ""]
    lines += _table(["status", "check", "evidence", "codes"], check_rows(ns.checks))
    return "\n".join(lines) + "\n"


MAX_RINGS = 64
"""Ring rows of the HTML page at most (the JSON has them all)."""


def build_view(ns: NoSteps, doc: dict[str, Any]) -> dict[str, Any]:
    """The HTML view model: ``title``, ``summary`` (label/value pairs: files, and the NCCL
    library, version, ranks, hosts, network and transports when an input has NCCL lines),
    ``findings`` and ``checks`` tables ``{id, columns, rows}``, ``rings`` (or None),
    ``figures`` (none), ``notes``, ``sources``, ``warnings``."""
    from xpuperf.report.html import checks_table, findings_table  # the analyze page's tables

    summary = [["files", f"{len(ns.sources)} without step records (NCCL debug logs, job output)"]]
    nccl = doc.get("nccl")
    rings = None
    if nccl:
        summary.append(
            ["library", f"{nccl['library']} {nccl['version'] or '(version not printed)'}"]
        )
        hosts = nccl["hosts"]
        summary.append(["ranks / hosts", f"{nccl['ranks'] or '?'} rank(s) on {len(hosts)} host(s)"])
        summary.append(["network", ", ".join(nccl["network"]) or "not printed"])
        tr = [f"{t['scope']} {t['transport']} ×{t['connections']}" for t in nccl["transports"]]
        summary.append(["transports", ", ".join(tr) or "not printed"])
        rows = [
            [
                f"{r['channel']:02d}",
                " ".join(map(str, r["order"])),
                r["cross_node_edges"],
                r["min_cross_node_edges"],
            ]
            for r in nccl["rings"][:MAX_RINGS]
        ]
        if rows:
            rings = {"id": "tbl-rings", "columns": ["channel", "order", "node crossings", "min"],
                     "rows": rows}  # fmt: skip
            if len(nccl["rings"]) > MAX_RINGS:
                rings["note"] = f"{len(nccl['rings'])} rings; the first {MAX_RINGS} shown."
    return {
        "title": "xpuperf analyze — no step records",
        "summary": summary,
        "findings": findings_table(ns),
        "checks": checks_table(ns),
        "rings": rings,
        "figures": [],
        "notes": [],
        "sources": list(ns.sources),
        "warnings": list(ns.notes),
    }


def render_html(ns: NoSteps) -> str:
    """The self-contained HTML page: summary, findings, checks, NCCL rings; the
    ``xpuperf.analyze/1`` document (:func:`document`) embedded as ``#xpuperf-data``."""
    from xpuperf.report.html import render_page

    doc = document(ns)
    return render_page("nosteps.html.j2", build_view(ns, doc), doc)
