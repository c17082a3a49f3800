"""Plain result records of the analyses. Analyses return data; renderers present it.

All times are seconds, throughputs samples/s (tokens/s where a name says tokens), fractions in
[0, 1] unless a name says otherwise.
Per-rank and per-step tables are pandas DataFrames whose columns are documented on each field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from xpuperf.findings import Check, Finding


@dataclass
class WarmupResult:
    """Warm-up detection.

    Attributes:
        steps: number of leading steps excluded (per step number, the same for every rank).
        first_steady_step: the first step number kept, or None if nothing is kept.
        method: ``"auto"`` (detected), ``"user"`` (``--warmup N``) or ``"log"`` (rows the
            log format marks as start-up, e.g. the first MLPerf block).
        threshold_s: step time above which a leading step counted as warm-up (auto only).
    """

    steps: int
    first_steady_step: int | None
    method: str
    threshold_s: float | None = None


@dataclass
class ChangePoint:
    """A lasting shift of the job's step time.

    Attributes:
        step: first step number of the new level.
        before_s: median step time before, seconds.
        after_s: median step time after, seconds.
        change: (after − before) / before; positive = slower.
        p_value: Mann–Whitney U two-sided p-value of before vs after.
    """

    step: int
    before_s: float
    after_s: float
    change: float
    p_value: float


@dataclass
class JitterResult:
    """Steadiness of the job's step time and FPS over the steady (post-warm-up) steps.

    Attributes:
        n_steps: steps used.
        cv: coefficient of variation (std / mean) of the job step time.
        fps_cv: coefficient of variation of job FPS (samples/s), or None if samples unknown.
        p50_s, p90_s, p99_s: step-time percentiles, seconds.
        p99_over_p50: p99 / p50 of step time.
        spike_steps: step numbers with step time > spike_threshold_s.
        spike_threshold_s: median + k·MAD (scaled) threshold, seconds.
        spike_cost_fraction: Σ(spike step time − median) / Σ step time.
        period_steps: period of recurring spikes in steps, or None.
        period_phase: step number of the first periodic spike, or None.
        change_points: lasting level shifts, in step order.
    """

    n_steps: int
    cv: float
    fps_cv: float | None
    p50_s: float
    p90_s: float
    p99_s: float
    p99_over_p50: float
    spike_steps: list[int]
    spike_threshold_s: float
    spike_cost_fraction: float
    period_steps: int | None = None
    period_phase: int | None = None
    change_points: list[ChangePoint] = field(default_factory=list)


@dataclass
class Straggler:
    """One straggler finding (the JSON contract ``stragglers[]``).

    Attributes:
        kind: ``"deterministic"`` (same rank/node always slow), ``"intermittent"`` (one rank
            causes most of the waiting, at some steps only) or ``"random"`` (slowest rank
            changes step to step).
        rank: global rank; None for a node-level or random entry.
        node: node name; None when unknown or random.
        ranks: ranks covered (one for a rank entry, the node's ranks for a node entry, empty for
            random).
        slowdown: fractional slowdown of work vs the median rank (0.25 = 25 % slower); for random,
            mean over steps of (max − median) / median of per-rank work.
        slowdown_ci: 95 % bootstrap interval of ``slowdown`` (deterministic only).
        slowdown_vs_best: slowdown vs the fastest rank's median work.
        p_value: one-sided Wilcoxon signed-rank p-value that the rank's per-step work ratio to the
            step median exceeds 1 (deterministic only).
        cost_fraction: fraction of potential throughput lost: 1 − T_what-if / T, with T_what-if the
            step time if the straggler worked at the median pace.
        slow_phase: phase that carries most of the excess (``compute_s``, ``data_s``, ``other_s``),
            or None when unknown.
        n_steps: steps the verdict rests on.
    """

    kind: str
    rank: int | None
    node: str | None
    ranks: list[int]
    slowdown: float
    cost_fraction: float
    n_steps: int
    slowdown_ci: tuple[float, float] | None = None
    slowdown_vs_best: float | None = None
    p_value: float | None = None
    slow_phase: str | None = None


@dataclass
class StragglerResult:
    """Straggler analysis over the steady steps.

    Attributes:
        work_source: what per-rank work was measured from (see :func:`xpuperf.steps.work_series`).
        threshold: slowdown threshold for a deterministic straggler (fraction).
        stragglers: the findings; empty means "no straggler".
        per_rank: DataFrame, one row per rank: ``rank, node, median_work_s, score`` (reference
            median / rank median; reference = median rank), ``score_vs_best``, ``slowdown``,
            ``slowest_share`` (fraction of steps this rank was slowest), ``median_comm_s`` (NaN
            when unknown).
        sync_cost_s: mean over steps of (max − median) over ranks of work, seconds.
        sync_cost_fraction: ``sync_cost_s`` / mean step time.
        n_steps: steps used (present on every rank).
    """

    work_source: str
    threshold: float
    stragglers: list[Straggler]
    per_rank: pd.DataFrame
    sync_cost_s: float
    sync_cost_fraction: float
    n_steps: int


@dataclass
class BreakdownResult:
    """Compute vs non-compute decomposition and speedup.

    Attributes:
        source: ``"phases"`` (from phase columns), ``"baseline"`` (compute = single-card step
            time), or ``"none"`` (fractions unknown).
        compute_fraction, comm_fraction, data_fraction, other_fraction: shares of total step time
            (None when ``source == "none"``).
        per_rank: DataFrame ``rank, node, step_time_s, compute_s, comm_s, data_s, other_s``
            (medians, seconds), or None without phases.
        speedup: distributed per-card throughput / single-card throughput, or None without a
            baseline.
        baseline_step_time_s: median step time of the single-card baseline, seconds.
        baseline_throughput_samples_per_s: single-card throughput, or None if samples unknown.
    """

    source: str
    compute_fraction: float | None
    comm_fraction: float | None
    data_fraction: float | None
    other_fraction: float | None
    per_rank: pd.DataFrame | None = None
    speedup: float | None = None
    baseline_step_time_s: float | None = None
    baseline_throughput_samples_per_s: float | None = None


@dataclass
class Summary:
    """Headline numbers of a run (post-warm-up).

    The headline throughput is the WALL-CLOCK one: samples over the steady wall time, so stalls,
    spikes and jitter lower it by what they cost; the median-step figure (what a typical step
    reaches) stands beside it, and the gap between the two is ``jitter_cost_*``.

    Attributes:
        ranks, nodes: counts (nodes None if unknown).
        steps: steady steps analysed (distinct step numbers = rows of the job series).
        warmup_steps: leading steps excluded.
        step_time_s: ``{"median", "mean", "p90", "p99"}`` of the job step time, seconds.
        throughput_samples_per_s: the median-step figure (median over steps of Σ samples over
            ranks / job step time), kept under its old name for JSON readers and gates; equal to
            ``throughput_median_step_samples_per_s``. None when samples are unknown.
        throughput_per_card_samples_per_s: the same divided by the rank count.
        throughput_wallclock_samples_per_s: headline: Σ samples / ``wall_time_s`` (samples of a
            row × the iterations it covers; None when samples are unknown).
        throughput_per_card_wallclock_samples_per_s: the same divided by the rank count.
        throughput_median_step_samples_per_s: the median-step figure (= the old key above).
        wall_time_s: steady wall time, seconds: from the end-of-step timestamps of one rank when
            the logs have them and they are consistent (``wallclock_source == "timestamps"``),
            else Σ over rows of job step time × iterations the row covers (``"step_times"``).
            Rows of logs that print every k steps are window means: a row covers k iterations.
        wallclock_source: ``"timestamps"`` or ``"step_times"``.
        iterations: iterations the steady rows cover (= ``steps`` when every step is logged).
        jitter_cost_s: Σ logged step times (× iterations per row) − iterations × median step
            time: the seconds the logged steps lose to spikes, stalls and jitter.
        jitter_cost_fraction: ``jitter_cost_s / wall_time_s``; negative when the typical step is
            slower than the mean. With ``outside_steps_fraction`` it adds up to 1 − wall-clock /
            median-step throughput at a constant batch.
        outside_steps_s: with timestamps, wall time − Σ logged step times: time between the
            logged steps (evaluation, checkpoints, logging), seconds (XP211 from 5 % of the wall
            time); None when the wall time is the Σ of the step times.
        outside_steps_fraction: ``outside_steps_s / wall_time_s``, or None.
        log_cuts: iterations not in the log, ``(first, last)`` per cut: a gap in the step
            numbers over 10 logging intervals (an excerpt, two runs in one file); neither
            ``iterations`` nor ``wall_time_s`` count them (the row after the cut covers one
            interval). Empty when the log has no cut.
        throughput_tokens_per_s, throughput_per_card_tokens_per_s: median-step tokens/s (job,
            per card), when the step table has ``tokens`` (else None), as the samples figures.
        throughput_wallclock_tokens_per_s, throughput_per_card_wallclock_tokens_per_s: Σ tokens
            / ``wall_time_s`` (job, per card): the tokens/s headline.
        mfu: MFU (fractions 0…1) when the table has ``mfu``: ``median``, ``rank_min`` /
            ``rank_max`` (lowest / highest per-rank median) and their ranks, ``first_tenth`` /
            ``last_tenth`` (drift), ``values`` (:func:`xpuperf.analysis.rates.mfu_summary`);
            None without.
        cards_unknown: None when the ranks are the job's cards; ``"job"`` when the rows are
            the whole job and the log does not state its card count (the per-card figures are
            then None: job / ranks would be the job's own figure); ``"card"`` when the rows are
            one card of a job of unknown size (the job figures are then None).
        log_throughput_samples_per_s: the job's samples/s as the log itself prints it
            (DeepSpeed ``SamplesPerSec``, NVIDIA BERT ``training_sequences_per_second``), None
            when it prints none; ``log_throughput_source`` says what it is and how it checks
            against the rows read.
    """

    ranks: int
    nodes: int | None
    steps: int
    warmup_steps: int
    step_time_s: dict[str, float]
    throughput_samples_per_s: float | None
    throughput_per_card_samples_per_s: float | None
    throughput_wallclock_samples_per_s: float | None = None
    throughput_per_card_wallclock_samples_per_s: float | None = None
    throughput_median_step_samples_per_s: float | None = None
    wall_time_s: float | None = None
    wallclock_source: str = "step_times"
    iterations: int | None = None
    jitter_cost_s: float | None = None
    jitter_cost_fraction: float | None = None
    outside_steps_s: float | None = None
    outside_steps_fraction: float | None = None
    log_cuts: list[tuple[int, int]] = field(default_factory=list)
    throughput_tokens_per_s: float | None = None
    throughput_per_card_tokens_per_s: float | None = None
    throughput_wallclock_tokens_per_s: float | None = None
    throughput_per_card_wallclock_tokens_per_s: float | None = None
    mfu: dict[str, float | int] | None = None
    cards_unknown: str | None = None
    log_throughput_samples_per_s: float | None = None
    log_throughput_source: str = ""

    def unknown_cards(self, which: str) -> None:
        """Blank the figures a world size would be needed for: ``"job"`` → the per-card
        figures; ``"card"`` → the job figures, the per-card ones being the rows' own (the
        table then has one rank)."""
        self.cards_unknown = which
        for unit in ("samples", "tokens"):
            pairs = (
                (f"throughput_{unit}_per_s", f"throughput_per_card_{unit}_per_s"),
                (
                    f"throughput_wallclock_{unit}_per_s",
                    f"throughput_per_card_wallclock_{unit}_per_s",
                ),
            )
            for job, card in pairs:
                if which == "card":
                    setattr(self, card, getattr(self, job))
                    setattr(self, job, None)
                else:
                    setattr(self, card, None)
        if which == "card":
            self.throughput_median_step_samples_per_s = None


@dataclass
class AnalyzeResult:
    """Everything ``xpuperf analyze`` found; renderers take this and nothing else.

    Attributes:
        sources: input paths read.
        summary, warmup, jitter, stragglers, breakdown: the analyses.
        findings: all findings, most severe first.
        job_steps: DataFrame per steady step: ``step, step_time_s, fps`` (job FPS, NaN if samples
            unknown), ``spike`` (bool).
        rank_steps: DataFrame per (rank, step), all steps incl. warm-up: ``rank, step,
            step_time_s, work_s, warmup`` (bool) — for figures.
        read_warnings: reader warnings (rows skipped and why).
        nccl: NCCL INFO lines found in the inputs (``calibrate.nccllog_checks.NcclReport``), or
            None; set by :mod:`xpuperf.pipeline`, rendered by ``report/nccl_section.py``.
        checks: every check and the evidence its verdict rests on
            (:class:`~xpuperf.findings.Check`: problem / clean / not_checked); the step-log
            checks come from :mod:`xpuperf.analysis.checks`, :mod:`xpuperf.pipeline` adds those
            of NCCL logs and framework output (docs/diagnosis.md).
        stalls: synchronous stalls (:class:`~xpuperf.analysis.stalls.StallResult`), or None.
        events: framework warnings found in the run's text logs
            (:class:`xpuperf.events.EventReport`), or None; set by :mod:`xpuperf.pipeline`.
    """

    sources: list[str]
    summary: Summary
    warmup: WarmupResult
    jitter: JitterResult | None
    stragglers: StragglerResult | None
    breakdown: BreakdownResult
    findings: list[Finding]
    job_steps: pd.DataFrame
    rank_steps: pd.DataFrame
    read_warnings: list[str] = field(default_factory=list)
    nccl: object | None = None
    checks: list[Check] = field(default_factory=list)
    stalls: object | None = None
    events: object | None = None
