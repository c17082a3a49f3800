"""Figures and tables of the plan report, as plain data built from the ``xpuperf.plan/1`` document.

Everything here reads the JSON document (:func:`xpuperf.report.plan_report.to_dict`), never the
cost model, so the page shows exactly what ``xpuperf plan --json`` prints:

- :func:`speedup_figure` (``#fig-plan-speedup``): speedup vs cards with the current settings and
  with each ranked fix applied (``fix_curves``; one line per fix), the target count marked;
- :func:`breakdown_figure` (``#fig-plan-breakdown``): the step time at each card count stacked by
  the parts of ``scaling[].breakdown`` (compute, exposed comm, input stall, straggler, other — any
  further key is stacked too), milliseconds;
- :func:`fixes_table` (``#tbl-plan-fixes``), :func:`scaling_table` (``#tbl-plan-scaling``) and
  :func:`summary_rows`.

Strings that may come from inputs (cluster and model names) are HTML-escaped in figure labels
(:func:`~xpuperf.report.plotting.ptext`); the template escapes the tables.
"""

from __future__ import annotations

import math
from typing import Any

from xpuperf.report.plotting import _label, _layout, _line, ptext

FIG_PLAN_SPEEDUP = "fig-plan-speedup"
FIG_PLAN_BREAKDOWN = "fig-plan-breakdown"
TBL_PLAN_FIXES = "tbl-plan-fixes"
TBL_PLAN_SCALING = "tbl-plan-scaling"

PART_LABELS = {
    "compute_s": "compute",
    "exposed_comm_s": "exposed comm",
    "input_stall_s": "input stall",
    "straggler_s": "straggler / sync",
    "other_s": "other",
}
PART_COLORS = {
    "compute_s": "#4c78a8",
    "exposed_comm_s": "#e45756",
    "input_stall_s": "#f58518",
    "straggler_s": "#b279a2",
    "other_s": "#9d9d9d",
}
_MORE_COLORS = ("#72b7b2", "#54a24b", "#eeca3b", "#ff9da6", "#9d755d")
FIX_COLORS = ("#e45756", "#54a24b", "#f58518", "#b279a2", "#72b7b2", "#eeca3b", "#ff9da6")


def part_label(key: str) -> str:
    """``"exposed_comm_s"`` → ``"exposed comm"``; unknown keys lose their ``_s`` suffix."""
    return PART_LABELS.get(key, key.removesuffix("_s").replace("_", " "))


def breakdown_keys(doc: dict[str, Any]) -> list[str]:
    """The breakdown parts present in ``scaling[]``, known ones first in their usual order."""
    seen: list[str] = []
    for p in doc["scaling"]:
        seen += [k for k in (p.get("breakdown") or {}) if k not in seen]
    return [k for k in PART_LABELS if k in seen] + [k for k in seen if k not in PART_LABELS]


def _f(x: float | None, fmt: str = ".3f") -> str:
    return "n/a" if x is None else f"{x:{fmt}}"


def speedup_figure(doc: dict[str, Any]) -> dict[str, Any]:
    """Speedup vs cards (log2 x axis): current settings, one line per fix, target marked."""
    curves = doc.get("fix_curves")
    if curves:
        cards, current = curves["cards"], curves["current"]
        fixes = curves["fixes"]
    else:
        cards = [p["cards"] for p in doc["scaling"]]
        current = [p["speedup"] for p in doc["scaling"]]
        fixes = []
    hover = "%{x} cards<br>speedup %{y:.3f}<extra>%{fullData.name}</extra>"
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "current settings",
            "x": cards,
            "y": current,
            "line": {"color": "#2a2a2a", "width": 3},
            "hovertemplate": hover,
        }
    ]
    for i, f in enumerate(fixes):
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": ptext(f"with {f['name']}"),
                "x": cards,
                "y": f["speedup"],
                "line": {"color": FIX_COLORS[i % len(FIX_COLORS)], "width": 1.6, "dash": "dash"},
                "marker": {"size": 5},
                "hovertemplate": hover,
            }
        )
    data += forecast_traces(doc)
    target = doc["target_cards"]
    title = "Speedup vs cards: current settings and with each ranked fix"
    ys = [y for t in data for y in t["y"] if y is not None]
    hi = max([*ys, 1.0])  # input fixes speed up one card too: > 1
    layout = _layout(
        title,
        "cards",
        "speedup (per-card throughput / one card alone)",
        height=440,
        # on a log axis plotly.js places shapes by value but annotations by log10 of the value
        shapes=[_line(x=target, color="#59636e", dash="dot", width=1)],
        annotations=[_label(f"target {target}", x=math.log10(target), y=1, yref="paper")],
        hovermode="x unified",
    )
    layout["xaxis"] |= {"type": "log", "tickvals": cards, "ticktext": [str(c) for c in cards]}
    # from 0: a drop from 1.0 to 0.9 is 10 % of the bar height, not the whole plot
    layout["yaxis"]["range"] = [0.0, hi * 1.05]
    note = ""
    if curves and curves.get("notes"):
        note = " ".join(curves["notes"])
    return {"id": FIG_PLAN_SPEEDUP, "title": title, "note": note, "data": data, "layout": layout}


def forecast_traces(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """``plan --measured``: the forecast's interval as a shaded band (low then high, filled
    between), the forecast line and the measured rungs as points; [] without a ladder."""
    fc, rungs = doc.get("forecast") or [], doc.get("measured") or []
    if not fc:
        return []
    x = [p["cards"] for p in fc]
    band = {"type": "scatter", "mode": "lines", "line": {"width": 0, "color": "#4c78a8"},
            "hoverinfo": "skip", "showlegend": False}  # fmt: skip
    return [
        {**band, "name": "forecast low", "x": x, "y": [p["low"] for p in fc]},
        {**band, "name": "forecast interval (90 %)", "x": x, "y": [p["high"] for p in fc],
         "fill": "tonexty", "fillcolor": "rgba(76,120,168,0.22)", "showlegend": True},
        {"type": "scatter", "mode": "lines", "name": "forecast from the measured ladder", "x": x,
         "y": [p["speedup"] for p in fc], "line": {"color": "#4c78a8", "width": 2.5},
         "hovertemplate": "%{x} cards<br>forecast %{y:.3f}<extra></extra>"},
        {"type": "scatter", "mode": "markers", "name": "measured", "x": [r["cards"] for r in rungs],
         "y": [r["speedup"] for r in rungs], "marker": {"color": "#e45756", "size": 9},
         "hovertemplate": "%{x} cards<br>measured %{y:.3f}<extra></extra>"},
    ]  # fmt: skip


def breakdown_figure(doc: dict[str, Any]) -> dict[str, Any]:
    """Step time at each card count, stacked by breakdown part (milliseconds)."""
    keys = breakdown_keys(doc)
    x = [str(p["cards"]) for p in doc["scaling"]]
    more = iter(_MORE_COLORS * 4)
    data = []
    for k in keys:
        data.append(
            {
                "type": "bar",
                "name": ptext(part_label(k)),
                "x": x,
                "y": [
                    None if (v := (p.get("breakdown") or {}).get(k)) is None else round(v * 1e3, 4)
                    for p in doc["scaling"]
                ],
                "marker": {"color": PART_COLORS.get(k) or next(more)},
                "hovertemplate": "%{x} cards<br>%{y:.2f} ms<extra>%{fullData.name}</extra>",
            }
        )
    title = "Step time breakdown vs cards (model, ms per step)"
    layout = _layout(title, "cards", "ms per step", barmode="stack", height=420)
    layout["legend"]["traceorder"] = "normal"
    layout["xaxis"]["type"] = "category"
    return {"id": FIG_PLAN_BREAKDOWN, "title": title, "note": "", "data": data, "layout": layout}


def fixes_table(doc: dict[str, Any]) -> dict[str, Any]:
    """Ranked fixes: name, setting, speedup before → after, gain, reason."""
    rows = [
        [
            str(i),
            f["name"] + (" (changes the math)" if f.get("changes_math") else ""),
            f["setting"],
            _f(f["speedup_before"]),
            _f(f["speedup_after"]),
            "n/a" if f["gain"] is None else f"{f['gain']:+.3f}",
            f["reason"],
        ]
        for i, f in enumerate(doc["fixes"], 1)
    ]
    cols = ["#", "fix", "setting", "speedup before", "after", "gain", "reason"]
    empty = (
        f"No fix gains 0.05 speedup points or more at {doc['target_cards']} cards: the current "
        "settings are the best the model knows."
    )
    return {"id": TBL_PLAN_FIXES, "columns": cols, "rows": rows, "empty": empty}


def scaling_table(doc: dict[str, Any]) -> dict[str, Any]:
    """Per card count: speedup, step time and its parts (ms), algorithm, throughput."""
    keys = breakdown_keys(doc)
    rows = []
    for p in doc["scaling"]:
        b = p.get("breakdown") or {}
        thr = p.get("throughput_samples_per_s")
        rows.append(
            [
                str(p["cards"]),
                str(p["nodes"]),
                _f(p["speedup"]),
                _f(None if p["step_time_s"] is None else p["step_time_s"] * 1e3, ".1f"),
                *[_f(None if b.get(k) is None else b[k] * 1e3, ".1f") for k in keys],
                str(p.get("algorithm", "")),
                "" if thr is None else f"{thr:,.0f}",
            ]
        )
    cols = ["cards", "nodes", "speedup", "step ms", *[f"{part_label(k)} ms" for k in keys]]
    cols += ["algorithm", "samples/s"]
    return {"id": TBL_PLAN_SCALING, "columns": cols, "rows": rows}


def _settings_text(s: dict[str, Any]) -> str:
    """``key value · key value …`` (floats to 6 digits; a nested group such as the loader as
    ``loader (key value, …)``), leaving out unset and false values."""

    def one(k: str, v: Any) -> str:
        if isinstance(v, dict):
            inner = ", ".join(one(a, b) for a, b in v.items() if b is not None and b is not False)
            return f"{k} ({inner})"
        return f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"

    return " · ".join(one(k, v) for k, v in s.items() if v is not None and v is not False)


def combined_line(c: dict[str, Any] | None) -> str | None:
    """One sentence for the configuration fixes together (from the ``combined`` JSON key), or
    None when there is no such entry."""
    if not c:
        return None
    text = (
        f"configuration fixes together ({', '.join(c['fixes'])}; math and hardware unchanged): "
        f"speedup {c['speedup_before']:.3f} → {c['speedup_after']:.3f} at {c['cards']} cards"
    )
    if c["skipped"]:
        text += f"; no further gain on top of these from {', '.join(c['skipped'])}"
    return text


def summary_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """Cluster, workload, settings and the headline speedup as (label, value) pairs."""
    c, w, s = doc["cluster"], doc["workload"], doc["settings"]
    gb = (w.get("grad_bytes") or 0) / 1e9
    rows = [
        ("cluster", f"{c['name']}, {c['cards_per_node']} cards per node"),
        (
            "workload",
            f"{w['name']}: {w['n_params']:,} parameters ({gb:.3g} GB of {s.get('dtype')} "
            f"gradients), single-card step {w['step_time_s']:g} s"
            + ("" if w.get("batch_size") is None else f" at batch {w['batch_size']:g} per card"),
        ),
        (
            "settings",
            _settings_text(s),
        ),
    ]
    target = doc["target_cards"]
    at = next((p for p in doc["scaling"] if p["cards"] == target), None)
    if at is None and doc.get("fix_curves"):
        cc = doc["fix_curves"]
        at = {"speedup": cc["current"][cc["cards"].index(target)]}
    head = f"{_f(at['speedup'])} at {target} cards" if at else f"target {target} cards"
    if doc["fixes"]:
        best = doc["fixes"][0]
        head += f"; best fix ({best['name']}) → {_f(best['speedup_after'])}"
    label = "speedup"
    fc = doc.get("forecast")
    if fc:  # measured beats modelled: the calibrated forecast is the headline
        p = next((p for p in fc if p["cards"] == target), fc[-1])
        rows.append((
            "forecast (measured ladder)",
            f"{_f(p['speedup'])} at {p['cards']} cards (90 % interval {_f(p['low'])}–"
            f"{_f(p['high'])})",
        ))  # fmt: skip
        label = "cost model alone"
    rows.append((label, head))
    together = combined_line(doc.get("combined"))
    if together:
        rows.append(("together", together))
    return rows
