"""The cluster topology model: plain frozen dataclasses, independent of any file format.

Shapes: a :class:`Cluster` holds ``nodes`` (a tuple of :class:`Node`); each node holds its cards
(:class:`Device`, indexed within the node), :class:`NumaNode` s, :class:`Nic` s,
:class:`PcieSwitch` es and intra-node :class:`Link` s between pairs of cards. Ranks map to
(node position, device index) slots, node-major unless an explicit placement is given.

Units are in the names: ``*_GBps`` gigabytes per second (1e9 bytes/s, as nccl-tests counts),
``speed_Gbps`` gigabits per second, ``latency_us`` microseconds, ``memory_MB`` 1e6 bytes.

What the cost model uses: :meth:`Cluster.path` (kind, bottleneck bandwidth and latency between two
ranks), :meth:`Node.nic_bw_per_card_GBps` (NIC bandwidth available to each card) and
:meth:`Cluster.slot` (rank → node, device).

Default constants (NCCL's link bandwidths and latencies, formulas.md §2) live in
:mod:`xpuperf.topology.constants`, each with its source, and are re-exported here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from xpuperf.topology.constants import (
    DEFAULT_NVLINK_GBPS,
    DEFAULT_PCIE_GBPS,
    DEFAULT_SYS_GBPS,
    FABRICS,
    LATENCY_US,
    LINK_KINDS,
    LINK_LATENCY_KIND,
    NET_GBPS_UNKNOWN_NIC,
    NVLINK_GBPS_PER_LINK,
    PCIE_GBPS_BY_GEN,
    PCIE_GEN6_X16_RAW_GBPS,
    SYS_GBPS,
    default_link_bw_GBps,
    nvlink_gbps_per_link,
)

__all__ = [  # the constants are re-exported: callers may import them from here
    "DEFAULT_NVLINK_GBPS",
    "DEFAULT_PCIE_GBPS",
    "DEFAULT_SYS_GBPS",
    "FABRICS",
    "LATENCY_US",
    "LINK_KINDS",
    "LINK_LATENCY_KIND",
    "NET_GBPS_UNKNOWN_NIC",
    "NVLINK_GBPS_PER_LINK",
    "PCIE_GBPS_BY_GEN",
    "PCIE_GEN6_X16_RAW_GBPS",
    "SYS_GBPS",
    "Cluster",
    "Device",
    "Link",
    "Network",
    "Nic",
    "Node",
    "NumaNode",
    "Path",
    "PcieSwitch",
    "default_link_bw_GBps",
    "nvlink_gbps_per_link",
]


@dataclass(frozen=True)
class NumaNode:
    """One NUMA node of a host: ``id``, its CPU ids (may be empty: CPU-less memory nodes), MB.

    ``distances``: relative distances (ACPI SLIT, 10 = local, as ``numactl -H`` prints) to each
    NUMA node of the host, in the order of :attr:`Node.numa_nodes`; ``()`` when unknown.
    """

    id: int
    cpus: tuple[int, ...] = ()
    memory_MB: float | None = None  # noqa: N815 (unit in the name, style.md rule 8)
    distances: tuple[int, ...] = ()


@dataclass(frozen=True)
class Nic:
    """A network port. ``speed_Gbps`` None when unknown; ``cards`` the device indices using it."""

    name: str
    speed_Gbps: float | None = None  # noqa: N815 (unit in the name, style.md rule 8)
    numa_node: int | None = None
    cards: tuple[int, ...] = ()
    pcie_switch: str | None = None

    @property
    def bw_GBps(self) -> float | None:
        """Port bandwidth in GB/s (speed_Gbps / 8), None when the speed is unknown."""
        return None if self.speed_Gbps is None else self.speed_Gbps / 8.0


@dataclass(frozen=True)
class Device:
    """One accelerator card: ``index`` within its node, model, peak TFLOPS, NUMA node, NIC name."""

    index: int
    model: str | None = None
    peak_tflops: float | None = None
    numa_node: int | None = None
    nic: str | None = None
    pcie_switch: str | None = None


@dataclass(frozen=True)
class PcieSwitch:
    """A PCIe switch: its NUMA node and the cards and NICs below it."""

    name: str
    numa_node: int | None = None
    devices: tuple[int, ...] = ()
    nics: tuple[str, ...] = ()


@dataclass(frozen=True)
class Link:
    """A direct link between cards ``a`` and ``b`` (device indices, a < b by convention).

    ``count`` is the number of bonded links (NV# in ``nvidia-smi topo -m``) when known;
    ``bw_GBps`` the bandwidth of the bonded set per direction (None: unknown); ``latency_us`` the
    per-hop latency (None: the :data:`LATENCY_US` default of the kind).
    """

    a: int
    b: int
    kind: str
    count: int | None = None
    bw_GBps: float | None = None  # noqa: N815 (unit in the name, style.md rule 8)
    latency_us: float | None = None


@dataclass(frozen=True)
class Path:
    """How two ranks reach each other.

    Attributes:
        kind: ``"self"`` (same card), a link kind from :data:`LINK_KINDS` (same node) or
            ``"net"`` (different nodes).
        bw_GBps: bottleneck bandwidth per direction, GB/s (``math.inf`` for ``"self"``). For
            ``"net"`` it is the share of one card when every card of both nodes sends at once.
        latency_us: hardware latency of the path, µs (0 for ``"self"``).
        via: short human description of the hops.
        assumed: True when a default figure stood in for an unknown one.
    """

    kind: str
    bw_GBps: float  # noqa: N815 (unit in the name, style.md rule 8)
    latency_us: float
    via: str = ""
    assumed: bool = False


@dataclass(frozen=True)
class Node:
    """One host: its cards, NUMA nodes, NICs, PCIe switches and card-to-card links.

    ``pcie_bw_GBps`` is the usable bandwidth of one card's or NIC's PCIe slot; ``sys_bw_GBps`` that
    of the inter-socket link. Cards without a direct :class:`Link` talk through PCIe (same NUMA
    node or unknown) or across sockets (kind ``sys``).
    """

    name: str
    devices: tuple[Device, ...]
    numa_nodes: tuple[NumaNode, ...] = ()
    nics: tuple[Nic, ...] = ()
    links: tuple[Link, ...] = ()
    pcie_switches: tuple[PcieSwitch, ...] = ()
    pcie_bw_GBps: float = DEFAULT_PCIE_GBPS  # noqa: N815 (unit in the name, style.md rule 8)
    sys_bw_GBps: float = DEFAULT_SYS_GBPS  # noqa: N815 (unit in the name, style.md rule 8)

    def __post_init__(self) -> None:
        for name in ("devices", "numa_nodes", "nics", "links", "pcie_switches"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @cached_property
    def _devices(self) -> dict[int, Device]:
        return {d.index: d for d in self.devices}

    @cached_property
    def _nics(self) -> dict[str, Nic]:
        return {n.name: n for n in self.nics}

    @cached_property
    def _links(self) -> dict[tuple[int, int], Link]:
        return {(min(lk.a, lk.b), max(lk.a, lk.b)): lk for lk in self.links}

    def device(self, index: int) -> Device:
        """The card with this index; ValueError if there is none."""
        try:
            return self._devices[index]
        except KeyError:
            raise ValueError(f"node {self.name} has no device {index}") from None

    def nic(self, name: str) -> Nic | None:
        """The NIC with this name, or None."""
        return self._nics.get(name)

    def numa_distance(self, a: int, b: int) -> int | None:
        """Relative distance from NUMA node ``a`` to ``b`` (10 = local), None when unknown."""
        ids = [n.id for n in self.numa_nodes]
        src = next((n for n in self.numa_nodes if n.id == a), None)
        if src is None or b not in ids or len(src.distances) != len(ids):
            return None
        return src.distances[ids.index(b)]

    def link(self, a: int, b: int) -> Link | None:
        """The direct link between cards ``a`` and ``b``, or None."""
        return self._links.get((min(a, b), max(a, b)))

    def link_bw_GBps(self, link: Link) -> float | None:
        """A link's bandwidth in GB/s: as given, else the NCCL default of its kind, else None."""
        if link.bw_GBps is not None:
            return link.bw_GBps
        model = self.devices[0].model if self.devices else None
        return default_link_bw_GBps(
            link.kind, link.count, model, self.pcie_bw_GBps, self.sys_bw_GBps
        )

    def path(self, a: int, b: int) -> Path:
        """Path between cards ``a`` and ``b`` of this node (see :class:`Path`)."""
        da, db = self.device(a), self.device(b)
        if a == b:
            return Path("self", math.inf, 0.0, "same card")
        link = self.link(a, b)
        if link is not None:
            bw = self.link_bw_GBps(link)
            assumed = bw is None
            if bw is None:
                bw = self.pcie_bw_GBps
            lat = link.latency_us
            if lat is None:
                lat = LATENCY_US[LINK_LATENCY_KIND[link.kind]]
            via = f"{link.kind} ×{link.count}" if link.count else link.kind
            if link.kind == "pcie" and da.pcie_switch and da.pcie_switch == db.pcie_switch:
                via = f"pcie switch {da.pcie_switch}"
            return Path(link.kind, bw, lat, via, assumed)
        if da.numa_node is not None and db.numa_node is not None and da.numa_node != db.numa_node:
            return Path(
                "sys",
                min(self.pcie_bw_GBps, self.sys_bw_GBps),
                LATENCY_US["pcie"],
                f"pcie across sockets (NUMA {da.numa_node}→{db.numa_node})",
            )
        if da.pcie_switch is not None and da.pcie_switch == db.pcie_switch:
            via = f"pcie switch {da.pcie_switch}"
        else:
            via = "pcie via host bridge"
        return Path("pcie", self.pcie_bw_GBps, LATENCY_US["pcie"], via)

    def nic_bw_per_card_GBps(self) -> dict[int, float | None]:
        """NIC bandwidth available to each card, GB/s: its NIC's speed / cards sharing that NIC.

        None for a card without an assigned NIC or whose NIC speed is unknown. Example: DGX-A100,
        one 200 Gb/s NIC per card → 25.0 for every card.
        """
        out: dict[int, float | None] = {}
        for d in self.devices:
            nic = self.nic(d.nic) if d.nic else None
            if nic is None or nic.bw_GBps is None:
                out[d.index] = None
            else:
                out[d.index] = nic.bw_GBps / max(1, len(nic.cards))
        return out

    def card_net_bw_GBps(self, index: int) -> tuple[float, str, bool]:
        """Bandwidth one card gets to the network, GB/s, with a description and an assumed flag.

        NIC share (speed / cards sharing it), capped by the PCIe slot and, when the NIC sits on
        another NUMA node than the card, by the inter-socket link. A card without an assigned NIC
        gets an equal share of all the node's NICs; an unknown NIC speed counts as 100 Gb/s.
        """
        dev = self.device(index)
        nic = self.nic(dev.nic) if dev.nic else None
        assumed = False
        if nic is not None:
            bw = nic.bw_GBps
            if bw is None:
                bw, assumed = NET_GBPS_UNKNOWN_NIC, True
            bw /= max(1, len(nic.cards))
            via = f"NIC {nic.name}"
        elif self.nics:
            speeds = [n.bw_GBps for n in self.nics]
            assumed = True
            bw = sum(s if s is not None else NET_GBPS_UNKNOWN_NIC for s in speeds)
            bw /= max(1, len(self.devices))
            via = "shared NICs"
        else:
            raise ValueError(f"node {self.name} has no NIC")
        bw = min(bw, self.pcie_bw_GBps)
        if (
            nic is not None
            and nic.numa_node is not None
            and dev.numa_node is not None
            and nic.numa_node != dev.numa_node
        ):
            bw = min(bw, self.sys_bw_GBps)
            via += f" across sockets (NUMA {dev.numa_node}→{nic.numa_node})"
        return bw, via, assumed


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
    """

    fabric: str = "fat-tree"
    switch_levels: int = 1
    oversubscription: float = 1.0
    nodes_per_leaf: int | None = None
    latency_us: float = LATENCY_US["net"]


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
        return Path("net", bw, self.network.latency_us, via, asa or asb)


def _nic_pos(node: Node, index: int) -> int:
    name = node.device(index).nic
    for i, n in enumerate(node.nics):
        if n.name == name:
            return i
    return -1
