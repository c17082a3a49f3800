"""The scaling report of ``xpuperf analyze TABLE``: terminal, JSON and Markdown.

Input: :class:`~xpuperf.analysis.scaling.ScalingResult` objects (one per table file).
Presentation only.

JSON (schema ``xpuperf.scaling/1``): ``schema``, ``xpuperf_version``, ``sources``,
``efficiency`` (the lowest over the tables of the efficiency of each one's largest run, for
``--fail-on 'efficiency<0.9'``), ``findings`` (all tables), ``checks`` (all tables), ``tables``:
one object per table (per configuration when a ``Model``/``Config`` column splits a file) with
``source``, ``group_column`` and ``group`` (null without such a column), ``measure``,
``measure_column``, ``throughput_unit``, ``mode``,
``cards_per_node``, ``node_info``, ``threshold``, ``location``, ``confidence``, ``largest``,
``intra`` / ``inter`` (steps: ``from_cards``, ``to_cards``, ``to_nodes``, ``efficiency``,
``factor``, ``rows``, ``line``), ``rows`` (``cards``, ``nodes``, ``batch_per_card``,
``throughput_samples_per_s``, ``throughput_per_card_samples_per_s``, ``step_time_s``,
``run_time_s``, ``throughput_ratio`` (job throughput / one card's), ``speedup`` and
``efficiency`` (both per-card throughput / one card alone), ``reported_efficiency``,
``reported_throughput_ratio``, ``scope``, ``batch_note``, ``line``; null for unknown),
``findings``, ``checks``, ``notes``.

The Markdown checks table has the columns of ``xpuperf analyze``'s (status, check, evidence,
codes: :func:`xpuperf.report.checks_view.rows`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.table import Table

from xpuperf.analysis.scaling import ScalingResult
from xpuperf.report.checks_view import counts_line
from xpuperf.report.checks_view import rows as check_rows
from xpuperf.report.common import safe
from xpuperf.report.markdown import md_escape

SCHEMA = "xpuperf.scaling/1"
_SEV_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_STATUS_STYLE = {"problem": "yellow", "clean": "green", "not_checked": "dim"}
_ROW_KEYS = (
    ("cards", "cards"), ("nodes", "nodes_used"), ("batch_per_card", "batch_per_card"),
    ("throughput_samples_per_s", "throughput_samples_per_s"),
    ("throughput_per_card_samples_per_s", "throughput_per_card_samples_per_s"),
    ("step_time_s", "step_time_s"), ("run_time_s", "run_time_s"),
    ("throughput_ratio", "throughput_ratio"), ("speedup", "speedup"),
    ("efficiency", "efficiency"), ("reported_efficiency", "reported_efficiency"),
    ("reported_throughput_ratio", "reported_throughput_ratio"), ("scope", "scope"),
    ("batch_note", "batch_note"), ("line", "line"),
)  # fmt: skip


def _clean(v: object) -> object:
    if isinstance(v, float):
        if not math.isfinite(v):
            return None
        return int(v) if v.is_integer() and abs(v) < 2**53 else v
    if hasattr(v, "item"):
        return _clean(v.item())  # numpy scalar
    return v


def to_dict(res: ScalingResult) -> dict[str, Any]:
    """One table's object of the JSON document (keys in the module docstring)."""
    rows = [
        {key: _clean(rec[col]) for key, col in _ROW_KEYS}
        for rec in res.rows.to_dict(orient="records")
    ]
    return {
        "source": res.source,
        "group_column": res.group_column,
        "group": res.group,
        "measure": res.measure,
        "measure_column": res.measure_column,
        "throughput_unit": res.throughput_unit,
        "mode": res.mode,
        "cards_per_node": res.cards_per_node,
        "node_info": res.node_info,
        "threshold": res.threshold,
        "location": res.location,
        "confidence": res.confidence,
        "largest": {k: _clean(v) for k, v in res.largest.items()},
        "intra": {k: _clean(v) for k, v in asdict(res.intra).items()} if res.intra else None,
        "inter": [{k: _clean(v) for k, v in asdict(s).items()} for s in res.inter],
        "rows": rows,
        "findings": [f.to_dict() for f in res.findings],
        "checks": [c.to_dict() for c in res.checks],
        "notes": list(res.notes),
    }


def scaling_document(results: Sequence[ScalingResult]) -> dict[str, Any]:
    """The ``xpuperf.scaling/1`` document of several tables."""
    from xpuperf import __version__

    tables = [to_dict(r) for r in results]
    return {
        "schema": SCHEMA,
        "xpuperf_version": __version__,
        "sources": [r.source for r in results],
        "efficiency": min((t["largest"]["efficiency"] for t in tables), default=None),
        "findings": [f for t in tables for f in t["findings"]],
        "checks": [c for t in tables for c in t["checks"]],
        "tables": tables,
    }


def _num(v: float, fmt: str = ",.1f") -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)


def _cells(res: ScalingResult) -> tuple[list[str], list[list[str]]]:
    """Header and rows shown in the terminal and Markdown tables."""
    unit = f"{res.throughput_unit}/s"
    r = res.rows
    cols = ["cards", "where"]
    has_batch = r["batch_per_card"].notna().any()
    has_thr = r["throughput_samples_per_s"].notna().any()
    has_t = r["step_time_s"].notna().any()
    has_rt = r["run_time_s"].notna().any()
    if has_batch:
        cols.append("batch/card")
    if has_thr:
        cols += [f"job {unit}", "per card"]
    if has_t:
        cols.append("step s")
    if has_rt:
        cols.append("run s")
    cols += ["× one card", "speedup", "stated", "line"]
    out = []
    for _, x in r.iterrows():
        row = [_num(x["cards"], "g"), str(x["scope"])]
        if has_batch:
            row.append(_num(x["batch_per_card"], "g"))
        if has_thr:
            row += [_num(x["throughput_samples_per_s"]),
                    _num(x["throughput_per_card_samples_per_s"])]  # fmt: skip
        if has_t:
            row.append(_num(x["step_time_s"], ".4g"))
        if has_rt:
            row.append(_num(x["run_time_s"], ".4g"))
        eff = _num(x["efficiency"], ".3f") + (" *" if x["batch_note"] == "normalised" else "")
        stated = _num(x["reported_efficiency"], ".2f")
        if stated == "–" and not math.isnan(x["reported_throughput_ratio"]):
            stated = _num(x["reported_throughput_ratio"], ".2f") + "×"
        ratio = x["throughput_ratio"]
        row += [_num(ratio, ".2f") + "×" if not math.isnan(ratio) else "–",
                eff if x["batch_note"] in ("", "normalised") else "refused",
                stated, str(int(x["line"]))]  # fmt: skip
        out.append(row)
    return cols, out


def _headline(res: ScalingResult) -> str:
    b = res.largest
    group = f" [{res.group_column} {res.group}]" if res.group is not None else ""
    return (
        f"{res.source}{group}: {len(res.rows)} row(s), {res.mode} scaling, from "
        f"'{res.measure_column}' — efficiency {b['efficiency']:.3f} at {b['cards']:g} cards; "
        f"loss: {res.location} ({res.confidence})"
    )


def render_scaling(results: Sequence[ScalingResult], console: Console) -> None:
    """Print each table: headline, rows, where the loss is, findings, checks, notes."""
    for res in results:
        console.print("[bold]xpuperf analyze — scaling table[/] " + safe(_headline(res)))
        cols, rows = _cells(res)
        tab = Table()
        for c in cols:
            tab.add_column(c, justify="left" if c == "where" else "right")
        for row in rows:
            tab.add_row(*[safe(v) for v in row])
        console.print(tab)
        if (res.rows["batch_note"] == "normalised").any():
            console.print("* compared with a one-card row at another per-card batch", style="dim")
        for f in res.findings:
            style = _SEV_STYLE.get(f.severity.value, "")
            console.print(f"  [{style}]{f.severity.value:<7}[/] {f.code}  {safe(f.message)}")
        console.print("checks:")
        for c in res.checks:
            style = _STATUS_STYLE.get(c.status.value, "")
            console.print(f"  [{style}]{c.status.value:<11}[/] {safe(c.name)}: {safe(c.evidence)}")
        for n in res.notes:
            console.print("note: " + safe(n), style="dim")


def render_scaling_markdown(results: Sequence[ScalingResult]) -> str:
    """Markdown: per table a headline, the rows, findings and checks."""
    lines = ["## xpuperf analyze — scaling table", ""]
    for res in results:
        lines += [f"**{md_escape(_headline(res))}**", ""]
        cols, rows = _cells(res)
        lines.append("| " + " | ".join(md_escape(c) for c in cols) + " |")
        lines.append("|" + "|".join("---" for _ in cols) + "|")
        lines += ["| " + " | ".join(md_escape(v) for v in row) + " |" for row in rows]
        lines.append("")
        if res.findings:
            lines += [f"- **{f.code}** ({f.severity.value}): {md_escape(f.message)}"
                      for f in res.findings]  # fmt: skip
        else:
            lines.append("- no finding")
        lines += ["", f"Checks — {counts_line(res.checks)}", ""]
        lines += ["| status | check | evidence | codes |", "|---|---|---|---|"]
        lines += ["| " + " | ".join(md_escape(v) for v in row) + " |"
                  for row in check_rows(res.checks)]  # fmt: skip
        lines.append("")
    return "\n".join(lines)
