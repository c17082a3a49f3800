"""Significance of a change between two runs' per-step series, in bounded memory.

Every test returns ``(p_value, ci)``: a two-sided p-value and the 95 % interval of the RELATIVE
change of the statistic (current / base − 1). Memory is O(steps) — never steps × resamples — so
200k-step runs compare in well under a second (benchmarks/compare.py, docs/performance.md).

- Medians: two-sided Mann–Whitney U (``scipy.stats.mannwhitneyu``, asymptotic for large runs);
  interval from the exact bootstrap distribution of each side's sample median (below).
- Quantiles (p99): the exact bootstrap distribution of a sample quantile is known in closed form
  — the r-th order statistic of a resample of n is ≤ x₍ⱼ₎ exactly when at least r of the n draws
  are ≤ x₍ⱼ₎, a Binomial(n, j/n) event (Efron 1979; Hall & Martin 1988) — so
  ``scipy.stats.binom`` gives its CDF over the sorted sample and :data:`DRAWS` draws of each side
  are taken by inverse CDF, without resampling the series. p-value: twice the smaller share of
  draws of the ratio on either side of 1, floored at 1 / :data:`DRAWS`.
- Means and ratios of sums (mean step time; wall-clock throughput = Σ samples / Σ step time):
  the large-sample (normal) limit of the bootstrap of a ratio estimator, by the delta method:
  var(log R) ≈ var(y − R·x) / (n · mean(y)²) for R = Σy / Σx; the test is on log R_current −
  log R_base (``scipy.stats.norm``). Steps are treated as independent.
"""

from __future__ import annotations

import math

import numpy as np

DRAWS = 20_000
"""Draws from each side's bootstrap distribution of a quantile (seeded: reproducible)."""
P_RESOLUTION = 1.0 / DRAWS
"""The smallest p-value a quantile test can give (printed as ``p<5e-05``)."""


def quantile_draws(x: np.ndarray, q: float, n: int = DRAWS, seed: int = 0) -> np.ndarray:
    """``n`` draws from the exact bootstrap distribution of the sample ``q``-quantile of ``x``.

    The quantile is the order statistic x₍ᵣ₎, r = ⌈q·len(x)⌉ (at least 1).
    P(x*₍ᵣ₎ ≤ x₍ⱼ₎) = P(Binomial(len(x), j / len(x)) ≥ r). Memory O(len(x) + n).

    Raises:
        ValueError: ``x`` is empty.
    """
    from scipy.stats import binom  # on use: keeps scipy out of start-up

    xs = np.sort(np.asarray(x, dtype=float))
    m = len(xs)
    if m == 0:
        raise ValueError("empty series")
    r = max(1, math.ceil(q * m - 1e-9))
    cdf = binom.sf(r - 1, m, np.arange(1, m + 1) / m)
    u = np.random.default_rng(seed).random(n)
    return xs[np.minimum(np.searchsorted(cdf, u, side="left"), m - 1)]


def quantile_test(base: np.ndarray, cur: np.ndarray, q: float) -> tuple[float, tuple[float, float]]:
    """p-value and 95 % interval of quantile(cur) / quantile(base) − 1 (module docstring)."""
    ratio = quantile_draws(cur, q, seed=1) / quantile_draws(base, q, seed=0) - 1.0
    lo, hi = np.percentile(ratio, [2.5, 97.5])
    p = 2.0 * min(float(np.mean(ratio <= 0)), float(np.mean(ratio >= 0)))
    return min(1.0, max(p, P_RESOLUTION)), (float(lo), float(hi))


def median_test(base: np.ndarray, cur: np.ndarray) -> tuple[float, tuple[float, float]]:
    """Mann–Whitney U two-sided p-value; 95 % interval of median(cur) / median(base) − 1."""
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(base, cur, alternative="two-sided").pvalue)
    return p, quantile_test(base, cur, 0.5)[1]


def _log_ratio(y: np.ndarray, x: np.ndarray | None) -> tuple[float, float]:
    """log R and var(log R) for R = Σy / Σx (x = 1 per step when None): delta method."""
    n = len(y)
    sx = float(n) if x is None else float(np.sum(x))
    r = float(np.sum(y)) / sx
    resid = y - r * (1.0 if x is None else x)
    var = float(np.var(resid, ddof=1)) / (n * float(np.mean(y)) ** 2) if n > 1 else math.inf
    return math.log(r), var


def ratio_test(
    base_y: np.ndarray,
    cur_y: np.ndarray,
    base_x: np.ndarray | None = None,
    cur_x: np.ndarray | None = None,
) -> tuple[float, tuple[float, float]]:
    """p-value and 95 % interval of R_cur / R_base − 1 for R = Σy / Σx (mean when x is None).

    Wall-clock throughput: y = samples per step, x = step time. Mean step time: y = step time.
    """
    from scipy.stats import norm

    lb, vb = _log_ratio(np.asarray(base_y, float), base_x)
    lc, vc = _log_ratio(np.asarray(cur_y, float), cur_x)
    d, se = lc - lb, math.sqrt(vb + vc)
    if se == 0 or not math.isfinite(se):
        p = 1.0 if d == 0 or not math.isfinite(se) else 0.0
        return p, (math.expm1(d), math.expm1(d))
    p = float(2.0 * norm.sf(abs(d) / se))
    z = float(norm.ppf(0.975))
    return p, (math.expm1(d - z * se), math.expm1(d + z * se))
