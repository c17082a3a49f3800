"""HTML renderer: one self-contained, offline page per report (jinja2, autoescaped).

The page holds, in this order: the tables rendered by the template (every string escaped by
jinja2's autoescape), the analysis JSON document (:func:`xpuperf.report.json_report.to_dict`) and
the figures as ``<script type="application/json">`` blocks, plotly.js inlined once, and a short
script that draws the figures. Nothing is fetched: no CDN, no web fonts, no images by URL.

JSON embedded in ``<script>`` escapes ``<``, ``>``, ``&``, U+2028 and U+2029 as ``\\uXXXX``, so a
log line containing ``</script>`` cannot close the block (:func:`embed_json`).

The view model (:func:`build_view`, :func:`build_compare_view`) is plain data; tests assert on it.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

import jinja2
from markupsafe import Markup

from xpuperf import __version__
from xpuperf.analysis.pvalue import format_p
from xpuperf.analysis.results import AnalyzeResult
from xpuperf.report.checks_view import counts_line, straggler_verdict
from xpuperf.report.checks_view import rows as check_rows
from xpuperf.report.figures import (
    MAX_HEATMAP_COLS,
    MAX_POINTS,
    MAX_RANKS,
    MAX_TABLE_ROWS,
    TBL_FINDINGS,
    TBL_NODES,
    TBL_STRAGGLERS,
    breakdown_figure,
    fps_figure,
    heatmap_figure,
    num,
    pct,
    summary_rows,
)
from xpuperf.report.json_report import _clean, to_dict

TBL_CHECKS = "tbl-checks"

if TYPE_CHECKING:
    from xpuperf.compare import CompareResult

_JSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def embed_json(obj: Any) -> Markup:
    """``obj`` as JSON safe inside ``<script type="application/json">`` (see module docstring)."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for ch, esc in _JSON_ESCAPES.items():
        text = text.replace(ch, esc)
    return Markup(text)  # escaped above: no "<" can remain


@functools.lru_cache(maxsize=1)
def plotly_js() -> Markup:
    """The plotly.js bundle shipped with the plotly package, safe to inline in ``<script>``."""
    from plotly.offline import get_plotlyjs

    js = get_plotlyjs()
    js = js.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")
    return Markup(js)  # the package's own script, "</script" neutralised


@functools.lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("xpuperf.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_page(template: str, view: dict[str, Any], doc: dict[str, Any]) -> str:
    """Render ``template`` with the view model ``view`` and the embedded JSON document ``doc``."""
    return (
        _env()
        .get_template(template)
        .render(
            view=view,
            figures_json=embed_json(view["figures"]),
            doc_json=embed_json(doc),
            plotly_js=plotly_js(),
            version=__version__,
        )
    )


def straggler_table(result: AnalyzeResult) -> dict[str, Any]:
    """Straggler verdicts: kind, rank, node, slowdown with CI, score, cost, p-value, phase."""
    sr = result.stragglers
    cols = ["kind", "rank", "node", "slowdown", "95% CI", "score", "cost", "p-value", "phase"]
    if sr is None:
        return {"id": TBL_STRAGGLERS, "columns": cols, "rows": [], "empty": "not analysed"}
    score = {}
    if "score" in sr.per_rank.columns:
        score = dict(zip(sr.per_rank["rank"], sr.per_rank["score"], strict=False))
    rows = []
    for x in sr.stragglers[:MAX_TABLE_ROWS]:
        ci = f"{pct(x.slowdown_ci[0])} – {pct(x.slowdown_ci[1])}" if x.slowdown_ci else ""
        rows.append(
            [
                x.kind,
                "" if x.rank is None else str(x.rank),
                x.node or "",
                pct(x.slowdown),
                ci,
                num(score.get(x.rank), ".3f") if x.rank is not None else "",
                pct(x.cost_fraction),
                "" if x.p_value is None else format_p(x.p_value),
                x.slow_phase or "",
            ]
        )
    empty = straggler_verdict(
        result.checks,
        f"No straggler: no rank's work exceeds the median rank by more than "
        f"{pct(sr.threshold)} ({sr.n_steps} steps, work = {sr.work_source}).",
    )
    return {"id": TBL_STRAGGLERS, "columns": cols, "rows": rows, "empty": empty}


def node_table(result: AnalyzeResult) -> dict[str, Any] | None:
    """Per-node aggregation of the per-rank straggler table; None without node names."""
    sr = result.stragglers
    if sr is None or "node" not in sr.per_rank.columns or sr.per_rank["node"].isna().all():
        return None
    pr = sr.per_rank
    if len(pr) < 2 or pr["slowdown"].isna().all():  # one rank: no slowdown to compare
        return None
    rows = []
    for node, g in pr.groupby(pr["node"].fillna("?"), sort=True):
        worst = g.loc[g["slowdown"].astype(float).fillna(float("-inf")).idxmax()]
        rows.append(
            (
                float(worst["slowdown"]),
                [
                    str(node),
                    str(len(g)),
                    num(float(g["median_work_s"].median()), ".4f", "s"),
                    f"rank {int(worst['rank'])}",
                    pct(float(worst["slowdown"])),
                    str(int((g["slowdown"] > sr.threshold).sum())),
                    num(float(g["median_comm_s"].median()), ".4f", "s")
                    if "median_comm_s" in g
                    else "n/a",
                ],
            )
        )
    rows.sort(key=lambda r: -r[0])
    cols = ["node", "ranks", "median work", "slowest rank", "its slowdown", "above threshold"]
    cols.append("median comm")
    out = {"id": TBL_NODES, "columns": cols, "rows": [r for _, r in rows[:MAX_TABLE_ROWS]]}
    if len(rows) > MAX_TABLE_ROWS:
        out["note"] = f"{len(rows)} nodes; the {MAX_TABLE_ROWS} slowest shown."
    return out


def findings_table(result: AnalyzeResult) -> dict[str, Any]:
    """Findings, most severe first: severity, code, title, message (``result``: anything with
    ``findings``, e.g. ``pipeline.NoSteps`` too)."""
    return {
        "id": TBL_FINDINGS,
        "columns": ["severity", "code", "title", "message"],
        "rows": [[f.severity.value, f.code, f.title, f.message] for f in result.findings],
    }


def checks_table(result: AnalyzeResult) -> dict[str, Any]:
    """Every check: status (problem / clean / not checked), title, evidence, codes (``result``:
    anything with ``checks``)."""
    return {
        "id": TBL_CHECKS,
        "columns": ["status", "check", "evidence", "codes"],
        "rows": check_rows(result.checks),
        "note": counts_line(result.checks) if result.checks else "",
    }


def build_view(
    result: AnalyzeResult,
    *,
    max_points: int = MAX_POINTS,
    max_cols: int = MAX_HEATMAP_COLS,
    max_ranks: int = MAX_RANKS,
) -> dict[str, Any]:
    """The whole view model of an analyze report (JSON-serialisable).

    Keys: ``title``, ``summary`` (label/value pairs), ``figures`` (list of ``{id, title, note,
    data, layout}``, drawn by plotly.js), ``figure_ids``, ``stragglers``, ``nodes`` (or None),
    ``findings`` and ``checks`` (tables: ``{id, columns, rows}``), ``notes`` (every size
    reduction applied), ``sources``, ``warnings``.
    """
    figs = [
        f
        for f in (
            fps_figure(result, max_points),
            heatmap_figure(result, max_cols, max_ranks),
            breakdown_figure(result, max_ranks),
        )
        if f is not None
    ]
    return _clean(
        {
            "title": f"xpuperf analyze — {result.summary.ranks} rank(s)",
            "summary": [list(r) for r in summary_rows(result)],
            "figures": figs,
            "figure_ids": [f["id"] for f in figs],
            "stragglers": straggler_table(result),
            "nodes": node_table(result),
            "findings": findings_table(result),
            "checks": checks_table(result),
            "notes": [f["note"] for f in figs if f["note"]],
            "sources": list(result.sources),
            "warnings": list(result.read_warnings),
        }
    )


def render_html(result: AnalyzeResult) -> str:
    """The self-contained HTML report of one analysis."""
    return render_page("analyze.html.j2", build_view(result), to_dict(result))


FIG_COMPARE_STEPS = "fig-compare-steps"
FIG_COMPARE_DIST = "fig-compare-dist"
TBL_COMPARE = "tbl-compare"
_SIDE_COLORS = {"base": "#9d9d9d", "current": "#4c78a8"}


def _fmt_value(x: float | None, unit: str, kind: str) -> str:
    if x is None:
        return "n/a"
    if kind == "abs":
        return pct(x)
    return num(x, ",.1f" if abs(x) >= 100 else ".4g", unit)


def _fmt_change(m: Any) -> str:
    if m.change is None:
        return "n/a"
    return f"{100 * m.change:+.1f} pts" if m.kind == "abs" else f"{m.change:+.2%}"


def compare_table(result: CompareResult) -> dict[str, Any]:
    """The per-metric table: metric, base, current, change, 95 % CI, p-value, verdict."""
    rows = []
    for m in result.metrics:
        ci = f"{m.ci[0]:+.2%} – {m.ci[1]:+.2%}" if m.ci else ""
        rows.append(
            [
                m.label,
                _fmt_value(m.base, m.unit, m.kind),
                _fmt_value(m.current, m.unit, m.kind),
                _fmt_change(m),
                ci,
                "" if m.p_value is None else format_p(m.p_value, m.p_floor),
                m.verdict,
            ]
        )
    cols = ["metric", "base", "current", "change", "95% CI", "p-value", "verdict"]
    return {"id": TBL_COMPARE, "columns": cols, "rows": rows}


TBL_COMPARE_FINDINGS = "tbl-compare-findings"
TBL_COMPARE_RANKS = "tbl-compare-ranks"
TBL_COMPARE_BREAKDOWN = "tbl-compare-breakdown"


def compare_findings_table(result: CompareResult) -> dict[str, Any]:
    """Findings in one run only: change (new / gone), code, subject, cost, message."""
    rows = [
        [
            f.change,
            f.code,
            f.subject,
            "" if f.cost_fraction is None else f"{pct(f.cost_fraction)} {f.cost_of}",
            f.message,
        ]
        for f in result.findings[:MAX_TABLE_ROWS]
    ]
    cols = ["change", "code", "subject", "cost", "message"]
    return {"id": TBL_COMPARE_FINDINGS, "columns": cols, "rows": rows}


def compare_ranks_table(result: CompareResult) -> dict[str, Any]:
    """Per-rank median work base vs current, largest change first (at most MAX_TABLE_ROWS)."""

    def sec(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.4f} s"

    rows = [
        [
            str(r["rank"]),
            "" if r["node"] is None else str(r["node"]),
            sec(r["base_work_s"]),
            sec(r["current_work_s"]),
            "n/a" if r["change"] is None else f"{r['change']:+.1%}",
            "n/a" if r["current_slowdown"] is None else f"{r['current_slowdown']:+.1%}",
        ]
        for r in result.ranks[:MAX_TABLE_ROWS]
    ]
    cols = ["rank", "node", "base work", "current work", "change", "current vs median rank"]
    return {"id": TBL_COMPARE_RANKS, "columns": cols, "rows": rows}


def compare_breakdown_table(result: CompareResult) -> dict[str, Any]:
    """Phase shares and seconds per step, base vs current."""

    def val(f: float | None, s: float | None) -> str:
        return "n/a" if f is None else pct(f) + ("" if s is None else f" ({s:.4f} s)")

    rows = []
    for r in result.breakdown:
        fb, fc = r["base_fraction"], r["current_fraction"]
        change = "n/a" if fb is None or fc is None else f"{100 * (fc - fb):+.1f} pts"
        rows.append([r["phase"], val(fb, r["base_s"]), val(fc, r["current_s"]), change])
    cols = ["phase", "base share (s/step)", "current share (s/step)", "change"]
    return {"id": TBL_COMPARE_BREAKDOWN, "columns": cols, "rows": rows}


def compare_verdict(result: CompareResult) -> str:
    """``regression: …`` or ``no regression detected``, then the new findings, if any."""
    regress = [m.label for m in result.regressions()]
    text = "regression: " + ", ".join(regress) if regress else "no regression detected"
    new = [f.describe().removeprefix("new ") for f in result.findings if f.change == "new"]
    if new:
        text += "; new findings: " + "; ".join(new[:5]) + (" …" if len(new) > 5 else "")
    return text


def compare_figures(result: CompareResult, max_points: int = MAX_POINTS) -> list[dict[str, Any]]:
    """Steady step time of both runs over steps, and their distributions (box plots)."""
    from xpuperf.report.figures import _layout, minmax_indices

    line, box = [], []
    for side in (result.base, result.current):
        if side.step_time_s is None:
            continue
        y = side.step_time_s
        idx = minmax_indices(y, max_points)
        color = _SIDE_COLORS[side.label]
        line.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": side.label,
                "x": (idx + 1).tolist(),
                "y": [round(float(v), 6) for v in y[idx]],
                "line": {"color": color, "width": 1.3},
            }
        )
        box.append(
            {
                "type": "box",
                "name": side.label,
                "y": [round(float(v), 6) for v in y[minmax_indices(y, max_points)]],
                "marker": {"color": color},
                "boxmean": True,
            }
        )
    if not line:
        return []
    t1 = "Steady step time over steps: base vs current"
    t2 = "Distribution of steady step times (Mann–Whitney test over these)"
    return [
        {
            "id": FIG_COMPARE_STEPS,
            "title": t1,
            "note": "",
            "data": line,
            "layout": _layout(t1, "steady step #", "step time (s)", height=380),
        },
        {
            "id": FIG_COMPARE_DIST,
            "title": t2,
            "note": "",
            "data": box,
            "layout": _layout(t2, "", "step time (s)", height=380, showlegend=False),
        },
    ]


def build_compare_view(result: CompareResult) -> dict[str, Any]:
    """The view model of a compare report (plain data, like :func:`build_view`)."""
    figs = compare_figures(result)
    return _clean(
        {
            "title": "xpuperf compare — base vs current",
            "verdict": compare_verdict(result),
            "findings": compare_findings_table(result),
            "ranks": compare_ranks_table(result),
            "breakdown": compare_breakdown_table(result),
            "sides": [[s.label, s.source, s.series_from] for s in (result.base, result.current)],
            "table": compare_table(result),
            "figures": figs,
            "figure_ids": [f["id"] for f in figs],
            "caveats": list(result.notes),
            "notes": [],
            "method": (
                "Tested over the steady steps of both runs: medians by two-sided Mann–Whitney U, "
                "p99 by the exact bootstrap of the quantile, mean step time and wall-clock "
                "throughput (Σ samples / Σ step time) by the delta method (normal limit of the "
                f"bootstrap); a change counts when p < {result.alpha:g} and |change| ≥ "
                f"{result.min_effect:.1%}. Other metrics are single values per run: change "
                "shown without a test."
            ),
            "sources": [result.base.source, result.current.source],
        }
    )


def render_compare_html(result: CompareResult) -> str:
    """The self-contained HTML report of a comparison."""
    from xpuperf.compare import to_dict as compare_dict

    return render_page("compare.html.j2", build_compare_view(result), compare_dict(result))
