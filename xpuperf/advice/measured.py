"""What ``xpuperf plan --from-log`` takes from a measured run, read with the analyze readers.

From the canonical step table (:mod:`xpuperf.steps`) of any log ``xpuperf analyze`` reads, after
its warm-up (:func:`~xpuperf.analysis.warmup.detect_warmup`) is dropped:

- ``step_time_s``, the single-card step without input wait: the median over steady rows of
  step − data (one rank), step − comm − data (several ranks with a comm column), else compute
  (several ranks, compute column) or step − data (several ranks, nothing else: an upper bound,
  communication included — said in a note).
- ``backward_fraction`` = median(backward) / that step, when the log splits forward/backward.
- ``data``: the steady per-step data (input wait) times, all ranks — the per-batch input time of
  a loader that does not overlap (the loop waited that long); the plan models them as loaded in
  the training process (``num_workers=0``) unless ``--workers`` says otherwise.
- per rank: w_r = median work of rank r; ``slowest_factor`` = max w_r / median w_r when a rank is
  at least ``straggler_threshold`` slower (the analyze default, 5 %), else 1; the random part:
  x_rs = work_rs / w_r / median_r'(work_r's / w_r') (rank and step effects removed; one rank:
  work / median), its ``compute_cv`` and its :class:`~xpuperf.costmodel.tail.TailDist` (empirical
  body, GPD tail) for E[max over N ranks].
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from xpuperf.analysis.series import job_steps
from xpuperf.analysis.warmup import detect_warmup, split_warmup
from xpuperf.costmodel.checks import CostModelError
from xpuperf.costmodel.input import Samples
from xpuperf.costmodel.tail import TailDist
from xpuperf.errors import InputError
from xpuperf.readers import read_logs

STRAGGLER_THRESHOLD = 0.05
"""A rank this much slower than the median rank is a deterministic straggler (analyze's default)."""


@dataclass(frozen=True)
class Measured:
    """A measured run reduced to the plan's inputs (seconds; see the module docstring)."""

    source: str
    ranks: int
    steady_steps: int
    step_time_s: float
    backward_fraction: float | None
    data: Samples | None
    compute_cv: float
    slowest_factor: float
    slowest_rank: int | None
    tail: TailDist | None
    batch_size: float | None
    notes: tuple[str, ...]


def _work(t: pd.DataFrame, ranks: int) -> tuple[pd.Series, str | None]:
    data = t["data_s"].fillna(0.0) if "data_s" in t.columns else 0.0
    if ranks == 1:
        return t["step_time_s"] - data, None
    if "comm_s" in t.columns:
        return t["step_time_s"] - t["comm_s"].fillna(0.0) - data, None
    if "compute_s" in t.columns:
        return t["compute_s"], (
            "no comm column: single-card step = the log's compute (host overhead not counted)"
        )
    return t["step_time_s"] - data, (
        "no comm or compute column: single-card step = step − data, communication included "
        "(an upper bound)"
    )


def from_log(path: str | os.PathLike, batch_size: float | None = None,
             straggler_threshold: float = STRAGGLER_THRESHOLD,
             fmt: str | None = None) -> Measured:  # fmt: skip
    """Read ``path`` (file, folder or glob, any format ``xpuperf analyze`` reads; ``fmt`` forces
    one) into :class:`Measured`. Raises :class:`~xpuperf.errors.InputError` for unreadable logs or
    logs with no usable steady step."""
    run = read_logs([path], fmt=fmt, batch_size=batch_size)
    t = run.table
    warm = detect_warmup(job_steps(t))
    t = split_warmup(t, warm)
    ranks = int(t["rank"].nunique()) if not t.empty else 0
    if t.empty:
        raise InputError(f"{path}: no steady step left after the {warm.steps}-step warm-up")
    work, note = _work(t, ranks)
    t = t.assign(work=work)
    t = t[np.isfinite(t["work"]) & (t["work"] > 0)]
    if t.empty:
        raise InputError(f"{path}: no step with a positive compute time (step − data − comm)")
    notes = [f"from {path}: {ranks} rank(s), {t['step'].nunique()} steady steps "
             f"({warm.steps} warm-up steps dropped)"]  # fmt: skip
    if note:
        notes.append(note)
    step = float(t["work"].median())
    bwd = None
    if "backward_s" in t.columns and t["backward_s"].notna().any():
        bwd = float(min(1.0, t["backward_s"].median() / step))
        notes.append(f"backward = {bwd:.2f} of the step, from the log's backward column")
    data = None
    if "data_s" in t.columns and (t["data_s"].fillna(0.0) > 0).any():
        data = Samples(t["data_s"].dropna().to_numpy())
    per_rank = t.groupby("rank")["work"].median()
    ratio = per_rank / float(per_rank.median())
    slowest, slow_rank = 1.0, None
    if ranks > 1 and ratio.max() - 1 >= straggler_threshold:
        slowest, slow_rank = float(ratio.max()), int(ratio.idxmax())
        notes.append(f"rank {slow_rank} computes {slowest - 1:.1%} slower than the median rank: "
                     "a deterministic straggler")  # fmt: skip
    rel = t["work"] / t["rank"].map(per_rank)
    if ranks > 1:
        rel = rel / rel.groupby(t["step"]).transform("median")
    x = rel.to_numpy(dtype=float)
    cv = float(np.std(x) / np.mean(x)) if x.size > 1 else 0.0
    tail = None
    if x.size >= 2 and np.ptp(x) > 0:
        try:
            tail = TailDist(x)
        except CostModelError as e:
            tail = TailDist(x, fit=False)
            notes.append(f"no tail fit: {e}")
    bs = batch_size
    if bs is None and "samples" in t.columns and t["samples"].notna().any():
        bs = float(t["samples"].median())
    return Measured(str(path), ranks, int(t["step"].nunique()), step, bwd, data, cv, slowest,
                    slow_rank, tail, bs, tuple(notes))  # fmt: skip
