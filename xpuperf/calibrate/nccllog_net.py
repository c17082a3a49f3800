"""Inter-node network checks of an NCCL debug log: sockets vs RDMA, GPUDirect RDMA, NIC socket.

Findings (value, threshold and the NCCL variable to change are in each message):

======  =======  ==================================================================================
XP651   error    inter-node traffic on ``NET/Socket`` (``via NET/Socket`` lines, or ``Using network
                 Socket`` on a multi-node communicator) although RDMA devices are listed or
                 ``NCCL_IB_DISABLE=1``
XP652   warning  the same, and no RDMA device found (``NET/IB : No device found``, libibverbs or
                 the net plugin not loaded)
XP653   warning  GPUDirect RDMA not used: a ``GPU Direct RDMA Disabled for …`` line (evidence on its
                 own, any version's wording), or inter-node ``NET`` connections without ``/GDRDMA``
                 where the log shows RDMA HCAs, GDRDMA elsewhere or a GPU–NIC path of type
                 PIX/PXB (within NCCL_NET_GDR_LEVEL's default, PXB); info when nothing in the log
                 says the NIC could do it. Names the hosts whose inter-node ends lack /GDRDMA
                 (each end on the host of the rank that printed it: :func:`gdr_hosts`)
XP655   warning  GPU→NIC path of type ``SYS`` (``Pattern …, type X/SYS`` on a multi-node
                 communicator, or NCCL 2.4 ``NIC distance : SYS`` for every NIC)
XP660   warning  RDMA library or device could not be opened (``Failed to open libibverbs.so[.1]``,
                 ``NET/IB : Unable to open device``, ``NET/Plugin : Plugin load returned …``)
======  =======  ==================================================================================

Sources: NCCL ``src/transport/net.cc`` (``via NET/<name>/<dev>[/GDRDMA]``), ``net_ib.cc`` /
``src/graph/topo.cc`` (``GPU Direct RDMA Enabled|Disabled for HCA d 'name'``, ``(no module)``),
``src/graph/paths.cc`` (``… for GPU g / HCA d (distance a > b)``; default NCCL_NET_GDR_LEVEL
PXB), ``src/misc/ibvwrap.cc``, ``src/net.cc`` (plugin lines), NCCL environment documentation.
"""

from __future__ import annotations

from xpuperf.calibrate.nccllog_model import Comm, Connection, NcclLog
from xpuperf.findings import Finding, Severity

_OFF = {"1", "true", "yes"}
GDR_PATHS = ("PIX", "PXB")
"""GPU–NIC path types within NCCL_NET_GDR_LEVEL's default (PXB): GPUDirect RDMA expected."""

GDR_COST = (
    "without it every inter-node transfer is staged through host memory (an extra copy over "
    "PCIe and through host DRAM at each end); the bandwidth lost depends on the host's PCIe and "
    "memory path (measure: nccl-tests all_reduce_perf busbw against the NIC line rate)"
)
GDR_FIX = (
    "check that the nvidia-peermem module (nv_peer_mem with older MLNX_OFED) is loaded "
    "(`lsmod | grep peermem`) or that DMA-BUF works (recent kernel and open GPU kernel "
    "modules, NCCL_DMABUF_ENABLE=1), and if NCCL gives the GPU–NIC distance as the reason "
    "raise NCCL_NET_GDR_LEVEL (default PXB; PHB or SYS)"
)


def env(log: NcclLog, name: str) -> str | None:
    """Value NCCL echoed for ``name`` (stripped), or None."""
    v = log.env.get(name)
    return v[0].strip() if v else None


def scope(comm: Comm, a: int, b: int) -> str:
    """``intra`` / ``inter`` (same / different host of ranks a, b) or ``unknown``."""
    ha, hb = comm.host_of(a), comm.host_of(b)
    if ha is None or hb is None:
        return "unknown"
    return "intra" if ha == hb else "inter"


def inter(c: Comm) -> list[Connection]:
    """Connections between ranks on different hosts."""
    return [x for x in c.connections.values() if scope(c, x.src, x.dst) == "inter"]


def multi_node(c: Comm) -> bool:
    return len(c.hosts) > 1 or (c.nnodes or 0) > 1


def is_socket(x: Connection) -> bool:
    return x.kind == "NET" and (x.net or "").lower() == "socket"


def gpu_nic_paths(log: NcclLog, c: Comm) -> list[str]:
    """GPU→NIC path types the log shows: ``Pattern`` lines' inter type, else the closest NIC of
    each NCCL 2.4 ``NIC distance`` line."""
    types = [s.type_inter for s in c.searches if s.type_inter not in ("LOC", "NET")]
    if types:
        return types
    order = ["PIX", "PXB", "PHB", "NODE", "SYS", "SOC"]
    return [
        min(d.kinds, key=lambda k: order.index(k) if k in order else len(order))
        for d in log.nic_distances
        if d.kinds
    ]


def transports_by_host(c: Comm) -> dict[str, set[str]]:
    """Host → the transports its ranks printed (``intra P2P/IPC/read``, ``inter NET/IB``…),
    each end of a connection counted on the host of the rank that printed it (a ``[receive]``
    line describes the receiving end: its ``/GDRDMA`` is that host's)."""
    per_host: dict[str, set[str]] = {}
    for x in c.ends.values():
        hs, hd = c.host_of(x.src), c.host_of(x.dst)
        hp = c.host_of(x.printer if x.printer is not None else x.src)
        if hs is None or hd is None or hp is None:
            continue
        per_host.setdefault(hp, set()).add(("intra " if hs == hd else "inter ") + x.label)
    return per_host


def gdr_hosts(c: Comm) -> tuple[list[str], list[str]]:
    """(hosts with an inter-node RDMA end without ``/GDRDMA``, hosts whose every such end has
    it), from the end each rank printed (:attr:`Comm.ends`); hosts in first-seen order."""
    without: dict[str, None] = {}
    seen: dict[str, None] = {}
    for x in c.ends.values():
        if x.kind != "NET" or is_socket(x) or scope(c, x.src, x.dst) != "inter":
            continue
        h = c.host_of(x.printer if x.printer is not None else x.src)
        if h is None:
            continue
        seen.setdefault(h, None)
        if not x.gdr:
            without.setdefault(h, None)
    return list(without), [h for h in seen if h not in without]


def network_findings(log: NcclLog, c: Comm, where: str) -> list[Finding]:
    """XP651/XP652/XP653/XP655 for communicator ``c``."""
    return _sockets(log, c, where) + _gdr(log, c, where) + _nic_socket(log, c, where)


def _sockets(log: NcclLog, c: Comm, where: str) -> list[Finding]:
    sockets = [x for x in inter(c) if is_socket(x)]
    chosen = not inter(c) and multi_node(c) and any(n.lower() == "socket" for n in log.network)
    if not (sockets or chosen):
        return []
    ib_off = (env(log, "NCCL_IB_DISABLE") or "").lower() in _OFF
    n = len(sockets)
    ifs = ", ".join(log.socket_ifs[:4]) or "not printed"
    what = (
        f"{n} inter-node connection(s) use NET/Socket (TCP)"
        if sockets
        else "NCCL chose the Socket (TCP) network ('Using network Socket') for a multi-node "
        "communicator"
    )
    cost = (
        f"interface(s) {ifs}; TCP runs through the kernel network stack and host memory and "
        "usually reaches only part of an InfiniBand/RoCE link's bandwidth (how much depends on "
        "the NIC and CPUs: compare nccl-tests busbw with the fabric's line rate)"
    )
    gid = " and NCCL_IB_GID_INDEX (the RoCE v2 GID, `show_gids`)" if log.roce else ""
    data = {"where": where, "socket_connections": n, "socket_interfaces": log.socket_ifs}
    if log.ib_devices or ib_off:
        why = (
            "NCCL_IB_DISABLE=1 is set"
            if ib_off
            else f"RDMA devices are present ({', '.join(log.ib_devices[:4])})"
        )
        return [
            Finding(
                "XP651",
                Severity.ERROR,
                f"{where}: {what} although {why}; {cost}; threshold 0 — unset "
                "NCCL_IB_DISABLE, do not force NCCL_NET=Socket, check that NCCL_IB_HCA names "
                f"the HCAs{gid}; NCCL_SOCKET_IFNAME only picks the TCP interface",
                {**data, "ib_devices": log.ib_devices},
            )
        ]
    reasons = []
    if log.ib_none:
        reasons.append("NET/IB : No device found")
    reasons += [t for t, _, _ in log.net_failures[:1]]
    if log.plugin_missing:
        reasons.append("no net plugin loaded (libnccl-net.so not found)")
    why = f" ({'; '.join(reasons)})" if reasons else ""
    return [
        Finding(
            "XP652",
            Severity.WARNING,
            f"{where}: {what} and NCCL found no RDMA device{why}; {cost}; threshold 0 — if the "
            "nodes have InfiniBand/RoCE NICs install rdma-core/libibverbs and the NIC driver in "
            "the container and set NCCL_IB_HCA (plus NCCL_IB_GID_INDEX on RoCE); on AWS EFA or "
            f"other fabrics install their net plugin (aws-ofi-nccl); {_ifname(log)}",
            data,
        )
    ]


def _ifname(log: NcclLog) -> str:
    """What NCCL_SOCKET_IFNAME does here: echo its value, or say it is not set."""
    value = env(log, "NCCL_SOCKET_IFNAME")
    if value:
        return f"NCCL_SOCKET_IFNAME={value} picks the TCP interface"
    chose = f" (NCCL chose {', '.join(log.socket_ifs[:4])})" if log.socket_ifs else ""
    return f"NCCL_SOCKET_IFNAME is not set{chose}; set it to pick the TCP interface"


def _gdr(log: NcclLog, c: Comm, where: str) -> list[Finding]:
    rdma = [x for x in inter(c) if x.kind == "NET" and not is_socket(x)]
    no_gdr = [x for x in rdma if not x.gdr]
    said = log.gdr_disabled
    paths = gpu_nic_paths(log, c) if multi_node(c) else []
    close = [p for p in paths if p in GDR_PATHS]
    if rdma and not no_gdr:
        return []  # every inter-node connection uses GDRDMA: the connections decide
    if not no_gdr and not said:
        return []
    quote = f"NCCL said: GPU Direct RDMA Disabled for {said[0][0]}" if said else ""
    if len(said) > 1:
        quote += f" (+{len(said) - 1} more such line(s))"
    without, with_gdr = gdr_hosts(c)
    if no_gdr:
        lead = (
            f"{len(no_gdr)} of {len(rdma)} inter-node connection(s) via NET/{no_gdr[0].net} "
            "run without GPUDirect RDMA (no /GDRDMA)" + (f"; {quote}" if quote else "")
        )
        if without and with_gdr:
            lead += (
                f"; the ends without it are on {_hosts(without)}, while {_hosts(with_gdr)} "
                f"{'uses' if len(with_gdr) == 1 else 'use'} GDRDMA on every inter-node end: "
                f"look at {'that host' if len(without) == 1 else 'those hosts'} first"
            )
        elif without:
            lead += f" on {_hosts(without)}"
    else:
        lead = quote + " (no transport lines to show which connections it affects)"
    if close and no_gdr:
        lead += (
            f"; the GPU–NIC path is {close[0]}, within NCCL_NET_GDR_LEVEL's default (PXB), so "
            "GPUDirect RDMA was expected"
        )
    evidence = bool(said or log.ib_devices or close or any(x.gdr for x in c.connections.values()))
    return [
        Finding(
            "XP653",
            Severity.WARNING if evidence else Severity.INFO,
            f"{where}: {lead}; {GDR_COST}; threshold 0 where the NIC supports it "
            f"(InfiniBand/RoCE HCAs, EFA on p4d/p5) — {GDR_FIX}",
            {
                "where": where,
                "without_gdr": len(no_gdr),
                "net_connections": len(rdma),
                "gdr_disabled_lines": [t for t, _, _ in said],
                "gpu_nic_paths": sorted(set(paths)),
                "hosts_without_gdr": without,
                "hosts_with_gdr": with_gdr,
            },
        )
    ]


def _hosts(hosts: list[str], limit: int = 4) -> str:
    more = f" (+{len(hosts) - limit} more)" if len(hosts) > limit else ""
    return f"host{'s' if len(hosts) > 1 else ''} " + ", ".join(hosts[:limit]) + more


def _nic_socket(log: NcclLog, c: Comm, where: str) -> list[Finding]:
    if not multi_node(c):
        return []
    sys_paths = [s for s in c.searches if s.type_inter == "SYS"]
    if sys_paths:
        s = sys_paths[0]
        at = f"NCCL's graph search (pattern {s.pattern}, line {s.line}) reached the NIC"
    elif log.nic_distances and all(p in ("SYS", "SOC") for p in gpu_nic_paths(log, c)):
        d = log.nic_distances[0]
        at = f"NCCL's NIC distance line (CUDA Dev {d.cuda_dev}, line {d.line}) shows every NIC"
    else:
        return []
    return [
        Finding(
            "XP655",
            Severity.WARNING,
            f"{where}: {at} over a path of type SYS — through the inter-socket link, so the NIC "
            "sits on another CPU socket than the GPUs using it; threshold: PXB or closer "
            "(PIX/PXB) — use the NICs local to each GPU's socket (NCCL_IB_HCA / "
            "NCCL_SOCKET_IFNAME; `nvidia-smi topo -m` shows the affinity) or give the real "
            "topology with NCCL_TOPO_FILE",
            {"where": where, "type_inter": "SYS"},
        )
    ]


def rdma_failure_findings(log: NcclLog, where: str, harmful: bool) -> list[Finding]:
    """XP660: the RDMA library, an RDMA device or the net plugin failed to load; a warning when
    ``harmful`` (a multi-node communicator without RDMA connections), else info (NCCL 2.12+
    prints the libibverbs line on every host without it, also where TCP is intended)."""
    if not log.net_failures:
        return []
    texts = list(dict.fromkeys(t for t, _, _ in log.net_failures))
    first = log.net_failures[0]
    return [
        Finding(
            "XP660",
            Severity.WARNING if harmful else Severity.INFO,
            f"{where}: NCCL could not load its RDMA support: '{texts[0]}' (line {first[2]}"
            f"{f' on {first[1]}' if first[1] else ''}, {len(log.net_failures)} line(s)"
            f"{f', {len(texts)} distinct' if len(texts) > 1 else ''}); threshold 0 — without it "
            "NCCL falls back to TCP sockets between nodes: install rdma-core (libibverbs.so.1) "
            "and the NIC's user-space driver in the container, pass the /dev/infiniband devices "
            "in, and for a net plugin put it on LD_LIBRARY_PATH (NCCL_NET_PLUGIN names it)",
            {"where": where, "messages": texts},
        )
    ]
