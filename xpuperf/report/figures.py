"""Figures of the HTML report as plain, JSON-serialisable plotly.js figure dicts.

Nothing here renders HTML or draws anything (style.md rules 3 and 5): each ``*_figure`` function
turns an :class:`~xpuperf.analysis.results.AnalyzeResult` into ``{id, title, note, data, layout}``
that plotly.js draws in the page; :func:`xpuperf.report.html.build_view` assembles them with the
tables into the page's view model, so tests assert on data, not on HTML bytes.

Size limits keep large runs readable and the file small; every reduction is stated in
``view["notes"]`` and in the figure's own ``note``:

- line traces are downsampled to at most :data:`MAX_POINTS` points per trace (min and max of each
  bucket kept, so spikes survive);
- the heatmap has at most :data:`MAX_HEATMAP_COLS` step columns (mean of each bin);
- beyond :data:`MAX_RANKS` ranks, the heatmap and the breakdown show nodes, each by its worst
  rank (a mean of eight ranks would hide a straggler).

Strings from logs (node names) appear in figures HTML-escaped (plotly.js interprets a subset of
HTML in labels); the template escapes everything else.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from xpuperf.analysis.results import AnalyzeResult
from xpuperf.report.plotting import (  # re-exported: other report modules import them from here
    FONT,  # noqa: F401
    MAX_POINTS,
    _label,
    _layout,
    _line,
    clamped_colors,
    empty_figure,
    minmax_indices,
    natural_key,
    num,  # noqa: F401
    pct,
    ptext,
)
from xpuperf.report.rates_view import throughput_rows

MAX_HEATMAP_COLS = 400
MAX_RANKS = 256
MAX_TABLE_ROWS = 200

FIG_FPS = "fig-fps"
FIG_HEATMAP = "fig-heatmap"
FIG_BREAKDOWN = "fig-breakdown"
TBL_STRAGGLERS = "tbl-stragglers"
TBL_NODES = "tbl-nodes"
TBL_FINDINGS = "tbl-findings"

PHASE_COLORS = {
    "compute_s": "#4c78a8",
    "comm_s": "#e45756",
    "data_s": "#f58518",
    "other_s": "#9d9d9d",
}


def _all_job_steps(result: AnalyzeResult) -> pd.DataFrame:
    """Job series over ALL steps (warm-up included): ``step, step_time_s, fps, warmup``.

    Step time is the median over ranks (as for the steady series). FPS of warm-up steps is only
    given when the steady steps carry a constant number of samples per step (then samples /
    step time); otherwise it is NaN.
    """
    rs = result.rank_steps
    steady = result.job_steps
    if rs.empty:
        out = steady[["step", "step_time_s", "fps"]].copy()
        out["warmup"] = False
        return out
    g = rs.groupby("step", sort=True)["step_time_s"].median().reset_index()
    g["warmup"] = g["step"] < (result.warmup.first_steady_step or 0)
    g = g.merge(steady[["step", "fps"]], on="step", how="left")
    spp = (steady["fps"] * steady["step_time_s"]).to_numpy(dtype=float)
    if len(spp) and np.isfinite(spp).all() and np.ptp(spp) <= 1e-6 * max(1.0, abs(spp[0])):
        w = g["warmup"].to_numpy()
        g.loc[w, "fps"] = spp[0] / g.loc[w, "step_time_s"]
    return g


def fps_figure(result: AnalyzeResult, max_points: int = MAX_POINTS) -> dict[str, Any]:
    """The "flat line": job FPS (or step time without samples) over steps.

    Warm-up steps are shaded, spike steps marked, change points drawn as vertical lines, and the
    steady median drawn as a dashed reference line.
    """
    df = _all_job_steps(result)
    use_fps = bool(len(df)) and bool(np.isfinite(df.loc[~df["warmup"], "fps"]).all())
    col, ylab = ("fps", "samples/s (job)") if use_fps else ("step_time_s", "step time (s)")
    y = df[col].to_numpy(dtype=float)
    x = df["step"].to_numpy()
    idx = minmax_indices(y, max_points)
    note = ""
    if len(idx) < len(y):
        note = (
            f"{len(y)} steps downsampled to {len(idx)} points (min and max of each bucket "
            "kept, so spikes stay visible)."
        )
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "FPS" if use_fps else "step time",
            "x": x[idx].tolist(),
            "y": y[idx].tolist(),
            "line": {"color": "#4c78a8", "width": 1.5},
            "hovertemplate": "step %{x}<br>%{y:.4g}<extra></extra>",
        }
    ]
    steady = ~df["warmup"].to_numpy()
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    if steady.any():
        med = float(np.nanmedian(y[steady]))
        shapes.append(_line(y=med, color="#2a2a2a", dash="dash", width=1))
        text = f"steady median {med:,.0f}" if abs(med) >= 1000 else f"steady median {med:.4g}"
        annotations.append(_label(text, x=1, y=med, xref="paper"))
    if result.warmup.steps and len(x) and not steady.all():
        x0, x1 = float(x.min()) - 0.5, float(x[~steady].max()) + 0.5
        shapes.append(
            {"type": "rect", "xref": "x", "yref": "paper", "x0": x0, "x1": x1, "y0": 0, "y1": 1}
            | {"fillcolor": "#bbbbbb", "opacity": 0.3, "line": {"width": 0}, "layer": "below"}
        )
        text = f"warm-up ({result.warmup.steps} steps, excluded)"
        annotations.append(_label(text, x=x0 + 0.5, y=1, yref="paper", xanchor="left"))
    j = result.jitter
    spikes = sorted(j.spike_steps) if j else []
    if spikes:
        sp = df[df["step"].isin(spikes)].head(max_points)
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"spike ({len(spikes)})",
                "x": sp["step"].tolist(),
                "y": sp[col].astype(float).tolist(),
                "marker": {"color": "#e45756", "size": 8, "symbol": "x"},
                "hovertemplate": "spike at step %{x}<br>%{y:.4g}<extra></extra>",
            }
        )
    for cp in (j.change_points if j else [])[:50]:
        shapes.append(_line(x=cp.step - 0.5, color="#b279a2", dash="dot", width=2))
        text = f"level shift {cp.change:+.1%}"
        annotations.append(_label(text, x=cp.step, y=0.95, yref="paper", xanchor="left"))
    title = "Throughput over steps (a healthy job is a flat line)"
    if not use_fps:
        title = "Step time over steps (a healthy job is a flat line; no samples known for FPS)"
    return {
        "id": FIG_FPS,
        "title": title,
        "note": note,
        "data": data,
        "layout": _layout(
            title,
            "step",
            ylab,
            shapes=shapes,
            annotations=annotations,
            height=420,
            yaxis={"title": {"text": ylab}, "automargin": True, "rangemode": "tozero"},
        ),
    }


def _rank_nodes(result: AnalyzeResult) -> pd.Series:
    """rank → node name (string), from the straggler or breakdown per-rank tables."""
    for tab in (
        result.stragglers.per_rank if result.stragglers else None,
        result.breakdown.per_rank,
    ):
        if tab is not None and "node" in tab.columns and tab["node"].notna().any():
            return tab.set_index("rank")["node"].astype("string")
    return pd.Series(dtype="string")


def heatmap_figure(
    result: AnalyzeResult,
    max_cols: int = MAX_HEATMAP_COLS,
    max_ranks: int = MAX_RANKS,
) -> dict[str, Any] | None:
    """Rank × step heatmap of per-rank work relative to the step's median rank (1 = median).

    A deterministic straggler is one hot row. Steady steps only. Colours are clamped to
    1 ± 2 × the straggler threshold (:func:`~xpuperf.report.plotting.clamped_colors`), so a
    healthy job looks calm. Rows that stand for several ranks (nodes, rank groups) show the
    worst rank of the row at each step, so a straggler is not averaged away. None for one rank;
    a figure that says why when a multi-rank run has no per-rank work to draw.
    """
    rs = result.rank_steps
    threshold = result.stragglers.threshold if result.stragglers else 0.05
    title = "Per-rank work vs the step's median rank; a straggler is a hot row"
    if rs.empty or rs["rank"].nunique() < 2:
        if result.summary.ranks < 2:
            return None
        why = (
            f"No per-rank step times in the input ({result.summary.ranks} ranks, job-level "
            "numbers only): pass one log per rank (or a table with a rank column) to see them."
        )
        return empty_figure(FIG_HEATMAP, title, why)
    st = rs.loc[~rs["warmup"].astype(bool), ["rank", "step", "work_s"]]
    st = st[np.isfinite(st["work_s"].to_numpy(dtype=float))]
    if st.empty or st["rank"].nunique() < 2:
        why = (
            "No per-rank work in the steady steps (step time or phase columns are empty for "
            "all ranks but one), so there is nothing to compare."
        )
        return empty_figure(FIG_HEATMAP, title, why)
    st = st.assign(rel=st["work_s"] / st.groupby("step")["work_s"].transform("median"))
    notes: list[str] = []
    nodes = _rank_nodes(result)
    n_ranks = st["rank"].nunique()
    if n_ranks > max_ranks and len(nodes):
        st = st.assign(row=st["rank"].map(nodes).fillna("?"))
        notes.append(f"{n_ranks} ranks > {max_ranks}: rows are nodes (their worst rank).")
        row_label = "node"
    else:
        if n_ranks > max_ranks:
            width = math.ceil(n_ranks / max_ranks)
            st = st.assign(row=(st["rank"] // width) * width)
            st["row"] = st["row"].map(lambda r: f"ranks {r}–{r + width - 1}")
            notes.append(
                f"{n_ranks} ranks > {max_ranks}: rows are groups of {width} ranks (the worst)."
            )
        else:
            st = st.assign(row=st["rank"])
        row_label = "rank"
    # a row of several ranks shows its worst rank at each step (a mean would hide a straggler)
    st = st.groupby(["row", "step"], as_index=False)["rel"].max()
    steps = np.sort(st["step"].unique())
    if len(steps) > max_cols:
        bins = np.array_split(steps, max_cols)
        first = {int(s): int(b[0]) for b in bins for s in b}
        st = st.assign(col=st["step"].map(first))
        notes.append(f"{len(steps)} steps binned into {max_cols} columns (mean of each bin).")
    else:
        st = st.assign(col=st["step"])
    grid = st.pivot_table(index="row", columns="col", values="rel", aggfunc="mean")
    if row_label == "node":
        grid = grid.reindex(sorted(grid.index, key=natural_key))
    labels = [
        f"rank {r}" + (f" ({nodes[r]})" if r in nodes.index else "")
        if row_label == "rank"
        else str(r)
        for r in grid.index
    ]
    z = np.round(grid.to_numpy(dtype=float), 4)
    src = result.stragglers.work_source if result.stragglers else "work"
    title = f"Per-rank work vs the step's median rank ({src}); a straggler is a hot row"
    note = " ".join(notes)
    if src == "step_time":
        note = (
            note + " No per-rank phase columns: work = step time, which synchronous ranks share, "
            "so rows look alike."
        ).strip()
    return {
        "id": FIG_HEATMAP,
        "title": title,
        "note": note,
        "data": [
            {
                "type": "heatmap",
                "x": [int(c) for c in grid.columns],
                "y": [ptext(s) for s in labels],
                "z": [[None if not math.isfinite(v) else float(v) for v in row] for row in z],
                **clamped_colors(threshold),
                "hovertemplate": "%{y}<br>step %{x}<br>%{z:.3f} × median<extra></extra>",
            }
        ],
        "layout": _layout(
            title,
            "step",
            row_label,
            height=max(320, min(900, 120 + 14 * len(labels))),
            yaxis={
                "title": {"text": row_label if len(grid) == n_ranks else f"{row_label} (worst)"},
                "autorange": "reversed",
                "type": "category",
                "automargin": True,
            },
        ),
    }


def breakdown_figure(result: AnalyzeResult, max_ranks: int = MAX_RANKS) -> dict[str, Any] | None:
    """Per-rank stacked bars of median compute, comm, data and other time; None without phases.

    Drawn to scale: each bar is as tall as the rank's median step time; what the logs do not
    break down (a phase column missing, e.g. a single-card log with data time only) is a grey
    "not broken down" segment, not left out. Beyond ``max_ranks`` ranks, one bar per node: the
    node's slowest rank (largest median step time minus comm).
    """
    pr = result.breakdown.per_rank
    if pr is None or pr.empty:
        return None
    pr = pr.copy()
    for name in ("step_time_s", *PHASE_COLORS):
        if name not in pr.columns:
            pr[name] = np.nan
    note = ""
    if len(pr) > max_ranks and "node" in pr.columns and pr["node"].notna().any():
        n = len(pr)
        work = pr["step_time_s"] - pr["comm_s"].fillna(0.0)
        pr = pr.loc[work.fillna(-np.inf).groupby(pr["node"].fillna("?")).idxmax()]
        pr["node"] = pr["node"].fillna("?")
        pr = pr.iloc[sorted(range(len(pr)), key=lambda i: natural_key(pr["node"].iloc[i]))]
        labels = [ptext(nd) for nd in pr["node"]]
        note = f"{n} ranks > {max_ranks}: one bar per node, its slowest rank."
        xlab = "node (its slowest rank)"
    else:
        labels = [f"r{int(r)}" for r in pr["rank"]]
        xlab = "rank"
    # other_s is the remainder when the logs give it; where it is unknown, the rest of the step
    # is drawn as "not broken down" so the bar still reaches the step time
    known = pr[list(PHASE_COLORS)].fillna(0.0).sum(axis=1)
    rest = (pr["step_time_s"] - known).clip(lower=0.0).where(pr["other_s"].isna(), 0.0)
    if float(rest.fillna(0.0).max()) > 0.0:
        pr["unattributed_s"] = rest.fillna(0.0)
    data = [
        {
            "type": "bar",
            "name": name.removesuffix("_s"),
            "x": labels,
            "y": [round(float(v), 6) for v in pr[name].fillna(0.0)],
            "marker": {"color": color},
            "hovertemplate": f"%{{x}}<br>{name.removesuffix('_s')} %{{y:.4f}} s<extra></extra>",
        }
        for name, color in PHASE_COLORS.items()
        if pr[name].notna().any()
    ]
    if "unattributed_s" in pr.columns:
        data.append(
            {
                "type": "bar",
                "name": "not broken down in the logs",
                "x": labels,
                "y": [round(float(v), 6) for v in pr["unattributed_s"]],
                "marker": {"color": "#e8e8e8", "pattern": {"shape": "/", "fgcolor": "#9d9d9d"}},
                "hovertemplate": "%{x}<br>not in the logs' phases %{y:.4f} s<extra></extra>",
            }
        )
    title = "Per-rank step breakdown (median seconds per step)"
    return {
        "id": FIG_BREAKDOWN,
        "title": title,
        "note": note,
        "data": data,
        "layout": _layout(title, xlab, "seconds", barmode="stack", height=400),
    }


def summary_rows(result: AnalyzeResult) -> list[tuple[str, str]]:
    """Headline numbers as (label, formatted value) pairs."""
    s, b, j = result.summary, result.breakdown, result.jitter
    t = s.step_time_s
    rows = [
        ("ranks", f"{s.ranks}" + (f" on {s.nodes} node(s)" if s.nodes else "")),
        ("steady steps", f"{s.steps} ({s.warmup_steps} warm-up excluded)"),
        (
            "step time",
            f"median {t['median']:.4f} s · mean {t['mean']:.4f} s · p90 {t['p90']:.4f} s · "
            f"p99 {t['p99']:.4f} s",
        ),
    ]
    rows += throughput_rows(s)
    rows.append(
        ("speedup", "n/a (no --baseline)" if b.speedup is None else f"{b.speedup:.3f} vs one card")
    )
    if j is not None:
        rows.append(("jitter", f"cv {j.cv:.4f} · p99/p50 {j.p99_over_p50:.3f}"))
    if b.source != "none":
        rows.append(
            (
                "breakdown",
                f"compute {pct(b.compute_fraction)} · comm {pct(b.comm_fraction)} · "
                f"data {pct(b.data_fraction)} · other {pct(b.other_fraction)} (from {b.source})",
            )
        )
    return rows
