"""α/β per link level: from the topology model, or NCCL's own latency constants.

A :class:`LinkLevels` holds what every allreduce formula in :mod:`xpuperf.costmodel.collectives`
needs: the intra-node card-to-card bandwidth and per-step latency, and three inter-node bandwidths
for the three ways traffic leaves a node:

- ``card_net_bw_GBps`` — one card's share of its NIC when every card sends at once (NIC speed /
  cards sharing it, capped by PCIe; what each of the G parallel rings of a 2D ring gets, and what
  every flow of a halving-doubling step across nodes gets);
- ``node_net_bw_GBps`` — all of a node's NICs together: one ring edge leaving a node of a
  node-contiguous flat ring, which NCCL spreads over all NICs with one channel per NIC (DGX-A100:
  8 × 24 = 192 GB/s, formulas.md §2 measured 192 GB/s multi-node busbw);
- ``leader_net_bw_GBps`` — one card alone through its NIC (the leader of a 2D ring in the
  AR/AR/Bcast form: one NIC port per node carries all traffic).

Units: GB/s = 1e9 bytes/s, µs for latencies; the ``alpha_*_s`` / ``beta_*_s_per_B`` properties
give seconds and seconds per byte (Hockney model, formulas.md header).

NCCL constants (formulas.md §2 = NCCL ``src/graph/tuning.cc`` v2.30.x): base latency per algorithm
and protocol, per-hop hardware latency per link level.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

from xpuperf.costmodel.checks import CostModelError, nonneg, positive, positive_int
from xpuperf.topology.constants import NET_GBPS_UNKNOWN_NIC
from xpuperf.topology.model import Cluster, Node

PROTOCOLS: tuple[str, ...] = ("ll", "ll128", "simple")
"""NCCL protocols, lower case."""

NCCL_BASE_LATENCY_US: dict[str, dict[str, float]] = {
    "tree": {"ll": 6.8, "ll128": 14.0, "simple": 8.4},
    "ring": {"ll": 6.6, "ll128": 14.0, "simple": 8.4},
}
"""Base latency per collective call, µs (formulas.md §2, NCCL tuning.cc ``baseLat``)."""

NCCL_HW_LATENCY_US: dict[str, dict[str, dict[str, float]]] = {
    "nvlink": {
        "tree": {"ll": 0.6, "ll128": 1.25, "simple": 4.0},
        "ring": {"ll": 0.6, "ll128": 1.9, "simple": 3.4},
    },
    "pcie": {
        "tree": {"ll": 1.0, "ll128": 1.9, "simple": 4.0},
        "ring": {"ll": 1.0, "ll128": 2.5, "simple": 5.7},
    },
    "net": {
        "tree": {"ll": 5.0, "ll128": 8.5, "simple": 14.0},
        "ring": {"ll": 2.7, "ll128": 4.0, "simple": 14.0},
    },
}
"""Per-step hardware latency, µs, by link level, algorithm and protocol (formulas.md §2,
NCCL tuning.cc ``hwLat``)."""

NVLINK_LIKE = frozenset({"nvlink", "xgmi", "hccs"})
"""Intra-node link kinds NCCL's latency table treats as NVLink (the rest as PCIe)."""


@dataclass(frozen=True)
class LinkLevels:
    """Bandwidth and latency of the two link levels of a cluster of identical nodes.

    Attributes:
        cards_per_node: G.
        intra_bw_GBps: bottleneck card-to-card bandwidth of a ring through one node's cards in
            device order, GB/s (``math.inf`` for one card per node).
        intra_latency_us: per-step latency inside a node, µs.
        card_net_bw_GBps, node_net_bw_GBps, leader_net_bw_GBps: see the module docstring, GB/s.
        net_latency_us: per-step latency of a step that crosses nodes, µs.
        base_latency_us: latency paid once per collective call (NCCL's base latency), µs.
        gamma_s_per_B: reduction cost, s/byte (0: the reduction hides behind the copy, as in
            NCCL's model).
        intra_kind: ``"nvlink"`` or ``"pcie"`` — which NCCL latency row the node uses.
        source: where the figures came from (for reports).
        intra_latency_extra_us, net_latency_extra_us: µs added to NCCL's per-step intra /
            network latency of every protocol (0 by default; set from a measured latency floor
            by :mod:`xpuperf.costmodel.calibrated`; may be negative, never below −NCCL's figure).

    Raises:
        CostModelError: ``cards_per_node`` < 1, a bandwidth ≤ 0 or NaN (``math.inf`` allowed),
            or a latency or ``gamma_s_per_B`` negative or not finite (the two ``*_extra_us``
            are not checked).
    """

    cards_per_node: int
    intra_bw_GBps: float  # noqa: N815 (unit in the name, style.md rule 8)
    intra_latency_us: float
    card_net_bw_GBps: float  # noqa: N815
    node_net_bw_GBps: float  # noqa: N815
    leader_net_bw_GBps: float  # noqa: N815
    net_latency_us: float
    base_latency_us: float = 0.0
    gamma_s_per_B: float = 0.0  # noqa: N815
    intra_kind: str = "nvlink"
    source: str = ""
    intra_latency_extra_us: float = 0.0
    net_latency_extra_us: float = 0.0

    def __post_init__(self) -> None:
        positive_int("cards_per_node", self.cards_per_node)
        for name in ("intra_bw_GBps", "card_net_bw_GBps", "node_net_bw_GBps"):
            positive(name, getattr(self, name))
        positive("leader_net_bw_GBps", self.leader_net_bw_GBps)
        for name in ("intra_latency_us", "net_latency_us", "base_latency_us", "gamma_s_per_B"):
            nonneg(name, getattr(self, name))

    @property
    def alpha_intra_s(self) -> float:
        """α_i: per-step latency inside a node, seconds."""
        return self.intra_latency_us * 1e-6

    @property
    def alpha_inter_s(self) -> float:
        """α_e: per-step latency of a step that crosses nodes, seconds.
        Source: formulas.md §2 (network row of the per-step latencies).
        """
        return self.net_latency_us * 1e-6

    @property
    def base_s(self) -> float:
        """Latency paid once per call, seconds."""
        return self.base_latency_us * 1e-6

    @property
    def beta_intra_s_per_B(self) -> float:
        """β_i = 1 / intra-node bandwidth, s/byte."""
        return 1.0 / (self.intra_bw_GBps * 1e9)

    @property
    def beta_card_s_per_B(self) -> float:
        """β_e for one card when all cards of the node send at once, s/byte.
        Source: formulas.md §1 (2D ring row: NIC bandwidth / cards sharing it).
        """
        return 1.0 / (self.card_net_bw_GBps * 1e9)

    @property
    def beta_node_s_per_B(self) -> float:
        """β_e for one flow that has all of a node's NICs (multi-channel ring edge), s/byte.
        Source: formulas.md §1–2 (a node-contiguous ring leaves through all NICs).
        """
        return 1.0 / (self.node_net_bw_GBps * 1e9)

    @property
    def beta_leader_s_per_B(self) -> float:
        """β_e for one card alone through its NIC (2D-ring leader), s/byte.
        Source: formulas.md §1 (2D ring AR/AR/Bcast row).
        """
        return 1.0 / (self.leader_net_bw_GBps * 1e9)

    def with_nccl_latency(self, algorithm: str = "ring", protocol: str = "simple") -> LinkLevels:
        """A copy whose latencies are NCCL's defaults for ``algorithm`` and ``protocol``.

        Per-step latency = NCCL hardware latency of the level (``intra_kind`` inside a node,
        ``net`` across nodes); ``base_latency_us`` = NCCL base latency (formulas.md §2).
        Raises :class:`CostModelError` for an unknown algorithm or protocol.
        """
        intra, net, base = nccl_latencies_us(algorithm, protocol, self.intra_kind)
        return replace(
            self,
            intra_latency_us=intra,
            net_latency_us=net,
            base_latency_us=base,
            source=f"{self.source}; latency NCCL {algorithm}/{protocol}".lstrip("; "),
        )


def nccl_latencies_us(algorithm: str, protocol: str, intra_kind: str) -> tuple[float, float, float]:
    """NCCL (intra per-hop, net per-hop, base) latency in µs (formulas.md §2).

    ``algorithm`` is ``"ring"`` or ``"tree"``; ``protocol`` one of :data:`PROTOCOLS`;
    ``intra_kind`` ``"nvlink"`` or ``"pcie"``. Raises :class:`CostModelError` otherwise.
    """
    algo, proto = algorithm.lower(), protocol.lower()
    if algo not in NCCL_BASE_LATENCY_US or proto not in PROTOCOLS:
        raise CostModelError(
            f"unknown NCCL algorithm/protocol {algorithm}/{protocol}; "
            f"use ring|tree and one of {', '.join(PROTOCOLS)}"
        )
    kind = "nvlink" if intra_kind in NVLINK_LIKE else "pcie"
    return (
        NCCL_HW_LATENCY_US[kind][algo][proto],
        NCCL_HW_LATENCY_US["net"][algo][proto],
        NCCL_BASE_LATENCY_US[algo][proto],
    )


def _uplink_factor(cluster: Cluster) -> float:
    net = cluster.network
    if net.fabric == "single-switch" or net.switch_levels <= 1:
        return 1.0
    return max(1.0, net.oversubscription)


def _intra(node: Node) -> tuple[float, float, str]:
    """Ring bandwidth, largest hop latency and NCCL latency row of one node's cards.

    Default: the bottleneck of a ring through the cards in device order. Nodes of up to
    :data:`RING_SEARCH_MAX_CARDS` cards get a better ring: the best bottleneck over every
    Hamiltonian ring of paths, and, unless the links stand for a switch (:func:`_switch_like`;
    direct-connect nodes such as DGX-1's hybrid cube mesh or a quad of direct links), the sum of
    directed rings packed onto the direct links (:func:`_packed_rings`) — the channels NCCL's graph
    search builds, one per direction of each ring. DGX-1V: 2 × 40 + 2 × 20 = 120 GB/s, NCCL's
    6 NVLinks × 20 GB/s (formulas.md §2). A full mesh of NVLinks claiming more links per card
    than any card has (:data:`MAX_NVLINKS_PER_CARD`) is an NVSwitch: no packing (DGX-A100
    240 GB/s, not 7 × 240).
    """
    idx = [d.index for d in node.devices]
    if len(idx) < 2:
        return math.inf, 0.0, "nvlink"

    def ring_paths(order: list[int]) -> list:
        return [node.path(a, b) for a, b in zip(order, order[1:] + order[:1], strict=True)]

    paths = ring_paths(idx)
    bw = min(p.bw_GBps for p in paths)
    if len(idx) <= RING_SEARCH_MAX_CARDS:
        pair_bw = {(a, b): node.path(a, b).bw_GBps for a in idx for b in idx if a != b}
        best = max(_rings(idx), key=lambda o: _bottleneck(o, pair_bw))
        if _bottleneck(best, pair_bw) > bw:
            paths, bw = ring_paths(best), _bottleneck(best, pair_bw)
        direct = {(a, b): v for (a, b), v in pair_bw.items() if node.link(a, b) is not None}
        if not _switch_like(node, len(direct) == len(pair_bw)):
            bw = max(bw, _packed_rings(idx, direct))
    kind = "nvlink" if all(p.kind in NVLINK_LIKE for p in paths) else "pcie"
    return bw, max(p.latency_us for p in paths), kind


MAX_NVLINKS_PER_CARD = 18
"""Most NVLinks any card has (H100 SXM: 18 NVLink-4 links, formulas.md §2 "18 × 20.6"). A full
mesh claiming more per card is a switch."""


def _switch_like(node: Node, full_mesh: bool) -> bool:
    """True when the links stand for a switch (NVSwitch): a full mesh of NVLinks whose counts
    add up to more links per card than any card has — each pair's figure is then the card's
    whole bandwidth, and rings cannot be packed onto pairs."""
    if not full_mesh or len(node.devices) < 2:
        return False
    per_card = dict.fromkeys((d.index for d in node.devices), 0)
    for lk in node.links:
        per_card[lk.a] = per_card.get(lk.a, 0) + (lk.count or 1)
        per_card[lk.b] = per_card.get(lk.b, 0) + (lk.count or 1)
    return max(per_card.values()) > MAX_NVLINKS_PER_CARD


RING_SEARCH_MAX_CARDS = 8
"""Nodes up to this many cards get an exhaustive search of rings (7!/2 = 2520 rings at 8)."""


def _rings(idx: list[int]) -> list[list[int]]:
    """Every Hamiltonian ring through ``idx`` once (first card fixed, one orientation)."""
    first, rest = idx[0], idx[1:]
    return [[first, *p] for p in itertools.permutations(rest) if len(p) < 2 or p[0] < p[-1]]


def _bottleneck(order: list[int], bw: dict[tuple[int, int], float]) -> float:
    return min(bw.get((a, b), 0.0) for a, b in zip(order, order[1:] + order[:1], strict=True))


def _packed_rings(idx: list[int], direct: dict[tuple[int, int], float]) -> float:
    """Bandwidth of directed rings packed greedily onto the direct links, GB/s.

    Repeatedly take the ring with the largest bottleneck b in the residual link capacity and
    run it in both directions (full-duplex links: 2 rings of b each, NCCL's channels), until no
    ring of direct links is left. Source: NCCL's ring graph search (``src/graph/search.cc``)
    in spirit; the greedy packing is ours.
    """
    cap = dict(direct)
    rings = [r for r in _rings(idx) if _bottleneck(r, cap) > 0]
    total = 0.0
    for _ in range(len(idx) * 4):
        if not rings:
            break
        best = max(rings, key=lambda o: _bottleneck(o, cap))
        b = _bottleneck(best, cap)
        if b <= 1e-9:
            break
        total += 2 * b if len(idx) > 2 else b  # two cards: one ring already uses both ways
        for a, c in zip(best, best[1:] + best[:1], strict=True):
            cap[(a, c)] -= b
            cap[(c, a)] -= b
        rings = [r for r in rings if _bottleneck(r, cap) > 1e-9]
    return total


def from_cluster(cluster: Cluster, latency: str = "topology") -> LinkLevels:
    """Link levels of ``cluster`` (its first node stands for all nodes).

    Intra: bottleneck of :meth:`Node.path` around the node's cards in device order, and its
    largest hop latency. Inter: :meth:`Node.card_net_bw_GBps` per card (NIC share, PCIe and
    socket caps), summed over the node's cards for ``node_net_bw_GBps``; card 0's whole NIC for
    ``leader_net_bw_GBps``; each divided by the uplink oversubscription when the network has more
    than one switch level (worst case: the flows cross the uplinks). Latency ``"topology"`` uses
    the paths' hardware latencies and the network's ``latency_us``; ``"nccl"`` NCCL's ring/Simple
    defaults (see :meth:`LinkLevels.with_nccl_latency` for others).

    Bandwidths GB/s, latencies µs. Sources: formulas.md §1 (β_e = NIC bandwidth / cards sharing
    it, 2D-ring rows), §2 (one ring channel per NIC: DGX-A100 8 × 200 Gb/s IB measured 192 GB/s
    multi-node busbw; NCCL latencies).

    Raises :class:`CostModelError` for a cluster without nodes, cards or NICs, or an unknown
    ``latency`` source.
    """
    if not cluster.nodes or not cluster.nodes[0].devices:
        raise CostModelError("the topology has no nodes or no cards")
    if latency not in ("topology", "nccl"):
        raise CostModelError(f"latency source must be 'topology' or 'nccl', got {latency!r}")
    node = cluster.nodes[0]
    bw_i, lat_i, kind = _intra(node)
    over = _uplink_factor(cluster)
    try:
        shares = [node.card_net_bw_GBps(d.index)[0] for d in node.devices]
    except ValueError as exc:
        raise CostModelError(f"{exc}; the cost model needs each node's NICs") from None
    dev0 = node.devices[0]
    nic = node.nic(dev0.nic) if dev0.nic else None
    leader = nic.bw_GBps if nic is not None and nic.bw_GBps is not None else NET_GBPS_UNKNOWN_NIC
    leader = min(leader, node.pcie_bw_GBps)
    levels = LinkLevels(
        cards_per_node=len(node.devices),
        intra_bw_GBps=bw_i,
        intra_latency_us=lat_i,
        card_net_bw_GBps=min(shares) / over,
        node_net_bw_GBps=sum(shares) / over,
        leader_net_bw_GBps=leader / over,
        net_latency_us=cluster.network.latency_us,
        intra_kind=kind,
        source=f"topology {cluster.name or node.name}",
    )
    return levels.with_nccl_latency("ring", "simple") if latency == "nccl" else levels


def uniform(
    cards_per_node: int,
    intra_bw_GBps: float,
    net_bw_GBps: float,
    intra_latency_us: float = 0.0,
    net_latency_us: float = 0.0,
    nics_per_node: int | None = None,
) -> LinkLevels:
    """Link levels from plain numbers: a node of ``cards_per_node`` cards with ``nics_per_node``
    NICs of ``net_bw_GBps`` each (default one per card), cards spread evenly over the NICs.

    Bandwidths GB/s, latencies µs. One card's share = ``net_bw_GBps`` × K / G with K < G NICs,
    else one whole NIC; all of a node's NICs = K × ``net_bw_GBps``; the leader = one NIC
    (formulas.md §1, β_e of the 2D-ring rows). Raises :class:`CostModelError` for non-positive
    counts or bandwidths, or negative latencies.
    """
    g = positive_int("cards_per_node", cards_per_node)
    k = g if nics_per_node is None else positive_int("nics_per_node", nics_per_node)
    nic = positive("net_bw_GBps", net_bw_GBps)
    return LinkLevels(
        cards_per_node=g,
        intra_bw_GBps=intra_bw_GBps,
        intra_latency_us=intra_latency_us,
        card_net_bw_GBps=nic * k / g if k < g else nic,
        node_net_bw_GBps=nic * k,
        leader_net_bw_GBps=nic,
        net_latency_us=net_latency_us,
        source="given",
    )
