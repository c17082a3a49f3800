"""The inter-node part of the topology model: :class:`Network` and :class:`Cluster` (nodes, the
network between them and the rank placement). Re-exported by :mod:`xpuperf.topology.model`;
:class:`~xpuperf.topology.model.Node` and :class:`~xpuperf.topology.model.Path` are imported
where they are used, so that this module imports nothing from ``model`` at import time.

Units as in :mod:`xpuperf.topology.model`: ``*_GBps`` GB/s, ``latency_us`` µs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from xpuperf.topology.constants import LATENCY_US

if TYPE_CHECKING:
    from xpuperf.topology.model import Device, Node, Path


@dataclass(frozen=True)
class Network:
    """The inter-node network.

    Attributes:
        fabric: one of :data:`FABRICS`.
        switch_levels: switch tiers between nodes (1 = one leaf layer).
        oversubscription: down:up bandwidth ratio of the leaf switches (1.0 = non-blocking).
        nodes_per_leaf: nodes under one leaf switch (None: unknown; with more than one level
            every inter-node path is then assumed to cross the oversubscribed uplinks).
        latency_us: end-to-end network latency, µs (default NCCL's 2.7 µs, formulas.md §2).
        assumed: the :data:`NETWORK_FIGURES` the input did not give (the defaults above stand
            in); not part of equality.
    """

    fabric: str = "fat-tree"
    switch_levels: int = 1
    oversubscription: float = 1.0
    nodes_per_leaf: int | None = None
    latency_us: float = LATENCY_US["net"]
    assumed: frozenset[str] = field(default=frozenset(), compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "assumed", frozenset(self.assumed))


@dataclass(frozen=True)
class Cluster:
    """Nodes, the network between them and the rank placement.

    Attributes:
        nodes: the hosts, in rank order for node-major placement.
        network: :class:`Network`.
        placement: None for node-major (ranks fill node 0's cards in index order, then node 1…),
            or one ``(node position, device index)`` per rank.
        world_size: number of ranks (None: every slot).
        name: optional label.
    """

    nodes: tuple[Node, ...]
    network: Network = field(default_factory=Network)
    placement: tuple[tuple[int, int], ...] | None = None
    world_size: int | None = None
    name: str | None = None

    @cached_property
    def slots(self) -> tuple[tuple[int, int], ...]:
        """Every card as (node position, device index), node-major."""
        return tuple((i, d.index) for i, n in enumerate(self.nodes) for d in n.devices)

    @cached_property
    def rank_slots(self) -> tuple[tuple[int, int], ...]:
        """(node position, device index) of each rank, in rank order."""
        if self.placement is not None:
            return self.placement
        n = len(self.slots) if self.world_size is None else self.world_size
        return self.slots[:n]

    @property
    def n_ranks(self) -> int:
        """Number of ranks."""
        return len(self.rank_slots)

    def slot(self, rank: int) -> tuple[Node, Device]:
        """(node, device) of a rank; ValueError if the rank does not exist."""
        if not 0 <= rank < self.n_ranks:
            raise ValueError(f"rank {rank} out of range 0..{self.n_ranks - 1}")
        ni, di = self.rank_slots[rank]
        node = self.nodes[ni]
        return node, node.device(di)

    def _leaf(self, node_pos: int) -> int:
        npl = self.network.nodes_per_leaf
        return node_pos // npl if npl else 0

    def _crosses_uplinks(self, pa: int, pb: int, nic_a: int, nic_b: int) -> bool:
        net = self.network
        if net.fabric == "single-switch" or net.switch_levels <= 1:
            return False
        if net.fabric == "rail":
            return nic_a != nic_b or (
                net.nodes_per_leaf is not None and self._leaf(pa) != self._leaf(pb)
            )
        if net.nodes_per_leaf is None:
            return True
        return self._leaf(pa) != self._leaf(pb)

    def path(self, rank_a: int, rank_b: int) -> Path:
        """Path between two ranks: kind, bottleneck bandwidth (GB/s) and latency (µs).

        Same node: :meth:`Node.path`. Different nodes: the smaller of the two cards'
        :meth:`Node.card_net_bw_GBps`, divided by the oversubscription when the path crosses the
        leaf uplinks; latency is the network's ``latency_us``.
        """
        (pa, ia), (pb, ib) = self.rank_slots[rank_a], self.rank_slots[rank_b]
        self.slot(rank_a), self.slot(rank_b)  # range checks
        if pa == pb:
            return self.nodes[pa].path(ia, ib)
        na, nb = self.nodes[pa], self.nodes[pb]
        bwa, via_a, asa = na.card_net_bw_GBps(ia)
        bwb, via_b, asb = nb.card_net_bw_GBps(ib)
        bw = min(bwa, bwb)
        via = f"{na.name}:{ia} {via_a} → {nb.name}:{ib} {via_b}"
        if self._crosses_uplinks(pa, pb, _nic_pos(na, ia), _nic_pos(nb, ib)):
            bw /= max(1.0, self.network.oversubscription)
            if self.network.oversubscription > 1:
                via += f", uplinks {self.network.oversubscription:g}:1 oversubscribed"
        from xpuperf.topology.model import Path

        return Path("net", bw, self.network.latency_us, via, asa or asb)


def _nic_pos(node: Node, index: int) -> int:
    name = node.device(index).nic
    for i, n in enumerate(node.nics):
        if n.name == name:
            return i
    return -1
