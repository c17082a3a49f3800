"""Allreduce time models (seconds) — every row of formulas.md §1.

Two layers:

1. **Formulas** with one α (s), β (s/byte), γ (s/byte): :func:`ring`, :func:`recursive_doubling`,
   :func:`halving_doubling` (Rabenseifner, with MPICH's non-power-of-two folding),
   :func:`double_binary_tree`, :func:`ring2d_rs_ar_ag`, :func:`ring2d_ar_ar_bcast`,
   :func:`torus2d`, :func:`halving_doubling_loaded` (per-step link load: fat-tree / HDRM).
   Sources: Thakur, Rabenseifner & Gropp 2005 ("Optimization of Collective Communication
   Operations in MPICH"), NCCL's tuning model, Mikami et al. 2018, EFLOPS (HPCA 2020).
2. **On a cluster**: :func:`allreduce_s` evaluates an algorithm on N ranks of nodes described by
   :class:`~xpuperf.costmodel.levels.LinkLevels` — each step gets the α/β of the level it crosses
   (intra-node, or the network share of the flows leaving a node), for node-major rank placement.

S is the message size in bytes (the whole gradient buffer each rank contributes), N the number of
ranks, G cards per node, M = N/G nodes. Links are full duplex. All functions raise
:class:`~xpuperf.costmodel.checks.CostModelError` for N < 1, S < 0 or G not dividing N.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from xpuperf.costmodel import contention
from xpuperf.costmodel.checks import CostModelError, is_pow2, nonneg, positive_int, split_nodes
from xpuperf.costmodel.levels import LinkLevels
from xpuperf.costmodel.ringorder import (
    NodeMap,
    cross_node_edges,
    max_edges_leaving_node,
    n_inter_steps,
)

ALGORITHMS: tuple[str, ...] = (
    "ring",
    "recursive-doubling",
    "hd",
    "tree",
    "2d-ring",
    "2d-ring-bcast",
    "hd-fattree",
    "hdrm",
)
"""Algorithm names accepted by :func:`allreduce_s` (``2d-ring`` = RS/AR/AG form)."""


def _log2_ceil(n: int) -> int:
    return (n - 1).bit_length()


def _check(size_B: float, n: int) -> tuple[float, int]:
    return nonneg("message size (bytes)", size_B), positive_int("n_ranks", n)


# ----------------------------------------------------------------------------- formulas (§1)


def ring(size_B: float, n: int, alpha_s: float, beta_s_per_B: float, gamma: float = 0.0) -> float:
    """Ring allreduce (reduce-scatter + all-gather): 2(N−1)α + 2(N−1)/N·Sβ + (N−1)/N·Sγ, s.

    Bandwidth-optimal, any N. Source: Thakur, Rabenseifner & Gropp 2005; formulas.md §1.
    S bytes, α s, β and γ s/byte. Raises :class:`CostModelError` for S < 0 or N < 1.
    """
    s, n = _check(size_B, n)
    return 2 * (n - 1) * alpha_s + 2 * (n - 1) / n * s * beta_s_per_B + (n - 1) / n * s * gamma


def recursive_doubling(
    size_B: float, n: int, alpha_s: float, beta_s_per_B: float, gamma: float = 0.0
) -> float:
    """Recursive doubling: ⌈log2 N⌉(α + Sβ + Sγ), s. Good for tiny S.

    Source: Thakur, Rabenseifner & Gropp 2005; formulas.md §1.
    S bytes, α s, β and γ s/byte. Raises :class:`CostModelError` for S < 0 or N < 1.
    """
    s, n = _check(size_B, n)
    return _log2_ceil(n) * (alpha_s + s * beta_s_per_B + s * gamma)


def halving_doubling(
    size_B: float, n: int, alpha_s: float, beta_s_per_B: float, gamma: float = 0.0
) -> float:
    """Recursive halving-doubling (Rabenseifner), seconds.

    N = 2^k: 2·log2N·α + 2(N−1)/N·Sβ + (N−1)/N·Sγ. Otherwise MPICH folds the r = N − p' extra
    ranks (p' = 2^⌊log2 N⌋): they send S to a partner first (α + Sβ + Sγ) and get the result last
    (α + Sβ), and the core runs on p' ranks: (2⌊log2N⌋+2)α + (2(p'−1)/p' + 2)Sβ +
    (1 + (p'−1)/p')Sγ. (formulas.md §1 writes (N−1)/N in this row; the core moves (p'−1)/p'.)
    Source: Thakur, Rabenseifner & Gropp 2005 §4.5 and MPICH ``allreduce_intra_reduce_scatter_
    allgather``.
    S bytes, α s, β and γ s/byte. Raises :class:`CostModelError` for S < 0 or N < 1.
    """
    s, n = _check(size_B, n)
    p = 1 << (n.bit_length() - 1)
    core = 2 * math.log2(p) * alpha_s + 2 * (p - 1) / p * s * beta_s_per_B
    core += (p - 1) / p * s * gamma
    if p == n:
        return core
    return core + 2 * alpha_s + 2 * s * beta_s_per_B + s * gamma


def double_binary_tree(size_B: float, n: int, alpha_s: float, beta_s_per_B: float) -> float:
    """Pipelined (double binary) tree: 2·⌈log2 N⌉·α + 2Sβ, seconds.

    Pipelined in chunks, so the bandwidth term does not grow with depth; NCCL models the tree's
    algorithm bandwidth as bus bandwidth × 0.5, i.e. time 2S/busBw. Source: formulas.md §1–2,
    NCCL ``src/graph/tuning.cc``.
    S bytes, α s, β s/byte; 0 for one rank. Raises :class:`CostModelError` for S < 0 or N < 1.
    """
    s, n = _check(size_B, n)
    if n == 1:
        return 0.0
    return 2 * _log2_ceil(n) * alpha_s + 2 * s * beta_s_per_B


def ring2d_rs_ar_ag(
    size_B: float,
    cards_per_node: int,
    n_nodes: int,
    alpha_i: float,
    beta_i: float,
    alpha_e: float,
    beta_e: float,
) -> float:
    """2D ring, RS/AR/AG form, seconds: intra reduce-scatter → G parallel inter ring allreduces
    of S/G (one per local rank) → intra all-gather.

    2(G−1)α_i + 2(G−1)/G·Sβ_i + 2(M−1)α_e + 2(M−1)/M·(S/G)·β_e, with β_e the inter-node
    bandwidth one local rank gets (NIC bandwidth / cards sharing it). Source: formulas.md §1.
    S bytes, α_* s, β_* s/byte. Raises :class:`CostModelError` for S < 0, G < 1 or M < 1.
    """
    s = nonneg("message size (bytes)", size_B)
    g = positive_int("cards_per_node", cards_per_node)
    m = positive_int("n_nodes", n_nodes)
    intra = 2 * (g - 1) * alpha_i + 2 * (g - 1) / g * s * beta_i
    return intra + 2 * (m - 1) * alpha_e + 2 * (m - 1) / m * (s / g) * beta_e


def ring2d_ar_ar_bcast(
    size_B: float,
    cards_per_node: int,
    n_nodes: int,
    alpha_i: float,
    beta_i: float,
    alpha_e: float,
    beta_e: float,
) -> float:
    """2D ring, AR/AR/Bcast form, seconds: intra ring allreduce → leader-only inter ring
    allreduce of S → pipelined intra broadcast.

    [2(G−1)α_i + 2(G−1)/G·Sβ_i] + [2(M−1)α_e + 2(M−1)/M·Sβ_e] + [(G−1)α_i + Sβ_i]. One NIC port
    per node carries all traffic (β_e = the leader's NIC). Source: formulas.md §1.
    S bytes, α_* s, β_* s/byte. Raises :class:`CostModelError` for S < 0, G < 1 or M < 1.
    """
    s = nonneg("message size (bytes)", size_B)
    g = positive_int("cards_per_node", cards_per_node)
    m = positive_int("n_nodes", n_nodes)
    intra_ar = 2 * (g - 1) * alpha_i + 2 * (g - 1) / g * s * beta_i
    inter_ar = 2 * (m - 1) * alpha_e + 2 * (m - 1) / m * s * beta_e
    bcast = (g - 1) * alpha_i + s * beta_i if g > 1 else 0.0
    return intra_ar + inter_ar + bcast


def torus2d(size_B: float, x: int, y: int, alpha_s: float, beta_s_per_B: float) -> float:
    """2D torus X×Y allreduce: 2(X+Y−2)α + 2(XY−1)/(XY)·Sβ, seconds.

    Same bytes as a flat ring of XY ranks, X+Y−2 instead of XY−1 steps per phase (reduce-scatter
    along X, allreduce of S/X along Y, all-gather along X). Source: Mikami et al. 2018
    ("Massively Distributed SGD: ImageNet/ResNet-50 Training in a Flash"); formulas.md §1.
    S bytes, α s, β s/byte. Raises :class:`CostModelError` for S < 0, X < 1 or Y < 1.
    """
    s = nonneg("message size (bytes)", size_B)
    x, y = positive_int("x", x), positive_int("y", y)
    return 2 * (x + y - 2) * alpha_s + 2 * (x * y - 1) / (x * y) * s * beta_s_per_B


def halving_doubling_loaded(
    size_B: float,
    n: int,
    alpha_s: Sequence[float] | float,
    beta_s_per_B: Sequence[float] | float,
    loads: Sequence[float] | None = None,
    gamma: float = 0.0,
) -> float:
    """Halving-doubling (N = 2^k) with per-step α, β and link load, seconds.

    Step j (distance 2^j, j = 0..k−1) moves S/2^(j+1) in the reduce-scatter and again in the
    all-gather: Σ_j 2·(α_j + S/2^(j+1)·β_j·load_j) + (N−1)/N·Sγ. Load 1 everywhere gives the
    Rabenseifner row; HDRM (EFLOPS rank mapping on BiGraph) is that row by construction; on a
    fat-tree with ECMP hashing load_j ≥ 1 (:mod:`xpuperf.costmodel.contention`).
    Source: formulas.md §1; Thakur et al. 2005; Dong et al., EFLOPS, HPCA 2020.

    Args: S bytes; α s and β s/byte, each a scalar or k = log2 N per-step values; loads
    (flows on the step's most loaded link, ≥ 1) k values, default all 1; γ s/byte.

    Raises:
        CostModelError: S < 0, N < 1 or not a power of two, a per-step list of the wrong
            length, or a load < 1.
    """
    s, n = _check(size_B, n)
    if not is_pow2(n):
        raise CostModelError(f"halving-doubling with per-step loads needs N = 2^k, got {n}")
    k = n.bit_length() - 1
    alphas = [alpha_s] * k if isinstance(alpha_s, (int, float)) else list(alpha_s)
    betas = [beta_s_per_B] * k if isinstance(beta_s_per_B, (int, float)) else list(beta_s_per_B)
    lds = [1.0] * k if loads is None else [float(x) for x in loads]
    if not len(alphas) == len(betas) == len(lds) == k:
        raise CostModelError(f"{n} ranks take {k} steps; give {k} alphas, betas and loads")
    if any(x < 1 for x in lds):
        raise CostModelError("a link load is at least 1 (one flow on its own link)")
    steps = zip(alphas, betas, lds, strict=True)
    t = sum(2 * (a + s / 2 ** (j + 1) * b * ld) for j, (a, b, ld) in enumerate(steps))
    return t + (n - 1) / n * s * gamma


# ----------------------------------------------------------------------- on a cluster (levels)


def _crosses(n: int, g: int, d: int) -> bool:
    """True when some pair (r, r XOR d) of node-major ranks sits on two different nodes."""
    r = np.arange(n)
    return bool(np.any(r // g != (r ^ d) // g))


def _hd_levels(n: int, g: int, lv: LinkLevels) -> tuple[list[float], list[float]]:
    """Per-step α and β of halving-doubling on node-major ranks: intra when no pair crosses."""
    k = n.bit_length() - 1
    alphas, betas = [], []
    for j in range(k):
        crosses = _crosses(n, g, 1 << j)
        alphas.append(lv.alpha_inter_s if crosses else lv.alpha_intra_s)
        betas.append(lv.beta_card_s_per_B if crosses else lv.beta_intra_s_per_B)
    return alphas, betas


def fattree_loads(n: int, g: int, ranks_per_leaf: int | None = None) -> list[float]:
    """Expected load of the most loaded uplink in each halving-doubling step (ECMP hashing).

    Steps inside a node, or (with ``ranks_per_leaf``) inside one leaf switch: 1. Steps across
    leaves: each leaf hashes its ``ranks_per_leaf`` flows onto as many uplinks (oversubscription
    is already in β), maximum over the N/ranks_per_leaf leaves. Without ``ranks_per_leaf``: the
    N/2 flows of a step hashed on N/2 links (formulas.md §1).

    Returns log2 N loads (flows per link, ≥ 1), step j = distance 2^j. Raises
    :class:`CostModelError` for N < 1 or not 2^k, or ``ranks_per_leaf`` < 1. Source: formulas.md
    §1 (fat-tree row); the expected maximum is :func:`.contention.expected_max_load` (balls into
    bins, Raab & Steger 1998).
    """
    n = positive_int("n_ranks", n)
    if not is_pow2(n):
        raise CostModelError(f"halving-doubling loads need N = 2^k, got {n}")
    loads = []
    for j in range(n.bit_length() - 1):
        d = 1 << j
        if not _crosses(n, g, d):
            loads.append(1.0)
        elif ranks_per_leaf is None:
            loads.append(max(1.0, contention.expected_max_load(n // 2, n // 2)))
        elif d < ranks_per_leaf and ranks_per_leaf % (2 * d) == 0:
            loads.append(1.0)
        else:
            rpl = positive_int("ranks_per_leaf", ranks_per_leaf)
            groups = max(1, n // rpl)
            loads.append(max(1.0, contention.expected_max_load(rpl, rpl, groups)))
    return loads


def ring_on(
    size_B: float,
    n: int,
    lv: LinkLevels,
    order: Sequence[int] | None = None,
    node_of: NodeMap = None,
) -> float:
    """Flat ring on a cluster, seconds, for the ring ``order`` in effect (default node-major).

    base + (2(N−1) − nInter)·α_i + nInter·α_e + 2(N−1)/N·S/B + (N−1)/N·Sγ, where nInter is
    counted from the order (:func:`~xpuperf.costmodel.ringorder.n_inter_steps`) and B is the
    slowest ring edge: intra-node edges get the intra bandwidth, an edge leaving a node gets the
    node's NIC bandwidth divided by the number of ring edges leaving that node (node-contiguous:
    all NICs, one channel per NIC as NCCL builds rings; interleaved: one card's share).
    Source: formulas.md §1 (ring row, "Ring order") and §2 (NCCL latency model).
    S bytes; ``lv`` bandwidths GB/s, latencies µs; result seconds (0 for one rank).
    Raises :class:`CostModelError` for S < 0, N < 1, G not dividing N (node-major), or an
    ``order`` / ``node_of`` that is not a permutation of the ranks (:func:`.ringorder.node_ids`).
    """
    s, n = _check(size_B, n)
    g = lv.cards_per_node
    if n == 1:
        return 0.0
    if order is None and node_of is None:  # node-major: the counts in closed form (fast)
        m = split_nodes(n, g)
        inter, leaving, crossing = 2 * (m - 1), int(m > 1), m if m > 1 else 0
    else:
        order = list(range(n)) if order is None else list(order)
        inter = n_inter_steps(order, node_of, g)
        leaving = max_edges_leaving_node(order, node_of, g)
        crossing = cross_node_edges(order, node_of, g)
    bws = [lv.node_net_bw_GBps / leaving] if leaving else []
    if crossing < n:
        bws.append(lv.intra_bw_GBps)
    bw = min(bws)
    lat = (2 * (n - 1) - inter) * lv.alpha_intra_s + inter * lv.alpha_inter_s
    return lv.base_s + lat + 2 * (n - 1) / n * s / (bw * 1e9) + (n - 1) / n * s * lv.gamma_s_per_B


def allreduce_s(
    algorithm: str,
    size_B: float,
    n: int,
    lv: LinkLevels,
    *,
    order: Sequence[int] | None = None,
    node_of: NodeMap = None,
    ranks_per_leaf: int | None = None,
    loads: Sequence[float] | None = None,
) -> float:
    """Allreduce time of ``algorithm`` (one of :data:`ALGORITHMS`) on N ranks, seconds.

    Node-major placement, G = ``lv.cards_per_node``, M = N/G. Per algorithm:

    - ``ring``: :func:`ring_on` (``order``/``node_of`` give the ring order in effect).
    - ``recursive-doubling``: per step α + Sβ of the level the step crosses (+ Sγ).
    - ``hd``: Rabenseifner, per-step level (distance 2^j < G stays inside a node); N not 2^k:
      folding (:func:`halving_doubling` extra terms, on the intra level).
    - ``hd-fattree``: ``hd`` with :func:`fattree_loads` (or explicit ``loads``) on each step.
    - ``hdrm``: ``hd`` with load 1 on every step (EFLOPS rank mapping).
    - ``tree``: NCCL's two-level tree: 2((G−1)α_i + ⌈log2 M⌉α_e) + 2S/B, B = min(intra, node NIC
      bandwidth).
    - ``2d-ring`` / ``2d-ring-bcast``: :func:`ring2d_rs_ar_ag` with β_e = card share /
      :func:`ring2d_ar_ar_bcast` with β_e = the leader's whole NIC; base latency paid per phase.

    Every result includes ``lv.base_s`` once per collective call. S bytes; result seconds.
    Raises :class:`CostModelError` for an unknown algorithm, S < 0, N < 1 or G not dividing N
    (and as :func:`ring_on` / :func:`fattree_loads` / :func:`halving_doubling_loaded`).
    Sources: formulas.md §1 (each row as named above) and §2 (NCCL base latency; tree latency
    base + 2((G−1)·intraLat + log2 M·interLat), NCCL ``src/graph/tuning.cc``).
    """
    algo = algorithm.lower()
    s, n = _check(size_B, n)
    if algo not in ALGORITHMS:
        raise CostModelError(f"unknown algorithm {algorithm!r}; use one of {', '.join(ALGORITHMS)}")
    if algo == "ring":
        return ring_on(s, n, lv, order, node_of)
    g = lv.cards_per_node
    m = split_nodes(n, g)
    if n == 1:
        return 0.0
    if algo == "tree":
        bw = lv.intra_bw_GBps if m == 1 else min(lv.intra_bw_GBps, lv.node_net_bw_GBps)
        lat = 2 * ((g - 1) * lv.alpha_intra_s + _log2_ceil(m) * lv.alpha_inter_s)
        return lv.base_s + lat + 2 * s / (bw * 1e9)
    if algo in ("2d-ring", "2d-ring-bcast"):
        two_d = ring2d_rs_ar_ag if algo == "2d-ring" else ring2d_ar_ar_bcast
        beta_e = lv.beta_card_s_per_B if algo == "2d-ring" else lv.beta_leader_s_per_B
        phases = (g > 1) + (m > 1) + (g > 1)
        t = two_d(s, g, m, lv.alpha_intra_s, lv.beta_intra_s_per_B, lv.alpha_inter_s, beta_e)
        return phases * lv.base_s + t
    p = 1 << (n.bit_length() - 1)
    gamma = lv.gamma_s_per_B
    if algo == "recursive-doubling":
        alphas, betas = _hd_levels(p, min(g, p), lv)
        t = sum(a + s * b + s * gamma for a, b in zip(alphas, betas, strict=True))
        if p < n:  # the folded ranks' extra exchange (⌈log2 N⌉ steps in all)
            t += lv.alpha_intra_s + s * lv.beta_intra_s_per_B + s * gamma
        return lv.base_s + t
    alphas, betas = _hd_levels(p, min(g, p), lv)
    if algo == "hd-fattree":
        step_loads = (
            list(loads) if loads is not None else fattree_loads(p, min(g, p), ranks_per_leaf)
        )
    else:
        step_loads = [1.0] * len(alphas)
    t = halving_doubling_loaded(s, p, alphas, betas, step_loads, gamma)
    if p < n:  # MPICH folding: extra ranks send S first and get the result last (intra level)
        t += 2 * lv.alpha_intra_s + 2 * s * lv.beta_intra_s_per_B + s * gamma
    return lv.base_s + t
