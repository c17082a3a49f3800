"""Per-phase jitter: a phase whose time spreads while the step time stays flat (XP210).

When a log carries phase columns (``data_s``, ``forward_s``, ``backward_s``, ``comm_s``,
``optimizer_s``), a flat step time can hide a phase that moves a lot: the time it gains or loses
is traded with another phase. The typical case is the allreduce (282–487 ms while the step is
steady): the collective's time includes the wait for the slowest rank, so its spread is compute
variation (input shapes, clocks, host noise) of the ranks arriving late, paid as waiting.

Method, per phase, on the steady rows: for every rank, the spread = p95 − p5 of the phase over
its steps and the same for its step time; the typical rank is the median over ranks of each
figure (a rank that is always slower is a straggler, XP1xx, not jitter). The phase is reported
when its spread is at least :data:`MIN_SHARE` (10 %) of the median step time AND at least
:data:`FLAT_RATIO` (2) times the step-time spread. Needs :data:`MIN_STEPS` steady steps.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from xpuperf.analysis.results import WarmupResult
from xpuperf.analysis.warmup import split_warmup
from xpuperf.findings import Check, CheckStatus, Finding, Severity

PHASES: tuple[str, ...] = ("data_s", "forward_s", "backward_s", "comm_s", "optimizer_s")
"""Phase columns examined (``compute_s`` is their sum when derived, so it is not repeated)."""
MIN_STEPS = 20
"""Steady steps per rank a verdict needs (as the jitter check)."""
MIN_SHARE = 0.10
"""Phase spread (p95 − p5), as a fraction of the median step time, that counts as large."""
FLAT_RATIO = 2.0
"""How many times the step-time spread the phase spread must reach (the step is flat)."""
QUANTILES = (0.05, 0.95)

NAME = "steps.phase_jitter"
TITLE = "phase jitter under a flat step time"

_REMEDY = {
    "comm_s": "the collective's time includes waiting for the slowest rank, so its spread is "
    "compute variation on the ranks arriving late (input shapes, GPU clocks, host noise), not "
    "the network: look at per-rank forward/backward spread and pad or bucket inputs before "
    "tuning NCCL",
    "data_s": "the input pipeline keeps up on average but not step by step: raise DataLoader "
    "num_workers / prefetch_factor or use pinned memory so the wait stays at its floor",
    "forward_s": "compute varies (input shapes, GPU clocks, a co-tenant) and a later phase "
    "absorbs it: pad or bucket inputs, check clocks with nvidia-smi -q -d CLOCK",
    "backward_s": "compute varies (input shapes, GPU clocks, a co-tenant) and a later phase "
    "absorbs it: pad or bucket inputs, check clocks with nvidia-smi -q -d CLOCK",
    "optimizer_s": "host-side work in the optimizer step varies (gradient clipping syncs, CPU "
    "offload, Python GC): profile the step and keep it on the device",
}


def phase_jitter(table: pd.DataFrame, warm: WarmupResult) -> tuple[list[Finding], Check | None]:
    """XP210 findings and the ``steps.phase_jitter`` check for the steady rows of a step table.

    Args:
        table: canonical step table (``rank``, ``step``, ``step_time_s`` in seconds, and any of
            :data:`PHASES` in seconds; NaN = unknown); only these columns are read.
        warm: the run's warm-up; its rows are left out.

    Returns:
        The findings (one per phase reported, warning) and the check; ``(…, None)`` when the
        table has no phase column (the check does not apply: a ``--fail-on code=XP210`` gate is
        then refused). With fewer than :data:`MIN_STEPS` steps the check is ``not_checked``.
    """
    have = [c for c in PHASES if c in table.columns and table[c].notna().any()]
    if not have:
        return [], None
    frame = split_warmup(table[["rank", "step", "step_time_s", *have]], warm).drop(columns="step")
    steps = int(frame.groupby("rank").size().median()) if len(frame) else 0
    if steps < MIN_STEPS:
        why = (
            f"only {steps} steady step(s) per rank (a phase-spread verdict needs ≥ {MIN_STEPS}); "
            "log more steps after warm-up"
        )
        return [], Check(NAME, TITLE, CheckStatus.NOT_CHECKED, why)
    q = frame.groupby("rank").quantile(list(QUANTILES))  # (rank, q) × columns
    lo = q.xs(QUANTILES[0], level=1).median()
    hi = q.xs(QUANTILES[1], level=1).median()
    spread = (q.xs(QUANTILES[1], level=1) - q.xs(QUANTILES[0], level=1)).median()
    by_rank = frame.groupby("rank")["step_time_s"]
    step_med = float(by_rank.median().median())
    step_cv = float((by_rank.std() / by_rank.mean()).median())
    step_spread = float(spread["step_time_s"])
    findings = []
    for c in have:
        s = float(spread[c])
        if not (np.isfinite(s) and s >= MIN_SHARE * step_med and s >= FLAT_RATIO * step_spread):
            continue
        findings.append(_finding(c, float(lo[c]), float(hi[c]), s, step_med, step_spread, step_cv))
    ranks = frame["rank"].nunique()
    evidence = f"{', '.join(have)} over {steps} steady step(s) × {ranks} rank(s)"
    if findings:
        codes = ("XP210",)
        return findings, Check(NAME, TITLE, CheckStatus.PROBLEM, evidence, codes)
    return [], Check(NAME, TITLE, CheckStatus.CLEAN, evidence)


def _finding(
    phase: str, lo: float, hi: float, spread: float, step: float, step_spread: float, cv: float
) -> Finding:
    share = spread / step
    return Finding(
        "XP210",
        Severity.WARNING,
        f"{phase} of a typical rank spreads {lo:.3f}–{hi:.3f} s (p5–p95), {spread:.3f} s = "
        f"{share:.1%} of the median step {step:.3f} s (threshold {MIN_SHARE:.0%}), while its step "
        f"time spreads {step_spread:.3f} s (cv {cv:.3f}; threshold: phase spread ≥ "
        f"{FLAT_RATIO:g}× the step's): the phase trades time with another one — "
        f"{_REMEDY[phase]}.",
        {
            "phase": phase,
            "p5_s": lo,
            "p95_s": hi,
            "spread_s": spread,
            "spread_fraction_of_step": share,
            "step_median_s": step,
            "step_spread_s": step_spread,
            "step_cv": cv,
            "threshold_fraction": MIN_SHARE,
            "flat_ratio": FLAT_RATIO,
        },
    )
