"""Job-level per-step series derived from the canonical step table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from xpuperf.analysis.grid import Grid, by_columns, grid_of


def job_steps(df: pd.DataFrame, grid: Grid | None = None) -> pd.DataFrame:
    """Collapse per-rank rows into one row per step.

    In synchronous data parallelism every rank's step time is the job's step time up to
    measurement noise, so the job step time is the median over ranks (robust to one rank's
    clock or logging artefacts).

    Args:
        df: canonical step table (:mod:`xpuperf.steps`), one row per (rank, step) as
            :func:`xpuperf.steps.validate` guarantees.

    Returns:
        DataFrame sorted by step with columns ``step`` (int64), ``step_time_s`` (median over
        ranks, s), ``ranks`` (ranks reporting the step), ``samples`` (Σ over ranks, NaN when
        unknown) and ``fps`` (``samples / step_time_s``, samples/s, NaN when unknown).

    ``grid``: :func:`xpuperf.analysis.grid.grid_of` of ``df`` when the caller has it; when every
    rank has the same steps the medians are taken on the rank × step view (same values as the
    groupby; Σ samples may differ in the last bits: numpy sums, pandas compensates).
    """
    g = grid if grid is not None else grid_of(df)
    if g is not None:
        return _job_steps_grid(g)
    g = df.groupby("step", sort=True)
    out = pd.DataFrame(
        {
            "step_time_s": g["step_time_s"].median(),
            "ranks": g.size(),  # = distinct ranks: one row per (rank, step) (validate())
        }
    )
    if "samples" in df.columns:
        out["samples"] = g["samples"].sum(min_count=1)
    else:
        out["samples"] = float("nan")
    out["fps"] = out["samples"] / out["step_time_s"]
    out = out.reset_index()
    out["step"] = out["step"].astype("int64")
    return out


def _job_steps_grid(g: Grid) -> pd.DataFrame:
    nr, ns = g.shape
    out = pd.DataFrame({"step": g.steps.astype("int64")})
    out["step_time_s"] = g.step_median()
    out["ranks"] = np.full(ns, nr, dtype=np.int64)
    if g.has("samples"):
        sam = g.mat("samples")
        total = by_columns(sam, lambda x: np.nansum(x, axis=0))
        seen = by_columns(sam, lambda x: (~np.isnan(x)).any(axis=0))  # min_count=1
        out["samples"] = np.where(seen, total, np.nan)
    else:
        out["samples"] = float("nan")
    out["fps"] = out["samples"] / out["step_time_s"]
    return out
