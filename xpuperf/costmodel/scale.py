"""Scale effects: what a synchronous step waits for beyond the mean compute (formulas.md §6).

- Random stragglers: per-rank compute time X i.i.d.; every step waits for the maximum over N
  ranks, E[max] = ∫ x d(F(x)^N). :func:`expected_max_normal` evaluates it for a normal F
  (coefficient of variation ``cv`` of the per-rank step compute);
  :func:`expected_max_empirical` for measured samples (empirical CDF: beyond the data it
  saturates at the sample maximum, an underestimate for N far above the sample count);
  :class:`~xpuperf.costmodel.tail.TailDist` adds a generalized Pareto tail beyond the data, and
  :func:`random_straggler_s` uses it when given.
- Deterministic stragglers: the step is at least the slowest card's compute — a constant factor
  :func:`deterministic_straggler_s`.
- The default spread :data:`JITTER_CV` (published variability of same-model GPUs); with
  gradient accumulation the ranks meet once per K micro-steps and the wait per micro-step
  shrinks as 1/√K (:func:`random_straggler_s`).

Times in seconds.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from xpuperf.costmodel.checks import CostModelError, nonneg, positive_int
from xpuperf.costmodel.tail import TailDist

_GRID = np.linspace(-12.0, 12.0, 24001)
JITTER_CV = 0.012
"""Default coefficient of variation of per-rank compute per step: the random-straggler /
synchronisation tax of the default plan (``--jitter-cv`` overrides it, ``--from-log`` measures
it). Source: Sinha et al., "Not All GPUs Are Created Equal: Characterizing Variability in
Large-Scale, Accelerator-Rich Systems", SC'22 (arXiv:2208.11035): GPUs of one model and SKU in
four production clusters (Summit, Vortex, Longhorn, Frontera, Corona) differ by 8 % on average
in performance on the same kernel. Read as the range of the per-card distribution over a
cluster of ~1000 cards, 8 % / E[range of 1000 normal draws] = 8 % / 6.48 σ ⇒ σ ≈ 1.2 % per card.
A DP job draws N cards from that population, so each step waits for the slowest of N:
E[max of N] − mean = 1.2 % × 1.42 at 8, 2.8 at 256, 3.24 at 1024 cards (formulas.md §6). It
is a floor: it leaves out per-step jitter (OS noise, data loading, GC), which adds to it. The
SC'22 proceedings abstract of the same study (four clusters) states 32 % (max 72 %); read the
same way that is σ ≈ 4.9 %. We keep the figure of the arXiv v3 text (five clusters, later
than the proceedings' four); docs/plan.md §15 shows what each would give."""


@lru_cache(maxsize=1024)
def expected_max_std_normal(n: int) -> float:
    """E[max of n i.i.d. standard normals] = ∫ x · n φ(x) Φ(x)^(n−1) dx (trapezoid on a fine
    grid; 0 for n = 1, 0.5642 for n = 2, 3.2414 for n = 1000). Source: formulas.md §6 (order
    statistics)."""
    n = positive_int("n", n)
    if n == 1:
        return 0.0
    from scipy import stats  # on use: keeps scipy out of start-up

    log_cdf = stats.norm.logcdf(_GRID)
    dens = n * np.exp(stats.norm.logpdf(_GRID) + (n - 1) * log_cdf)
    return float(np.trapezoid(_GRID * dens, _GRID))


def expected_max_normal(mean_s: float, cv: float, n: int) -> float:
    """E[max over n ranks] of per-rank compute ~ Normal(mean, (cv·mean)²), seconds
    (formulas.md §6)."""
    m = nonneg("mean compute time", mean_s)
    return m + nonneg("cv", cv) * m * expected_max_std_normal(n)


def random_straggler_s(mean_s: float, cv: float, n: int, tail: TailDist | None = None,
                       accumulation: int = 1) -> float:  # fmt: skip
    """Expected wait for the slowest of n ranks beyond the mean: E[max] − mean, seconds per
    micro-step.

    ``tail``: the measured distribution of per-rank compute RELATIVE to its mean (≈ 1); then the
    wait is mean_s × (E[max of n] − E[X]) from the tail fit, and ``cv`` is not used. Otherwise
    per-rank compute is Normal(mean, (cv·mean)²).
    ``accumulation`` K: the ranks synchronise once per K micro-steps, so each waits for the
    slowest SUM of K independent micro-steps: its spread is √K × one micro-step's, and the wait
    per micro-step is the one-step wait / √K (central limit: exact for the normal model, an
    approximation for a measured tail).
    Source: formulas.md §6 (expected maximum of n i.i.d. draws).
    """
    k = positive_int("accumulation", accumulation)
    if tail is not None:
        wait = nonneg("mean compute time", mean_s) * max(0.0, tail.excess(positive_int("n", n)))
    else:
        wait = expected_max_normal(mean_s, cv, n) - nonneg("mean compute time", mean_s)
    return wait / k**0.5


def expected_max_empirical(samples_s: np.ndarray | list[float], n: int) -> float:
    """E[max of n draws] from the empirical distribution of ``samples_s``: Σ x_(k) ·
    ((k/m)^n − ((k−1)/m)^n) over the sorted samples (formulas.md §6, without the tail fit)."""
    x = np.sort(np.asarray(samples_s, dtype=float))
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise CostModelError("give at least one finite per-rank time sample")
    n = positive_int("n", n)
    k = np.arange(1, x.size + 1) / x.size
    w = k**n - (k - 1 / x.size) ** n
    return float(np.dot(x, w))


def deterministic_straggler_s(mean_s: float, slowest_factor: float) -> float:
    """A card always ``slowest_factor`` × slower (≥ 1): the step waits (factor − 1) × mean.
    Source: formulas.md §6 ("step ≥ slowest card's compute").
    """
    f = nonneg("slowest factor", slowest_factor)
    if f < 1:
        raise CostModelError(f"the slowest card's factor must be >= 1, got {slowest_factor}")
    return (f - 1) * nonneg("mean compute time", mean_s)
