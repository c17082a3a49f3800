"""Warm-up detection: the slow leading steps (graph compilation, autotuning, cache filling).

Method (one sentence for the docs): warm-up is the run of leading steps before the first step
that, together with the next four steps (one spike allowed), lies at or below ``m + max(5 σ,
5 % · m)``, where m is the median of the 40 steps that follow it and σ = 1.4826 · MAD of the
step-to-step differences / √2 in the second half of the run; it is capped at half the steps, and
runs shorter than 10 steps get none — except the first row of a log that prints every k > 1
steps and starts at the run's start (Keras ``TimeHistory … between steps 0 and 100``, Megatron
``iteration 10``, nanoGPT ``iter 0``): that row holds the start-up (graph compilation, first
batch), and it is warm-up when it lies above ``m + max(5 σ, 5 % · m)`` of the rows after it
(m their median, σ = 1.4826 · their MAD), so a short windowed run does not call it a spike.

Why these choices:

- The reference m *follows* the candidate step, so warm-up means "slower than what comes next".
  A slower plateau (e.g. the first third of a run shared with a co-tenant job) is therefore not
  swallowed as warm-up: it stays in the steady series, where the jitter analysis reports it as a
  change point (XP205). A reference from the second half of the run (the simpler rule) would
  exclude such a plateau entirely. 40 steps put m about 20 steps ahead, enough to see a gentle
  ramp through the noise.
- Median and MAD (scaled by 1.4826 to estimate σ under normal noise) keep the rule robust to
  spikes; taking the MAD of differences keeps a trend or a level shift from passing for noise;
  the 5 % floor keeps a very quiet run from calling ordinary noise "warm-up".
- The 5-step window tolerates one spike right after the warm-up (a checkpoint, a late
  recompilation) without stretching the warm-up to it; only a spike on the very first steady
  step moves the boundary, by one step.
- A warm-up whose last steps are within 5 % (or 5 robust σ) of the steady level is cut short
  by those steps; they barely change the verdicts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from xpuperf.analysis.results import WarmupResult
from xpuperf.errors import InputError, UsageError
from xpuperf.findings import Finding, Severity

MIN_STEPS = 10
"""Runs shorter than this get no automatic warm-up."""
MAD_K = 5.0
"""Robust z above the steady median that still counts as steady."""
MIN_REL = 0.05
"""Floor of the margin above the steady median, as a fraction of it."""
WINDOW = 5
"""Length of the window that must be (almost) steady to end the warm-up."""
MAX_ABOVE = 1
"""Steps above the threshold tolerated in that window (one spike)."""
LOOKAHEAD = 40
"""Steps after a candidate step whose median is its steady reference."""
MAD_SCALE = 1.4826
"""MAD → σ for normally distributed noise."""


def _check_job(job: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in ("step", "step_time_s") if c not in job.columns]
    if missing:
        raise InputError(f"job series lacks column(s) {', '.join(missing)}; use job_steps()")
    if job["step"].is_monotonic_increasing:
        return job
    return job.sort_values("step", kind="stable")


def detect_warmup(job: pd.DataFrame, warmup: int | None = None, log_rows: int = 0) -> WarmupResult:
    """Find the leading warm-up steps of a run, or apply the user's ``--warmup N``.

    Args:
        job: per-step job series from :func:`xpuperf.analysis.series.job_steps` (one row per
            step; columns ``step`` and ``step_time_s`` in seconds are used). Sorted by step here
            if it is not already.
        warmup: number of leading steps to exclude (user override, method ``"user"``; clipped to
            the number of steps), or None to detect them (method ``"auto"``, see module doc).
        log_rows: leading rows the log format marks as start-up (the first MLPerf block):
            when ``warmup`` is None and the detection finds fewer, these are excluded instead
            (method ``"log"``), as long as a row is left.

    Returns:
        :class:`WarmupResult`: ``steps`` excluded, ``first_steady_step`` (None when every step is
        excluded or the series is empty), ``method`` and, for ``"auto"``, ``threshold_s``: the
        threshold at the first steady step (None for runs shorter than 10 steps, which get no
        warm-up).

    Raises:
        UsageError: ``warmup`` is negative.
        InputError: ``job`` lacks ``step`` or ``step_time_s``.
    """
    job = _check_job(job)
    steps = job["step"].to_numpy(dtype="int64")
    n = len(steps)
    if warmup is not None:
        if warmup < 0:
            raise UsageError(f"--warmup must be >= 0, got {warmup}")
        k = min(int(warmup), n)
        return WarmupResult(k, int(steps[k]) if k < n else None, "user")
    if 0 < log_rows < n:
        auto = detect_warmup(job)
        if auto.steps >= log_rows:
            return auto
        return WarmupResult(int(log_rows), int(steps[log_rows]), "log")
    if n < MIN_STEPS:
        return _first_window(steps, job["step_time_s"].to_numpy(dtype="float64"))

    x = job["step_time_s"].to_numpy(dtype="float64")
    thr = _local_thresholds(x)
    # above[i, j]: step i + j is above the threshold of step i.
    win = np.lib.stride_tricks.sliding_window_view(x, WINDOW)
    above = win > thr[: len(win), None]
    opens = ~above[:, 0] & (above.sum(axis=1) <= MAX_ABOVE)
    hits = np.flatnonzero(opens)
    k = min(int(hits[0]), n // 2) if len(hits) else n // 2
    return WarmupResult(k, int(steps[k]), "auto", threshold_s=float(thr[k]))


def _first_window(steps: np.ndarray, x: np.ndarray) -> WarmupResult:
    """Warm-up of a run shorter than :data:`MIN_STEPS` rows: its first row when the log prints
    every k > 1 steps (median step gap), the first row covers the run's start (its step ≤ k) and
    it lies above ``m + max(5 σ, 5 % · m)`` of the other rows (m their median, σ = 1.4826 · their
    MAD); else none. Needs at least 3 rows (2 to set the level)."""
    n = len(steps)
    if n < 3:
        return WarmupResult(0, int(steps[0]) if n else None, "auto")
    gap = float(np.median(np.diff(steps)))
    rest = x[1:]
    m = float(np.median(rest))
    thr = m + max(MAD_K * MAD_SCALE * float(np.median(np.abs(rest - m))), MIN_REL * m)
    if gap > 1 and steps[0] <= gap and x[0] > thr:
        return WarmupResult(1, int(steps[1]), "auto", threshold_s=thr)
    return WarmupResult(0, int(steps[0]), "auto")


def _local_thresholds(x: np.ndarray) -> np.ndarray:
    """Per step i: m_i + max(5·σ, 0.05·m_i), with m_i = median of x[i : i+LOOKAHEAD].

    σ = 1.4826 · MAD(Δx) / √2 over the second half of the run: the robust noise scale from
    step-to-step differences, which a trend or a level shift does not inflate. Near the end of
    the run the look-ahead window is shorter.
    """
    d = np.diff(x[len(x) // 2 :])
    sigma = MAD_SCALE * float(np.median(np.abs(d - np.median(d)))) / np.sqrt(2.0)
    ahead = pd.Series(x[::-1]).rolling(LOOKAHEAD, min_periods=1).median().to_numpy()[::-1]
    return ahead + np.maximum(MAD_K * sigma, MIN_REL * ahead)


def split_warmup(df: pd.DataFrame, result: WarmupResult) -> pd.DataFrame:
    """The steady rows of a step table: ``step >= result.first_steady_step``.

    Args:
        df: canonical step table (:mod:`xpuperf.steps`) or a job series — any frame with a
            ``step`` column.
        result: from :func:`detect_warmup` on the same run.

    Returns:
        The steady rows with a fresh index (a copy); empty with the same columns when
        ``first_steady_step`` is None.
    """
    if result.first_steady_step is None:
        return df.iloc[0:0].reset_index(drop=True)
    return df[df["step"] >= result.first_steady_step].reset_index(drop=True)


def warmup_finding(job: pd.DataFrame, result: WarmupResult) -> Finding | None:
    """XP404 (info) describing the excluded warm-up, or None when nothing was excluded.

    The message states the mean warm-up step time, the steady median step time, the threshold
    (auto only) and how to override it, and notes when the detection hit its cap of half the
    run (step time still falling at mid-run: a trend rather than a warm-up).

    Args:
        job: the per-step job series the result was computed on.
        result: from :func:`detect_warmup`.
    """
    if result.steps <= 0:
        return None
    job = _check_job(job)
    x = job["step_time_s"].to_numpy(dtype="float64")
    warm_s = float(np.mean(x[: result.steps]))
    rest = x[result.steps :]
    steady_s = float(np.median(rest)) if len(rest) else float("nan")
    if result.method == "auto" and result.threshold_s is not None:
        how = f"threshold {result.threshold_s:.3f} s"
    elif result.method == "log":
        how = "the log format marks them as start-up"
    else:
        how = "set by --warmup"
    steady_txt = f"{steady_s:.3f} s" if len(rest) else "n/a (no steady step left)"
    capped = result.method == "auto" and result.steps >= len(x) // 2
    note = (
        " The warm-up hit its cap of half the run: step time is still falling at mid-run — check"
        " the trend with --warmup 0."
        if capped
        else ""
    )
    return Finding(
        "XP404",
        Severity.INFO,
        f"{result.steps} warm-up step(s) excluded (step time {warm_s:.3f} s vs steady "
        f"{steady_txt}; {how}); override with --warmup N.{note}",
        {
            "steps": result.steps,
            "method": result.method,
            "first_steady_step": result.first_steady_step,
            "warmup_mean_s": warm_s,
            "steady_median_s": steady_s if len(rest) else None,
            "threshold_s": result.threshold_s,
            "capped": capped,
        },
    )
