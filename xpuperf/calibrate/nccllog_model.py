"""Plain records of a parsed NCCL INFO log (:mod:`xpuperf.calibrate.nccllog` fills them).

Ranks are NCCL ranks of a communicator; hosts come from NCCL's ``host:pid:tid`` line prefix;
bandwidths in GB/s as NCCL prints them (``bw_*_GBps``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

RING_PATTERN = 4
"""NCCL_TOPO_PATTERN_RING (NCCL ``src/graph/topo.h``)."""


@dataclass
class RankInfo:
    """One rank of a communicator: host (None when no line names it), CUDA device, bus id."""

    rank: int
    host: str | None = None
    pid: int | None = None
    cuda_dev: int | None = None
    bus_id: str | None = None
    host_inferred: bool = False


@dataclass
class Connection:
    """A transport NCCL set up for one channel from ``src`` to ``dst`` (ranks).

    ``via`` is the text after ``via`` (``P2P/IPC/read``, ``NET/IB/0/GDRDMA``…); ``kind`` its
    first word (``P2P``, ``SHM``, ``NET``, ``COLLNET``…); ``net`` the network name for NET
    (``IB``, ``Socket``, ``AWS Libfabric``…); ``gdr`` whether GPUDirect RDMA is used;
    ``printer`` the rank whose line it is (``dst`` for a ``[receive]`` line, else ``src``): the
    end the transport (and its ``/GDRDMA``) describes.
    """

    channel: int
    src: int
    dst: int
    via: str
    kind: str
    net: str | None
    gdr: bool
    line: int
    printer: int | None = None

    @property
    def label(self) -> str:
        """``via`` without device numbers: ``NET/IB/GDRDMA``, ``P2P/IPC/read``, ``SHM/direct``."""
        if self.kind == "NET":
            return f"NET/{self.net}" + ("/GDRDMA" if self.gdr else "")
        parts = [p for p in self.via.split("/") if not re.fullmatch(r"\d+(\(\d+\))?", p)]
        return "/".join(parts[:3])


@dataclass
class GraphSearch:
    """A ``Pattern …`` line: NCCL's topology search result (pattern 4 = ring)."""

    pattern: int
    cross_nic: int
    n_channels: int
    bw_intra_GBps: float  # noqa: N815 (unit in the name)
    bw_inter_GBps: float  # noqa: N815 (unit in the name)
    type_intra: str
    type_inter: str
    same_channels: int
    host: str | None
    line: int


@dataclass
class WarnLine:
    """One ``NCCL WARN`` line: the message after the mark, the host of its prefix (None when
    the line has none), its line number and file (``source``, None for in-memory input)."""

    text: str
    host: str | None
    line: int
    source: str | None = None


@dataclass
class NicDistance:
    """NCCL 2.4 ``CUDA Dev D[N], IB NIC distance :  PIX SYS``: path type from the GPU to each NIC
    (``PIX``/``PXB`` same PCIe switch(es), ``PHB`` same CPU, ``NODE``/``SYS`` other socket)."""

    cuda_dev: int
    net: str
    kinds: tuple[str, ...]
    host: str | None
    line: int


@dataclass
class Comm:
    """One communicator as seen in the log.

    Attributes:
        key: ``commId 0x…`` when NCCL prints it, else ``nranks N``.
        nranks, nnodes, local_ranks: from the comm lines (None when not printed).
        ranks: rank → :class:`RankInfo`.
        rings: channel → ring order (list of ranks); ``n_channels`` from ``N coll channels`` or
            the ``/NN`` of the ring lines.
        trees: (rank, channel) → (children, parent), ``-1`` = none.
        connections: (channel, src, dst, via) → :class:`Connection`, each once.
        ends: (channel, src, dst, printer) → :class:`Connection`: every end of a connection as
            its rank printed it (both ends of one connection may print the same ``via``, which
            ``connections`` keeps once); what each host uses (XP653's hosts, XP658) is read here.
        searches: graph search lines; ``fallbacks``: (pattern, line) of "simple order" lines
            (and of 2.3-2.4 "Could not create rings", as the ring pattern 4).
        ring_links: (channel, rank) → (prev, next) from ``Ring 00 : p -> r -> n`` lines (2.12+,
            NCCL_DEBUG_SUBSYS=GRAPH); a complete set becomes ``rings[channel]``.
    """

    key: str
    nranks: int | None = None
    nnodes: int | None = None
    local_ranks: int | None = None
    ranks: dict[int, RankInfo] = field(default_factory=dict)
    rings: dict[int, list[int]] = field(default_factory=dict)
    n_channels: int | None = None
    trees: dict[tuple[int, int], tuple[list[int], int]] = field(default_factory=dict)
    connections: dict[tuple[int, int, int, str], Connection] = field(default_factory=dict)
    ends: dict[tuple[int, int, int, int], Connection] = field(default_factory=dict)
    searches: list[GraphSearch] = field(default_factory=list)
    fallbacks: list[tuple[int, int]] = field(default_factory=list)
    ring_links: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)

    def host_of(self, rank: int) -> str | None:
        info = self.ranks.get(rank)
        return info.host if info else None

    @property
    def hosts(self) -> list[str]:
        """Distinct hosts in rank order (inferred ones included)."""
        seen: dict[str, None] = {}
        for r in sorted(self.ranks):
            h = self.ranks[r].host
            if h is not None:
                seen.setdefault(h, None)
        return list(seen)


@dataclass
class NcclLog:
    """What one or more NCCL INFO streams say (several files of one job are merged).

    Attributes:
        sources: files read; ``info_lines`` / ``warn_lines``: NCCL INFO / WARN lines seen.
        library: ``NCCL``, or ``RCCL`` when its version line says so (RCCL, AMD's port, numbers
            its versions as NCCL's and prints the same INFO lines).
        version, cuda: ``2.9.9``, ``cuda11.2`` (RCCL: ``hip6.2``; None when not printed).
        comms: communicators, largest (the world) first.
        network: what ``Using network X`` names (``IB``, ``Socket``, ``AWS Libfabric``…).
        ib_devices: RDMA devices (``mlx5_0``…) NCCL listed; ``ib_none``: a "No device found";
            ``roce``: a device's link layer is ``RoCE``.
        socket_ifs: interfaces of ``NET/Socket : Using``; ``provider``: libfabric provider.
        gdr_enabled / gdr_disabled: (text after "for", host, line) of GPUDirect RDMA lines.
        env: NCCL variable → (value, line) as NCCL echoed it.
        hosts: every host named by a prefix.
        warnings: reader warnings (lines skipped for out-of-range rank ids), one line each.
        warns: every ``NCCL WARN`` line (:class:`WarnLine`), in input order.
        p2p_off: (message, host, line) of lines saying peer-to-peer is disabled or failed
            between two GPUs ("P2P is disabled between connected GPUs", "Could not enable P2P").
        net_failures: (message, host, line) of RDMA/plugin load failures ("Failed to open
            libibverbs.so[.1]", "NET/IB : Unable to open device", "Plugin load returned").
        plugin_missing: (message, host, line) of "NET/Plugin : No plugin found" lines.
        nic_distances: 2.4 GPU-to-NIC path types (:class:`NicDistance`).
    """

    sources: list[str] = field(default_factory=list)
    info_lines: int = 0
    library: str = "NCCL"
    version: str | None = None
    cuda: str | None = None
    comms: list[Comm] = field(default_factory=list)
    network: list[str] = field(default_factory=list)
    ib_devices: list[str] = field(default_factory=list)
    ib_none: bool = False
    roce: bool = False
    socket_ifs: list[str] = field(default_factory=list)
    provider: str | None = None
    gdr_enabled: list[tuple[str, str | None, int]] = field(default_factory=list)
    gdr_disabled: list[tuple[str, str | None, int]] = field(default_factory=list)
    env: dict[str, tuple[str, int]] = field(default_factory=dict)
    hosts: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    warn_lines: int = 0
    warns: list[WarnLine] = field(default_factory=list)
    p2p_off: list[tuple[str, str | None, int]] = field(default_factory=list)
    net_failures: list[tuple[str, str | None, int]] = field(default_factory=list)
    plugin_missing: list[tuple[str, str | None, int]] = field(default_factory=list)
    nic_distances: list[NicDistance] = field(default_factory=list)

    @property
    def world(self) -> Comm | None:
        return self.comms[0] if self.comms else None
