"""Expected maximum over N ranks of a measured per-rank time distribution, with a tail fit
(formulas.md §6: "empirical distribution, with an extreme value tail fit such as a generalized
Pareto on the upper tail for quantiles beyond the data").

Model (peaks over threshold; Pickands 1975, Balkema & de Haan 1974; Coles 2001, "An Introduction
to Statistical Modeling of Extreme Values", ch. 4): the m sorted samples x_(1) ≤ … ≤ x_(m) give
the distribution up to the threshold u = x_(k) (k = m − ⌈p·m⌉, p = :data:`TAIL_FRACTION`);
above u, F(x) = 1 − p_u·(1 − G(x − u)) with G a generalized Pareto distribution (shape ξ, scale
σ) fitted by maximum likelihood (``scipy.stats.genpareto.fit``, location 0) to the exceedances
x − u (ξ fixed at 0 below :data:`MIN_FREE_SHAPE` exceedances), and p_u = (m − k)/m. Then
E[max of n] = ∫ Q(v) d(vⁿ), evaluated as the exact empirical sum
Σ_{j ≤ k} x_(j)·((j/m)ⁿ − ((j−1)/m)ⁿ) below u plus a numerical integral over the GPD quantile
Q_G(s) = u + σ/ξ·(s^−ξ − 1) (u − σ·ln s for ξ = 0), s = upper-tail probability / p_u, on a
geometric grid in s. It needs ξ < 1 (finite mean). Checks (tests/costmodel/test_scale_tail.py):
exponential samples reproduce H_n·θ, normal samples :func:`~xpuperf.costmodel.scale
.expected_max_normal`, within the tolerances stated there.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from xpuperf.costmodel.checks import CostModelError, positive_int

TAIL_FRACTION = 0.10
"""Share of the samples above the threshold (the exceedances the GPD is fitted to)."""
MIN_EXCEEDANCES = 10
"""Fewer exceedances than this: no tail fit (the empirical maximum saturates; said in ``str``)."""
MIN_FREE_SHAPE = 50
"""Below this many exceedances the shape is not fitted but fixed at ξ = 0 (an exponential tail,
the Gumbel domain of the normal and log-normal; σ = the mean excess, its MLE): a free shape from
a few dozen points is too noisy (Coles 2001, §4.3)."""
MAX_SHAPE = 0.95
"""Largest GPD shape ξ accepted: at ξ ≥ 1 the expected maximum is infinite."""
_GRID = 4001


class TailDist:
    """A per-rank time distribution: empirical body and (when enough samples) a GPD upper tail.

    Args:
        samples: 1-D, finite (any unit; the expected maximum is in the same unit).
        tail_fraction: share of samples above the threshold.
        fit: False: no tail fit (the empirical distribution alone).

    Raises :class:`CostModelError` for empty or non-finite samples and for a tail too heavy for a
    finite expected maximum (ξ ≥ :data:`MAX_SHAPE`). Hashed by identity; ``str()`` names the fit.
    """

    def __init__(self, samples: np.ndarray | list[float], tail_fraction: float = TAIL_FRACTION,
                 fit: bool = True) -> None:  # fmt: skip
        x = np.sort(np.asarray(samples, dtype=float).ravel())
        if x.size == 0 or not np.all(np.isfinite(x)):
            raise CostModelError("give at least one finite per-rank time sample")
        if not 0 < tail_fraction < 1:
            raise CostModelError(f"tail fraction must be within (0, 1), got {tail_fraction}")
        self.x = x
        self.m = x.size
        n_exc = math.ceil(tail_fraction * self.m)
        self.k = self.m - n_exc
        self.xi = self.sigma = None
        self.u = float(x[self.k - 1]) if self.k >= 1 else float(x[0])
        exc = x[self.k :] - self.u
        if fit and n_exc >= MIN_EXCEEDANCES and self.k >= 1 and np.ptp(exc) > 0:
            if n_exc >= MIN_FREE_SHAPE:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    from scipy import stats  # on use: keeps scipy out of start-up

                    xi, _, sigma = stats.genpareto.fit(exc, floc=0.0)
            else:
                xi, sigma = 0.0, float(exc.mean())
            if xi >= MAX_SHAPE:
                raise CostModelError(
                    f"the upper tail of the per-rank times is too heavy (GPD shape {xi:.2f} >= "
                    f"{MAX_SHAPE}: no finite expected maximum); exclude outlier steps "
                    "(checkpoints, evaluation) or the warm-up"
                )
            self.xi, self.sigma = float(xi), float(sigma)
        self._cache: dict[int, float] = {}

    @property
    def fitted(self) -> bool:
        """True when the upper tail is a fitted GPD (else the empirical maximum saturates)."""
        return self.xi is not None

    def __str__(self) -> str:
        if not self.fitted:
            return f"empirical, {self.m} samples (no tail fit)"
        return (f"{self.m} samples, GPD tail above {self.u:.4g}: shape {self.xi:.3f}, "
                f"scale {self.sigma:.4g}")  # fmt: skip

    __repr__ = __str__

    def _gpd_q(self, s: np.ndarray) -> np.ndarray:
        xi, sig = self.xi, self.sigma
        if abs(xi) < 1e-9:
            return self.u - sig * np.log(s)
        return self.u + sig / xi * (s ** (-xi) - 1.0)

    def expected_max(self, n: int) -> float:
        """E[max of n i.i.d. draws] from this distribution (module docstring).
        Source: formulas.md §6; GPD tail as Pickands (1975), Coles (2001) ch. 4.
        """
        n = positive_int("n", n)
        if n in self._cache:
            return self._cache[n]
        x, m = self.x, self.m
        if not self.fitted:
            k = np.arange(1, m + 1) / m
            val = float(np.dot(x, k**n - (k - 1 / m) ** n))
        else:
            j = np.arange(1, self.k + 1) / m
            body = float(np.dot(x[: self.k], j**n - (j - 1 / m) ** n))
            p = (m - self.k) / m
            # upper tail: v = 1 − p·s, weight d[(1 − p s)^n] = n p (1 − p s)^(n−1) ds
            lo = min(1e-6, 1e-6 / (n * p))
            s = np.geomspace(lo * 1e-6, 1.0, _GRID)
            w = n * p * np.exp((n - 1) * np.log1p(-p * s))
            tail = float(np.trapezoid(self._gpd_q(s) * w * s, np.log(s)))
            val = body + tail
        self._cache[n] = val
        return val

    def excess(self, n: int) -> float:
        """E[max of n] − E[max of 1] (the mean): the random-straggler wait, 0 at n = 1.
        Source: formulas.md §6.
        """
        return self.expected_max(n) - self.expected_max(1)
