"""Leave-one-out medians of a rank × step matrix (the straggler test's paired ratio).

Per (rank, step) the median over the *other* ranks of that step, from one partial sort per step
(:func:`numpy.partition` at the middle order statistics) instead of one median per rank; the
median over all ranks per step comes out of the same sort.
"""

from __future__ import annotations

import numpy as np

from xpuperf.analysis.grid import block_values, run_blocks


def loo_median(w: np.ndarray) -> np.ndarray:
    """Per (rank, step): median over the *other* ranks of that step, shape of ``w`` (n ≥ 2)."""
    return loo_and_median(w)[0]


def loo_and_median(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(leave-one-out medians, shape of w; median over all n rows per column, (m,))``, n ≥ 2.

    Removing a value v from a sorted column shifts the middle order statistics by one when v lies
    at or below them; tied values leave the same multiset, so comparing values suffices. The
    column median comes from the same partial sort, computed as :func:`numpy.median` computes it
    (the mean of the middle one or two order statistics): the same numbers.
    """
    n = w.shape[0]
    j = (n - 1) // 2
    kth = [j, j + 1] if n % 2 == 0 else [j - 1, j, j + 1]
    srt = np.partition(np.ascontiguousarray(w.T), kth, axis=1).T  # only rows kth are sorted
    if n % 2 == 0:  # n − 1 others: their middle one
        loo = np.where(w <= srt[j], srt[j + 1], srt[j])
        return loo, np.mean(srt[j : j + 2], axis=0)
    a = np.where(w <= srt[j - 1], srt[j], srt[j - 1])  # n − 1 others, even: mean of middle two
    return 0.5 * (a + np.where(w <= srt[j], srt[j + 1], srt[j])), srt[j].copy()


def log_ratio(w: np.ndarray, rows: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[rows] = log(w[rows] / loo_median(w[rows]))``, in blocks of steps (the copies and
    temporaries stay small whatever the table size; blocks run on the grid's threads).

    ``w``: (n, m) work, seconds; ``rows``: ≥ 2 row indices; ``out``: (n, m), written in place.
    Returns the (m,) median of ``w[rows]`` per step, a by-product of the same partial sorts."""
    width = max(1, block_values() // (8 * max(len(rows), 1)))
    whole = len(rows) == len(w)
    med = np.empty(w.shape[1])

    def one(a: int) -> None:
        blk = w[:, a : a + width] if whole else w[rows, a : a + width]
        loo, med[a : a + width] = loo_and_median(blk)
        res = np.log(blk / loo)
        if whole:
            out[:, a : a + width] = res
        else:
            out[rows, a : a + width] = res

    run_blocks(one, range(0, w.shape[1], width))
    return med
