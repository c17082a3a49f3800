"""The "NCCL" section of ``xpuperf analyze`` (and ``calibrate``): terminal and JSON.

Input: a :class:`~xpuperf.calibrate.nccllog_checks.NcclReport` (parsed NCCL INFO log +
findings XP650–XP659). Presentation only.

JSON (``--json`` key ``nccl``): ``sources``, ``library`` (``NCCL`` or ``RCCL``), ``version``,
``cuda`` (``cuda12.2``; RCCL ``hip6.2``), ``ranks`` (world size),
``hosts`` (world communicator, rank order), ``network``, ``ib_devices``, ``socket_interfaces``,
``env`` (NCCL variables echoed), ``channels``, ``transports`` (``scope`` intra/inter/unknown,
``transport``, ``connections``), ``rings`` (``channel``, ``order``, ``cross_node_edges``,
``min_cross_node_edges``; null when a rank's host is unknown), ``rank_hosts`` (``rank``,
``host``, ``cuda_dev``, ``bus_id``, ``host_inferred``), ``gdr`` (``enabled``/``disabled``: the
text after "GPU Direct RDMA Enabled/Disabled for"), ``communicators`` (every communicator, world
first, same keys), ``warn_lines`` (distinct ``NCCL WARN`` messages: ``text``, ``count``),
``checks`` (one :meth:`~xpuperf.findings.Check.to_dict` per NCCL check: ``name``, ``title``,
``status`` problem/clean/not_checked, ``evidence``, ``codes``), ``findings``.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from xpuperf.calibrate.nccllog import Comm
from xpuperf.calibrate.nccllog_checks import NcclReport
from xpuperf.calibrate.nccllog_rings import ring_crossings, transport_summary
from xpuperf.calibrate.nccllog_warn import warn_counts
from xpuperf.report.common import ANALYZE_SCHEMA, safe

_SEV_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_CHECK_STYLE = {"problem": "bold red", "clean": "green", "not_checked": "dim"}
MAX_RINGS_SHOWN = 16


def _comm_dict(c: Comm) -> dict[str, Any]:
    return {
        "key": c.key,
        "ranks": c.nranks,
        "nodes": c.nnodes if c.nnodes is not None else (len(c.hosts) or None),
        "local_ranks": c.local_ranks,
        "hosts": c.hosts,
        "channels": c.n_channels,
        "transports": transport_summary(c),
        "rings": [
            {
                "channel": r.channel,
                "order": r.order,
                "cross_node_edges": r.cross_node_edges,
                "min_cross_node_edges": r.minimum,
                "hosts_inferred": r.inferred,
            }
            for r in ring_crossings(c)
        ],
        "trees": len(c.trees),
        "rank_hosts": [
            {
                "rank": i.rank,
                "host": i.host,
                "cuda_dev": i.cuda_dev,
                "bus_id": i.bus_id,
                "host_inferred": i.host_inferred,
            }
            for _, i in sorted(c.ranks.items())
        ],
        "graph_searches": [
            {
                "pattern": s.pattern,
                "n_channels": s.n_channels,
                "type_intra": s.type_intra,
                "type_inter": s.type_inter,
                "bw_intra_GBps": s.bw_intra_GBps,
                "bw_inter_GBps": s.bw_inter_GBps,
            }
            for s in c.searches
        ],
    }


def to_dict(report: NcclReport) -> dict[str, Any]:
    """The ``nccl`` object of the analyze JSON (keys in the module docstring)."""
    log = report.log
    comms = [_comm_dict(c) for c in log.comms]
    world = comms[0] if comms else {}
    return {
        "sources": log.sources,
        "library": log.library,
        "version": log.version,
        "cuda": log.cuda,
        "ranks": world.get("ranks"),
        "hosts": world.get("hosts", []),
        "network": log.network,
        "ib_devices": log.ib_devices,
        "socket_interfaces": log.socket_ifs,
        "provider": log.provider,
        "gdr": {
            "enabled": [t for t, _, _ in log.gdr_enabled],
            "disabled": [t for t, _, _ in log.gdr_disabled],
        },
        "env": {k: v for k, (v, _) in sorted(log.env.items())},
        "channels": world.get("channels"),
        "transports": world.get("transports", []),
        "rings": world.get("rings", []),
        "rank_hosts": world.get("rank_hosts", []),
        "communicators": comms,
        "warn_lines": [{"text": t, "count": n} for t, n in warn_counts(log)],
        "checks": [c.to_dict() for c in report.checks],
        "findings": [f.to_dict() for f in report.findings],
    }


def _order(order: list[int], limit: int = 24) -> str:
    text = " ".join(str(r) for r in order[:limit])
    return text + (f" … (+{len(order) - limit})" if len(order) > limit else "")


def render_nccl(
    report: NcclReport, console: Console, *, findings: bool = True, checks: bool = True
) -> None:
    """Print the NCCL section: version, ranks/hosts, network, transports, rings, checks and
    findings (``checks``/``findings`` False: the caller lists them with the others)."""
    log = report.log
    w = log.world
    lib = log.library
    version = f"{lib} {log.version}" if log.version else f"{lib} (version not printed)"
    if w is None or not w.ranks:
        seen = log.hosts
        named = ", ".join(seen[:4]) + (f" (+{len(seen) - 4} more)" if len(seen) > 4 else "")
        console.print(
            f"[bold]{safe(version)}[/] — no 'comm … rank R nranks N' lines (NCCL_DEBUG=INFO "
            "prints them), so the ranks' hosts are unknown"
            + (f"; {len(seen)} host(s) in the line prefixes: {safe(named)}" if seen else "")
        )
    else:
        hosts = w.hosts
        shown = ", ".join(hosts[:4]) + (f" (+{len(hosts) - 4} more)" if len(hosts) > 4 else "")
        console.print(
            f"[bold]{safe(version)}[/] — {w.nranks or '?'} rank(s) on {len(hosts) or '?'} "
            f"host(s): {safe(shown)}"
            + (f"; {len(log.comms) - 1} other communicator(s)" if len(log.comms) > 1 else "")
        )
    net = ", ".join(log.network) or "not printed"
    extra = []
    if log.ib_devices:
        extra.append("RDMA devices " + ", ".join(log.ib_devices[:6]))
    if log.socket_ifs:
        extra.append("sockets " + ", ".join(log.socket_ifs[:4]))
    if log.provider:
        extra.append(f"provider {log.provider}")
    console.print(
        "network: " + safe(net) + (" (" + safe("; ".join(extra)) + ")" if extra else ""),
        highlight=False,
    )
    if log.env:
        env = ", ".join(f"{k}={v}" for k, (v, _) in sorted(log.env.items()))
        console.print("environment: " + safe(env), style="dim")
    if w is not None:
        tr = transport_summary(w)
        if tr:
            text = "; ".join(f"{t['scope']} {t['transport']} ×{t['connections']}" for t in tr)
            console.print("transports: " + safe(text), highlight=False)
        else:
            console.print("transports: not in the log (no 'Channel … via …' lines)", style="dim")
        rings = ring_crossings(w)
        if rings:
            console.print(
                f"rings: {w.n_channels or len(rings)} channel(s), {len(rings)} ring order(s) "
                "in the log; node crossings per ring vs the minimum (one per node)"
            )
            tab = Table()
            for col in ("ch", "order", "crossings", "min"):
                tab.add_column(col, justify="right" if col != "order" else "left")
            for r in rings[:MAX_RINGS_SHOWN]:
                tab.add_row(
                    f"{r.channel:02d}",
                    _order(r.order),
                    "?" if r.cross_node_edges is None else str(r.cross_node_edges),
                    "?" if r.minimum is None else str(r.minimum),
                )
            console.print(tab)
    if checks and report.checks:
        console.print("checks:")
        for c in report.checks:
            st = c.status.value
            console.print(
                f"  [{_CHECK_STYLE[st]}]{st:<11}[/] {safe(c.title)}: {safe(c.evidence)}",
                highlight=False,
            )
    if findings:
        for f in report.findings:
            style = _SEV_STYLE.get(f.severity.value, "")
            console.print(f"  [{style}]{f.severity.value:<7}[/] {f.code}  {safe(f.message)}")


def nccl_only_document(report: NcclReport) -> dict[str, Any]:
    """``xpuperf.analyze/1`` document for inputs with NCCL lines and no step records: the step
    keys are null/empty, ``findings`` are the NCCL findings, ``nccl`` as :func:`to_dict`."""
    from xpuperf import __version__

    return {
        "schema": ANALYZE_SCHEMA,
        "xpuperf_version": __version__,
        "sources": report.log.sources,
        "summary": None,
        "jitter": None,
        "stragglers": [],
        "breakdown": None,
        "findings": [f.to_dict() for f in report.findings],
        "warnings": [],
        "nccl": to_dict(report),
    }
