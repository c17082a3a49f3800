"""The engine interface: a dataset in, the step table and its per-step aggregation out.

An engine reads an xpuperf dataset (:mod:`xpuperf.engine.dataset`) and returns a
:class:`Reduced`: the canonical step table (for the per-rank analyses: the straggler test needs
each rank's whole series against per-step leave-one-out medians, so it stays row-level) and the
per-step job series (median step time over ranks, ranks reporting, Σ samples, FPS — the
aggregation every job-level analysis starts from). Both engines must give equal results; the
tests compare their JSON documents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pandas as pd


@dataclass
class Reduced:
    """What an engine returns.

    Attributes:
        table: canonical step table (:mod:`xpuperf.steps`), validated, sorted by (rank, step).
        job: per-step series, exactly the columns and dtypes of
            :func:`xpuperf.analysis.series.job_steps`: ``step`` int64, ``step_time_s`` (median
            over ranks, s), ``ranks`` int64, ``samples`` (Σ over ranks), ``fps`` (samples/s).
        sources: the log files the dataset was ingested from.
        warnings: the reader warnings recorded at ingest.
        job_level_cards, sampled_rows, notes, cards_unknown, warmup_rows: how the rows are to
            be read and the reader's notes, as recorded at ingest
            (:class:`xpuperf.readers.ReadResult`).
    """

    table: pd.DataFrame
    job: pd.DataFrame
    sources: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    job_level_cards: int | None = None
    sampled_rows: bool = False
    notes: list[str] = field(default_factory=list)
    cards_unknown: str | None = None
    warmup_rows: int = 0


class Engine(Protocol):
    """``name`` and ``reduce(dataset) -> Reduced``; raises InputError / UsageError only."""

    name: str

    def reduce(self, dataset: str) -> Reduced: ...


def job_frame(median: pd.Series, ranks: pd.Series, samples: pd.Series | None) -> pd.DataFrame:
    """Assemble per-step aggregates (indexed by step, any order) into the job-series layout."""
    out = pd.DataFrame({"step_time_s": median.astype("float64")}).sort_index()
    out["ranks"] = ranks.reindex(out.index).astype("int64")
    if samples is None:
        out["samples"] = np.nan
    else:
        out["samples"] = samples.reindex(out.index).astype("float64")
    out["fps"] = out["samples"] / out["step_time_s"]
    out.index.name = "step"
    out = out.reset_index()
    out["step"] = out["step"].astype("int64")
    return out
