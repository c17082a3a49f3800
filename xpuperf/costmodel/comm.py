"""Allreduce time of one bucket on N cards, fast and protocol-aware, for :mod:`.estimate`.

:func:`~xpuperf.costmodel.collectives.allreduce_s` is affine in its latencies and in the message
size: t = c_base·base + c_i·α_i + c_e·α_e + S·slope, where the step counts c_* and the per-byte
slope depend only on the algorithm, N and the link bandwidths. :func:`curve` reads those
coefficients once (four evaluations) and then prices any number of buckets with numpy, for each
NCCL protocol (LL, LL128 on NVLink-class nodes, Simple) with NCCL's latencies and bandwidth
shares (formulas.md §2; :data:`~xpuperf.costmodel.nccl.PROTOCOL_BW_EFFICIENCY`), taking the
fastest protocol per bucket as NCCL does. The tree uses the tree row of NCCL's latency table and
its size correction; every other algorithm uses the ring row, as if run on NCCL's transport; the
multi-node ring/Simple plateau (× 1.4 from sm80, × 1.9 before) applies to the ring.

Algorithm names (:data:`USER_ALGORITHMS`): ``ring``, ``tree``, ``hd`` (Rabenseifner; on a network
with more than one switch level, with the expected flow collisions — ``hd-fattree``),
``hdrm`` (rank-mapped halving-doubling; only on a BiGraph network), ``2d-ring`` (RS/AR/AG),
``2d-ring-bcast`` (AR/AR/Bcast), ``recursive-doubling``; ``auto`` = the fastest by this model;
``nccl`` = what NCCL's own tuning model picks per bucket (ring or tree).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from xpuperf.costmodel import calibrated, nccl
from xpuperf.costmodel.calibrated import Calibration
from xpuperf.costmodel.checks import CostModelError
from xpuperf.costmodel.collectives import allreduce_s
from xpuperf.costmodel.levels import (
    NVLINK_LIKE,
    PROTOCOLS,
    LinkLevels,
    _intra,
    from_cluster,
    nccl_latencies_us,
)
from xpuperf.topology.model import Cluster, Node

ALGORITHMS: tuple[str, ...] = ("ring", "tree", "hd", "hdrm", "2d-ring", "2d-ring-bcast",
                               "recursive-doubling")  # fmt: skip
"""Concrete algorithms :func:`curve` prices (user-facing names)."""
USER_ALGORITHMS: tuple[str, ...] = ("auto", "nccl", *ALGORITHMS)
"""Values of ``--algorithm``."""

_N_CHANNELS = 8
_GIB = float(2**30)


def comp_cap(cluster: Cluster) -> int:
    """NCCL's compute-capability bucket of the cards (70, 80 or 90) from the card model name:
    H100/H200/H800/B100/B200 → 90, A100/A800/A30 → 80, V100/P100 → 70, unknown → 80.

    NCCL's tables have Volta (< sm80), Ampere (sm80) and Hopper (≥ sm90) rows
    (``src/graph/tuning.cc``); Blackwell is priced with the Hopper row. Raises nothing.
    """
    model = (cluster.nodes[0].devices[0].model or "").upper() if cluster.nodes else ""
    if any(k in model for k in ("H100", "H200", "H800", "B100", "B200", "GH200")):
        return 90
    if any(k in model for k in ("V100", "P100")):
        return 70
    return 80


def cluster_levels(
    cluster: Cluster, cards: int | None = None, calibration: Calibration | None = None
) -> LinkLevels:
    """Link levels of ``cluster``; with ``cards`` < cards per node, of the first ``cards`` cards
    of one node (a partial node: its own intra ring, no network).

    A topology without NICs is accepted for one node (network figures then unused: ∞). With a
    ``calibration`` the levels carry its bandwidths and latencies (:func:`.calibrated.apply`).
    Formulas: :func:`.levels.from_cluster` (formulas.md §1–2). Raises :class:`CostModelError`
    for a topology without nodes or cards, or with several nodes and no NICs.
    """
    lv = _topology_levels(cluster, cards)
    if calibration is None:
        return lv
    return calibrated.apply(calibration, cluster, lv, lambda n: _topology_levels(cluster, n))


def _topology_levels(cluster: Cluster, cards: int | None) -> LinkLevels:
    if not cluster.nodes or not cluster.nodes[0].devices:
        raise CostModelError("the topology has no nodes or no cards")
    node = cluster.nodes[0]
    g = len(node.devices)
    if cards is not None and cards < g:
        keep = {d.index for d in node.devices[:cards]}
        node = _sub_node(node, keep)
        cluster = Cluster((node,), cluster.network, name=cluster.name)
    try:
        return from_cluster(cluster)
    except CostModelError:
        if len(cluster.nodes) > 1 and (cards is None or cards > g):
            raise
        one = Cluster((replace(node, nics=()),), cluster.network, name=cluster.name)
        bw, lat, kind = _intra(one.nodes[0])
        return LinkLevels(len(node.devices), bw, lat, math.inf, math.inf, math.inf,
                          cluster.network.latency_us, intra_kind=kind,
                          source=f"topology {cluster.name or node.name} (no NICs)")  # fmt: skip


def _sub_node(node: Node, keep: set[int]) -> Node:
    devs = tuple(d for d in node.devices if d.index in keep)
    links = tuple(lk for lk in node.links if lk.a in keep and lk.b in keep)
    return replace(node, devices=devs, links=links)


def resolve(algorithm: str, cluster: Cluster) -> str:
    """Internal :data:`~xpuperf.costmodel.collectives.ALGORITHMS` name of a user algorithm.

    ``hd`` becomes ``hd-fattree`` when the network has more than one switch level (ECMP flow
    collisions, formulas.md §1). ``hdrm`` needs a BiGraph network (EFLOPS, HPCA 2020).
    Raises :class:`CostModelError` for unknown names or ``hdrm`` elsewhere.
    """
    algo = algorithm.lower()
    if algo not in ALGORITHMS:
        raise CostModelError(
            f"unknown algorithm {algorithm!r}; use one of {', '.join(USER_ALGORITHMS)}"
        )
    net = cluster.network
    if algo == "hdrm" and net.fabric != "bigraph":
        raise CostModelError(
            f"hdrm (rank-mapped halving-doubling) needs a BiGraph network; this topology's "
            f"network is {net.fabric} (use hd, or a topology with fabric: bigraph)"
        )
    if algo == "hd" and net.switch_levels > 1 and net.fabric != "single-switch":
        return "hd-fattree"
    return algo


def candidates(cluster: Cluster) -> tuple[str, ...]:
    """Algorithms ``auto`` chooses among on this cluster (``hdrm`` only on BiGraph)."""
    return tuple(a for a in ALGORITHMS if a != "hdrm" or cluster.network.fabric == "bigraph")


@dataclass(frozen=True)
class Curve:
    """Allreduce time of one algorithm on N cards as a function of the message size.

    ``latency_s[p]`` and ``s_per_B[p]`` per protocol p; :meth:`time_s` takes the fastest protocol
    per size, with the ring/Simple plateau and the tree size correction (formulas.md §2):
    t(S) = min_p [lat_p · (plateau if p is Simple and S/(8 channels · N) ≥ 64 B, else 1) +
    S · slope_p / treeCorrection_p(S)], seconds. Source: NCCL ``src/graph/tuning.cc``
    ``ncclTopoGetAlgoTime``.
    """

    algorithm: str
    n_ranks: int
    protocols: tuple[str, ...]
    latency_s: tuple[float, ...]
    s_per_B: tuple[float, ...]  # noqa: N815 (unit in the name)
    plateau: float = 1.0

    def time_s(self, sizes_B: np.ndarray | list[float]) -> np.ndarray:
        """Seconds for each size: (k,) bytes → (k,) float array; 0 for one rank. Raises nothing."""
        s = np.asarray(sizes_B, dtype=float)
        if self.n_ranks <= 1:
            return np.zeros_like(s)
        best = np.full_like(s, np.inf)
        log_size = np.floor(np.log2(np.maximum(s, 1.0) / 64.0)).astype(int)
        for p, lat, slope in zip(self.protocols, self.latency_s, self.s_per_B, strict=True):
            lat_v = np.full_like(s, lat)
            if p == "simple" and self.plateau != 1.0:
                big = s / (_N_CHANNELS * self.n_ranks) >= 64
                lat_v = np.where(big, lat * self.plateau, lat)
            bw_factor = np.ones_like(s)
            if self.algorithm == "tree":
                table = np.asarray(nccl._TREE_CORRECTION[p])
                ok = (log_size >= 0) & (log_size < len(table))
                bw_factor = np.where(ok, table[np.clip(log_size, 0, len(table) - 1)], 1.0)
            best = np.minimum(best, lat_v + s * slope / bw_factor)
        return best


def _coefficients(
    algo: str, n: int, lv: LinkLevels, ranks_per_leaf: int | None
) -> tuple[float, float, float, float]:
    """(c_base, c_intra, c_inter, slope_s_per_B) of ``allreduce_s`` on these bandwidths."""
    zero = replace(lv, intra_latency_us=0.0, net_latency_us=0.0, base_latency_us=0.0)

    def t(level: LinkLevels, size: float) -> float:
        return allreduce_s(algo, size, n, level, ranks_per_leaf=ranks_per_leaf)

    slope = t(zero, _GIB) / _GIB
    c_base = t(replace(zero, base_latency_us=1e6), 0.0)
    c_intra = t(replace(zero, intra_latency_us=1e6), 0.0)
    c_inter = t(replace(zero, net_latency_us=1e6), 0.0)
    return c_base, c_intra, c_inter, slope


def curve(
    algorithm: str,
    n_ranks: int,
    lv: LinkLevels,
    *,
    compute_capability: int = 80,
    ranks_per_leaf: int | None = None,
) -> Curve:
    """The :class:`Curve` of an internal algorithm name on ``n_ranks`` cards of levels ``lv``.

    Latencies: NCCL's base and per-hop latencies per protocol (formulas.md §2; tree row for the
    tree, ring row otherwise), plus the levels' calibrated per-step extras
    (``intra_latency_extra_us``, ``net_latency_extra_us``); bandwidths × NCCL's protocol share
    (:data:`~xpuperf.costmodel.nccl.PROTOCOL_BW_EFFICIENCY`; tree/LL128 on one node 0.92 × 7/9),
    for NCCL's ring and tree within NCCL's bus-bandwidth caps (:func:`~.nccl.bus_caps`: per-channel
    tree / LL128 maxima × 8 channels, the LL maximum). LL128 only on NVLink-class nodes (as
    NCCL). Source: NCCL ``src/graph/tuning.cc``.
    Raises :class:`CostModelError` for an algorithm outside
    :data:`~xpuperf.costmodel.collectives.ALGORITHMS` or G not dividing N.
    """
    g = lv.cards_per_node
    n_nodes = max(1, n_ranks // g)
    row = "tree" if algorithm == "tree" else "ring"
    nvl = lv.intra_kind in NVLINK_LIKE
    protocols = PROTOCOLS if nvl else ("ll", "simple")
    if n_ranks <= 1:
        return Curve(algorithm, n_ranks, protocols, (0.0,) * len(protocols),
                     (0.0,) * len(protocols))  # fmt: skip
    c_base, c_i, c_e, slope = _coefficients(algorithm, n_ranks, lv, ranks_per_leaf)
    caps = (
        nccl.bus_caps(lv, n_ranks, n_nodes, compute_capability)
        if algorithm in ("ring", "tree")
        else {}
    )
    lats, slopes = [], []
    for p in protocols:
        eff = nccl.PROTOCOL_BW_EFFICIENCY[row, p]
        if (row, p) == ("tree", "ll128") and n_nodes == 1:
            eff = 0.92 * 7 / 9
        eff = caps.get((row, p), eff)
        intra, inter, base = nccl_latencies_us(row, p, lv.intra_kind)
        intra += lv.intra_latency_extra_us  # calibrated (0 by default)
        inter += lv.net_latency_extra_us
        lats.append((c_base * base + c_i * intra + c_e * inter) * 1e-6)
        slopes.append(slope / eff)
    plateau = 1.0
    if algorithm == "ring" and n_nodes > 1:
        plateau = nccl.PLATEAU_A100_PLUS if compute_capability >= 80 else nccl.PLATEAU_PRE_A100
    return Curve(algorithm, n_ranks, protocols, tuple(lats), tuple(slopes), plateau)


def nccl_algorithms(
    sizes_B: np.ndarray | list[float], n_ranks: int, lv: LinkLevels, compute_capability: int = 80
) -> list[str]:
    """What NCCL's own tuning model (:func:`~xpuperf.costmodel.nccl.nccl_choice`) picks for each
    bucket size: ``"ring"`` or ``"tree"``, one per size (bytes). Raises :class:`CostModelError`
    for a negative size or N that does not split over its nodes (:func:`.nccl.nccl_table`).
    Source: NCCL ``src/graph/tuning.cc`` and ``src/enqueue.cc`` (see :mod:`.nccl`).
    """
    if n_ranks <= 1:
        return ["ring"] * len(sizes_B)
    m = max(1, n_ranks // lv.cards_per_node)
    bus = nccl.bus_bw_for(lv, m)
    if not math.isfinite(bus):
        bus = 1e6
    table = nccl.nccl_table(n_ranks, m, bus, lv.intra_kind,
                            comp_cap=compute_capability if compute_capability in (70, 80, 90)
                            else 80)  # fmt: skip
    return [nccl.nccl_choice(table, float(s))[0] for s in sizes_B]
