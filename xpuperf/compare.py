"""Compare two runs (BASE vs CURRENT): per-metric change, significance over steps, regression gate.

Each side is an :class:`~xpuperf.analysis.results.AnalyzeResult` (from logs) or a saved
``xpuperf.analyze/1`` JSON document. The step-time and throughput changes are tested with a
two-sided Mann–Whitney U test over the steady (post-warm-up) steps of both runs; a change counts
only when it is significant (p < ``alpha``) AND at least ``min_effect`` in size, so a tiny but
"significant" shift on a long run is not called a regression. The other metrics (p99, jitter cv,
straggler cost, breakdown fractions, speedup) are single numbers per run: their change is reported
without a test, and fractions change in absolute points.

A saved analyze JSON carries the per-step series only if it has a ``job_steps`` list (records of
``step, step_time_s, fps``); otherwise its medians are compared without a test, and the result
says so in ``notes``.

>>> from xpuperf.compare import compare_paths
>>> res = compare_paths("base_logs/", "current_logs/")  # doctest: +SKIP
>>> [m.name for m in res.metrics if m.verdict == "regression"]  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xpuperf import __version__
from xpuperf.analysis.results import AnalyzeResult
from xpuperf.errors import GateFailedError, InputError

SCHEMA = "xpuperf.compare/1"
ANALYZE_SCHEMA_PREFIX = "xpuperf.analyze/"

# name, label, JSON path in the analyze document, unit, better ("lower"/"higher"), kind
# kind: "rel" (relative change) or "abs" (absolute change, for fractions)
_METRICS: tuple[tuple[str, str, str, str, str, str], ...] = (
    ("step_time_median", "median step time", "summary.step_time_s.median", "s", "lower", "rel"),
    ("throughput", "throughput", "summary.throughput_samples_per_s", "samples/s", "higher", "rel"),
    ("step_time_p99", "p99 step time", "summary.step_time_s.p99", "s", "lower", "rel"),
    ("jitter_cv", "jitter (step-time cv)", "jitter.cv", "", "lower", "rel"),
    ("straggler_cost", "straggler cost", "straggler_analysis.sync_cost_fraction", "", "lower",
     "abs"),
    ("compute_fraction", "compute share", "breakdown.compute_fraction", "", "higher", "abs"),
    ("comm_fraction", "comm share", "breakdown.comm_fraction", "", "lower", "abs"),
    ("data_fraction", "data share", "breakdown.data_fraction", "", "lower", "abs"),
    ("other_fraction", "other share", "breakdown.other_fraction", "", "lower", "abs"),
    ("speedup", "speedup", "breakdown.speedup", "", "higher", "rel"),
)  # fmt: skip
_TESTED = {"step_time_median": "step_time_s", "throughput": "fps"}
GATED = ("step_time_median", "throughput")


@dataclass
class RunData:
    """One side of a comparison.

    Attributes:
        label: ``"base"`` or ``"current"``.
        source: what was read (path or description).
        doc: the ``xpuperf.analyze/1`` document.
        step_time_s: steady per-step job step times (s), or None when not available.
        fps: steady per-step job throughput (samples/s), or None.
        series_from: ``"logs"``, ``"json"`` (series embedded in a saved JSON) or ``"none"``.
    """

    label: str
    source: str
    doc: dict[str, Any]
    step_time_s: np.ndarray | None
    fps: np.ndarray | None
    series_from: str


@dataclass
class MetricChange:
    """The change of one metric from BASE to CURRENT.

    Attributes:
        name, label, unit: identity; ``better`` is ``"lower"`` or ``"higher"``.
        kind: ``"rel"`` — ``change`` is (current − base) / base; ``"abs"`` — current − base.
        base, current: the two values (None when unknown on a side).
        change: signed change (see ``kind``), None when not computable.
        worsening: the change expressed so that positive = worse (e.g. +0.04 = 4 % slower).
        ci: 95 % bootstrap interval of the relative change of the median (tested metrics only).
        p_value: Mann–Whitney two-sided p-value, None when not tested.
        verdict: ``"regression"``, ``"improvement"`` or ``"no significant change"`` for tested
            metrics; ``"worse"``, ``"better"``, ``"unchanged"`` (untested) or ``"n/a"``.
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

    @property
    def tested(self) -> bool:
        return self.p_value is not None


@dataclass
class CompareResult:
    """Everything ``xpuperf compare`` found; renderers take this and nothing else."""

    base: RunData
    current: RunData
    metrics: list[MetricChange]
    alpha: float
    min_effect: float
    notes: list[str] = field(default_factory=list)

    def metric(self, name: str) -> MetricChange:
        """The metric called ``name``."""
        return next(m for m in self.metrics if m.name == name)

    def regressions(self) -> list[MetricChange]:
        """Gated metrics judged a regression (tested), or worse (untested fallback)."""
        return [m for m in self.metrics if m.name in GATED and m.verdict in ("regression", "worse")]


def _get(doc: dict[str, Any], path: str) -> float | None:
    cur: Any = doc
    for k in path.split("."):
        if not isinstance(cur, dict) or cur.get(k) is None:
            return None
        cur = cur[k]
    return float(cur) if isinstance(cur, (int, float)) and not isinstance(cur, bool) else None


def run_from_result(result: AnalyzeResult, label: str, source: str | None = None) -> RunData:
    """A comparison side from an in-memory analysis (series always available)."""
    from xpuperf.report.json_report import to_dict

    js = result.job_steps
    fps = js["fps"].to_numpy(dtype=float)
    return RunData(
        label=label,
        source=source or ", ".join(result.sources[:3]) or "(in memory)",
        doc=to_dict(result),
        step_time_s=js["step_time_s"].to_numpy(dtype=float),
        fps=fps if len(fps) and np.isfinite(fps).all() else None,
        series_from="logs",
    )


def run_from_json(doc: dict[str, Any], label: str, source: str) -> RunData:
    """A comparison side from a saved ``xpuperf.analyze/1`` document."""
    steps = doc.get("job_steps")
    st = fps = None
    if isinstance(steps, list) and steps:
        st = np.array([r.get("step_time_s") for r in steps], dtype=float)
        fps = np.array([r.get("fps") if r.get("fps") is not None else np.nan for r in steps])
        fps = fps.astype(float) if np.isfinite(fps.astype(float)).all() else None
    return RunData(label, source, doc, st, fps, "json" if st is not None else "none")


def _load_json(path: Path) -> dict[str, Any] | None:
    """The analyze document in ``path`` if it is one, else None (then it is read as a log)."""
    if not path.is_file() or path.suffix.lower() != ".json":
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    if isinstance(doc, dict) and str(doc.get("schema", "")).startswith(ANALYZE_SCHEMA_PREFIX):
        return doc
    if isinstance(doc, dict) and "schema" in doc:
        raise InputError(
            f"schema {doc['schema']!r} is not an analyze result; pass logs or the JSON of "
            "`xpuperf analyze --json`",
            path,
        )
    return None


def load_run(path: str | os.PathLike, label: str, **analyze_kw: Any) -> RunData:
    """Read one side: a saved analyze JSON, or logs (file/dir/glob) analysed with ``analyze_kw``."""
    doc = _load_json(Path(path))
    if doc is not None:
        return run_from_json(doc, label, str(path))
    from xpuperf.pipeline import analyze_logs

    return run_from_result(analyze_logs([path], **analyze_kw), label, str(path))


def _bootstrap_ci(a: np.ndarray, b: np.ndarray, n: int = 2000) -> tuple[float, float]:
    """95 % bootstrap interval of median(b) / median(a) − 1 (seeded: reproducible)."""
    rng = np.random.default_rng(0)
    ma = np.median(rng.choice(a, size=(n, len(a))), axis=1)
    mb = np.median(rng.choice(b, size=(n, len(b))), axis=1)
    lo, hi = np.percentile(mb / ma - 1.0, [2.5, 97.5])
    return float(lo), float(hi)


def _metric(
    spec: tuple[str, ...], base: RunData, cur: RunData, alpha: float, eff: float
) -> MetricChange:
    """One metric's change; tested with Mann–Whitney when both sides carry its series."""
    name, label, path, unit, better, kind = spec
    b, c = _get(base.doc, path), _get(cur.doc, path)
    sign = 1.0 if better == "lower" else -1.0
    change = worsening = None
    if b is not None and c is not None:
        change = (c - b) if kind == "abs" else ((c - b) / b if b else None)
        worsening = None if change is None else sign * change
    m = MetricChange(name, label, unit, better, kind, b, c, change, worsening)
    col = _TESTED.get(name)
    sb = getattr(base, col) if col else None
    sc = getattr(cur, col) if col else None
    if sb is not None and sc is not None and min(len(sb), len(sc)) >= 3:
        from scipy.stats import mannwhitneyu  # on use: keeps scipy out of start-up

        m.p_value = float(mannwhitneyu(sb, sc, alternative="two-sided").pvalue)
        m.ci = _bootstrap_ci(sb, sc)
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
    notes = []
    for side in (base, current):
        if side.series_from == "none":
            notes.append(
                f"{side.label} ({side.source}) is a saved JSON without per-step series: step "
                "time and throughput are compared as medians, without a significance test — "
                "compare logs for a tested verdict."
            )
    rb, rc = _get(base.doc, "summary.ranks"), _get(current.doc, "summary.ranks")
    if rb is not None and rc is not None and rb != rc:
        notes.append(
            f"base has {rb:.0f} ranks, current {rc:.0f}: step time and job throughput are not "
            "like for like — compare runs of the same size, or read per-card throughput."
        )
    for side in (base, current):
        if side.step_time_s is not None and len(side.step_time_s) < 20:
            notes.append(
                f"{side.label} has only {len(side.step_time_s)} steady steps: the test has "
                "little power."
            )
    return CompareResult(base, current, metrics, alpha, min_effect, notes)


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

    Gated metrics: median step time and throughput. With per-step series a regression must be
    significant; without, the medians are compared directly (stated in ``result.notes``).
    """
    bad = [
        m for m in result.regressions() if m.worsening is not None and m.worsening > max_regression
    ]
    if bad:
        listing = "; ".join(
            f"{m.label} {m.worsening:+.2%} worse (limit {max_regression:.2%}"
            + (f", p={m.p_value:.2g})" if m.p_value is not None else ", untested)")
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
                    "ci": list(m.ci) if m.ci else None,
                    "verdict": m.verdict,
                }
                for m in result.metrics
            },
            "regressions": [m.name for m in result.regressions()],
            "notes": result.notes,
        }
    )
