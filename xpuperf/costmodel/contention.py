"""Flow collisions of halving-doubling on a fat-tree: the load factor of each step.

In step k of recursive halving-doubling every rank exchanges with the rank at distance 2^k, so up
to N/2 pairs (N flows, one per direction) run at once. On a fat-tree, flows that leave a leaf
switch are spread over its uplinks by ECMP hashing; two flows hashed onto one uplink share it and
each runs at half speed. The step lasts as long as the most loaded link, so its β term is
multiplied by that link's load (formulas.md §1, "halving-doubling on a fat-tree").

- :func:`expected_max_load` — expected load of the most loaded of ``n_links`` links when
  ``n_flows`` flows are hashed uniformly at random (balls into bins; grows like ln n / ln ln n),
  optionally the maximum over ``groups`` independent leaves. Exact for up to
  :data:`EXACT_LIMIT` flows per group, Poisson approximation beyond.
- :func:`hd_step_pairs` / :func:`max_link_load` / :func:`hd_step_loads` — exact loads for a
  given flow → link mapping (e.g. a rank mapping such as EFLOPS' HDRM, where every load is 1).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from functools import lru_cache

import numpy as np

from xpuperf.costmodel.checks import CostModelError, is_pow2, positive_int

EXACT_LIMIT = 1024
"""Flows per group up to which :func:`expected_max_load` is computed exactly."""


def _log_p_all_below(n: int, m: int, k: int) -> float:
    """log P(every one of m bins holds < k of n uniformly hashed balls), exactly.

    P = n! / m^n · [x^n] (Σ_{j<k} x^j / j!)^m, the polynomial raised by repeated squaring in
    scaled floating point (coefficients kept relative to their maximum, log scale tracked).
    """
    if k * m <= n:
        return -math.inf
    from scipy.special import gammaln  # on use: keeps scipy out of start-up

    base = np.exp(-gammaln(np.arange(k) + 1.0))
    result, result_log = np.array([1.0]), 0.0
    power, power_log = base, 0.0
    e = m
    while e:
        if e & 1:
            result = np.convolve(result, power)[: n + 1]
            result_log += power_log
            s = result.max()
            result, result_log = result / s, result_log + math.log(s)
        e >>= 1
        if e:
            power = np.convolve(power, power)[: n + 1]
            power_log *= 2
            s = power.max()
            power, power_log = power / s, power_log + math.log(s)
    if len(result) <= n or result[n] <= 0:
        return -math.inf
    return math.log(result[n]) + result_log + float(gammaln(n + 1.0)) - n * math.log(m)


@lru_cache(maxsize=4096)
def expected_max_load(n_flows: int, n_links: int, groups: int = 1) -> float:
    """Expected load (flows) of the most loaded link, flows hashed uniformly onto links.

    Args:
        n_flows: flows hashed in each group (≥ 0).
        n_links: links they are hashed onto in each group (≥ 1).
        groups: independent groups (e.g. leaf switches); the maximum is over all of them.

    Returns:
        E[max load] = Σ_{k≥1} (1 − P(max < k)); 0 without flows, ≥ 1 otherwise. Exact for
        ``n_flows`` ≤ :data:`EXACT_LIMIT`, else bins treated as independent Poisson(n/m).

    Raises:
        CostModelError: for negative flows or counts < 1.

    Source: balls into bins (Raab & Steger 1998: max load ~ ln n / ln ln n for n balls in n
    bins); formulas.md §1. Example: 2 flows on 2 links → 1.5.
    """
    if n_flows < 0:
        raise CostModelError(f"n_flows must be >= 0, got {n_flows}")
    m = positive_int("n_links", n_links)
    g = positive_int("groups", groups)
    n = int(n_flows)
    if n == 0:
        return 0.0
    total, k = 0.0, 1
    while k <= n:
        if n <= EXACT_LIMIT:
            log_p = _log_p_all_below(n, m, k)
        else:
            from scipy import stats  # on use: keeps scipy out of start-up

            log_p = m * float(stats.poisson.logcdf(k - 1, n / m))
        p_max_below = math.exp(g * log_p) if log_p > -math.inf else 0.0
        total += 1.0 - p_max_below
        if 1.0 - p_max_below < 1e-12:
            break
        k += 1
    return total


def hd_step_pairs(n_ranks: int, step: int) -> list[tuple[int, int]]:
    """The directed flows (src, dst) of halving-doubling step ``step``: partner = rank XOR 2^step.

    Distance doubling with vector halving (MPICH's reduce-scatter; the all-gather repeats the
    steps in reverse). Raises :class:`CostModelError` unless N is a power of two and
    0 ≤ step < log2 N.
    Source: Thakur, Rabenseifner & Gropp (2005), formulas.md §1.
    """
    n = positive_int("n_ranks", n_ranks)
    if not is_pow2(n) or not 0 <= step < n.bit_length() - 1:
        raise CostModelError(f"step {step} does not exist for {n} ranks (power of two needed)")
    return [(r, r ^ (1 << step)) for r in range(n)]


def max_link_load(flow_links: Iterable[Iterable[Hashable]]) -> int:
    """Load of the most loaded link: ``flow_links`` gives, for each flow, the links it uses.

    Exact count (0 for no flows). Links are any hashable ids, e.g. ``("up", leaf, port)``.
    Source: formulas.md §1 ("halving-doubling on a fat-tree").
    """
    counts: Counter = Counter()
    for links in flow_links:
        counts.update(set(links))
    return max(counts.values(), default=0)


def hd_step_loads(n_ranks: int, links_of: Callable[[int, int], Sequence[Hashable]]) -> list[int]:
    """Exact load of the most loaded link in each halving-doubling step, for a given mapping.

    ``links_of(src, dst)`` returns the links a flow uses (empty for a flow that stays inside a
    node or a switch). Steps whose flows use no shared link get load 1 (the flow's own link), so
    the result multiplies β directly. Raises as :func:`hd_step_pairs`.
    Source: formulas.md §1 (fat-tree and HDRM rows).
    """
    n = positive_int("n_ranks", n_ranks)
    steps = n.bit_length() - 1
    return [
        max(1, max_link_load(links_of(s, d) for s, d in hd_step_pairs(n, k))) for k in range(steps)
    ]
