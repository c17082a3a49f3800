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
    NETWORK_FIGURES,
    NODE_FIGURES,
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
    "NETWORK_FIGURES",
    "NET_GBPS_UNKNOWN_NIC",
    "NODE_FIGURES",
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
    of the link between NUMA nodes (inter-socket UPI / Infinity Fabric). Cards without a direct
    :class:`Link` talk through PCIe (same NUMA node or unknown) or across NUMA nodes (kind
    ``sys``). ``assumed``: the :data:`NODE_FIGURES` the input did not give (defaults stand in;
    paths that rest on them are :attr:`Path.assumed`); not part of equality.
    """

    name: str
    devices: tuple[Device, ...]
    numa_nodes: tuple[NumaNode, ...] = ()
    nics: tuple[Nic, ...] = ()
    links: tuple[Link, ...] = ()
    pcie_switches: tuple[PcieSwitch, ...] = ()
    pcie_bw_GBps: float = DEFAULT_PCIE_GBPS  # noqa: N815 (unit in the name, style.md rule 8)
    sys_bw_GBps: float = DEFAULT_SYS_GBPS  # noqa: N815 (unit in the name, style.md rule 8)
    assumed: frozenset[str] = field(default=frozenset(), compare=False)

    def __post_init__(self) -> None:
        for name in ("devices", "numa_nodes", "nics", "links", "pcie_switches"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "assumed", frozenset(self.assumed))

    @property
    def links_known(self) -> bool:
        """True when the input said which card pairs are directly linked."""
        return "links" not in self.assumed

    def _figure_assumed(self, kind: str) -> bool:
        """True when the node's figure for a ``pcie`` or ``sys`` path is a default."""
        if kind == "sys":
            return bool({"pcie_bw_GBps", "sys_bw_GBps"} & self.assumed)
        return "pcie_bw_GBps" in self.assumed

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
            assumed = bw is None or (
                link.bw_GBps is None and link.kind in ("pcie", "sys") and
                self._figure_assumed(link.kind)
            )  # fmt: skip
            if bw is None:
                bw = self.pcie_bw_GBps
            lat = link.latency_us
            if lat is None:
                lat = LATENCY_US[LINK_LATENCY_KIND[link.kind]]
            via = f"{link.kind} ×{link.count}" if link.count else link.kind
            if link.kind == "pcie" and da.pcie_switch and da.pcie_switch == db.pcie_switch:
                via = f"pcie switch {da.pcie_switch}"
            return Path(link.kind, bw, lat, via, assumed)
        guess = not self.links_known  # a direct link may exist that the input does not show
        if da.numa_node is not None and db.numa_node is not None and da.numa_node != db.numa_node:
            return Path(
                "sys",
                min(self.pcie_bw_GBps, self.sys_bw_GBps),
                LATENCY_US["pcie"],
                f"pcie across NUMA nodes {da.numa_node}→{db.numa_node}",
                guess or self._figure_assumed("sys"),
            )
        if da.pcie_switch is not None and da.pcie_switch == db.pcie_switch:
            via = f"pcie switch {da.pcie_switch}"
        else:
            via = "pcie via host bridge"
        assumed = guess or self._figure_assumed("pcie")
        return Path("pcie", self.pcie_bw_GBps, LATENCY_US["pcie"], via, assumed)

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
        if self.pcie_bw_GBps < bw:
            bw, assumed = self.pcie_bw_GBps, assumed or self._figure_assumed("pcie")
        if (
            nic is not None
            and nic.numa_node is not None
            and dev.numa_node is not None
            and nic.numa_node != dev.numa_node
        ):
            if self.sys_bw_GBps < bw:
                bw, assumed = self.sys_bw_GBps, assumed or self._figure_assumed("sys")
            via += f" across NUMA nodes {dev.numa_node}→{nic.numa_node}"
        return bw, via, assumed


# Network and Cluster live in .cluster (which imports nothing from here at import time); they are
# re-exported so that every part of the model can be imported from this module.
from xpuperf.topology.cluster import Cluster, Network  # noqa: E402
