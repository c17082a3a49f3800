"""JSON renderer: :class:`AnalyzeResult` → a versioned, JSON-serialisable dict.

Schema ``xpuperf.analyze/1``. Keys CI jobs may rely on (a contract; additions only within /1):
``summary.ranks``, ``summary.steps``, ``summary.warmup_steps``,
``summary.step_time_s.{median,p99}``,
``summary.throughput_samples_per_s`` (the median-step figure, null when samples are unknown),
``summary.throughput_wallclock_samples_per_s`` (the headline: samples / steady wall time),
``summary.throughput_median_step_samples_per_s`` (= ``throughput_samples_per_s``),
``summary.throughput_per_card_wallclock_samples_per_s`` (null, like every per-card key, for a
job-level log whose card count is unknown: ``summary.cards_unknown`` = ``"job"``; the job keys are
null instead for one card's view of a job of unknown size: ``"card"``), ``summary.wall_time_s``,
``summary.wallclock_source`` (timestamps | step_times), ``summary.iterations``,
``summary.jitter_cost_s`` and ``summary.jitter_cost_fraction`` (Σ logged step times − iterations
× median step time: what spikes, stalls and jitter of the logged steps cost),
``summary.outside_steps_s`` and ``summary.outside_steps_fraction`` (with timestamps: wall time −
Σ logged step times, the time between the steps; null without timestamps),
``summary.log_cuts`` (``[first, last]`` iterations not in the log, per cut in the step numbers),
``summary.throughput_wallclock_tokens_per_s``,
``summary.throughput_per_card_wallclock_tokens_per_s``, ``summary.throughput_tokens_per_s``
(median step) and ``summary.throughput_per_card_tokens_per_s`` (tokens/s, null when the logs
count no tokens), ``summary.mfu`` (null without MFU in the logs, else ``median``, ``rank_min``,
``rank_min_rank``, ``rank_max``, ``rank_max_rank``, ``first_tenth``, ``last_tenth``,
``values``; fractions 0…1), ``jitter.cv``,
``jitter.p99_over_p50``, ``stragglers[]`` (``rank``, ``node``, ``kind``, ``slowdown``,
``cost_fraction``), ``breakdown.{compute,comm,data,other}_fraction``, ``breakdown.source``,
``breakdown.speedup`` (null without a baseline), ``findings[]`` (``code``, ``severity``,
``message``), ``checks[]`` (``name``, ``status`` = problem|clean|not_checked, ``evidence``,
``codes``), ``events`` (framework warnings seen in the text logs: ``events[]`` with kind,
file, line, count, text; ``files_scanned``). NaN and infinities become null. ``nccl`` (only
when an input has NCCL INFO lines): see :mod:`xpuperf.report.nccl_section`. ``job_steps[]``
(``step``, ``step_time_s``, ``fps``, ``spike`` per steady step; every k-th step beyond
:data:`MAX_JSON_STEPS`, then ``job_steps_thinned`` = ``{every: k, steady_steps: n}``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import numpy as np
import pandas as pd

from xpuperf import __version__
from xpuperf.analysis.results import AnalyzeResult
from xpuperf.report.common import ANALYZE_SCHEMA

SCHEMA = ANALYZE_SCHEMA
MAX_JSON_STEPS = 1_000_000
"""Most ``job_steps`` rows a document carries: a longer run keeps every k-th steady step
(``job_steps_thinned``), so JSON and HTML stay bounded (1e6 steps: ≈ 100 MB, 1.4 GB while
written; 3e7 steps grew past 17 GB)."""


def _thinned(steps: pd.DataFrame) -> pd.DataFrame:
    """``steps``, or every k-th row of it beyond :data:`MAX_JSON_STEPS` rows (k = ⌈n / max⌉)."""
    n = len(steps)
    return steps if n <= MAX_JSON_STEPS else steps.iloc[:: -(-n // MAX_JSON_STEPS)]


def _clean(x: Any) -> Any:
    """Recursively turn numpy/pandas scalars into plain Python, NaN/inf into None."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, pd.DataFrame):
        return [_clean(r) for r in x.to_dict(orient="records")]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _clean({f.name: getattr(x, f.name) for f in dataclasses.fields(x)})
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        v = float(x)
        return v if math.isfinite(v) else None
    if x is pd.NA or x is None:
        return None
    return x if isinstance(x, str) else str(x)


def _unchecked(result: AnalyzeResult, name: str) -> bool:
    return any(c.name == name and c.status.value == "not_checked" for c in result.checks)


def to_dict(result: AnalyzeResult) -> dict[str, Any]:
    """The ``xpuperf.analyze/1`` document of one analysis."""
    s = result.stragglers
    b = result.breakdown
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "xpuperf_version": __version__,
        "sources": result.sources,
        "summary": result.summary,
        "warmup": result.warmup,
        "jitter": result.jitter,
        # null, not [], when the straggler check had no evidence: "[]" would read as none
        "stragglers": s.stragglers if s and not _unchecked(result, "steps.stragglers") else None,
        "straggler_analysis": (
            {
                "work_source": s.work_source,
                "threshold": s.threshold,
                "n_steps": s.n_steps,
                "sync_cost_s": s.sync_cost_s,
                "sync_cost_fraction": s.sync_cost_fraction,
                "per_rank": s.per_rank,
            }
            if s
            else None
        ),
        "breakdown": {
            "source": b.source,
            "compute_fraction": b.compute_fraction,
            "comm_fraction": b.comm_fraction,
            "data_fraction": b.data_fraction,
            "other_fraction": b.other_fraction,
            "speedup": b.speedup,
            "baseline_step_time_s": b.baseline_step_time_s,
            "baseline_throughput_samples_per_s": b.baseline_throughput_samples_per_s,
            # the steps the shares rest on (Megatron prints timers on some iterations only)
            "n_steps": getattr(b, "n_steps", None),
            "phase_steps": getattr(b, "phase_steps", None),
            "weak": getattr(b, "weak", None),
            "per_rank": b.per_rank if b.per_rank is not None else [],
        },
        "findings": [f.to_dict() for f in result.findings],
        # every check: problem / clean / not_checked with its evidence (docs/diagnosis.md)
        "checks": [c.to_dict() for c in result.checks],
        "warnings": result.read_warnings,
        # per steady step: step, step_time_s, fps, spike — for `xpuperf compare` on saved JSON
        "job_steps": _thinned(result.job_steps),
    }
    n = len(result.job_steps)
    if n > MAX_JSON_STEPS:
        doc["job_steps_thinned"] = {"every": -(-n // MAX_JSON_STEPS), "steady_steps": n}
    if result.events is not None:  # framework warnings: their findings and checks are above
        ev = result.events.to_dict()  # type: ignore[attr-defined]
        doc["events"] = {k: v for k, v in ev.items() if k not in ("findings", "checks")}
    if result.nccl is not None:  # NCCL INFO lines in the inputs: report/nccl_section.py
        from xpuperf.report.nccl_section import to_dict as nccl_dict

        doc["nccl"] = nccl_dict(result.nccl)  # type: ignore[arg-type]
    return _clean(doc)


def render_json(result: AnalyzeResult) -> str:
    """``to_dict`` serialised with 2-space indentation and a trailing newline."""
    return json.dumps(to_dict(result), indent=2, allow_nan=False) + "\n"
