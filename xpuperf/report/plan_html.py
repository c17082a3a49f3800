"""HTML report of ``xpuperf plan``: one self-contained page from the ``xpuperf.plan/1`` document.

The page is built by the same machinery as the analyze report (:func:`xpuperf.report.html.
render_page`: jinja2 autoescape, plotly.js inlined once, JSON embedded with ``<``, ``>``, ``&``,
U+2028/9 escaped) from the JSON document alone, which is embedded as ``#xpuperf-data``. Figures
and tables: :mod:`xpuperf.report.figures_plan`.
"""

from __future__ import annotations

from typing import Any

from xpuperf.advice.plan import PlanResult
from xpuperf.report.figures_plan import (
    breakdown_figure,
    fixes_table,
    scaling_table,
    speedup_figure,
    summary_rows,
)
from xpuperf.report.html import render_page
from xpuperf.report.json_report import _clean
from xpuperf.report.plan_report import to_dict


def build_plan_view(doc: dict[str, Any]) -> dict[str, Any]:
    """The view model of a plan report from its ``xpuperf.plan/1`` document (plain data).

    Keys: ``title``, ``summary`` (label/value pairs), ``figures`` (``{id, title, note, data,
    layout}``), ``figure_ids``, ``fixes`` and ``scaling`` (tables ``{id, columns, rows}``),
    ``assumptions``, ``plan_notes`` (defaults that stood in for missing inputs; fixes left
    without a curve are noted under the speedup figure), ``notes`` (size reductions: none for a
    plan), ``sources``.
    """
    figs = [speedup_figure(doc), breakdown_figure(doc)]
    c, w = doc["cluster"], doc["workload"]
    return _clean(
        {
            "title": f"xpuperf plan — {w['name']} on {c['name']}",
            "target_cards": doc["target_cards"],
            "summary": [list(r) for r in summary_rows(doc)],
            "figures": figs,
            "figure_ids": [f["id"] for f in figs],
            "fixes": fixes_table(doc),
            "scaling": scaling_table(doc),
            "assumptions": list(doc.get("assumptions") or []),
            "plan_notes": list(doc.get("notes") or []),
            "notes": [],
            "sources": [],
        }
    )


def render_plan_html(result: PlanResult) -> str:
    """The self-contained HTML report of a plan (its JSON document embedded)."""
    doc = to_dict(result)
    return render_page("plan.html.j2", build_plan_view(doc), doc)
