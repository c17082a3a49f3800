"""One side of ``xpuperf compare``: a saved ``xpuperf.analyze/1`` document or logs analysed on the
spot, reduced to :class:`RunData` (the document plus the per-step series the tests need).

Split out of :mod:`xpuperf.compare` (which compares two of them) to keep modules small.

Errors: :class:`~xpuperf.errors.InputError` for a JSON whose schema is not an analyze result,
and as :func:`xpuperf.pipeline.analyze_logs` for logs.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xpuperf.analysis.results import AnalyzeResult
from xpuperf.errors import InputError

ANALYZE_SCHEMA_PREFIX = "xpuperf.analyze/"


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


def _get(doc: dict[str, Any], path: str) -> float | None:
    """The number at a dotted ``path``; ``a|b``: the first present; ``@name``: derived."""
    if "|" in path:
        return next((v for p in path.split("|") if (v := _get(doc, p)) is not None), None)
    if path == "@deterministic_cost":
        return _deterministic_cost(doc)
    cur: Any = doc
    for k in path.split("."):
        if not isinstance(cur, dict) or cur.get(k) is None:
            return None
        cur = cur[k]
    return float(cur) if isinstance(cur, (int, float)) and not isinstance(cur, bool) else None


def _deterministic_cost(doc: dict[str, Any]) -> float | None:
    """Σ cost of the deterministic stragglers (0 when none), None without a straggler analysis."""
    if not isinstance(doc.get("straggler_analysis"), dict):
        return None
    costs = [
        float(x.get("cost_fraction") or 0.0)
        for x in doc.get("stragglers") or []
        if isinstance(x, dict) and x.get("kind") == "deterministic"
    ]
    return float(sum(costs))


def run_from_result(result: AnalyzeResult, label: str, source: str | None = None) -> RunData:
    """A comparison side from an in-memory analysis (series always available)."""
    from xpuperf.report.json_report import to_dict

    js = result.job_steps
    fps = js["fps"].to_numpy(dtype=float)
    # the series are kept as arrays: the document does not repeat them as records
    slim = dataclasses.replace(result, job_steps=js.iloc[:0])
    return RunData(
        label=label,
        source=source or ", ".join(result.sources[:3]) or "(in memory)",
        doc=to_dict(slim),
        step_time_s=js["step_time_s"].to_numpy(dtype=float),
        fps=fps if len(fps) and np.isfinite(fps).all() else None,
        series_from="logs",
    )


def run_from_json(doc: dict[str, Any], label: str, source: str) -> RunData:
    """A comparison side from a saved ``xpuperf.analyze/1`` document.

    Raises:
        InputError: the document has no step records (an analyze of NCCL logs or job output
            only): there is nothing to compare.
    """
    if doc.get("summary") is None:
        raise InputError(
            "this analyze result holds no step records (NCCL logs or job output only): compare "
            "needs step logs, or the --json of an analyze that read them",
            source,
        )
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
    from xpuperf.kinds import pointed
    from xpuperf.pipeline import analyze_logs

    try:
        result = analyze_logs([path], **analyze_kw)
    except InputError as exc:  # an NCCL log, job output, a table…: say what it is
        raise pointed(exc, "xpuperf compare") from exc
    return run_from_result(result, label, str(path))
