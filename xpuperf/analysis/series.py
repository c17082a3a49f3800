"""Job-level per-step series derived from the canonical step table, and its wall clock."""

from __future__ import annotations

from dataclasses import dataclass, field

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
        unknown) and ``fps`` (``samples / step_time_s``, samples/s, NaN when unknown); with a
        ``tokens`` column in ``df`` also ``tokens`` (Σ over ranks) and ``tps``
        (``tokens / step_time_s``, tokens/s, NaN when unknown).

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
    for col in SUMMED:
        if col in df.columns:
            out[col] = g[col].sum(min_count=1)
        elif col == "samples":
            out[col] = float("nan")
    _rates(out)
    out = out.reset_index()
    out["step"] = out["step"].astype("int64")
    return out


def _job_steps_grid(g: Grid) -> pd.DataFrame:
    nr, ns = g.shape
    out = pd.DataFrame({"step": g.steps.astype("int64")})
    out["step_time_s"] = g.step_median()
    out["ranks"] = np.full(ns, nr, dtype=np.int64)
    for col in SUMMED:
        if g.has(col):
            sam = g.mat(col)
            total = by_columns(sam, lambda x: np.nansum(x, axis=0))
            seen = by_columns(sam, lambda x: (~np.isnan(x)).any(axis=0))  # min_count=1
            out[col] = np.where(seen, total, np.nan)
        elif col == "samples":
            out[col] = float("nan")
    _rates(out)
    return out


SUMMED = ("samples", "tokens")
"""Per-rank counts the job series sums over ranks (``tokens`` only when the table has it)."""


def _rates(out: pd.DataFrame) -> None:
    """``fps`` = samples / step time and, with tokens, ``tps`` = tokens / step time."""
    out["fps"] = out["samples"] / out["step_time_s"]
    if "tokens" in out.columns:
        out["tps"] = out["tokens"] / out["step_time_s"]


@dataclass
class WallClock:
    """Steady wall time of a run and the samples in it (:func:`wallclock`).

    Attributes:
        wall_time_s: seconds from the start of the first steady row to the end of the last.
        iterations: iterations the rows cover (Σ of each row's ``iterations``).
        samples: Σ samples × iterations over rows (NaN when a row's samples are unknown).
        tokens: Σ tokens × iterations over rows (NaN when unknown or the series has no tokens).
        source: ``"timestamps"`` (end-of-step timestamps of one rank) or ``"step_times"``.
        sum_step_times_s: Σ job step time × iterations (the wall time without timestamps), s.
        outside_steps_s: with ``source == "timestamps"``, ``wall_time_s − sum_step_times_s``:
            the time between the logged steps (evaluation, checkpoints, logging), s; None
            without timestamps (the wall time is then the step times: nothing is outside them).
        cuts: iterations not in the log, ``(first, last)`` per cut (:func:`log_cuts`); neither
            the iterations nor the wall time count them.
    """

    wall_time_s: float
    iterations: int
    samples: float
    source: str
    sum_step_times_s: float
    tokens: float = float("nan")
    outside_steps_s: float | None = None
    cuts: list[tuple[int, int]] = field(default_factory=list)


CUT_GAPS = 10
"""A gap in the step numbers over this many logging intervals (the median gap) is a cut in the
log (an excerpt, two runs in one file): the row after it covers one interval, not the gap."""


def _gaps(steps: np.ndarray, prev_step: int | None) -> tuple[np.ndarray, int]:
    """(gap of each row to the row before it, the median gap); the first row's gap is to
    ``prev_step`` when given and lower, else the median gap."""
    s = np.asarray(steps, dtype=np.int64)
    gaps = np.diff(s)
    typical = max(int(np.median(gaps)), 1) if len(gaps) else 1
    first = s[0] - prev_step if prev_step is not None and prev_step < s[0] else typical
    return np.concatenate([[first], gaps]).astype(np.int64), typical


def row_iterations(steps: np.ndarray, prev_step: int | None = None) -> np.ndarray:
    """Iterations each row of a job series covers: the gap to the previous logged step.

    Logs that print every k iterations (Megatron ``--log-interval``, Paddle, MMEngine) give one
    row per window whose step time is the window's mean per iteration, so a row stands for k
    iterations. The first row's gap is to ``prev_step`` (the last warm-up row) when given, else
    the median gap. A gap over :data:`CUT_GAPS` × the median gap is a cut in the log (an
    excerpt, two runs in one file): the row after it covers one median gap, and the iterations
    before that are not in the log (:func:`log_cuts`) — they are not filled with its pace.

    Args:
        steps: step numbers, increasing, shape (n,).
        prev_step: step number of the row before the first, or None.

    Returns:
        int64 array (n,), every value ≥ 1.
    """
    if len(steps) == 0:
        return np.zeros(0, dtype=np.int64)
    gaps, typical = _gaps(steps, prev_step)
    return np.clip(np.where(gaps > CUT_GAPS * typical, typical, gaps), 1, None)


def log_cuts(steps: np.ndarray, prev_step: int | None = None) -> list[tuple[int, int]]:
    """Iterations not in the log: ``(first, last)`` per cut (:func:`row_iterations`), e.g.
    rows at 1,200, 1,250, 17,150 every 50 → ``[(1251, 17100)]`` (17,150 covers 17,101–17,150)."""
    if len(steps) == 0:
        return []
    s = np.asarray(steps, dtype=np.int64)
    gaps, typical = _gaps(s, prev_step)
    return [
        (int(s[i] - gaps[i] + 1), int(s[i] - typical))
        for i in np.flatnonzero(gaps > CUT_GAPS * typical)
    ]


def wallclock(
    steady_job: pd.DataFrame,
    table: pd.DataFrame,
    prev_step: int | None = None,
    sampled: bool = False,
) -> WallClock:
    """The steady wall time and samples of a run.

    Wall time: Σ over rows of job step time × the row's iterations (:func:`row_iterations`); when
    the table has ``t_end_s`` for the lowest rank on every steady step, increasing, with a span of
    at least 100 × the clock's resolution (1 s stamps: 100 s) and no shorter than 0.9 × that sum,
    the timestamps give it instead (``t_end`` of the last steady row − ``t_end`` of the first + the
    first row's own duration), so time between steps (evaluation, checkpoints) counts too. A cut
    in the log (:func:`log_cuts`) counts in neither: the row after it covers one logging
    interval, and across it the timestamps give way to that row's own time.

    Args:
        steady_job: :func:`job_steps` rows after warm-up (``step, step_time_s, samples``;
            ``tokens`` when known).
        table: the canonical step table (only ``rank, step, t_end_s`` are read).
        prev_step: the last warm-up step, or None.
        sampled: the rows are single iterations shown every k (nanoGPT ``iter N: … time``, timm
            ``Time: cur``), not window means: a row then counts once at its own time and the
            k − 1 iterations not shown at the median row time — so a slow logged iteration (one
            that ran an evaluation) is not multiplied by k.
    """
    steps = steady_job["step"].to_numpy(dtype=np.int64)
    t = steady_job["step_time_s"].to_numpy(dtype=float)
    k = row_iterations(steps, prev_step)
    sam = steady_job["samples"].to_numpy(dtype=float)
    row_s = t + (k - 1) * np.median(t) if sampled and len(t) else t * k  # each row's time
    total = float(np.sum(row_s))
    out = WallClock(total, int(k.sum()), float(np.sum(sam * k)), "step_times", total)
    if "tokens" in steady_job.columns:
        out.tokens = float(np.sum(steady_job["tokens"].to_numpy(dtype=float) * k))
    out.cuts = log_cuts(steps, prev_step)
    ts = _timestamps(table, steps)
    if ts is not None:
        gaps, typical = _gaps(steps, prev_step)
        cut = gaps[1:] > CUT_GAPS * typical  # across a cut only the row's own time counts
        span = float(np.diff(ts)[~cut].sum() + row_s[1:][cut].sum())
        quantum = 1.0 if np.all(ts == np.round(ts)) else 1e-3
        wall = span + float(t[0] * k[0])
        if span >= 100 * quantum and wall >= 0.9 * total:
            out.wall_time_s, out.source = wall, "timestamps"
            out.outside_steps_s = wall - total
    return out


def _timestamps(table: pd.DataFrame, steps: np.ndarray) -> np.ndarray | None:
    """``t_end_s`` of the lowest rank on exactly ``steps``, increasing; else None.

    ``table`` is sorted by (rank, step), as :func:`xpuperf.steps.validate` returns it.
    """
    if "t_end_s" not in table.columns or len(steps) < 2:
        return None
    ranks = table["rank"].to_numpy()  # sorted by (rank, step): validate() returns it so
    lo, hi = np.searchsorted(ranks, [ranks[0], ranks[0] + 1])
    rows = table.iloc[lo:hi][["step", "t_end_s"]]
    rows = rows[rows["step"].isin(steps)]
    if len(rows) != len(steps):
        return None
    ts = rows["t_end_s"].to_numpy(dtype=float)
    if not np.isfinite(ts).all() or np.any(np.diff(ts) <= 0):
        return None
    return ts
