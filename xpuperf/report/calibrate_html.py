"""HTML report of ``xpuperf calibrate --html``: one self-contained page per calibration.

Built by the analyze report's machinery (:func:`xpuperf.report.html.render_page`: jinja2
autoescape, plotly.js inlined once, the ``xpuperf.calibrate/1`` JSON document embedded as
``#xpuperf-data``). Figures are plain plotly.js dicts (:func:`busbw_figure`), tables plain
``{id, columns, rows}`` dicts, so tests assert on the view model, not on HTML bytes.

Per fitted group, one figure: bus bandwidth against message size (log x axis), the measured
points and the fitted α–β curve, the y axis from 0 so a plateau at 80 % of the link does not
look like a cliff; with ``--topology``, the link's bus bandwidth is a dashed line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xpuperf.report.calibrate_report import to_json_dict
from xpuperf.report.checks_view import counts_line
from xpuperf.report.checks_view import rows as check_rows
from xpuperf.report.html import render_page
from xpuperf.report.plotting import _label, _layout, _line, ptext

if TYPE_CHECKING:
    from xpuperf.calibrate.fit import Fit
    from xpuperf.calibrate.run import CalibrationResult
    from xpuperf.topology.model import Cluster

MAX_FIGURES = 24
"""Fitted groups drawn at most (the table lists all)."""


def _size(n: float) -> str:
    """``1048576`` → ``"1 MiB"``."""
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            return f"{n / f:g} {unit}"
    return f"{int(n)} B"


def _group(collective: str, ranks: int | None, nodes: int | None) -> str:
    return f"{collective} on {ranks or '?'} ranks / {nodes or '?'} nodes"


def busbw_figure(fit: Fit, index: int, link_GBps: float | None = None) -> dict[str, Any]:
    """Bus bandwidth (GB/s) vs message size of one fit: measured points, fitted curve.

    ``link_GBps``: the topology's bus bandwidth for this group, drawn dashed when known. Sizes
    left out of the fit because busbw collapsed there (XP611, ``fit.excluded``) are drawn as
    their own markers.
    """
    p = fit.points.sort_values("size_bytes")
    x = [int(s) for s in p["size_bytes"]]
    hover = "%{customdata}<br>%{y:.1f} GB/s<extra>%{fullData.name}</extra>"
    ticks = [_size(s) for s in x]
    data = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "measured",
            "x": x,
            "y": [round(float(v), 3) for v in p["measured_busbw_GBps"]],
            "customdata": ticks,
            "marker": {"color": "#2a2a2a", "size": 7},
            "hovertemplate": hover,
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"α–β fit (α {fit.latency_us:.1f} µs, busbw {fit.busbw_GBps:.1f} GB/s)",
            "x": x,
            "y": [round(float(v), 3) for v in p["fitted_busbw_GBps"]],
            "customdata": ticks,
            "line": {"color": "#4c78a8", "width": 2},
            "hovertemplate": hover,
        },
    ]
    ex = fit.excluded
    if ex is not None and not ex.empty:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "left out: busbw collapsed (XP611)",
                "x": [int(v) for v in ex["size_bytes"]],
                "y": [round(float(v), 3) for v in ex["measured_busbw_GBps"]],
                "customdata": [_size(v) for v in ex["size_bytes"]],
                "marker": {"color": "#e45756", "size": 9, "symbol": "x"},
                "hovertemplate": hover,
            }
        )
    run = f" ({fit.run})" if fit.run else ""
    title = ptext(f"{_group(fit.collective, fit.ranks, fit.nodes)}{run}: bus bandwidth vs size")
    shapes, annotations = [], []
    ys = [v for t in data for v in t["y"]]
    if link_GBps:
        shapes.append(_line(y=link_GBps, color="#e45756", dash="dash", width=1))
        text = f"topology {link_GBps:.1f} GB/s"
        annotations.append(_label(text, x=1, y=link_GBps, xref="paper"))
        ys.append(link_GBps)
    step = max(1, len(x) // 8)
    layout = _layout(
        title,
        "message size (bytes, log scale)",
        "bus bandwidth (GB/s)",
        height=380,
        shapes=shapes,
        annotations=annotations,
        xaxis={
            "title": {"text": "message size (log scale)"},
            "type": "log",
            "tickvals": x[::step],
            "ticktext": ticks[::step],
        },
        yaxis={
            "title": {"text": "bus bandwidth (GB/s)"},
            "automargin": True,
            "range": [0.0, 1.08 * max([*ys, 1e-9])],  # from 0: the share of the link is honest
        },
    )
    return {"id": f"fig-calib-{index}", "title": title, "note": "", "data": data, "layout": layout}


def _link_of(fit: Fit, cluster: Cluster | None) -> float | None:
    """The bus bandwidth the topology allows for a fit (the XP601 ceiling), or None."""
    if cluster is None:
        return None
    from xpuperf.calibrate.checks import ceiling

    got = ceiling(fit, cluster)
    return float(got[0]) if got is not None and got[0] > 0 else None


def _num(x: Any, fmt: str) -> str:
    return "n/a" if x is None else format(x, fmt)


def _ci(p: Any, fmt: str) -> str:
    return "" if not p else f" ({format(p[0], fmt)}–{format(p[1], fmt)})"


def _peak(f: dict[str, Any]) -> str:
    bw, size = f.get("peak_busbw_GBps"), f.get("peak_size_bytes")
    return "n/a" if bw is None or size is None else f"{bw:g} ({_size(size)})"


def fits_table(doc: dict[str, Any]) -> dict[str, Any]:
    """One row per fitted group: group, α with CI, busbw with CI, held-out error, sources."""
    rows = []
    for f in doc["fits"]:
        acc = f.get("accuracy") or {}
        err = acc.get("busbw_max_err_ge_1MiB")
        rows.append(
            [
                _group(f["collective"], f["ranks"], f["nodes"]),
                _num(f["latency_us"], ".1f") + _ci(f.get("latency_ci95_us"), ".1f"),
                _peak(f),
                _num(f["busbw_GBps"], ".1f")
                + _ci(f.get("busbw_ci95_GBps"), ".1f")
                + ("" if f.get("plateau_reached", True) else " (extrapolated)"),
                "n/a" if err is None else f"{err:.1%}",
                f.get("run") or ", ".join(s.rsplit("/", 1)[-1] for s in f.get("sources", [])[:3]),
            ]
        )
    return {
        "id": "tbl-calib-fits",
        "columns": [
            "group",
            "latency α µs (95% CI)",
            "peak busbw GB/s (size)",
            "fit busbw GB/s (95% CI)",
            "held-out error",
            "run (file:line) or files",
        ],
        "rows": rows,
        "note": "peak busbw: the largest busbw in the input; fit busbw: the α–β asymptote plan "
        "uses (extrapolated while busbw still rises: the 3 largest sizes more than 2 % apart); "
        "held-out error: largest |error| of busbw at sizes ≥ 1 MiB when each size is "
        "left out of the fit in turn.",
    }


def measurements_table(doc: dict[str, Any]) -> dict[str, Any]:
    """Single-size measurements (no fit): group, size, busbw and the link under it."""
    rows = [
        [
            _group(m["collective"], m.get("ranks"), m.get("nodes")),
            _size(m["size_bytes"]),
            _num(m.get("busbw_GBps"), ".1f"),
            m.get("link") or "n/a",
            "n/a" if m.get("fraction") is None else f"{m['fraction']:.0%}",
        ]
        for m in doc.get("measurements", [])
    ]
    return {
        "id": "tbl-calib-measurements",
        "columns": ["group", "size", "busbw GB/s", "link", "share of the link"],
        "rows": rows,
    }


def build_calibrate_view(
    result: CalibrationResult, cluster: Cluster | None = None
) -> dict[str, Any]:
    """The view model of a calibration (plain data): ``title``, ``summary``, ``figures``,
    ``figure_ids``, ``fits``, ``measurements``, ``findings``, ``checks`` (tables), ``warnings``,
    ``notes`` (size limits), ``sources``. ``cluster``: the ``--topology``, for the link lines."""
    doc = to_json_dict(result)
    figs = [
        busbw_figure(fit, i, _link_of(fit, cluster))
        for i, fit in enumerate(result.fits[:MAX_FIGURES])
    ]
    notes = []
    if len(result.fits) > MAX_FIGURES:
        notes.append(f"{len(result.fits)} fitted groups: the first {MAX_FIGURES} are drawn.")
    inputs = doc.get("inputs", [])
    summary = [
        ("inputs", f"{len(inputs)} file(s)"),
        ("timing fitted", str(doc.get("measurement"))),
        ("topology", doc.get("topology") or "none (pass --topology to compare with the links)"),
        ("fitted groups", str(len(doc["fits"]))),
    ]
    groups = ", ".join(_group(f["collective"], f["ranks"], f["nodes"]) for f in doc["fits"][:3])
    return {
        "title": "xpuperf calibrate" + (f" — {groups}" if groups else ""),
        "summary": summary,
        "figures": figs,
        "figure_ids": [f["id"] for f in figs],
        "fits": fits_table(doc),
        "measurements": measurements_table(doc),
        "findings": {
            "id": "tbl-findings",
            "columns": ["severity", "code", "title", "message"],
            "rows": [[f.severity.value, f.code, f.title, f.message] for f in result.findings],
        },
        "checks": {
            "id": "tbl-checks",
            "columns": ["status", "check", "evidence", "codes"],
            "rows": check_rows(result.checks),
            "note": counts_line(result.checks) if result.checks else "",
        },
        "warnings": list(result.warnings),
        "notes": notes,
        "sources": [i["path"] for i in inputs],
    }


def render_calibrate_html(result: CalibrationResult, cluster: Cluster | None = None) -> str:
    """The self-contained HTML report of a calibration (its JSON document embedded)."""
    view = build_calibrate_view(result, cluster)
    return render_page("calibrate.html.j2", view, to_json_dict(result))
