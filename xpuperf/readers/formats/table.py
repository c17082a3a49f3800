"""Collecting parsed rows of a text log into a :class:`TextTable` (a RawTable with notes).

Format parsers add one row per step with canonical column names whose units are part of the name
(``step_time_s``, ``data_s``, ``t_end_s`` …; see :mod:`xpuperf.readers.columns`), so the shared
column matching and row checks of :mod:`xpuperf.readers.build` apply unchanged. Values are
converted to seconds by the parser.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from xpuperf.errors import InputError
from xpuperf.readers.base import Drop, RawTable, Source
from xpuperf.readers.formats.console import UNDECODABLE
from xpuperf.readers.lines import locate_from

NAN = float("nan")


@dataclass
class TextTable(RawTable):
    """A :class:`RawTable` from a framework text log, plus notes for the user.

    Attributes:
        notes: one line each, facts about how the log was read that change the meaning of the
            numbers (job-level rows, deduplicated lines, missing batch size …); ``read_logs``
            adds them to its warnings.
    """

    notes: list[str] = field(default_factory=list)


class Rows:
    """Column-wise row collector: ``add(line, step=…, step_time_s=…)``; missing cells are NaN."""

    def __init__(self) -> None:
        self.cols: dict[str, list[object]] = {}
        self.lines: list[int] = []
        self.drops: dict[str, Drop] = {}
        self.notes: list[str] = []

    def __len__(self) -> int:
        return len(self.lines)

    def add(self, line: int, **values: object) -> None:
        """Append one row found at physical ``line`` (columns are padded lazily)."""
        n = len(self.lines)
        cols = self.cols
        for k, v in values.items():
            col = cols.get(k)
            if col is None:
                col = cols[k] = [NAN] * n
            elif len(col) < n:
                col.extend([NAN] * (n - len(col)))
            col.append(v)
        self.lines.append(line)

    def set_last(self, **values: object) -> bool:
        """Set cells of the last row (False when there is none)."""
        n = len(self.lines)
        if not n:
            return False
        for k, v in values.items():
            col = self.cols.get(k)
            if col is None:
                col = self.cols[k] = [NAN] * n
            elif len(col) < n:
                col.extend([NAN] * (n - len(col)))
            col[n - 1] = v
        return True

    def column(self, name: str) -> list[object]:
        """The full column ``name`` (padded to the row count; NaN where unset)."""
        col = self.cols.setdefault(name, [])
        col.extend([NAN] * (len(self.lines) - len(col)))
        return col

    def drop(self, reason: str, line: int) -> None:
        """Count a skipped line (reported once per reason, at its first line)."""
        d = self.drops.get(reason)
        if d is None:
            self.drops[reason] = Drop(reason, 1, line)
        else:
            d.count += 1

    def undecodable(self, bad: Sequence[int]) -> None:
        """Record lines :func:`~xpuperf.readers.formats.console.iter_lines` could not decode."""
        for n in bad:
            self.drop(UNDECODABLE, n)

    def table(self, src: Source, what: str, example: str) -> TextTable:
        """The collected rows as a :class:`TextTable`.

        Raises:
            InputError: no row at all; names ``what`` the format's step line is and shows
                ``example``.
        """
        if not self.lines:
            first = min(self.drops.values(), key=lambda d: d.first or 0, default=None)
            why = (
                f"; the first line that looked like one ({first.reason}) is line {first.first}"
                if first
                else ""
            )
            raise InputError(
                f"no {what} could be read{why}; expected lines like: {example}",
                src.name,
                first.first if first else None,
            )
        cols = {k: self.column(k) for k in list(self.cols)}
        frame = pd.DataFrame(
            {k: np.asarray(v, dtype=object if _is_text(v) else np.float64) for k, v in cols.items()}
        )
        return TextTable(
            frame,
            locate=locate_from(np.asarray(self.lines, dtype=np.int64)),
            unit="line",
            drops=list(self.drops.values()),
            notes=list(self.notes),
        )


def _is_text(values: list[object]) -> bool:
    return any(isinstance(v, str) for v in values)


def num(text: str) -> float:
    """``"10,050"`` / ``"1.2E+01"`` → float (thousands separators removed)."""
    return float(text.replace(",", ""))


def near_int(x: float, tol: float = 0.02) -> float:
    """``x`` rounded when within ``tol`` (relative) of an integer, else ``x``."""
    r = round(x)
    return float(r) if r and abs(x - r) <= tol * abs(r) else x


def job_level_note(samples: str) -> str:
    """Note for logs whose step lines describe the whole job (printed by one rank)."""
    return (
        "each step line describes the whole job (printed by one rank), so it is read as one rank; "
        f"{samples}; per-card throughput = job throughput / number of data-parallel ranks, "
        "which this log does not state"
    )


def link_ranks(groups: list[list[tuple[float, ...]]]) -> list[list[int]]:
    """Give interleaved per-rank lines without rank ids a stable rank across logged steps.

    ``groups[g][i]`` is a key of line ``i`` of logged step ``g`` that each rank carries over from
    step to step and that changes slowly (a running average such as maskrcnn-benchmark's
    ``time: cur (avg)`` or tf_cnn_benchmarks' ``images/sec: mean +/- …``). Lines of the first
    step are ranks 0…n−1 in order; each later step is matched to the previous one by minimum total
    relative distance of the keys (Hungarian assignment). Returns the rank of every line.
    """
    from scipy.optimize import linear_sum_assignment

    out: list[list[int]] = []
    prev: list[tuple[float, ...]] = []
    prev_rank: list[int] = []
    width = max((len(g) for g in groups), default=0)
    for g in groups:
        if not prev:
            ranks = list(range(len(g)))
        else:
            a = np.asarray(prev, dtype=np.float64)
            b = np.asarray(g, dtype=np.float64)
            scale = np.maximum(np.abs(a), 1e-9)
            cost = np.abs(b[:, None, :] - a[None, :, :]) / scale[None, :, :]
            cost = np.nan_to_num(cost.sum(axis=2), nan=1e9)
            rows, cols = linear_sum_assignment(cost)
            ranks = [-1] * len(g)
            for r, c in zip(rows, cols, strict=True):
                ranks[r] = prev_rank[c]
            free = iter(sorted(set(range(width)) - set(ranks)))
            ranks = [r if r >= 0 else next(free) for r in ranks]
        out.append(ranks)
        if len(g) >= len(prev):
            prev, prev_rank = list(g), ranks
        else:  # a cut group: keep the previous keys of the missing ranks
            keep = dict(zip(prev_rank, prev, strict=True))
            keep.update(zip(ranks, g, strict=True))
            prev_rank = sorted(keep)
            prev = [keep[r] for r in prev_rank]
    return out


def finite(x: float) -> bool:
    """True for a finite float."""
    return not (math.isnan(x) or math.isinf(x))
