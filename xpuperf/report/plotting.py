"""Plot and format helpers shared by the report's figures (plain data, no rendering).

Number formatting (:func:`pct`, :func:`num`), label escaping for plotly.js (:func:`ptext`), the
min/max-preserving downsample (:func:`minmax_indices`) and the plotly.js layout, line and label
dicts every figure uses. Nothing here draws: plotly.js does, in the page.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

import numpy as np

MAX_POINTS = 2000
"""Default largest number of points of a line trace (see :func:`minmax_indices`)."""
FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif'


def ptext(s: object) -> str:
    """A string safe for plotly.js labels: ``<``, ``>``, ``&`` and quotes become entities."""
    return html.escape(str(s), quote=True)


def pct(x: float | None, digits: int = 1) -> str:
    """``0.123`` → ``"12.3%"``; None/NaN → ``"n/a"``."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{100 * x:.{digits}f}%"


def num(x: float | None, fmt: str = ".4f", unit: str = "") -> str:
    """Format a number with an optional unit; None/NaN → ``"n/a"``."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:{fmt}}{(' ' + unit) if unit else ''}"


def minmax_indices(y: np.ndarray, max_points: int = MAX_POINTS) -> np.ndarray:
    """Indices of a min/max-preserving downsample of ``y`` to at most ``max_points`` points.

    The series is cut into ``max_points // 2`` buckets; each contributes the index of its minimum
    and of its maximum (in order), so a one-step spike is never averaged away. NaN-only buckets
    contribute their first index.
    """
    n = len(y)
    if n <= max_points:
        return np.arange(n)
    buckets = np.array_split(np.arange(n), max(1, max_points // 2))
    keep: list[int] = []
    for b in buckets:
        seg = y[b]
        if np.isnan(seg).all():
            keep.append(int(b[0]))
            continue
        keep.extend(sorted({int(b[np.nanargmin(seg)]), int(b[np.nanargmax(seg)])}))
    return np.asarray(keep, dtype=int)


def _line(
    *, x: float | None = None, y: float | None = None, color: str, dash: str, width: int
) -> dict[str, Any]:
    """A full-height vertical line at ``x`` or a full-width horizontal line at ``y``."""
    if x is not None:
        pos = {"xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1}
    else:
        pos = {"xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": y, "y1": y}
    return {"type": "line", **pos, "line": {"color": color, "width": width, "dash": dash}}


def _label(
    text: str, *, x: float, y: float, xref: str = "x", yref: str = "y", xanchor: str = "right"
) -> dict[str, Any]:
    """A small text annotation without an arrow."""
    return {
        "text": text,
        "x": x,
        "y": y,
        "xref": xref,
        "yref": yref,
        "xanchor": xanchor,
        "yanchor": "bottom",
        "showarrow": False,
        "font": {"size": 11},
    }


def _layout(title: str, xtitle: str, ytitle: str, **extra: Any) -> dict[str, Any]:
    lay: dict[str, Any] = {
        "title": {"text": title, "x": 0.01, "font": {"size": 15}},
        "font": {"family": FONT, "size": 12},
        "xaxis": {"title": {"text": xtitle}},
        "yaxis": {"title": {"text": ytitle}, "automargin": True},
        "margin": {"l": 70, "r": 20, "t": 50, "b": 50},
        "legend": {"orientation": "h", "y": -0.18},
        "hovermode": "closest",
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#fafafa",
    }
    lay.update(extra)
    return lay


def natural_key(s: object) -> tuple[tuple[int, int | str], ...]:
    """Sort key ordering digit runs by value: ``node9`` < ``node10`` < ``node100``."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part)
        for part in re.split(r"(\d+)", str(s))
        if part
    )


def empty_figure(fid: str, title: str, why: str, height: int = 220) -> dict[str, Any]:
    """A figure with no data that says in its middle why there is nothing to draw (instead of
    blank axes): ``{id, title, note, data: [], layout}``; ``why`` is also the ``note``."""
    lay = _layout(title, "", "", height=height)
    lay["xaxis"] = {"visible": False}
    lay["yaxis"] = {"visible": False}
    lay["annotations"] = [
        _label(ptext(why), x=0.5, y=0.5, xref="paper", yref="paper", xanchor="center")
        | {"font": {"size": 13, "color": "#59636e"}}
    ]
    return {"id": fid, "title": title, "note": why, "data": [], "layout": lay}


CALM_SCALE = [
    [0.0, "#2166ac"],
    [0.25, "#92c5de"],
    [0.4, "#f7f7f7"],
    [0.6, "#f7f7f7"],
    [0.75, "#f4a582"],
    [1.0, "#b2182b"],
]
"""Diverging colours for a value around 1 on [1 − 2t, 1 + 2t]: white within ±0.4 t (noise),
light at the threshold t, full colour at 2 t and beyond (see :func:`clamped_colors`)."""


def clamped_colors(threshold: float, title: str = "× median") -> dict[str, Any]:
    """Heatmap colour settings clamped to 1 ± 2·``threshold``: a healthy job (ranks within a
    percent or two of the median) stays pale; a rank at the straggler threshold is light red; one
    at twice the threshold or more is full red. Values outside are drawn at the end colours and
    the colour bar says so (``≤``/``≥`` ticks)."""
    t = max(float(threshold), 1e-3)
    lo, hi = 1.0 - 2 * t, 1.0 + 2 * t
    ticks = [lo, 1.0 - t, 1.0, 1.0 + t, hi]
    text = [f"≤{lo:.3g}", f"{1 - t:.3g}", "1 (median)", f"{1 + t:.3g} (threshold)", f"≥{hi:.3g}"]
    return {
        "colorscale": CALM_SCALE,
        "zmin": lo,
        "zmax": hi,
        "zauto": False,
        "colorbar": {
            "title": {"text": f"{title}<br>(clamped ±{2 * t:.0%})"},
            "tickvals": ticks,
            "ticktext": text,
        },
    }
