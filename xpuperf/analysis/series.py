"""Job-level per-step series derived from the canonical step table."""

from __future__ import annotations

import pandas as pd


def job_steps(df: pd.DataFrame) -> pd.DataFrame:
    """Collapse per-rank rows into one row per step.

    In synchronous data parallelism every rank's step time is the job's step time up to
    measurement noise, so the job step time is the median over ranks (robust to one rank's
    clock or logging artefacts).

    Args:
        df: canonical step table (:mod:`xpuperf.steps`).

    Returns:
        DataFrame sorted by step with columns ``step`` (int64), ``step_time_s`` (median over
        ranks, s), ``ranks`` (ranks reporting the step), ``samples`` (Σ over ranks, NaN when
        unknown) and ``fps`` (``samples / step_time_s``, samples/s, NaN when unknown).
    """
    g = df.groupby("step", sort=True)
    out = pd.DataFrame(
        {
            "step_time_s": g["step_time_s"].median(),
            "ranks": g["rank"].nunique(),
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
