"""Collecting parsed rows of a text log into a :class:`TextTable` (a RawTable with notes).

Format parsers add one row per step with canonical column names whose units are part of the name
(``step_time_s``, ``data_s``, ``t_end_s`` …; see :mod:`xpuperf.readers.columns`), so the shared
column matching and row checks of :mod:`xpuperf.readers.build` apply unchanged. Values are
converted to seconds by the parser.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
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
        world_size: number of cards (ranks) of the job when the log states it (Megatron
            ``using world size: 32``, Primus ``[rank-31/32]``, tf_cnn_benchmarks global / per
            device batch), else None; ``read_logs`` spreads a job-level log over that many ranks
            when ``--world-size`` is not given (:mod:`xpuperf.readers.world`).
        world_source: where in the log ``world_size`` was read (for the note), e.g.
            ``"'using world size' line"``.
        sampled: each row is ONE iteration shown every k (nanoGPT, timm), not the mean of the
            k iterations since the last row (Megatron, Keras): the wall clock then counts a
            row once (:func:`xpuperf.analysis.series.wallclock`).
        one_of_many: at least this many ranks printed the same step lines, of which one
            rank's were kept (torchtitan without rank tags), so the rows are ONE card's view
            of a larger job; 0 when the log does not show it. Without a world size the job's
            figures are then unknown (``ReadResult.cards_unknown`` = ``"card"``).
        warmup_rows: leading rows the format itself marks as start-up (the first MLPerf
            block: graph compilation and the first pass over the data); the analysis
            excludes them when ``--warmup`` is not given and its own detection finds fewer.
        log_rate: the job's throughput as the log itself prints it (samples/s: DeepSpeed
            ``SamplesPerSec``, NVIDIA BERT ``training_sequences_per_second``) and a line saying
            what it is and how it checks against the rows; None when the log prints none.
        batch_hint: what the log itself shows when it prints a rate but no batch size (said in
            the error asking for ``--batch-size``), "" when nothing.
        clock_resolution: (fraction, what) when each row's step time is only known to within
            ±fraction by the log's clock (tqdm's 1 s clock over ≥ 20 s windows: 0.05), so
            row-to-row jitter below it is rounding; None when the rows are exact enough.
    """

    notes: list[str] = field(default_factory=list)
    world_size: int | None = None
    world_source: str = ""
    sampled: bool = False
    one_of_many: int = 0
    warmup_rows: int = 0
    log_rate: tuple[float, str] | None = None
    batch_hint: str = ""
    clock_resolution: tuple[float, str] | None = None


class Rows:
    """Column-wise row collector: ``add(line, step=…, step_time_s=…)``; missing cells are NaN.

    Numbers are kept in typed buffers (``array('d')``: 8 bytes per cell, no Python object per
    value) and line numbers in ``array('q')``, so memory grows by the compact size of the kept
    cells only; a column that receives text becomes a list. :meth:`extend` appends many rows at
    once (the block fast paths). A line number below zero is a placeholder resolved on demand by
    ``locate`` (see :meth:`table`).
    """

    def __init__(self) -> None:
        self.cols: dict[str, array | list[object]] = {}
        self.lines: array = array("q")
        self.drops: dict[str, Drop] = {}
        self.notes: list[str] = []

    def __len__(self) -> int:
        return len(self.lines)

    def _col(self, k: str, n: int, v: object) -> array | list[object]:
        col = self.cols.get(k)
        if col is None:
            col = self.cols[k] = array("d") if not isinstance(v, str) else []
            _pad(col, n)
        elif len(col) < n:
            _pad(col, n)
        if isinstance(v, str) and isinstance(col, array):
            col = self.cols[k] = list(col)
        return col

    def add(self, line: int, **values: object) -> None:
        """Append one row found at physical ``line`` (columns are padded lazily)."""
        n = len(self.lines)
        for k, v in values.items():
            self._col(k, n, v).append(v)  # type: ignore[arg-type]
        self.lines.append(line)

    def extend(self, line: int, count: int, **columns: object) -> None:
        """Append ``count`` rows at once; each value is a sequence of ``count`` floats (e.g. a
        numpy float64 array). Every row gets the line number ``line`` (a placeholder when < 0)."""
        if count <= 0:
            return
        n = len(self.lines)
        for k, v in columns.items():
            col = self._col(k, n, 0.0)
            if isinstance(col, array):
                col.frombytes(np.ascontiguousarray(v, dtype=np.float64).tobytes())
            else:
                col.extend(float(x) for x in v)  # type: ignore[union-attr]
        self.lines.extend(array("q", [line]) * count)

    def append_rows(self, other: Rows, lines: np.ndarray) -> None:
        """Append all rows of ``other`` with line numbers ``lines`` (its drops are not merged)."""
        n, m = len(self.lines), len(other.lines)
        for k in [*self.cols, *(c for c in other.cols if c not in self.cols)]:  # stable order
            theirs = other.column(k)
            mine = self._col(k, n, "" if isinstance(theirs, list) else 0.0)
            _pad(mine, n)
            mine.extend(theirs)  # type: ignore[arg-type]
        self.lines.frombytes(np.ascontiguousarray(lines[:m], dtype=np.int64).tobytes())

    def set_last(self, **values: object) -> bool:
        """Set cells of the last row (False when there is none)."""
        n = len(self.lines)
        if not n:
            return False
        for k, v in values.items():
            col = self._col(k, n, v)
            if len(col) < n:
                col.append(v)  # type: ignore[arg-type]
            else:
                col[n - 1] = v  # type: ignore[index]
        return True

    def column(self, name: str) -> array | list[object]:
        """The full column ``name`` (padded to the row count; NaN where unset)."""
        col = self.cols.get(name)
        if col is None:
            col = self.cols[name] = array("d")
        _pad(col, len(self.lines))
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

    def table(
        self,
        src: Source,
        what: str,
        example: str,
        locate: Callable[[Sequence[int]], dict[int, int | None]] | None = None,
    ) -> TextTable:
        """The collected rows as a :class:`TextTable` (the columns share the buffers: no copy).

        ``locate`` replaces the default row → line lookup (needed when :meth:`extend` stored
        placeholder line numbers).

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
            {
                k: np.frombuffer(v, dtype=np.float64)
                if isinstance(v, array)
                else np.asarray(v, dtype=object if _is_text(v) else np.float64)
                for k, v in cols.items()
            }
        )
        self.cols = {}
        lines = np.frombuffer(self.lines, dtype=np.int64)
        return TextTable(
            frame,
            locate=locate if locate is not None else locate_from(lines),
            unit="line",
            drops=list(self.drops.values()),
            notes=list(self.notes),
        )


_NANS = array("d", [NAN]) * 4096


def _pad(col: array | list[object], n: int) -> None:
    """Pad ``col`` with NaN up to ``n`` cells."""
    while len(col) < n:
        k = min(n - len(col), len(_NANS))
        col.extend(_NANS[:k])


def _is_text(values: list[object]) -> bool:
    return any(isinstance(v, str) for v in values)


def num(text: str) -> float:
    """``"10,050"`` / ``"1.2E+01"`` → float (thousands separators removed)."""
    return float(text.replace(",", ""))


def near_int(x: float, tol: float = 0.02) -> float:
    """``x`` rounded when within ``tol`` (relative) of an integer, else ``x``."""
    if not math.isfinite(x):  # round() raises on inf/NaN (hostile values)
        return x
    r = round(x)
    return float(r) if r and abs(x - r) <= tol * abs(r) else x


def as_float(x: object) -> float:
    """``x`` as a float; NaN when it is not a number (``"."``, ``"1.2.3"``, a list, None) or an
    integer too large for a float, so the row is dropped later with a counted reason."""
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return math.nan


JOB_LEVEL = "each step line describes the whole job (printed by one rank)"
"""Start of :func:`job_level_note`: ``read_logs(world_size=N)`` looks for it."""


def job_level_note(samples: str) -> str:
    """Note for logs whose step lines describe the whole job (printed by one rank)."""
    return (
        f"{JOB_LEVEL}, so it is read as one rank; {samples}; per-card throughput = job "
        "throughput / number of cards (world size), which this log does not state: pass "
        "--world-size N"
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
    # lines of one log may carry keys of different lengths (a cut line, two runs appended):
    # pad with NaN so the keys form one array (a NaN distance costs like a mismatch)
    klen = max((len(k) for g in groups for k in g), default=0)
    groups = [[tuple(k) + (math.nan,) * (klen - len(k)) for k in g] for g in groups]
    for g in groups:
        if not prev:
            ranks = list(range(len(g)))
        else:
            a = np.asarray(prev, dtype=np.float64)
            b = np.asarray(g, dtype=np.float64)
            scale = np.maximum(np.abs(a), 1e-9)
            with np.errstate(invalid="ignore", over="ignore"):  # inf keys: NaN → mismatch
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
