"""Diagnose an NCCL INFO log (:class:`~xpuperf.calibrate.nccllog.NcclLog`): findings XP650–XP659.

Ring node crossings (:func:`ring_crossings`): a ring over R ranks on H > 1 hosts crosses a node
boundary at least H times (each host's ranks entered once and left once); NCCL's ring search
builds node-contiguous rings, so more than H crossings means ranks are not placed node-major or
the search relaxed its constraints (formulas.md §1 "Ring order"; :mod:`xpuperf.costmodel.ringorder`
counts the closed-ring edges).

Findings (value, threshold and the NCCL variable to change are in each message):

======  =======  ==================================================================================
XP651   error    inter-node connections on ``NET/Socket`` although RDMA devices are listed or
                 ``NCCL_IB_DISABLE=1``
XP652   warning  inter-node connections on ``NET/Socket`` and no RDMA device found
XP653   warn/inf inter-node ``NET`` connections without ``/GDRDMA`` (warning when the log shows
                 RDMA HCAs, a "GPU Direct RDMA Disabled" line or GDRDMA elsewhere; else info)
XP654   warning  connections between ranks of one host via ``SHM`` or ``NET`` (not ``P2P``), or
                 ``NCCL_P2P_DISABLE=1`` / ``NCCL_P2P_LEVEL=LOC``
XP655   warning  graph search type ``…/SYS`` on a multi-node communicator: GPU→NIC path crosses
                 the inter-socket link (NIC on another socket)
XP656   warning  a ring crosses nodes more than H times
XP657   warning  "Could not find a path for pattern N, falling back to simple order"
XP658   warning  one host's transports differ from the other hosts'
XP659   info     a check could not run (no transport lines, hosts unknown)
XP650   info     none of XP651–XP658 fired: "no misconfiguration found"
======  =======  ==================================================================================

Sources: NCCL ``src/transport/net.cc`` (``via NET/<name>/<dev>[/GDRDMA]``), ``p2p.cc``,
``shm.cc``, ``src/graph/search.cc`` (pattern lines, simple-order fallback), ``src/graph/paths.cc``
(GPUDirect RDMA distance test), NCCL environment-variable documentation.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from xpuperf.calibrate.nccllog import RING_PATTERN, Comm, NcclLog
from xpuperf.costmodel.ringorder import cross_node_edges
from xpuperf.findings import Finding, Severity

_OFF = {"1", "true", "yes"}


@dataclass
class RingCrossing:
    """Node crossings of one ring: ``cross_node_edges`` of the closed ring vs ``minimum`` = H
    (0 on one host); ``None`` when a rank's host is unknown. ``inferred``: some hosts guessed."""

    channel: int
    order: list[int]
    cross_node_edges: int | None
    minimum: int | None
    inferred: bool


def ring_crossings(comm: Comm) -> list[RingCrossing]:
    """One :class:`RingCrossing` per ring channel of ``comm``, in channel order."""
    out = []
    for ch, order in sorted(comm.rings.items()):
        hosts = [comm.host_of(r) for r in order]
        inferred = any(comm.ranks[r].host_inferred for r in order if r in comm.ranks)
        if any(h is None for h in hosts) or sorted(order) != list(range(len(order))):
            out.append(RingCrossing(ch, order, None, None, inferred))
            continue
        ids = {h: i for i, h in enumerate(dict.fromkeys(hosts))}
        node_of = [0] * len(order)
        for r, h in zip(order, hosts, strict=True):
            node_of[r] = ids[h]
        n_hosts = len(ids)
        crossings = cross_node_edges(order, node_of)
        out.append(RingCrossing(ch, order, crossings, n_hosts if n_hosts > 1 else 0, inferred))
    return out


def transport_summary(comm: Comm) -> list[dict]:
    """Connections per (scope, label): ``scope`` ``intra``/``inter``/``unknown`` (host of a
    rank unknown), ``label`` as :attr:`Connection.label`, ``connections`` count; sorted."""
    count: Counter = Counter()
    for c in comm.connections.values():
        count[(_scope(comm, c.src, c.dst), c.label)] += 1
    return [
        {"scope": s, "transport": lab, "connections": n} for (s, lab), n in sorted(count.items())
    ]


def _scope(comm: Comm, a: int, b: int) -> str:
    ha, hb = comm.host_of(a), comm.host_of(b)
    if ha is None or hb is None:
        return "unknown"
    return "intra" if ha == hb else "inter"


def _env(log: NcclLog, name: str) -> str | None:
    v = log.env.get(name)
    return v[0].strip() if v else None


def nccl_findings(log: NcclLog, where: str = "NCCL log") -> list[Finding]:
    """Findings XP650–XP659 for ``log``; ``where`` names the file(s) in messages. Most severe
    first; XP650 ("no misconfiguration found") exactly when none of XP651–XP658 fired."""
    out: list[Finding] = []
    comms = [c for c in log.comms if (c.nranks or 0) > 1] or log.comms[:1]
    for c in comms:
        tag = where if len(comms) == 1 else f"{where} (communicator {c.key})"
        out += _network(log, c, tag)
        out += _p2p(log, c, tag)
        out += _rings(c, tag)
        out += _uniform(c, tag)
    out += _global(log, where, comms)
    if all(f.code == "XP659" for f in out):
        w = log.world
        hosts = len(w.hosts) if w else 0
        skipped = " (some checks skipped: XP659)" if out else ""
        out.append(
            Finding(
                "XP650",
                Severity.INFO,
                f"{where}: no misconfiguration found in what the log shows "
                f"({w.nranks if w else '?'} ranks on {hosts or '?'} host(s); transports "
                f"{_labels(w) or 'not logged'}); checked: sockets vs RDMA, GPUDirect RDMA, "
                f"intra-node P2P, NIC socket, ring node crossings, per-node transport{skipped}",
                {"where": where},
            )
        )
    out.sort(key=lambda f: (-f.severity.rank, f.code))
    return out


def _labels(c: Comm | None) -> str:
    if c is None:
        return ""
    return ", ".join(f"{t['scope']} {t['transport']} ×{t['connections']}" for t in
                     transport_summary(c))  # fmt: skip


def _inter(c: Comm) -> list:
    return [x for x in c.connections.values() if _scope(c, x.src, x.dst) == "inter"]


def _network(log: NcclLog, c: Comm, where: str) -> list[Finding]:
    out = []
    inter = _inter(c)
    multi = len(c.hosts) > 1 or (c.nnodes or 0) > 1
    sockets = [x for x in inter if x.kind == "NET" and (x.net or "").lower() == "socket"]
    chosen = not inter and multi and any(n.lower() == "socket" for n in log.network)
    if sockets or chosen:
        ib_off = (_env(log, "NCCL_IB_DISABLE") or "").lower() in _OFF
        n = len(sockets)
        what = (
            f"{n} inter-node connection(s) use NET/Socket (TCP)"
            if sockets
            else "NCCL chose the Socket (TCP) network for a multi-node communicator"
        )
        if log.ib_devices or ib_off:
            why = (
                "NCCL_IB_DISABLE=1 is set"
                if ib_off
                else f"RDMA devices are present ({', '.join(log.ib_devices[:4])})"
            )
            out.append(
                Finding(
                    "XP651",
                    Severity.ERROR,
                    f"{where}: {what} although {why}; "
                    "threshold 0 — unset NCCL_IB_DISABLE, do not force NCCL_NET=Socket, and check "
                    "NCCL_IB_HCA names the HCAs; TCP typically gives a fraction of RDMA bandwidth",
                    {"where": where, "socket_connections": n, "ib_devices": log.ib_devices},
                )
            )
        else:
            out.append(
                Finding(
                    "XP652",
                    Severity.WARNING,
                    f"{where}: {what} and NCCL found no "
                    f"RDMA device{' (NET/IB : No device found)' if log.ib_none else ''}; "
                    "threshold 0 — if the nodes have InfiniBand/RoCE/EFA NICs, install their "
                    "driver and rdma-core (or the aws-ofi-nccl plugin) in the container and check "
                    "NCCL_IB_HCA; NCCL_SOCKET_IFNAME="
                    f"{_env(log, 'NCCL_SOCKET_IFNAME') or 'unset'} picks the TCP interface",
                    {"where": where, "socket_connections": n},
                )
            )
    rdma = [x for x in inter if x.kind == "NET" and (x.net or "").lower() != "socket"]
    no_gdr = [x for x in rdma if not x.gdr]
    if no_gdr:
        other_gdr = any(x.gdr for x in c.connections.values())
        evidence = bool(log.ib_devices or log.gdr_disabled or other_gdr)
        why = (
            f"; NCCL said: GPU Direct RDMA Disabled for {log.gdr_disabled[0][0]}"
            if log.gdr_disabled
            else ""
        )
        out.append(
            Finding(
                "XP653",
                Severity.WARNING if evidence else Severity.INFO,
                f"{where}: {len(no_gdr)} of {len(rdma)} inter-node connection(s) via "
                f"NET/{no_gdr[0].net} run without GPUDirect RDMA (no /GDRDMA){why}; threshold 0 "
                "where the NIC supports it (InfiniBand/RoCE HCAs, EFA on p4d/p5) — load "
                "nvidia-peermem (or use DMA-BUF, NCCL_DMABUF_ENABLE=1), and if the GPU–NIC "
                "distance is the reason raise NCCL_NET_GDR_LEVEL (e.g. PHB); data is staged "
                "through host memory otherwise",
                {"where": where, "without_gdr": len(no_gdr), "net_connections": len(rdma)},
            )
        )
    sys_paths = [s for s in c.searches if s.type_inter == "SYS"] if multi else []
    if sys_paths:
        s = sys_paths[0]
        out.append(
            Finding(
                "XP655",
                Severity.WARNING,
                f"{where}: NCCL's graph search (pattern {s.pattern}, line {s.line}) reached the "
                f"NIC over a path of type {s.type_inter} — through the inter-socket link, so the "
                "NIC sits on another CPU socket than the GPUs using it; threshold: PXB or closer "
                "(PIX/PXB) — use the NICs local to each GPU's socket (NCCL_IB_HCA / "
                "NCCL_SOCKET_IFNAME; `nvidia-smi topo -m` shows the affinity) or give the real "
                "topology with NCCL_TOPO_FILE",
                {"where": where, "type_inter": s.type_inter, "line": s.line},
            )
        )
    return out


def _p2p(log: NcclLog, c: Comm, where: str) -> list[Finding]:
    intra = [x for x in c.connections.values() if _scope(c, x.src, x.dst) == "intra"]
    host_mem = [x for x in intra if x.kind in ("SHM", "NET")]
    p2p_off = (_env(log, "NCCL_P2P_DISABLE") or "").lower() in _OFF
    level = (_env(log, "NCCL_P2P_LEVEL") or "").upper()
    if not host_mem and not p2p_off and level not in ("LOC", "0"):
        return []
    setting = []
    if p2p_off:
        setting.append("NCCL_P2P_DISABLE=1")
    if level in ("LOC", "0"):
        setting.append(f"NCCL_P2P_LEVEL={level}")
    via = Counter(x.label for x in host_mem)
    detail = (
        f"{len(host_mem)} of {len(intra)} intra-node connection(s) go through host memory "
        f"({', '.join(f'{k} ×{v}' for k, v in via.items())})"
        if host_mem
        else "peer-to-peer is switched off"
    )
    return [
        Finding(
            "XP654",
            Severity.WARNING,
            f"{where}: {detail}{' — ' + ', '.join(setting) + ' is set' if setting else ''}; "
            "threshold 0 — unset NCCL_P2P_DISABLE / NCCL_P2P_LEVEL, run containers with "
            "--ipc=host (P2P/IPC needs it) and disable PCIe ACS / IOMMU isolation that blocks "
            "peer-to-peer; NCCL_SHM_DISABLE does not help",
            {"where": where, "host_memory_connections": len(host_mem), "settings": setting},
        )
    ]


def _rings(c: Comm, where: str) -> list[Finding]:
    out = []
    bad = [r for r in ring_crossings(c) if r.cross_node_edges is not None and r.minimum]
    bad = [r for r in bad if r.cross_node_edges > r.minimum]
    if bad:
        worst = max(bad, key=lambda r: r.cross_node_edges or 0)
        guessed = " (hosts partly inferred from nNodes/localRanks)" if worst.inferred else ""
        out.append(
            Finding(
                "XP656",
                Severity.WARNING,
                f"{where}: {len(bad)} of {len(c.rings)} ring(s) cross nodes more than needed — "
                f"channel {worst.channel:02d} crosses {worst.cross_node_edges} times, threshold "
                f"{worst.minimum} (one entry and exit per node){guessed}; place ranks "
                "node-major (mpirun --map-by ppr:G:node, srun --distribution=block) and leave "
                "NCCL_CROSS_NIC / NCCL_ALGO / NCCL_GRAPH_FILE at their defaults",
                {"where": where, "channels": [r.channel for r in bad]},
            )
        )
    if c.fallbacks:
        pattern, line = c.fallbacks[0]
        kind = "ring" if pattern == RING_PATTERN else f"pattern {pattern}"
        out.append(
            Finding(
                "XP657",
                Severity.WARNING,
                f"{where}: NCCL found no {kind} graph and fell back to a simple order "
                f"(line {line}, {len(c.fallbacks)} time(s)); threshold 0 — NCCL could not read "
                "the PCI/NVLink topology: expose /sys in the container, set NCCL_TOPO_FILE on "
                "virtual machines, and check NCCL_P2P_LEVEL / NCCL_MIN_NCHANNELS overrides",
                {"where": where, "fallbacks": len(c.fallbacks)},
            )
        )
    return out


def _uniform(c: Comm, where: str) -> list[Finding]:
    per_host: dict[str, set[str]] = {}
    for x in c.connections.values():
        hs, hd = c.host_of(x.src), c.host_of(x.dst)
        if hs is None or hd is None:
            continue
        per_host.setdefault(hs, set()).add(("intra " if hs == hd else "inter ") + x.label)
    if len(per_host) < 2:
        return []
    sigs = Counter(frozenset(v) for v in per_host.values())
    if len(sigs) < 2:
        return []
    common, n_common = sigs.most_common(1)[0]
    odd = [h for h, v in per_host.items() if frozenset(v) != common]
    if n_common * 2 <= len(per_host):
        odd = sorted(per_host)  # no majority: name everyone
    desc = "; ".join(f"{h}: {', '.join(sorted(per_host[h]))}" for h in odd[:4])
    return [
        Finding(
            "XP658",
            Severity.WARNING,
            f"{where}: {len(odd)} of {len(per_host)} host(s) use different transports than the "
            f"others ({desc}; most hosts: {', '.join(sorted(common))}); threshold: all hosts "
            "alike — compare that node's drivers (nvidia-peermem, RDMA), NIC state and NCCL_* "
            "environment with a good node",
            {"where": where, "hosts": odd},
        )
    ]


def _global(log: NcclLog, where: str, comms: list[Comm]) -> list[Finding]:
    missing = []
    if not any(c.connections for c in comms):
        missing.append(
            "no 'Channel … via …' transport lines (transport, GPUDirect, P2P and per-node "
            "checks skipped; set NCCL_DEBUG_SUBSYS=INIT,NET)"
        )
    crossings = [r for c in comms for r in ring_crossings(c)]
    if any(r.cross_node_edges is None for r in crossings):
        missing.append(
            "hosts of some ring ranks unknown (their crossings are not counted; the log needs "
            "each rank's 'comm … rank R' line)"
        )
    if not crossings:
        missing.append("no 'Channel NN/MM : …' ring lines (ring checks skipped)")
    if not missing:
        return []
    return [
        Finding(
            "XP659",
            Severity.INFO,
            f"{where}: " + "; ".join(missing),
            {"where": where, "missing": missing},
        )
    ]


@dataclass
class NcclReport:
    """A parsed NCCL log with its findings (what ``analyze`` and ``calibrate`` show)."""

    log: NcclLog
    findings: list[Finding]


def diagnose(paths: list, where: str | None = None) -> NcclReport:
    """Read ``paths`` (one job's NCCL INFO logs, merged) and diagnose them.

    ``where`` names the input in messages (default: the file name, or "N NCCL logs").
    Raises :class:`~xpuperf.errors.InputError` as :func:`~xpuperf.calibrate.nccllog.read_nccl_log`.
    """
    from pathlib import Path

    from xpuperf.calibrate.nccllog import read_nccl_log

    log = read_nccl_log(paths)
    if where is None:
        where = (
            Path(log.sources[0]).name
            if len(log.sources) == 1
            else (f"{len(log.sources)} NCCL logs")
        )
    return NcclReport(log, nccl_findings(log, where))
