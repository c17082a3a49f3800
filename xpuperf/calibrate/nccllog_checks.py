"""Diagnose an NCCL INFO log (:class:`~xpuperf.calibrate.nccllog.NcclLog`): findings XP650–XP659.

Ring node crossings (:func:`ring_crossings`): a ring over R ranks on H > 1 hosts crosses a node
boundary at least H times (each host's ranks entered once and left once); NCCL's ring search
builds node-contiguous rings, so more than H crossings means ranks are not placed node-major or
the search relaxed its constraints (formulas.md §1 "Ring order"; :mod:`xpuperf.costmodel.ringorder`
counts the closed-ring edges).

Findings (value, threshold and the NCCL variable to change are in each message); the network
ones (XP651–XP653, XP655, XP660) are in :mod:`~xpuperf.calibrate.nccllog_net`, the WARN ones
(XP661–XP666) in :mod:`~xpuperf.calibrate.nccllog_warn`, the per-check verdicts (XP650, XP659 and
the :class:`~xpuperf.findings.Check` list) in :mod:`~xpuperf.calibrate.nccllog_verdict`:

======  =======  ==================================================================================
XP654   warning  connections between ranks of one host via ``SHM`` or ``NET`` (not ``P2P``), a
                 line saying P2P is disabled / failed between two GPUs, or ``NCCL_P2P_DISABLE=1``
                 / ``NCCL_P2P_LEVEL=LOC``
XP656   warning  a ring crosses nodes more than H times
XP657   warning  "Could not find a path for pattern N, falling back to simple order" (WARN in
                 2.12–2.26, INFO with NCCL_DEBUG_SUBSYS=GRAPH from 2.27) or 2.3–2.4 "Could not
                 create rings, falling back on simple ring"
XP658   warning  one host's transports differ from the other hosts'
======  =======  ==================================================================================

Sources: NCCL ``src/transport/net.cc`` (``via NET/<name>/<dev>[/GDRDMA]``), ``p2p.cc``,
``shm.cc``, ``src/graph/search.cc`` (pattern lines, simple-order fallback), ``src/graph/paths.cc``
(GPUDirect RDMA distance test), NCCL environment-variable documentation.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from xpuperf.calibrate.nccllog import RING_PATTERN, Comm, NcclLog
from xpuperf.calibrate.nccllog_net import (
    env,
    inter,
    is_socket,
    multi_node,
    network_findings,
    rdma_failure_findings,
    scope,
    transports_by_host,
)
from xpuperf.calibrate.nccllog_rings import ring_crossings
from xpuperf.calibrate.nccllog_warn import clip, warn_findings
from xpuperf.findings import Check, Finding, Severity

_OFF = {"1", "true", "yes"}


def nccl_findings(log: NcclLog, where: str = "NCCL log") -> list[Finding]:
    """Findings XP650–XP666 for ``log``; ``where`` names the file(s) in messages. Most severe
    first; XP650 ("no misconfiguration found") only when at least one check is ``clean`` and
    none is a ``problem``, naming the clean checks (:func:`evaluate`)."""
    return evaluate(log, where)[0]


def evaluate(log: NcclLog, where: str = "NCCL log") -> tuple[list[Finding], list[Check]]:
    """(findings, checks) for ``log``: one :class:`~xpuperf.findings.Check` per NCCL check
    (:data:`xpuperf.calibrate.nccllog_verdict.CHECKS`), in that order."""
    from xpuperf.calibrate.nccllog_verdict import build_checks, verdict_findings

    out: list[Finding] = []
    comms = [c for c in log.comms if (c.nranks or 0) > 1] or log.comms[:1]
    for c in comms:
        tag = where if len(comms) == 1 else f"{where} (communicator {c.key})"
        out += network_findings(log, c, tag)
        out += _p2p(log, c, tag)
        out += _rings(c, tag)
        out += _uniform(c, tag)
    if not comms:  # WARN-only log or no communicator line: the log-wide checks still run
        out += _p2p(log, None, where)
    w = comms[0] if comms else None
    rdma = w is not None and any(x.kind == "NET" and not is_socket(x) for x in inter(w))
    harmful = w is not None and multi_node(w) and not rdma
    out += rdma_failure_findings(log, where, harmful)
    out += warn_findings(log, where)
    checks = build_checks(log, comms, out)
    out += verdict_findings(log, where, checks)
    out.sort(key=lambda f: (-f.severity.rank, f.code))
    return out, checks


def _p2p(log: NcclLog, c: Comm | None, where: str) -> list[Finding]:
    intra = [] if c is None else [
        x for x in c.connections.values() if scope(c, x.src, x.dst) == "intra"
    ]  # fmt: skip
    host_mem = [x for x in intra if x.kind in ("SHM", "NET")]
    p2p_off = (env(log, "NCCL_P2P_DISABLE") or "").lower() in _OFF
    level = (env(log, "NCCL_P2P_LEVEL") or "").upper()
    said = log.p2p_off
    if not host_mem and not p2p_off and level not in ("LOC", "0") and not said:
        return []
    setting = []
    if p2p_off:
        setting.append("NCCL_P2P_DISABLE=1")
    if level in ("LOC", "0"):
        setting.append(f"NCCL_P2P_LEVEL={level}")
    via = Counter(x.label for x in host_mem)
    parts = []
    if host_mem:
        parts.append(
            f"{len(host_mem)} of {len(intra)} intra-node connection(s) go through host memory "
            f"({', '.join(f'{k} ×{v}' for k, v in via.items())})"
        )
    if said:
        hosts = sorted({h for _, h, _ in said if h})
        parts.append(
            f"NCCL said '{clip(said[0][0], 300)}' (line {said[0][2]}; {len(said)} such line(s)"
            f"{f' on {len(hosts)} host(s)' if len(hosts) > 1 else ''})"
        )
    if setting:
        parts.append(", ".join(setting) + " is set")
    if not host_mem and not said:
        parts.insert(0, "peer-to-peer is switched off")
    nvlink = any("NVLINK" in t for t, _, _ in said)
    cause = (
        "P2P fails between NVLink-connected GPUs: a hardware or driver fault (check "
        "`nvidia-smi nvlink -s`, the fabric manager on NVSwitch systems)"
        if nvlink
        else "peer-to-peer is blocked by the PCIe topology or the platform: GeForce cards have "
        "P2P disabled by the driver, PCIe ACS and the IOMMU (virtual machines, "
        "`iommu=pt` missing) stop it, and containers need --ipc=host for P2P/IPC"
    )
    return [
        Finding(
            "XP654",
            Severity.WARNING,
            f"{where}: {'; '.join(parts)}; intra-node traffic goes through host memory; "
            f"threshold 0 — {cause}; unset NCCL_P2P_DISABLE / NCCL_P2P_LEVEL, disable ACS "
            "(`setpci`, BIOS) or the IOMMU for the GPUs; NCCL_SHM_DISABLE does not help",
            {
                "where": where,
                "host_memory_connections": len(host_mem),
                "settings": setting,
                "p2p_disabled_lines": len(said),
            },
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
                f"(line {line}, {len(c.fallbacks)} time(s)), so the ring order ignores the "
                "PCI/NVLink/NIC topology; threshold 0 — NCCL could not read the topology: "
                "expose /sys in the container, set NCCL_TOPO_FILE on virtual machines, and "
                "check NCCL_P2P_LEVEL / NCCL_MIN_NCHANNELS overrides",
                {"where": where, "fallbacks": len(c.fallbacks)},
            )
        )
    return out


def _uniform(c: Comm, where: str) -> list[Finding]:
    per_host = transports_by_host(c)
    if len(per_host) < 2:
        return []
    sigs = Counter(frozenset(v) for v in per_host.values())
    if len(sigs) < 2:
        return []
    common, n_common = sigs.most_common(1)[0]
    odd = [h for h, v in per_host.items() if frozenset(v) != common]
    majority = n_common * 2 > len(per_host)
    if not majority:
        odd = sorted(per_host)  # no majority: name everyone
    desc = "; ".join(f"{h}: {', '.join(sorted(per_host[h]))}" for h in odd[:4])
    more = f" (+{len(odd) - 4} more)" if len(odd) > 4 else ""
    what = (
        f"{len(odd)} of {len(per_host)} host(s) use different transports than the others "
        f"({desc}{more}; most hosts: {', '.join(sorted(common))})"
        if majority
        else f"the {len(per_host)} hosts use different transports ({desc}{more})"
    )
    return [
        Finding(
            "XP658",
            Severity.WARNING,
            f"{where}: {what}; threshold: all hosts alike — compare the differing hosts' "
            "drivers (nvidia-peermem, RDMA), NIC state and NCCL_* environment with a good node",
            {"where": where, "hosts": odd},
        )
    ]


@dataclass
class NcclReport:
    """A parsed NCCL log with its findings and one :class:`~xpuperf.findings.Check` per NCCL
    check (what ``analyze`` and ``calibrate`` show; ``checks`` feeds the analyze result)."""

    log: NcclLog
    findings: list[Finding]
    checks: list[Check] = field(default_factory=list)


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
    findings, checks = evaluate(log, where)
    return NcclReport(log, findings, checks)
