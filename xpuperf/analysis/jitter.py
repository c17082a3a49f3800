"""Jitter: is the job's FPS line flat (background.md rule 3), and if not, why not?

Works on the steady (post-warm-up) per-step job series of :func:`xpuperf.analysis.series.job_steps`.
Methods, one line each (for docs/analyze.md):

- **cv**: sample std (ddof=1) / mean of job step time, and of job FPS when samples are known.
- **tail**: p50/p90/p99 of step time (numpy linear interpolation) and p99/p50.
- **spikes**: steps above ``median + max(k · 1.4826 · MAD, 5 % · median)`` (k = 5), computed per
  level between change points (a single level when there is none);
  cost = Σ(spike − median) / Σ step time.
- **periodic spikes**: candidate periods (≥ 4 steps) from the FFT autocorrelation of the spike
  indicator, confirmed on positions: ≥ 3 spikes and at least half of all spikes on the grid
  ``phase + k · period`` (±1 step; exact when only 3), ≥ 60 % of grid slots hit, and a binomial
  chance of so many spikes on a grid < 1e-3 (:mod:`xpuperf.analysis.periodicity`).
- **change points**: binary segmentation with the CUSUM best-split statistic on the series with
  spikes clipped to a 21-step running median; a split is kept when Mann–Whitney U gives
  p < 1e-3, both sides have ≥ max(10, 5 % of n) steps and the medians differ by ≥ 5 %; at most 3.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from xpuperf.analysis import periodicity as _per
from xpuperf.analysis.pvalue import format_p
from xpuperf.analysis.results import ChangePoint, JitterResult
from xpuperf.errors import InputError
from xpuperf.findings import Finding, Severity

MAD_SCALE = 1.4826
"""MAD → σ for normally distributed noise."""
MIN_REL = 0.05
"""Floor of the spike margin above the median, as a fraction of it."""
CLIP_WINDOW = 21
"""Running-median window used to clip spikes before change-point search, steps."""
# Periodic-spike settings live in periodicity; kept importable from here.
MIN_PERIOD, PERIOD_TOL, GRID_SHARE = _per.MIN_PERIOD, _per.PERIOD_TOL, _per.GRID_SHARE
SLOT_SHARE, PERIOD_ALPHA = _per.SLOT_SHARE, _per.PERIOD_ALPHA


def analyze_jitter(
    job: pd.DataFrame,
    *,
    cv_threshold: float = 0.05,
    tail_threshold: float = 1.5,
    spike_k: float = 5.0,
    spike_cost_threshold: float = 0.01,
    min_steps: int = 20,
    cp_alpha: float = 1e-3,
    cp_min_change: float = 0.05,
    max_change_points: int = 3,
    coarse: tuple[float, str] | None = None,
) -> tuple[JitterResult, list[Finding]]:
    """Measure how steady the job's step time and FPS are and explain the unsteadiness.

    Args:
        job: steady per-step job series (:func:`xpuperf.analysis.series.job_steps` after
            :func:`xpuperf.analysis.warmup.split_warmup`): ``step`` (int), ``step_time_s``
            (seconds, > 0) and optionally ``fps`` (samples/s, NaN when unknown). Sorted by step
            here if it is not already. May be empty.
        cv_threshold: XP201 fires when FPS cv (step-time cv when FPS is unknown) exceeds it.
        tail_threshold: XP202 fires when p99/p50 of step time exceeds it.
        spike_k: spike threshold in robust σ (1.4826 · MAD) above the median.
        spike_cost_threshold: spikes costing at least this fraction of time make XP203 a
            warning (else info).
        min_steps: fewer steady steps than this add XP405 (weak verdicts).
        cp_alpha: Mann–Whitney p-value below which a change point is kept.
        cp_min_change: smallest relative level change reported as a change point.
        max_change_points: at most this many change points.
        coarse: (±fraction, what) when each step time is only that exact by the log's clock
            (tqdm's 1 s clock over 20 s windows: 0.05): XP201–XP205 are info hints saying so
            (``data["weak"]``), no XP206.

    Returns:
        ``(JitterResult, findings)``; findings are XP201–XP206 and XP405 (see module doc for
        methods). Fewer than ``min_steps`` steps: XP201–XP205 are info (a hint, said so in the
        message, ``data["weak"]``), no XP206. Never NaN: fewer than 2 steps give cv 0.0 and
        XP405 only.

    Raises:
        InputError: ``job`` lacks ``step`` or ``step_time_s``.
    """
    missing = [c for c in ("step", "step_time_s") if c not in job.columns]
    if missing:
        raise InputError(f"job series lacks column(s) {', '.join(missing)}; use job_steps()")
    if not job["step"].is_monotonic_increasing:
        job = job.sort_values("step", kind="stable")
    x = job["step_time_s"].to_numpy(dtype="float64")
    steps = job["step"].to_numpy(dtype="int64")
    fps = job["fps"].to_numpy(dtype="float64") if "fps" in job.columns else np.array([np.nan])
    fps = fps[np.isfinite(fps)]
    n = len(x)

    if n < 2:
        v = float(x[0]) if n else 0.0
        fps_cv = 0.0 if len(fps) else None
        res = JitterResult(n, 0.0, fps_cv, v, v, v, 1.0, [], v * (1.0 + MIN_REL), 0.0)
        return res, [_few_steps(n, min_steps)]

    p50, p90, p99 = (float(v) for v in np.percentile(x, [50, 90, 99]))
    change_points = _change_points(
        x, steps, spike_k, cp_alpha, cp_min_change, max(0, max_change_points)
    )
    bounds = [0, *(int(np.searchsorted(steps, c.step)) for c in change_points), n]
    spike_mask = np.zeros(n, dtype=bool)
    excess = np.zeros(n)
    thr = 0.0
    for a, b in itertools.pairwise(bounds):
        med, thr = robust_threshold(x[a:b], spike_k)
        spike_mask[a:b] = x[a:b] > thr
        excess[a:b] = x[a:b] - med
    total = float(x.sum())
    spike_steps = [int(s) for s in steps[spike_mask]]
    period, phase, on_grid = _per.periodicity(steps[spike_mask], int(steps[0]), int(steps[-1]))

    res = JitterResult(
        n_steps=n,
        cv=_cv(x),
        fps_cv=_cv(fps) if len(fps) else None,
        p50_s=p50,
        p90_s=p90,
        p99_s=p99,
        p99_over_p50=p99 / p50,
        spike_steps=spike_steps,
        spike_threshold_s=thr,
        spike_cost_fraction=float(excess[spike_mask].sum()) / total,
        period_steps=period,
        period_phase=phase,
        change_points=change_points,
    )
    grid_cost = float(excess[np.isin(steps, on_grid)].sum()) / total
    limits = {
        "cv": cv_threshold,
        "tail": tail_threshold,
        "k": spike_k,
        "cost": spike_cost_threshold,
        "cp": cp_min_change,
    }
    findings = _findings(res, grid_cost, len(on_grid), limits)
    if n < min_steps:  # too few steps for a verdict: hints only, and no all-clear (XP206)
        why = f"only {n} steady step(s) (< {min_steps})"
        findings = [_hint(f, why) for f in findings if f.code != "XP206"]
        findings.append(_few_steps(n, min_steps))
    elif coarse:
        why = f"{coarse[1]} (±{coarse[0]:.0%} per row)"
        findings = [_hint(f, why) for f in findings if f.code != "XP206"]
    return res, findings


def _hint(f: Finding, why: str) -> Finding:
    """XP201–XP205 from too few steady steps or too coarse a clock (``why``): info, said to be a
    hint (the ``steps.jitter``/``steps.spikes`` checks are "not checked" then, so a warning
    would claim a verdict the checks do not)."""
    if f.severity is Severity.INFO:
        return f
    msg = f"{f.message} {why[0].upper()}{why[1:]}: a hint, not a verdict."
    return Finding(f.code, Severity.INFO, msg, {**f.data, "weak": True})


def robust_threshold(x: np.ndarray, k: float = 5.0) -> tuple[float, float]:
    """Median and spike threshold ``median + max(k · 1.4826 · MAD, 0.05 · median)``, seconds.

    Args:
        x: 1-D step times, seconds (non-empty).
        k: robust σ above the median.
    """
    med = float(np.median(x))
    mad = float(np.median(np.abs(x - med)))
    return med, med + max(k * MAD_SCALE * mad, MIN_REL * med)


def _cv(v: np.ndarray) -> float:
    if len(v) < 2:
        return 0.0
    mean = float(np.mean(v))
    return float(np.std(v, ddof=1)) / mean if mean > 0 else 0.0


def _clip_spikes(x: np.ndarray, k: float) -> np.ndarray:
    """Replace spikes above a running median (edge-preserving) by that median."""
    base = pd.Series(x).rolling(CLIP_WINDOW, center=True, min_periods=1).median().to_numpy()
    resid = x - base
    mad = float(np.median(np.abs(resid - np.median(resid))))
    limit = base + np.maximum(k * MAD_SCALE * mad, MIN_REL * base)
    return np.where(x > limit, base, x)


def _best_split(y: np.ndarray, min_seg: int) -> tuple[int, float] | None:
    """CUSUM best split of ``y``: index t maximising sqrt(t(m−t)/m)·|mean(y[:t]) − mean(y[t:])|."""
    m = len(y)
    if m < 2 * min_seg:
        return None
    t = np.arange(min_seg, m - min_seg + 1)
    cs = np.cumsum(y)
    left = cs[t - 1] / t
    right = (cs[-1] - cs[t - 1]) / (m - t)
    stat = np.sqrt(t * (m - t) / m) * np.abs(left - right)
    i = int(np.argmax(stat))
    return int(t[i]), float(stat[i])


def _test_split(y: np.ndarray, a: int, t: int, b: int, min_change: float) -> tuple[float, float]:
    """(relative change of medians, Mann–Whitney p) of y[a:t] vs y[t:b]; p = 1 if too small."""
    before, after = float(np.median(y[a:t])), float(np.median(y[t:b]))
    change = (after - before) / before if before > 0 else 0.0
    if abs(change) < min_change:
        return change, 1.0
    from scipy import stats  # on use: keeps scipy out of start-up

    return change, float(stats.mannwhitneyu(y[a:t], y[t:b], alternative="two-sided").pvalue)


def _change_points(
    x: np.ndarray, steps: np.ndarray, k: float, alpha: float, min_change: float, max_cp: int
) -> list[ChangePoint]:
    """Binary segmentation; each accepted split must pass size, effect and Mann–Whitney tests."""
    n = len(x)
    min_seg = max(10, math.ceil(0.05 * n))
    if max_cp == 0 or n < 2 * min_seg:
        return []
    y = _clip_spikes(x, k)
    cuts: list[int] = []
    pending = [(0, n)]
    while pending and len(cuts) < max_cp:
        best = None  # (stat, a, t, b)
        for a, b in list(pending):
            split = _best_split(y[a:b], min_seg)
            t = a + split[0] if split else 0
            if split is None or _test_split(y, a, t, b, min_change)[1] >= alpha:
                pending.remove((a, b))  # no acceptable split here
            elif best is None or split[1] > best[0]:
                best = (split[1], a, t, b)
        if best is None:
            break
        _, a, t, b = best
        cuts.append(t)
        pending.remove((a, b))
        pending += [(a, t), (t, b)]
    # Re-measure each cut against its final neighbours; drop cuts that no longer hold.
    cuts.sort()
    out = []
    edges = [0, *cuts, n]
    for i, t in enumerate(cuts, start=1):
        a, b = edges[i - 1], edges[i + 1]
        change, p = _test_split(y, a, t, b, min_change)
        if p < alpha:
            before, after = float(np.median(y[a:t])), float(np.median(y[t:b]))
            out.append(ChangePoint(int(steps[t]), before, after, change, p))
    return out


def _few_steps(n: int, min_steps: int) -> Finding:
    msg = (
        f"only {n} steady step(s) (< {min_steps}): jitter verdicts are weak; log more steps "
        f"(at least {min_steps} after warm-up)."
    )
    return Finding("XP405", Severity.INFO, msg, {"n_steps": n, "min_steps": min_steps})


def _findings(
    r: JitterResult, grid_cost: float, n_grid: int, limits: dict[str, float]
) -> list[Finding]:
    cv_thr, tail_thr, k, cost_thr = limits["cv"], limits["tail"], limits["k"], limits["cost"]
    out: list[Finding] = []

    def add(code: str, sev: Severity, msg: str, **data: object) -> None:
        out.append(Finding(code, sev, msg, data))

    name, cv = ("FPS cv", r.fps_cv) if r.fps_cv is not None else ("step-time cv", r.cv)
    if cv > cv_thr:
        add(
            "XP201",
            Severity.WARNING,
            f"{name} {cv:.3f} > {cv_thr:g}: the FPS line is not flat; look at the spikes "
            "(XP203/XP204), level shifts (XP205) and stragglers (XP1xx) for the cause.",
            metric=name,
            cv=cv,
            threshold=cv_thr,
        )
    if r.p99_over_p50 > tail_thr:
        add(
            "XP202",
            Severity.WARNING,
            f"p99/p50 of step time {r.p99_over_p50:.2f} > {tail_thr:g} (p99 {r.p99_s:.3f} s, "
            f"p50 {r.p50_s:.3f} s): the slowest 1 % of steps are far slower; look for GC "
            "pauses, data-loader stalls, checkpoints or random stragglers (XP103).",
            p99_over_p50=r.p99_over_p50,
            threshold=tail_thr,
        )
    if r.spike_steps:
        n_sp, cost = len(r.spike_steps), r.spike_cost_fraction
        shown = ", ".join(map(str, r.spike_steps[:10])) + (" …" if n_sp > 10 else "")
        add(
            "XP203",
            Severity.WARNING if cost >= cost_thr else Severity.INFO,
            f"{n_sp} spike step(s) ({n_sp / r.n_steps:.1%} of steps; steps {shown}) above "
            f"{r.spike_threshold_s:.3f} s (median + max({k:g}·1.4826·MAD, 5 % of median)) "
            f"cost {cost:.1%} of step time (warning from {cost_thr:.0%}): check what runs at "
            "those steps — GC, checkpoint, evaluation, logging, data-loader refills.",
            count=n_sp,
            share=n_sp / r.n_steps,
            steps=r.spike_steps,
            threshold_s=r.spike_threshold_s,
            cost_fraction=cost,
        )
    if r.period_steps is not None:
        add(
            "XP204",
            Severity.WARNING,
            f"periodic spikes every {r.period_steps} steps starting at step {r.period_phase} "
            f"({n_grid} spikes) cost {grid_cost:.1%} of step time: something runs every "
            f"{r.period_steps} steps — checkpoint, evaluation, GC or logging/metrics flush; "
            "make it asynchronous or less frequent.",
            period_steps=r.period_steps,
            phase_step=r.period_phase,
            count=n_grid,
            cost_fraction=grid_cost,
        )
    for c in r.change_points:
        slower = c.change > 0
        cause = (
            "thermal throttling, a node degrading or a co-tenant job"
            if slower
            else "contention ending (a co-tenant job finished) or a setting changed"
        )
        add(
            "XP205",
            Severity.WARNING if slower else Severity.INFO,
            f"step time changed at step {c.step}: {c.before_s:.3f} s → {c.after_s:.3f} s "
            f"({c.change:+.1%}, threshold ±{limits['cp']:.0%}, Mann–Whitney "
            f"{format_p(c.p_value)}): a lasting level shift — {cause}; compare per-node timing "
            f"before and after step {c.step}.",
            step=c.step,
            before_s=c.before_s,
            after_s=c.after_s,
            change=c.change,
            p_value=c.p_value,
        )
    if not out:
        add(
            "XP206",
            Severity.INFO,
            f"flat FPS line over {r.n_steps} steps: {name} {cv:.3f} ≤ {cv_thr:g}, p99/p50 "
            f"{r.p99_over_p50:.2f} ≤ {tail_thr:g}, no spikes, no level shift — nothing to do.",
            cv=cv,
            p99_over_p50=r.p99_over_p50,
        )
    return out
