"""Compare two runs (BASE vs CURRENT): per-metric change, significance over steps, regression gate.

Each side is an :class:`~xpuperf.analysis.results.AnalyzeResult` (from logs) or a saved
``xpuperf.analyze/1`` JSON document. Gated metrics (:data:`GATED`) — wall-clock throughput (the
headline: samples / steady wall time), mean, median and p99 step time and the median-step
throughput — are tested over the steady (post-warm-up) steps of both runs
(:mod:`xpuperf.compare_stats`: Mann–Whitney U for medians, the exact bootstrap of quantiles, the
delta method for means and Σ samples / Σ time; memory O(steps)). A change counts only when it is
significant (p < ``alpha``) AND at least ``min_effect`` in size, so a tiny but "significant"
shift on a long run is not called a regression, and periodic stalls that leave the median alone
still show in the mean, the p99 and the wall-clock throughput. The other metrics (jitter cost and
cv, straggler costs, breakdown shares, speedup) are single numbers per run: their change is
reported without a test, and fractions change in absolute points. Findings present in one run
only (a new straggler rank, new stalls, new NCCL findings) are listed with their cost
(:mod:`xpuperf.compare_diff`), as are per-rank and breakdown differences.

A saved analyze JSON carries the per-step series only if it has a ``job_steps`` list (records of
``step, step_time_s, fps``); otherwise its values are compared without a test, and the result
says so in ``notes``.

>>> from xpuperf.compare import compare_paths
>>> res = compare_paths("base_logs/", "current_logs/")  # doctest: +SKIP
>>> [m.name for m in res.regressions()]  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from xpuperf import __version__
from xpuperf import compare_stats as stats
from xpuperf.analysis.pvalue import P_FLOOR, format_p
from xpuperf.compare_diff import FindingChange, breakdown_diff, finding_changes, rank_diff
from xpuperf.compare_runs import (  # noqa: F401  (re-exported: the public loaders)
    ANALYZE_SCHEMA_PREFIX,
    RunData,
    _get,
    load_run,
    run_from_json,
    run_from_result,
)
from xpuperf.errors import GateFailedError

SCHEMA = "xpuperf.compare/1"

# name, label, JSON path(s) in the analyze document ("|" = fallback), unit, better, kind, test
# kind: "rel" (relative change) or "abs" (absolute change, for fractions); test: see _test()
_METRICS: tuple[tuple[str, str, str, str, str, str, str], ...] = (
    ("step_time_median", "median step time", "summary.step_time_s.median", "s", "lower", "rel",
     "median"),
    ("step_time_mean", "mean step time", "summary.step_time_s.mean", "s", "lower", "rel", "mean"),
    ("step_time_p99", "p99 step time", "summary.step_time_s.p99", "s", "lower", "rel", "p99"),
    ("throughput", "throughput (wall-clock)", "summary.throughput_wallclock_samples_per_s",
     "samples/s", "higher", "rel", "wall"),
    ("throughput_median_step", "throughput (median step)",
     "summary.throughput_median_step_samples_per_s|summary.throughput_samples_per_s",
     "samples/s", "higher", "rel", "median_fps"),
    ("throughput_per_card", "throughput per card (wall-clock)",
     "summary.throughput_per_card_wallclock_samples_per_s", "samples/s", "higher", "rel", "wall"),
    ("throughput_per_card_median_step", "throughput per card (median step)",
     "summary.throughput_per_card_samples_per_s", "samples/s", "higher", "rel", "median_fps"),
    ("jitter_cost", "jitter & spikes cost", "summary.jitter_cost_fraction", "", "lower", "abs", ""),
    ("jitter_cv", "jitter (step-time cv)", "jitter.cv", "", "lower", "rel", ""),
    ("straggler_cost_deterministic", "straggler cost (deterministic)", "@deterministic_cost", "",
     "lower", "abs", ""),
    ("straggler_cost", "straggler cost (random)", "straggler_analysis.sync_cost_fraction", "",
     "lower", "abs", ""),
    ("compute_fraction", "compute share", "breakdown.compute_fraction", "", "higher", "abs", ""),
    ("comm_fraction", "comm share", "breakdown.comm_fraction", "", "lower", "abs", ""),
    ("data_fraction", "data share", "breakdown.data_fraction", "", "lower", "abs", ""),
    ("other_fraction", "other share", "breakdown.other_fraction", "", "lower", "abs", ""),
    ("speedup", "speedup", "breakdown.speedup", "", "higher", "rel", ""),
)  # fmt: skip
_TOKEN_METRICS: tuple[tuple[str, str, str, str, str, str, str], ...] = (
    ("throughput_tokens", "token throughput (wall-clock)",
     "summary.throughput_wallclock_tokens_per_s", "tokens/s", "higher", "rel", ""),
    ("mfu", "MFU (median)", "summary.mfu.median", "", "higher", "abs", ""),
)  # fmt: skip
"""Compared only when both runs have them (logs that count tokens / print MFU); single values
per run, without a test (the per-step series carries samples/s only)."""
GATED = (
    "step_time_median",
    "step_time_mean",
    "step_time_p99",
    "throughput",
    "throughput_median_step",
    "throughput_per_card",
    "throughput_per_card_median_step",
)
"""Metrics ``--max-regression`` gates on (tested when both sides carry per-step series) when both
runs have the same number of cards; otherwise only :data:`PER_CARD` are judged."""
PER_CARD = ("throughput_per_card", "throughput_per_card_median_step")
"""What is judged when the runs have different card counts: step time and job throughput change
with the number of cards (a fixed global batch splits, more cards add samples), per card not."""


@dataclass
class MetricChange:
    """The change of one metric from BASE to CURRENT.

    Attributes:
        name, label, unit: identity; ``better`` is ``"lower"`` or ``"higher"``.
        kind: ``"rel"`` — ``change`` is (current − base) / base; ``"abs"`` — current − base.
        base, current: the two values (None when unknown on a side).
        change: signed change (see ``kind``), None when not computable.
        worsening: the change expressed so that positive = worse (e.g. +0.04 = 4 % slower).
        ci: 95 % interval of the relative change of the tested statistic (tested metrics only).
        p_value: two-sided p-value (:mod:`xpuperf.compare_stats`), None when not tested.
        p_floor: the smallest p-value the test resolves (printed as ``p<`` it).
        verdict: ``"regression"``, ``"improvement"`` or ``"no significant change"`` for tested
            metrics; ``"worse"``, ``"better"``, ``"unchanged"`` (untested) or ``"n/a"``;
            ``"not judged"`` for step time and job throughput when the card counts differ.
    """

    name: str
    label: str
    unit: str
    better: str
    kind: str
    base: float | None
    current: float | None
    change: float | None
    worsening: float | None
    p_value: float | None = None
    ci: tuple[float, float] | None = None
    verdict: str = "n/a"
    p_floor: float = P_FLOOR

    @property
    def tested(self) -> bool:
        return self.p_value is not None


@dataclass
class CompareResult:
    """Everything ``xpuperf compare`` found; renderers take this and nothing else.

    Attributes:
        base, current: the two sides.
        metrics: one :class:`MetricChange` per metric of ``_METRICS``, in that order, then
            those of ``_TOKEN_METRICS`` both runs have.
        alpha, min_effect: the test level and the smallest change that counts.
        notes: caveats (no series, different rank counts, few steps).
        findings: findings in one run only (:func:`xpuperf.compare_diff.finding_changes`).
        ranks: per-rank median work, base vs current (:func:`~xpuperf.compare_diff.rank_diff`).
        breakdown: phase shares and seconds (:func:`~xpuperf.compare_diff.breakdown_diff`).
        gated: the metrics judged for a regression: :data:`GATED`, or :data:`PER_CARD` when
            the two runs have different card counts.
    """

    base: RunData
    current: RunData
    metrics: list[MetricChange]
    alpha: float
    min_effect: float
    notes: list[str] = field(default_factory=list)
    findings: list[FindingChange] = field(default_factory=list)
    ranks: list[dict[str, Any]] = field(default_factory=list)
    breakdown: list[dict[str, Any]] = field(default_factory=list)
    gated: tuple[str, ...] = GATED

    def metric(self, name: str) -> MetricChange:
        """The metric called ``name``."""
        return next(m for m in self.metrics if m.name == name)

    def regressions(self) -> list[MetricChange]:
        """Gated metrics (:attr:`gated`) judged a regression (tested), or worse (untested)."""
        bad = ("regression", "worse")
        return [m for m in self.metrics if m.name in self.gated and m.verdict in bad]


def _test(
    test: str, base: RunData, cur: RunData, per_card: bool = False
) -> tuple[float, tuple[float, float]] | None:
    """(p-value, 95 % interval of the relative change) of a metric's test, or None; ``per_card``:
    the throughput tests on each run's samples/s divided by its cards (``summary.ranks``)."""
    tb, tc = base.step_time_s, cur.step_time_s
    if not test or tb is None or tc is None or min(len(tb), len(tc)) < 3:
        return None
    if test == "median":
        return stats.median_test(tb, tc)
    if test == "mean":
        return stats.ratio_test(tb, tc)
    if test == "p99":
        return stats.quantile_test(tb, tc, 0.99)
    if base.fps is None or cur.fps is None:
        return None
    fb, fc = base.fps, cur.fps
    if per_card:  # the job's samples/s per step over each run's cards
        fb, fc = (
            fb / (_get(base.doc, "summary.ranks") or 1),
            fc / (_get(cur.doc, "summary.ranks") or 1),
        )
    if test == "median_fps":
        return stats.median_test(fb, fc)
    return stats.ratio_test(fb * tb, fc * tc, tb, tc)  # wall: Σ samples / Σ time


def _metric(
    spec: tuple[str, ...], base: RunData, cur: RunData, alpha: float, eff: float
) -> MetricChange:
    """One metric's change; tested (:mod:`xpuperf.compare_stats`) when both sides have series."""
    name, label, path, unit, better, kind, test = spec
    b, c = _get(base.doc, path), _get(cur.doc, path)
    sign = 1.0 if better == "lower" else -1.0
    change = worsening = None
    if b is not None and c is not None:
        change = (c - b) if kind == "abs" else ((c - b) / b if b else None)
        worsening = None if change is None else sign * change
    m = MetricChange(name, label, unit, better, kind, b, c, change, worsening)
    tested = _test(test, base, cur, name in PER_CARD) if change is not None else None
    if tested is not None:
        m.p_value, m.ci = tested
        if test == "p99":
            m.p_floor = stats.P_RESOLUTION
        if worsening is not None and m.p_value < alpha and abs(worsening) >= eff:
            m.verdict = "regression" if worsening > 0 else "improvement"
        else:
            m.verdict = "no significant change"
    elif worsening is not None:
        m.verdict = (
            "unchanged" if abs(worsening) < eff else ("worse" if worsening > 0 else "better")
        )
    return m


def compare_runs(
    base: RunData, current: RunData, *, alpha: float = 0.01, min_effect: float = 0.01
) -> CompareResult:
    """Compare two runs metric by metric.

    Args:
        base, current: the two sides (:func:`load_run`, :func:`run_from_result`).
        alpha: significance level of the Mann–Whitney test.
        min_effect: smallest change that counts (relative for times/throughput, absolute points
            for fractions), e.g. 0.01 = 1 %.
    """
    metrics = [_metric(spec, base, current, alpha, min_effect) for spec in _METRICS]
    metrics += [
        _metric(spec, base, current, alpha, min_effect)
        for spec in _TOKEN_METRICS
        if _get(base.doc, spec[2]) is not None and _get(current.doc, spec[2]) is not None
    ]
    notes = []
    for side in (base, current):
        if side.series_from == "none":
            notes.append(
                f"{side.label} ({side.source}) is a saved JSON without per-step series: step "
                "time and throughput are compared as single values, without a significance "
                "test — compare logs, or a JSON of `analyze --json`, for a tested verdict."
            )
    gated = GATED
    rb, rc = _get(base.doc, "summary.ranks"), _get(current.doc, "summary.ranks")
    if rb is not None and rc is not None and rb != rc:
        gated = PER_CARD
        notes.append(_sizes_note(rb, rc, metrics))
    for side in (base, current):
        if side.step_time_s is not None and len(side.step_time_s) < 20:
            notes.append(
                f"{side.label} has only {len(side.step_time_s)} steady steps: the test has "
                "little power."
            )
    return CompareResult(
        base,
        current,
        metrics,
        alpha,
        min_effect,
        notes,
        findings=finding_changes(base.doc, current.doc),
        ranks=rank_diff(base.doc, current.doc),
        breakdown=breakdown_diff(base.doc, current.doc),
        gated=gated,
    )


def _sizes_note(rb: float, rc: float, metrics: list[MetricChange]) -> str:
    """Runs of different card counts are judged per card: the step-time and job-throughput rows
    are marked "not judged" (in place) and the note says what was compared."""
    for m in metrics:
        if m.name in GATED and m.name not in PER_CARD:
            m.verdict = "not judged"
    card = next(m for m in metrics if m.name == "throughput_per_card")
    head = f"base has {rb:.0f} cards, current {rc:.0f}: "
    if card.change is None:
        return head + (
            "per-card throughput is unknown on a side (a job-level log without its world size: "
            "pass --world-size N), so nothing is judged; step time and job throughput change "
            "with the card count and are shown only"
        )
    return head + (
        f"compared per card (throughput per card {card.base:,.1f} → {card.current:,.1f} "
        f"samples/s, {card.change:+.1%}); step time and job throughput change with the card "
        "count and are shown, not judged"
    )


def compare_paths(
    base: str | os.PathLike,
    current: str | os.PathLike,
    *,
    alpha: float = 0.01,
    min_effect: float = 0.01,
    **analyze_kw: Any,
) -> CompareResult:
    """Load both sides (logs or saved JSON) and compare them (see :func:`compare_runs`)."""
    return compare_runs(
        load_run(base, "base", **analyze_kw),
        load_run(current, "current", **analyze_kw),
        alpha=alpha,
        min_effect=min_effect,
    )


def check_max_regression(result: CompareResult, max_regression: float) -> None:
    """Raise :class:`GateFailedError` (exit 1) if a gated metric regressed beyond the limit.

    Gated metrics (:data:`GATED`): wall-clock and median-step throughput (job and per card),
    median, mean and p99 step time; runs with different card counts: per card only
    (:data:`PER_CARD`). With per-step series a regression must be significant; without, the
    values are compared directly (stated in ``result.notes``). ``max_regression`` is a fraction
    (0.05).
    """
    bad = [
        m for m in result.regressions() if m.worsening is not None and m.worsening > max_regression
    ]
    if bad:
        listing = "; ".join(
            f"{m.label} {m.worsening:+.2%} worse (limit {max_regression:.2%}"
            + (f", {format_p(m.p_value, m.p_floor)})" if m.p_value is not None else ", untested)")
            for m in bad
        )
        raise GateFailedError(f"regression beyond --max-regression: {listing}")


def to_dict(result: CompareResult) -> dict[str, Any]:
    """The ``xpuperf.compare/1`` document (NaN and infinities become null)."""
    from xpuperf.report.json_report import _clean

    def side(r: RunData) -> dict[str, Any]:
        return {
            "source": r.source,
            "series_from": r.series_from,
            "steps": None if r.step_time_s is None else len(r.step_time_s),
            "summary": r.doc.get("summary"),
        }

    return _clean(
        {
            "schema": SCHEMA,
            "xpuperf_version": __version__,
            "alpha": result.alpha,
            "min_effect": result.min_effect,
            "base": side(result.base),
            "current": side(result.current),
            "metrics": {
                m.name: {
                    "label": m.label,
                    "unit": m.unit,
                    "better": m.better,
                    "kind": m.kind,
                    "base": m.base,
                    "current": m.current,
                    "change": m.change,
                    "worsening": m.worsening,
                    "p_value": m.p_value,
                    "p_text": None if m.p_value is None else format_p(m.p_value, m.p_floor),
                    "ci": list(m.ci) if m.ci else None,
                    "verdict": m.verdict,
                }
                for m in result.metrics
            },
            "regressions": [m.name for m in result.regressions()],
            "findings": {
                k: [dataclasses.asdict(f) for f in result.findings if f.change == k]
                for k in ("new", "gone")
            },
            "ranks": result.ranks,
            "breakdown": result.breakdown,
            "notes": result.notes,
        }
    )
