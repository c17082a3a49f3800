"""Per-check verdicts of an NCCL debug log (issue 16): one :class:`~xpuperf.findings.Check` each.

A check is ``problem`` when it produced a finding above info, ``clean`` when the lines it needs
are in the log and show nothing wrong (the evidence is counted: "64 inter-node connection(s) via
NET/IB/GDRDMA"), ``not_checked`` when they are missing (the evidence names the lines and the
``NCCL_DEBUG`` / ``NCCL_DEBUG_SUBSYS`` setting that prints them). XP650 ("no misconfiguration")
lists only the clean checks and is given only when no check is a problem; XP659 lists the
checks not run. Which lines each check needs: docs/diagnosis.md, "NCCL debug logs".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from xpuperf.calibrate.nccllog_model import Comm, NcclLog
from xpuperf.calibrate.nccllog_net import (
    gdr_hosts,
    gpu_nic_paths,
    inter,
    is_socket,
    multi_node,
    scope,
    transports_by_host,
)
from xpuperf.calibrate.nccllog_rings import ring_crossings
from xpuperf.calibrate.nccllog_warn import classify
from xpuperf.findings import Check, CheckStatus, Finding, Severity

NET = "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"
GRAPH = "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH"
FALLBACK_INFO_FROM = (2, 27)  # the simple-order fallback is INFO(NCCL_GRAPH) from NCCL 2.27

Evidence = tuple[bool, str]  # (evidence present, what it is / what is missing)


def _counted(conns: list) -> str:
    return ", ".join(f"{lab} ×{n}" for lab, n in Counter(x.label for x in conns).most_common())


def _no_ranks(log: NcclLog, w: Comm | None) -> str | None:
    """What is missing when no line says which host a rank runs on, else None."""
    if w is not None and any(i.host for i in w.ranks.values()):
        return None
    seen = log.hosts
    if not seen or (w is not None and w.ranks):
        return "hosts of the ranks unknown (no 'host:pid:tid' prefix on the NCCL lines); " + NET
    named = ", ".join(seen[:4]) + (f" (+{len(seen) - 4} more)" if len(seen) > 4 else "")
    return (
        f"no 'comm 0x… rank R nranks N' lines, so which rank runs on which of the "
        f"{len(seen)} host(s) the line prefixes name ({named}) is unknown; rerun with "
        "NCCL_DEBUG=INFO (NCCL_DEBUG=WARN prints only the WARN lines) NCCL_DEBUG_SUBSYS=INIT,NET"
    )


def _one_host(log: NcclLog, w: Comm | None) -> str | None:
    if (why := _no_ranks(log, w)) is not None:
        return why
    if not multi_node(w):
        return "the log shows one host: no inter-node traffic to check"
    return None


def _single(w: Comm | None) -> bool:
    """All ranks of ``w`` are known to run on one host (nothing crosses or differs)."""
    return w is not None and len(w.hosts) == 1 and not multi_node(w)


def _network(log: NcclLog, w: Comm | None) -> Evidence:
    if (why := _one_host(log, w)) is not None:
        return False, why
    net = [x for x in inter(w) if x.kind == "NET"]
    if net:
        return True, f"{len(net)} inter-node connection(s) via {_counted(net)}"
    if log.network:
        return True, f"NCCL chose the network {', '.join(log.network)} ('Using network' line)"
    return False, "no inter-node 'via NET/…' transport lines and no 'Using network' line; " + NET


def _gdr(log: NcclLog, w: Comm | None) -> Evidence:
    net = [x for x in inter(w) if x.kind == "NET"] if w is not None else []
    if net and all(is_socket(x) for x in net):
        return False, "inter-node traffic runs on TCP sockets: GPUDirect RDMA does not apply"
    rdma = [x for x in net if not is_socket(x)]
    if rdma:
        n = sum(x.gdr for x in rdma)
        without = gdr_hosts(w)[0] if n < len(rdma) else []
        on = f"; without it on {', '.join(without[:4])}" if without else ""
        return True, (
            f"{n} of {len(rdma)} inter-node connection(s) use GDRDMA ({_counted(rdma)}){on}"
        )
    if log.gdr_disabled:
        return True, f"{len(log.gdr_disabled)} 'GPU Direct RDMA Disabled for …' line(s)"
    if log.gdr_enabled:
        return (
            True,
            f"{len(log.gdr_enabled)} 'GPU Direct RDMA Enabled for …' line(s), none Disabled",
        )
    if (why := _one_host(log, w)) is not None:
        return False, why
    return False, "no inter-node 'via NET/…' lines and no 'GPU Direct RDMA …' line; " + NET


def _p2p(log: NcclLog, w: Comm | None) -> Evidence:
    intra = [] if w is None else [
        x for x in w.connections.values() if scope(w, x.src, x.dst) == "intra"
    ]  # fmt: skip
    if intra:
        return True, f"{len(intra)} intra-node connection(s) via {_counted(intra)}"
    if log.p2p_off:
        return True, f"{len(log.p2p_off)} line(s) saying P2P is disabled between GPUs"
    return False, (
        "no intra-node 'Channel … via P2P|SHM' lines (one GPU per host, or the transport "
        "lines were not printed); rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,SHM"
    )


def _nic(log: NcclLog, w: Comm | None) -> Evidence:
    if (why := _one_host(log, w)) is not None:
        return False, why
    paths = gpu_nic_paths(log, w)
    if paths:
        kinds = ", ".join(f"{k} ×{n}" for k, n in Counter(paths).most_common())
        src = "graph-search 'Pattern' line(s)" if w.searches else "'NIC distance' line(s)"
        return True, f"GPU→NIC path types {kinds} from {len(paths)} {src}"
    return False, "no 'Pattern …, type X/Y' graph-search lines; " + GRAPH


def _crossings(log: NcclLog, w: Comm | None) -> Evidence:
    rings = ring_crossings(w) if w is not None else []
    if not rings:
        return False, (
            "no ring-order lines ('Channel NN/MM :  0 1 …', printed by rank 0); rerun with "
            "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT"
        )
    if _single(w):
        return False, f"one host ({w.hosts[0]}): the {len(rings)} ring(s) cross no node"
    known = [r for r in rings if r.cross_node_edges is not None]
    if not known:
        return False, (
            f"{len(rings)} ring(s), but the hosts of their ranks are unknown (each rank's "
            "'comm … rank R' line, or nNodes/localRanks, is needed)"
        )
    worst = max(r.cross_node_edges or 0 for r in known)
    least = min(r.minimum or 0 for r in known)
    part = (
        f" ({len(rings) - len(known)} more with unknown hosts)" if len(known) < len(rings) else ""
    )
    return True, (
        f"{len(known)} ring(s){part}: at most {worst} node crossing(s) per ring, minimum {least}"
    )


def _construction(log: NcclLog, w: Comm | None) -> Evidence:
    fell = sum(len(c.fallbacks) for c in log.comms)
    rings = sum(len(c.rings) for c in log.comms)
    searches = sum(len(c.searches) for c in log.comms)
    if fell:
        return True, f"{fell} fallback line(s)"
    if not rings and not searches:
        return False, "no ring-order or graph-search lines; " + GRAPH
    version = tuple(int(x) for x in log.version.split(".")[:2]) if log.version else None
    if not searches and (version is None or version >= FALLBACK_INFO_FROM):
        return False, (
            f"{rings} ring order(s) but no graph-search lines, and {log.library} "
            f"{log.version or '(version not printed)'} may print the simple-order fallback only "
            "with NCCL_DEBUG_SUBSYS=GRAPH (from 2.27); " + GRAPH
        )
    return True, f"{rings} ring order(s), {searches} graph-search line(s), no fallback line"


def _uniform(log: NcclLog, w: Comm | None) -> Evidence:
    if _single(w):
        return False, f"one host ({w.hosts[0]}): nothing to compare"
    hosts = transports_by_host(w) if w is not None else {}
    if len(hosts) >= 2:
        return True, f"transport lines from {len(hosts)} hosts compared"
    if (why := _no_ranks(log, w)) is not None:
        return False, why
    return False, f"transport lines from {len(hosts)} host(s), 2 needed; " + NET


def _warn(log: NcclLog, w: Comm | None) -> Evidence:
    total = log.info_lines + log.warn_lines
    if log.warns:
        mine = sum(classify(w.text) is not None for w in log.warns)
        other = "" if mine else ", all read by the checks above"
        return True, f"{log.warn_lines} NCCL WARN line(s) among {total} NCCL line(s){other}"
    return True, f"no NCCL WARN line among {total} NCCL line(s) (NCCL prints every WARN)"


CHECKS: list[tuple[str, str, tuple[str, ...], Callable[[NcclLog, Comm | None], Evidence]]] = [
    ("nccl.network", "inter-node network: RDMA, not TCP sockets",
     ("XP651", "XP652", "XP660"), _network),
    ("nccl.gdr", "GPUDirect RDMA between nodes", ("XP653",), _gdr),
    ("nccl.p2p", "peer-to-peer inside a node", ("XP654",), _p2p),
    ("nccl.nic_affinity", "NIC on the GPUs' CPU socket (graph search)", ("XP655",), _nic),
    ("nccl.ring_crossings", "ring node crossings", ("XP656",), _crossings),
    ("nccl.ring_construction", "ring construction (no simple-order fallback)",
     ("XP657", "XP666"), _construction),
    ("nccl.uniform", "same transports on every node", ("XP658",), _uniform),
    ("nccl.warn", "NCCL WARN lines", ("XP661", "XP662", "XP663", "XP664", "XP665"), _warn),
]  # fmt: skip
"""(name, title, finding codes, evidence function) of every NCCL check, in report order."""


def build_checks(log: NcclLog, comms: list[Comm], findings: list[Finding]) -> list[Check]:
    """One :class:`Check` per entry of :data:`CHECKS` for the world communicator."""
    w = comms[0] if comms else None
    out = []
    for name, title, codes, fn in CHECKS:
        present, text = fn(log, w)
        bad = [f for f in findings if f.code in codes and f.severity.rank > Severity.INFO.rank]
        mine = tuple(dict.fromkeys(f.code for f in findings if f.code in codes))
        if bad:
            status = CheckStatus.PROBLEM
        elif present and not mine:
            status = CheckStatus.CLEAN
        else:
            status = CheckStatus.NOT_CHECKED
            if present:  # only info findings: the log does not show whether it is a fault
                text += (
                    "; the log does not show whether this is a fault (see " + ", ".join(mine) + ")"
                )
        out.append(Check(name, title, status, text, tuple(f.code for f in bad) or mine))
    return out


def verdict_findings(log: NcclLog, where: str, checks: list[Check]) -> list[Finding]:
    """XP650 (no check a problem, at least one clean: the clean ones listed, the number not
    checked stated) and XP659 (the checks not run, with what each needs)."""
    out = []
    clean = [c for c in checks if c.status is CheckStatus.CLEAN]
    missing = [c for c in checks if c.status is CheckStatus.NOT_CHECKED]
    if clean and not any(c.status is CheckStatus.PROBLEM for c in checks):
        w = log.world
        out.append(
            Finding(
                "XP650",
                Severity.INFO,
                f"{where}: no misconfiguration found by the {len(clean)} check(s) whose evidence "
                f"the log holds ({w.nranks if w else '?'} ranks on {len(w.hosts) if w else 0} "
                "host(s)): "
                + "; ".join(f"{c.title}: {c.evidence}" for c in clean)
                + f"; {len(missing)} check(s) not checked"
                + (" (XP659)" if missing else ""),
                {
                    "where": where,
                    "clean": [c.name for c in clean],
                    "not_checked": [c.name for c in missing],
                },
            )
        )
    if missing:
        out.append(
            Finding(
                "XP659",
                Severity.INFO,
                f"{where}: {len(missing)} check(s) not checked — "
                + "; ".join(f"{c.title}: {c.evidence}" for c in missing),
                {"where": where, "missing": [c.name for c in missing]},
            )
        )
    return out
