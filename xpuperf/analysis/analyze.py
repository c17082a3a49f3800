"""``analyze()``: the canonical step table in, one :class:`AnalyzeResult` out.

Order: job series → warm-up → jitter (job level) → stragglers (per rank) → decomposition and
speedup → data-quality findings. Each step is a function of its own module; this one only wires
them and builds the summary.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from xpuperf import steps as st
from xpuperf.analysis import grid as grid_mod
from xpuperf.analysis.breakdown import decompose
from xpuperf.analysis.checks import step_checks
from xpuperf.analysis.grid import grid_of
from xpuperf.analysis.jitter import analyze_jitter
from xpuperf.analysis.outside_steps import outside_steps
from xpuperf.analysis.phase_jitter import phase_jitter
from xpuperf.analysis.rates import mfu_summary, token_rates
from xpuperf.analysis.results import (
    AnalyzeResult,
    BreakdownResult,
    JitterResult,
    StragglerResult,
    Summary,
    WarmupResult,
)
from xpuperf.analysis.series import job_steps, wallclock
from xpuperf.analysis.stalls import PHASES, StallResult, find_sync_stalls
from xpuperf.analysis.stragglers import find_stragglers
from xpuperf.analysis.warmup import detect_warmup, split_warmup, warmup_finding
from xpuperf.errors import UsageError
from xpuperf.findings import Finding, Severity

PARALLEL_ROWS = 1 << 20
"""Tables with at least this many rows take their medians on several threads
(:func:`xpuperf.analysis.grid.threads`)."""


def analyze(
    table: pd.DataFrame,
    *,
    baseline: pd.DataFrame | None = None,
    warmup: int | None = None,
    straggler_threshold: float = 0.05,
    speedup_target: float = 0.9,
    sources: Sequence[str] = (),
    read_warnings: Sequence[str] = (),
    job: pd.DataFrame | None = None,
    job_level_cards: int | None = None,
    sampled_rows: bool = False,
    cards_unknown: str | None = None,
    warmup_rows: int = 0,
    clock_resolution: tuple[float, str] | None = None,
) -> AnalyzeResult:
    """Analyse one run.

    Args:
        table: canonical step table of the distributed run (:mod:`xpuperf.steps`).
        baseline: canonical step table of a single-card run at the same per-card batch, or None.
            Its warm-up is detected the same way and excluded.
        warmup: leading steps to exclude; None detects them.
        straggler_threshold: slowdown (fraction) above which a rank is a straggler.
        speedup_target: speedup below which XP304 fires.
        sources, read_warnings: passed through from the reader for the report.
        job: the per-step series of ``table`` as :func:`job_steps` returns it, when an engine
            (:mod:`xpuperf.engine`) has already computed it; None computes it here.
        job_level_cards: N when ``table`` is one job-level log spread over N ranks
            (:attr:`xpuperf.readers.ReadResult.job_level_cards`): the ranks are copies, so no
            straggler or per-rank stall analysis is run (their checks say "not checked").
        sampled_rows: each row is one iteration shown every k, not a window mean
            (:attr:`xpuperf.readers.ReadResult.sampled_rows`; wall clock per
            :func:`~xpuperf.analysis.series.wallclock`).
        cards_unknown: ``"job"``: the rows are the whole job and its card count is unknown, so
            the per-card figures are None; ``"card"``: the rows are one card of a job of
            unknown size, so the job figures are None
            (:attr:`xpuperf.readers.ReadResult.cards_unknown`); None: ranks = cards.
        warmup_rows: leading steps the log format marks as start-up; excluded when ``warmup``
            is None and the detection finds fewer (:func:`~xpuperf.analysis.warmup.detect_warmup`).
        clock_resolution: (±fraction, what) when each row's step time is only that exact by
            the log's clock (:attr:`xpuperf.readers.ReadResult.clock_resolution`): jitter
            findings are hints, the jitter checks "not checked", and a jitter cost below the
            fraction is not reported (it is rounding).

    Returns:
        :class:`AnalyzeResult`; findings sorted most severe first.

    Raises:
        InputError: the table violates the contract, or the baseline has more than one rank.
    """
    table = st.validate(table, source="step table")
    findings: list[Finding] = []
    # blocked medians on the CPUs not busy elsewhere; small tables: one block, no threads
    grid_mod.threads(None if len(table) >= PARALLEL_ROWS else 1)
    grid = grid_of(table)  # every rank has the same steps: the fast path (analysis/grid.py)

    job = job_steps(table, grid) if job is None else job
    warm = detect_warmup(job, warmup, log_rows=warmup_rows)
    if warm.first_steady_step is None:
        raise UsageError(
            f"--warmup {warmup} excludes every step: the run has {len(job)} step(s); "
            "use a smaller --warmup"
        )
    steady = grid.after(warm.first_steady_step) if grid else split_warmup(table, warm)
    steady_job = split_warmup(job, warm)
    wf = warmup_finding(job, warm)
    if wf is not None:
        findings.append(wf)

    jitter, f = analyze_jitter(steady_job.reset_index(drop=True), coarse=clock_resolution)
    findings += f
    stragglers = None
    if not job_level_cards:  # copies of one job-level line cannot differ
        stragglers, f = find_stragglers(steady, threshold=straggler_threshold)
        findings += f

    base_steady = None
    if baseline is not None:
        baseline = st.validate(baseline, source="baseline")
        bw = detect_warmup(job_steps(baseline), None)
        base_steady = split_warmup(baseline, bw)
    breakdown, f = decompose(
        steady, base_steady, speedup_target=speedup_target, stragglers=stragglers
    )
    findings += f
    rank_ids = grid.ranks if grid is not None else np.sort(table["rank"].unique())
    findings += _quality_findings(table, read_warnings, rank_ids, grid is not None)
    stalls, f = _stalls(table, steady_job, jitter, stragglers, breakdown)
    findings += f

    spikes = set(jitter.spike_steps) if jitter else set()
    job_out = steady_job[["step", "step_time_s", "fps"]].reset_index(drop=True)
    job_out["spike"] = job_out["step"].isin(spikes)
    work, _ = st.work_series(table)
    rank_steps = pd.DataFrame(
        {
            "rank": table["rank"],
            "step": table["step"],
            "step_time_s": table["step_time_s"],
            "work_s": work,
            "warmup": table["step"] < warm.first_steady_step,
        },
        copy=False,
    )
    phase_findings, phase_check = phase_jitter(table, warm)
    findings += phase_findings
    summary = _summary(table, steady_job, warm, len(rank_ids), job, sampled_rows)
    outside, outside_check = outside_steps(summary)
    if outside:  # the logged steps are flat, but the run is not: no "nothing to do"
        findings = [f for f in findings if f.code != "XP206"] + outside
    findings.sort(key=lambda x: -x.severity.rank)
    if cards_unknown:
        summary.unknown_cards(cards_unknown)
    cost = summary.jitter_cost_fraction
    if clock_resolution and cost is not None and abs(cost) < clock_resolution[0]:
        summary.jitter_cost_s = summary.jitter_cost_fraction = None  # rounding of the clock
    if "mfu" in table.columns:  # the three columns only: the table may be large
        summary.mfu = mfu_summary(split_warmup(table[["rank", "step", "mfu"]], warm))
    checks = step_checks(
        summary,
        jitter,
        stragglers,
        breakdown,
        stalls,
        findings,
        base_steady is not None,
        clock_resolution,
    ) + [c for c in (phase_check, outside_check) if c]
    return AnalyzeResult(
        sources=list(sources),
        summary=summary,
        warmup=warm,
        jitter=jitter,
        stragglers=stragglers,
        breakdown=breakdown,
        findings=findings,
        job_steps=job_out,
        rank_steps=rank_steps,
        read_warnings=list(read_warnings),
        checks=checks,
        stalls=stalls,
    )


def _stalls(
    table: pd.DataFrame,
    steady_job: pd.DataFrame,
    jitter: JitterResult | None,
    stragglers: StragglerResult | None,
    breakdown: BreakdownResult,
) -> tuple[StallResult, list[Finding]]:
    """Synchronous stalls among the job's spike steps (:mod:`xpuperf.analysis.stalls`)."""
    if stragglers is None or len(stragglers.per_rank) < 2:
        return StallResult(False), []
    source = stragglers.work_source
    if jitter is None or not jitter.spike_steps:
        return StallResult(True, work_source=source), []
    cols = [c for c in ("rank", "step", "step_time_s", *PHASES, "comm_s") if c in table.columns]
    at = table.loc[table["step"].isin(jitter.spike_steps), cols].reset_index(drop=True)
    at["work_s"] = st.work_series(at)[0].to_numpy()
    if "other_s" not in at.columns and "compute_s" in at.columns:  # the rest of the step
        rest = at["step_time_s"] - at["compute_s"]
        for c in ("comm_s", "data_s"):
            if c in at.columns:
                rest = rest - at[c].fillna(0.0)
        at["other_s"] = rest.clip(lower=0.0)
    med = pd.DataFrame(
        {
            "rank": stragglers.per_rank["rank"].to_numpy(),
            "work_s": stragglers.per_rank["median_work_s"].to_numpy(),
        }
    )
    if breakdown.per_rank is not None:
        phases = [c for c in PHASES if c in breakdown.per_rank.columns]
        med = med.merge(breakdown.per_rank[["rank", *phases]], on="rank", how="left")
    return find_sync_stalls(at, med, steady_job, jitter.spike_steps, source)


def _summary(
    table: pd.DataFrame,
    steady_job: pd.DataFrame,
    warm: WarmupResult,
    ranks: int,
    job: pd.DataFrame | None = None,
    sampled: bool = False,
) -> Summary:
    """Headline numbers; wall-clock throughput from :func:`xpuperf.analysis.series.wallclock`.

    ``job``: the whole job series (warm-up included) — its last warm-up row tells how many
    iterations the first steady row covers.
    """
    t = steady_job["step_time_s"].to_numpy()
    fps = steady_job["fps"].to_numpy()
    nodes = int(table["node"].nunique()) if "node" in table.columns else None
    thr = float(np.median(fps)) if np.isfinite(fps).all() and len(fps) else None
    prev = None
    if job is not None and warm.first_steady_step is not None:
        before = job["step"].to_numpy()
        before = before[before < warm.first_steady_step]
        prev = int(before[-1]) if len(before) else None
    wc = wallclock(steady_job, table, prev, sampled)
    med = float(np.median(t))
    thr_wall = wc.samples / wc.wall_time_s if thr is not None and np.isfinite(wc.samples) else None
    cost_s = wc.sum_step_times_s - wc.iterations * med  # the logged steps' own loss
    out_s = wc.outside_steps_s  # time between them (timestamps only)
    return Summary(
        ranks=ranks,
        nodes=nodes,
        steps=len(steady_job),
        warmup_steps=warm.steps,
        step_time_s={
            "median": med,
            "mean": float(np.mean(t)),
            "p90": float(np.percentile(t, 90)),
            "p99": float(np.percentile(t, 99)),
        },
        throughput_samples_per_s=thr,
        throughput_per_card_samples_per_s=thr / ranks if thr is not None else None,
        throughput_wallclock_samples_per_s=thr_wall,
        throughput_per_card_wallclock_samples_per_s=(
            thr_wall / ranks if thr_wall is not None else None
        ),
        throughput_median_step_samples_per_s=thr,
        wall_time_s=wc.wall_time_s,
        wallclock_source=wc.source,
        iterations=wc.iterations,
        jitter_cost_s=cost_s,
        jitter_cost_fraction=cost_s / wc.wall_time_s,
        outside_steps_s=out_s,
        outside_steps_fraction=out_s / wc.wall_time_s if out_s is not None else None,
        log_cuts=wc.cuts,
        **token_rates(steady_job, wc, ranks),
    )


def _quality_findings(
    table: pd.DataFrame,
    read_warnings: Sequence[str],
    ranks: np.ndarray,
    rectangular: bool = False,
) -> list[Finding]:
    """XP401–XP403; ``ranks``: the distinct ranks of ``table``, increasing."""
    out: list[Finding] = []
    if read_warnings:
        out.append(
            Finding(
                "XP401",
                Severity.WARNING,
                f"{len(read_warnings)} reader warning(s) on stderr and in the JSON: rows skipped "
                "or assumptions made about the log; the analysis uses the rows that were good.",
                {"warnings": list(read_warnings)},
            )
        )
    missing = sorted(set(range(int(ranks.max()) + 1)) - set(ranks.tolist()))
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (" …" if len(missing) > 10 else "")
        out.append(
            Finding(
                "XP402",
                Severity.WARNING,
                f"{len(missing)} rank(s) missing between 0 and {int(ranks.max())}: {shown}; "
                "results cover only the ranks present — add the missing ranks' logs.",
                {"missing_ranks": missing},
            )
        )
    if rectangular:  # every rank has the same steps: none is short
        return out
    per_rank = table.groupby("rank").size()  # = distinct steps: (rank, step) is unique
    short = per_rank[per_rank < per_rank.max()]
    if len(short):
        out.append(
            Finding(
                "XP403",
                Severity.WARNING,
                f"{len(short)} rank(s) have fewer steps than the longest ({int(per_rank.max())}): "
                f"e.g. rank {int(short.index[0])} has {int(short.iloc[0])}; straggler analysis "
                "uses only steps present on every rank — check for truncated logs.",
                {"ranks": [int(r) for r in short.index[:100]]},
            )
        )
    return out
