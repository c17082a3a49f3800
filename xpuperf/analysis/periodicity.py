"""Periodic spikes: period and phase of spikes that recur every so many steps (jitter XP204).

Split out of :mod:`xpuperf.analysis.jitter` to keep modules small. Method (docs/analyze.md):
candidate periods (≥ 4 steps) from the FFT autocorrelation of the spike indicator, confirmed on
positions: ≥ 3 spikes and at least half of all spikes on the grid ``phase + k · period`` (±1 step;
exact when only 3), ≥ 60 % of grid slots hit, and a binomial chance of so many spikes on a grid
< 1e-3.
"""

from __future__ import annotations

import numpy as np

MIN_PERIOD = 4
"""Shortest spike period considered, steps (the ±1 tolerance needs room)."""
PERIOD_TOL = 1
"""Tolerance of a periodic spike's position, steps."""
GRID_SHARE = 0.5
"""Share of spikes that must sit on the grid ("most spikes")."""
SLOT_SHARE = 0.6
"""Share of grid slots (phase + k·period within the run) that must hold a spike."""
PERIOD_ALPHA = 1e-3
"""Chance (binomial, × period for the choice of phase) of that many spikes on a grid."""


def periodicity(
    spikes: np.ndarray, first: int, last: int
) -> tuple[int | None, int | None, list[int]]:
    """Period and phase of recurring spikes: (period, phase step, on-grid spike steps).

    Candidates are the highest autocorrelation peaks of the spike indicator (dilated by ±1
    step so jittered spikes still line up); each is confirmed on the spike positions.

    Args:
        spikes: (k,) int step numbers of the spike steps, sorted ascending, within
            ``[first, last]``.
        first, last: first and last step number of the series (inclusive).

    Returns:
        ``(period in steps, phase step, on-grid spike steps)``, or ``(None, None, [])`` when no
        period is confirmed (also for fewer than 3 spikes). Raises nothing.
    """
    if len(spikes) < 3:
        return None, None, []
    span = last - first + 1
    ind = np.zeros(span)
    ind[spikes - first] = 1.0
    ind = np.minimum(np.convolve(ind, np.ones(2 * PERIOD_TOL + 1), mode="same"), 1.0)
    z = ind - ind.mean()
    from scipy import fft  # on use: keeps scipy out of start-up

    n_fft = fft.next_fast_len(2 * span)  # zero-padded: linear, not circular, correlation
    acf = fft.irfft(np.abs(fft.rfft(z, n_fft)) ** 2, n_fft)[:span]
    max_lag = (span - 1) // 2
    if max_lag < MIN_PERIOD:
        return None, None, []
    lags = np.arange(MIN_PERIOD, max_lag + 1)
    vals = acf[lags]
    peaks = [
        int(lags[i])
        for i in np.argsort(-vals, kind="stable")[:8]
        if vals[i] > 0 and vals[i] >= acf[lags[i] - 1] and vals[i] >= acf[lags[i] + 1]
    ]
    best: tuple[tuple[int, float, int, int], int, list[int]] | None = None  # key, phase, grid
    # A peak may sit at a multiple of the period (jitter blurs the first one): try c/2, c/3 too.
    periods = {round(c / d) + e for c in peaks for d in (1, 2, 3) for e in (-1, 0, 1)}
    for period in sorted(p for p in periods if MIN_PERIOD <= p <= max_lag):
        fit = _grid_fit(spikes, period, last)
        if fit is None:
            continue
        # Most spikes on the grid, then the most grid slots hit (spikes at 100, 200, 300 are
        # every 100, not every 50 with 150 and 250 missed), the tightest fit, the shortest period.
        key = (-len(fit[1]), -fit[3], fit[2], period)
        if best is None or key < best[0]:
            best = (key, fit[0], fit[1])
    if best is None:
        return None, None, []
    return best[0][3], best[1], best[2]


def _grid_fit(
    spikes: np.ndarray, period: int, last: int
) -> tuple[int, list[int], int, float] | None:
    """Best grid ``r + k·period`` (±tol) through the spikes, if it confirms the period.

    Returns ``(phase step, on-grid spike steps, Σ |offset from the grid| in steps, share of grid
    slots hit)`` or None.
    The phase is the first on-grid spike. Three on-grid spikes must sit exactly on the grid
    (three points a step or two off an even spacing are too easy to hit by chance).
    """
    tol = PERIOD_TOL
    hist = np.bincount(spikes % period, minlength=period)
    near = sum(np.roll(hist, -d) for d in range(-tol, tol + 1))  # near[r]: spikes within tol of r
    best: tuple[int, int, np.ndarray] | None = None  # (-count, Σ offset, on-grid mask)
    for r in np.flatnonzero(near == near.max()):
        off = (spikes - r) % period
        dist = np.minimum(off, period - off)
        on = dist <= tol
        cand = (-int(on.sum()), int(dist[on].sum()), on)
        if best is None or cand[:2] < best[:2]:
            best = cand
    assert best is not None
    grid, offset = spikes[best[2]], best[1]
    if len(grid) < 3 or len(grid) < GRID_SHARE * len(spikes) or (len(grid) == 3 and offset):
        return None
    # Chance that random spikes put this many on some grid of this period.
    q = min(1.0, (2 * tol + 1 if offset else 1) / period)
    from scipy import stats  # on use: keeps scipy out of start-up

    if stats.binom.sf(len(grid) - 1, len(spikes), q) * period >= PERIOD_ALPHA:
        return None
    phase = int(grid[0])
    slots = np.arange(phase, last + tol + 1, period)
    hit = np.abs(grid[None, :] - slots[:, None]).min(axis=1) <= 2 * tol
    if hit.mean() < SLOT_SHARE:
        return None
    return phase, [int(s) for s in grid], offset, float(hit.mean())
