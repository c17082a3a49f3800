"""Cost models for framework warnings, measured from the canonical step table when it can be.

Shapes: ``table`` is the canonical step table (:mod:`xpuperf.steps`: ``rank``, ``step``,
``step_time_s`` …; an optional ``epoch`` column is used when present). All times in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Stall:
    """Inter-epoch stall: the step-time excess at the first step of each epoch.

    Attributes:
        stall_s: median over epoch starts of (step time at the start − median step time).
        boundaries: epoch starts measured (the table's first step is left out: warm-up).
        median_step_s: median step time over the table.
        fraction: ``stall_s × boundaries`` over the summed step time of the table.
    """

    stall_s: float
    boundaries: int
    median_step_s: float
    fraction: float


def per_step(table: pd.DataFrame) -> pd.Series:
    """Median step time over ranks, indexed by step (sorted)."""
    return table.groupby("step", sort=True)["step_time_s"].median()


def step_span(table: pd.DataFrame) -> int | None:
    """Steps the table covers, ``max − min + gap`` (``gap`` = median distance between logged
    steps, so a log printed every 50 iterations counts the 50 of its first interval); None when
    the table is empty."""
    steps = np.unique(table["step"].to_numpy())
    if len(steps) == 0:
        return None
    gap = int(np.median(np.diff(steps))) if len(steps) > 1 else 1
    return int(steps[-1] - steps[0] + max(gap, 1))


def epoch_stall(table: pd.DataFrame, steps_per_epoch: int | None) -> Stall | None:
    """Measure the inter-epoch stall, or None when the table cannot show it.

    Epoch starts come from an ``epoch`` column when present, else from ``steps_per_epoch`` (read
    in the log): the steps of one residue modulo the epoch length whose mean excess is largest
    (the table's step numbering need not start at an epoch start). Needs every step logged
    (median step gap 1) and at least two epoch starts after the first step.
    """
    if table is None or table.empty:
        return None
    t = per_step(table)
    steps, times = t.index.to_numpy(), t.to_numpy(dtype="float64")
    if len(steps) < 3 or np.median(np.diff(steps)) != 1:
        return None
    med = float(np.median(times))
    if "epoch" in table.columns:
        ep = table.groupby("step", sort=True)["epoch"].min().to_numpy()
        starts = np.flatnonzero(np.r_[False, ep[1:] != ep[:-1]])
    elif steps_per_epoch and steps_per_epoch > 1 and len(steps) >= 2 * steps_per_epoch:
        phase = steps % steps_per_epoch
        excess = times - med
        total = np.bincount(phase, weights=excess, minlength=steps_per_epoch)
        count = np.bincount(phase, minlength=steps_per_epoch)
        best = int(np.argmax(np.where(count > 0, total / np.maximum(count, 1), -np.inf)))
        starts = np.flatnonzero(phase == best)
        starts = starts[starts > 0]
    else:
        return None
    if len(starts) < 2:
        return None
    stall = max(float(np.median(times[starts] - med)), 0.0)
    return Stall(stall, len(starts), med, stall * len(starts) / float(times.sum()))


def median_step_s(table: pd.DataFrame | None) -> float | None:
    """Median step time over the table, or None without a table."""
    if table is None or table.empty:
        return None
    return float(np.median(per_step(table).to_numpy(dtype="float64")))
