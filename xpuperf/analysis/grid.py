"""Rank × step views of a rectangular step table: the fast path of the analyses.

A validated step table (:func:`xpuperf.steps.validate`: sorted by rank, then step) in which
every rank has the same steps is a dense ``(ranks, steps)`` grid already: each column reshapes to
a matrix without copying (row r = rank ``ranks[r]``, column j = step ``steps[j]``). Real logs of
a run that ended normally are like that, and so are the benchmark's 10^7–10^8-row tables. The
analyses then take per-step and per-rank medians straight from those views instead of a pandas
groupby or a scatter into NaN-filled matrices; the results are the same numbers (the same
medians of the same values; sums may differ in the last bits, see docs/performance.md).

Tables with ragged ranks (a rank missing steps, a truncated log) take the general path; the
test ``tests/analysis/test_grid.py`` compares both paths on a synthetic run.

Medians over a matrix axis are taken in blocks (:data:`BLOCK` values at a time) so that the
copy :func:`numpy.partition` makes stays small whatever the table size. Independent blocks run on
:func:`threads` worker threads (numpy releases the GIL in partition, sort and reductions): with
``k > 1`` threads each block holds ``BLOCK / 4k`` values (:func:`block_values`), so the memory in
flight is a quarter of one thread's. Each block's reduction is exact and independent of the
others and of the block size (per row, or per column, over the same values in the same order),
so the numbers are the same with one thread or several (``tests/analysis/test_speed_paths.py``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import pandas as pd

BLOCK = 1 << 22
"""Values per block when a reduction copies its input (4 Mi values = 32 MiB of float64); with
several threads the blocks are smaller (:func:`block_values`)."""
_threads = 1
T = TypeVar("T")


def threads(n: int | None = None) -> int:
    """Set (``n``) or plan (None) the worker threads of the blocked reductions; returns the count.

    None applies the rule of the text reader (:func:`xpuperf.readers.formats.ranges.free_cpus`):
    the CPUs this process may use minus those other processes keep busy right now, at least 1.
    :func:`xpuperf.analysis.analyze` plans once per run; the count stays until set again.
    """
    global _threads
    if n is None:
        from xpuperf.readers.formats.ranges import cpus, free_cpus

        n = min(cpus(), free_cpus())
    _threads = max(1, int(n))
    return _threads


def run_blocks(fn: Callable[[int], T], starts: Sequence[int]) -> list[T]:
    """``[fn(s) for s in starts]``, on up to :func:`threads` threads, results in order. Each call
    runs in a copy of the caller's context, so ``np.errstate`` applies in the threads too."""
    if _threads <= 1 or len(starts) <= 1:
        return [fn(s) for s in starts]
    calls = [(contextvars.copy_context(), s) for s in starts]
    with ThreadPoolExecutor(min(_threads, len(starts))) as pool:
        return list(pool.map(lambda c: c[0].run(fn, c[1]), calls))


def block_values() -> int:
    """Values one block may hold: :data:`BLOCK`, or with ``k > 1`` threads ``BLOCK / 4k`` — about
    4 blocks per thread for a matrix of BLOCK values, so that a thread slowed down by another
    process leaves the others blocks to take (the threads take them as they finish)."""
    return BLOCK if _threads <= 1 else max(1, BLOCK // (4 * _threads))


class Derived:
    """An (R, S) matrix computed from other matrices when indexed (``m[rows]``, ``m[:, a:b]``,
    ``m[i:j]``, …; ``np.asarray(m)`` computes all of it): what the blocked reductions below
    need, without keeping a full-size copy."""

    ndim = 2

    def __init__(self, calc: Callable[[object], np.ndarray], shape: tuple[int, int]) -> None:
        self.calc, self.shape = calc, shape

    def __getitem__(self, key: object) -> np.ndarray:
        return self.calc(key)

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        out = self.calc((slice(None), slice(None)))
        return out if dtype is None else out.astype(dtype)


@dataclass
class Grid:
    """The table's columns as ``(R, S)`` matrices.

    Attributes:
        table: the validated step table (sorted by rank, step; fresh index).
        ranks: (R,) rank ids, increasing.
        all_steps: step numbers of the table, increasing, shared by every rank.
        start: first step column in use (``all_steps[start:]`` are this grid's :attr:`steps`).
        memo: results computed once and shared (:meth:`cached`).
    """

    table: pd.DataFrame
    ranks: np.ndarray
    all_steps: np.ndarray
    start: int = 0
    memo: dict = field(default_factory=dict, repr=False)

    def cached(self, key: str, fn: Callable[[], object]) -> object:
        """``fn()``, computed once per grid (medians shared by several analyses)."""
        if key not in self.memo:
            self.memo[key] = fn()
        return self.memo[key]

    @property
    def steps(self) -> np.ndarray:
        """(S,) the steps of this grid, int64."""
        return self.all_steps[self.start :]

    @property
    def shape(self) -> tuple[int, int]:
        """(ranks, steps)."""
        return len(self.ranks), len(self.all_steps) - self.start

    def has(self, col: str) -> bool:
        """The table has column ``col``."""
        return col in self.table.columns

    def known(self, col: str) -> bool:
        """The column exists and holds at least one non-NaN value within this grid's steps."""
        if not self.has(col):
            return False
        return bool(by_rows(self.mat(col), lambda x: (~np.isnan(x)).any(axis=1)).any())

    def zero_filled(self, col: str) -> np.ndarray:
        """(R, S) values of ``col`` with NaN as 0.0 (a view when there is no NaN)."""

        def fill() -> np.ndarray:
            v = self.mat(col)
            nan = by_rows(v, lambda x: np.isnan(x).any(axis=1)).any()
            return np.where(np.isnan(v), 0.0, v) if nan else v

        return self.cached("zero:" + col, fill)  # type: ignore[return-value]

    def other(self) -> Derived:
        """(R, S) ``other_s`` as :func:`xpuperf.steps.phase_frame` defines it: step time minus
        compute + comm + data (unknown as 0), clipped at 0.

        Not stored: a :class:`Derived` matrix, computed block by block when indexed (8 bytes
        per row saved at the analyses' peak)."""
        have = [c for c in ("compute_s", "comm_s", "data_s") if self.has(c)]
        parts = [self.zero_filled(c) for c in have]
        step_t = self.mat("step_time_s")

        def calc(key: object) -> np.ndarray:
            blk = [a[key] for a in parts]
            total = blk[0] + blk[1] if len(blk) > 1 else blk[0].copy()
            for extra in blk[2:]:
                total += extra
            np.subtract(step_t[key], total, out=total)
            return np.maximum(total, 0.0, out=total)

        return Derived(calc, step_t.shape)

    def step_median(self) -> np.ndarray:
        """(S,) median step time over ranks per step."""
        return self.cached("step_median", lambda: median_cols(self.mat("step_time_s")))  # type: ignore[return-value]

    def rank_median(self, col: str) -> np.ndarray:
        """(R,) median over steps per rank of ``col`` zero-filled (``other_s``: :meth:`other`)."""
        src = self.other if col == "other_s" else (lambda: self.zero_filled(col))
        return self.cached("rank_median:" + col, lambda: median_rows(src()))  # type: ignore[return-value]

    def mat(self, col: str) -> np.ndarray:
        """(R, S) float64 view of a numeric column (a copy only if the column is not float64)."""
        v = self.table[col].to_numpy(dtype=np.float64, na_value=np.nan)
        return v.reshape(len(self.ranks), len(self.all_steps))[:, self.start :]

    def first_rows(self) -> np.ndarray:
        """(R,) table row of each rank's first step."""
        return np.arange(len(self.ranks)) * len(self.all_steps)

    def after(self, first_step: int) -> Grid:
        """The grid restricted to steps ``>= first_step`` (no copy)."""
        k = max(int(np.searchsorted(self.all_steps, first_step, side="left")), self.start)
        out = Grid(self.table, self.ranks, self.all_steps, k)
        if "step_median" in self.memo:
            out.memo["step_median"] = self.memo["step_median"][k - self.start :]
        return out


def grid_of(table: pd.DataFrame) -> Grid | None:
    """A :class:`Grid` when every rank of a (rank, step)-sorted table has the same steps.

    Returns None when the table is empty, not sorted by (rank, step), or ragged. O(rows), one
    pass over rank and step.
    """
    n = len(table)
    if n == 0 or "rank" not in table.columns or "step" not in table.columns:
        return None
    r = table["rank"].to_numpy()
    s = table["step"].to_numpy()
    cuts = np.flatnonzero(r[1:] != r[:-1]) + 1
    nr = len(cuts) + 1
    if n % nr:
        return None
    ns = n // nr
    if not np.array_equal(cuts, np.arange(1, nr, dtype=cuts.dtype) * ns):
        return None
    steps = s[:ns]
    if ns > 1 and not np.all(steps[1:] > steps[:-1]):
        return None
    ranks = r[::ns]
    if nr > 1 and not np.all(ranks[1:] > ranks[:-1]):
        return None
    mat = s.reshape(nr, ns)
    for i in range(0, nr, max(1, BLOCK // ns)):
        if not (mat[i : i + max(1, BLOCK // ns)] == steps).all():
            return None
    return Grid(table, np.asarray(ranks).copy(), np.asarray(steps, dtype=np.int64).copy())


def by_columns(
    a: np.ndarray | Derived, fn: Callable[[np.ndarray], np.ndarray], rows: np.ndarray | None = None
) -> np.ndarray:
    """``fn(a[rows][:, block])`` over blocks of columns, concatenated along the last axis.

    For per-column reductions (``fn`` maps (n, k) to (..., k)), e.g. a median over ranks per step:
    the same numbers as ``fn(a[rows])`` with at most :data:`BLOCK` values copied at a time (over
    all threads; blocks run on :func:`threads` threads).
    """
    n, m = a.shape
    nr = n if rows is None else len(rows)
    width = max(1, block_values() // max(nr, 1))
    if m <= width and rows is None:
        return fn(np.asarray(a))
    if m == 0:  # no columns
        return fn(np.asarray(a) if rows is None else a[rows])

    def one(j: int) -> np.ndarray:
        blk = a[:, j : j + width]
        return fn(blk if rows is None else blk[rows])

    return np.concatenate(run_blocks(one, range(0, m, width)), axis=-1)


def by_rows(a: np.ndarray | Derived, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``fn(a[block])`` over blocks of rows, concatenated: for per-row reductions (median over
    steps per rank) with at most :data:`BLOCK` values copied at a time (over all threads)."""
    n, m = a.shape
    height = max(1, block_values() // max(m, 1))
    if n <= height:
        return fn(np.asarray(a))
    return np.concatenate(run_blocks(lambda i: fn(a[i : i + height]), range(0, n, height)))


def median_cols(a: np.ndarray | Derived, rows: np.ndarray | None = None) -> np.ndarray:
    """(S,) median over ranks per step (``np.median(a[rows], axis=0)``), in blocks."""
    return by_columns(a, lambda x: np.median(x, axis=0), rows)


def median_rows(a: np.ndarray | Derived) -> np.ndarray:
    """(R,) median over steps per rank (``np.median(a, axis=1)``), in blocks."""
    return by_rows(a, lambda x: np.median(x, axis=1))
