"""Calibration findings (XP6xx): what the fitted model and the topology say about the cluster.

- XP601 measured busbw plateau < 70 % of what the topology allows (needs a topology): for a
  multi-node group, the sum over the NICs used on one node of min(NIC line rate, PCIe slot)
  (ring busbw is bounded by the node's outbound bandwidth); for one node, the slowest link of
  the ring over the used cards in index order (:meth:`Cluster.path`). Likely causes are named
  from the topology (NIC on another socket, shared NIC) plus the usual software ones.
- XP602 held-out (leave-one-out) busbw error above 15 % at ≥ 1 MiB, or latency floor above 25 %.
- XP603 nccl-tests counted wrong elements or out-of-bounds values: the timings are suspect.
- XP604 no latency-dominated size measured: ``latency_us`` is an extrapolation.
- XP605 busbw still rising at the largest size: the plateau is an extrapolation.

Every message states the value, the threshold and the remedy (docs/style.md rule 9).
"""

from __future__ import annotations

from pathlib import Path

from xpuperf.calibrate.fit import BW_TARGET, LAT_TARGET, MIB, Fit
from xpuperf.calibrate.nccltests import TableInfo
from xpuperf.findings import Finding, Severity
from xpuperf.topology.model import Cluster

PLATEAU_FRACTION = 0.70  # issue 10: flag busbw below 70 % of the line rate
RISING_FRACTION = 0.90  # largest measured busbw below 90 % of the fitted plateau

SOFTWARE_CAUSES = (
    "inter-node traffic on TCP sockets instead of RDMA (NCCL_DEBUG=INFO shows 'via NET/Socket')",
    "GPUDirect RDMA off or unavailable (no '/GDRDMA' on NET lines)",
    "too few NCCL channels for the NICs (NCCL_MIN_NCHANNELS)",
    "oversubscribed or congested switch uplinks",
)


def _label(fit: Fit) -> str:
    nodes = "?" if fit.nodes is None else fit.nodes
    ranks = "?" if fit.ranks is None else fit.ranks
    files = ", ".join(Path(s).name for s in fit.sources)
    return f"{fit.collective} on {ranks} ranks / {nodes} nodes ({files})"


def _gb(x: float) -> str:
    return f"{x:.3g} GB/s"


def fit_findings(fit: Fit) -> list[Finding]:
    """XP602, XP604, XP605 for one fit."""
    out: list[Finding] = []
    acc = fit.accuracy()
    key = {"collective": fit.collective, "ranks": fit.ranks, "nodes": fit.nodes}
    bw_err, lat_err = acc["busbw_max_err_ge_1MiB"], acc["latency_floor_err"]
    bad = []
    if bw_err is not None and bw_err > BW_TARGET:
        worst = fit.points[fit.points["size_bytes"] >= MIB]
        row = worst.loc[worst["loo_error"].abs().idxmax()]
        bad.append(
            f"held-out busbw off by {bw_err:.0%} at {int(row['size_bytes']):,} B "
            f"(target {BW_TARGET:.0%} for sizes >= 1 MiB)"
        )
    if lat_err is not None and lat_err > LAT_TARGET:
        bad.append(f"latency floor off by {lat_err:.0%} (target {LAT_TARGET:.0%})")
    if bad:
        out.append(
            Finding(
                "XP602",
                Severity.WARNING,
                f"{_label(fit)}: {'; '.join(bad)}. The measured curve is irregular there "
                "(a protocol or algorithm switch, or a noisy row); rerun nccl-tests with more "
                "iterations (-n 50 -w 10), and treat predictions "
                f"near these sizes as ±{max(bw_err or 0.0, lat_err or 0.0):.0%}.",
                {**key, **acc},
            )
        )
    if not fit.latency_floor_observed:
        smallest = int(fit.points["size_bytes"].iloc[0])
        out.append(
            Finding(
                "XP604",
                Severity.INFO,
                f"{_label(fit)}: the smallest size measured is {smallest:,} B, where transfer "
                f"is more than 10% of the time, so latency_us = {fit.latency_us:.3g} µs is an "
                "extrapolation of the large-message line, not the latency floor; rerun "
                "nccl-tests from -b 8 to measure it.",
                {**key, "smallest_size_bytes": smallest},
            )
        )
    last = fit.points.iloc[-1]
    if last["measured_busbw_GBps"] < RISING_FRACTION * fit.busbw_GBps:
        out.append(
            Finding(
                "XP605",
                Severity.INFO,
                f"{_label(fit)}: busbw at the largest size ({int(last['size_bytes']):,} B) is "
                f"{_gb(last['measured_busbw_GBps'])}, below {RISING_FRACTION:.0%} of the fitted "
                f"plateau {_gb(fit.busbw_GBps)}: the plateau is extrapolated; rerun with a larger "
                "-e (max bytes).",
                {**key, "largest_busbw_GBps": float(last["measured_busbw_GBps"])},
            )
        )
    return out


def table_findings(path: str, table: TableInfo, wrong: float) -> list[Finding]:
    """XP603 for one parsed table (``wrong`` = total #wrong over its rows, new layout)."""
    bad = []
    if table.check_kind == "#wrong" and wrong > 0:
        bad.append(f"{int(wrong)} wrong elements")
    if table.out_of_bounds:
        bad.append(f"{table.out_of_bounds} out-of-bounds values")
    if not bad:
        return []
    return [
        Finding(
            "XP603",
            Severity.ERROR,
            f"{path}:{table.header_line}: nccl-tests reported {' and '.join(bad)} (threshold 0): "
            "the collective returned corrupt data, so its timings do not describe a healthy "
            "cluster; find the faulty card or link (run per node, then per pair) before "
            "calibrating.",
            {"path": path, "line": table.header_line, "collective": table.collective},
        )
    ]


def _ceiling(fit: Fit, cluster: Cluster) -> tuple[float, str, list[str]] | None:
    """(busbw ceiling GB/s, what it is, likely topology causes) or None when unknown."""
    if fit.nodes is None or fit.ranks is None or fit.nodes > len(cluster.nodes):
        return None
    per_node = max(1, fit.ranks // fit.nodes)
    causes: list[str] = []
    if fit.nodes == 1:
        node = cluster.nodes[0]
        idx = [d.index for d in node.devices][:per_node]
        if len(idx) < 2:
            return None
        paths = [node.path(a, b) for a, b in zip(idx, idx[1:] + idx[:1], strict=True)]
        worst = min(paths, key=lambda p: p.bw_GBps)
        return worst.bw_GBps, f"slowest intra-node ring link ({worst.via})", causes
    best = None
    for node in cluster.nodes[: fit.nodes]:
        devs = node.devices[:per_node]
        used = {d.nic for d in devs if d.nic} or {n.name for n in node.nics}
        total = 0.0
        for name in sorted(used):
            nic = node.nic(name)
            if nic is None or nic.bw_GBps is None:
                return None
            total += min(nic.bw_GBps, node.pcie_bw_GBps)
            if len(nic.cards) > 1:
                causes.append(f"NIC {name} on {node.name} is shared by {len(nic.cards)} cards")
        for d in devs:
            nic = node.nic(d.nic) if d.nic else None
            if (
                nic
                and nic.numa_node is not None
                and d.numa_node is not None
                and nic.numa_node != d.numa_node
            ):
                causes.append(
                    f"card {d.index} on {node.name} uses NIC {nic.name} on another socket "
                    f"(NUMA {d.numa_node}→{nic.numa_node})"
                )
        if best is None or total < best[0]:
            best = (total, f"{len(used)} NIC(s) per node, {total:.3g} GB/s line rate")
    if best is None:
        return None
    return best[0], best[1], sorted(set(causes))


def topology_findings(fit: Fit, cluster: Cluster) -> list[Finding]:
    """XP601 for one fit against a topology."""
    got = _ceiling(fit, cluster)
    if got is None:
        return []
    ceiling, what, causes = got
    frac = fit.busbw_GBps / ceiling if ceiling > 0 else float("inf")
    if frac >= PLATEAU_FRACTION:
        return []
    named = causes + (list(SOFTWARE_CAUSES) if fit.nodes and fit.nodes > 1 else [])
    return [
        Finding(
            "XP601",
            Severity.WARNING,
            f"{_label(fit)}: busbw plateau {_gb(fit.busbw_GBps)} is {frac:.0%} of the "
            f"{_gb(ceiling)} the topology allows ({what}; threshold {PLATEAU_FRACTION:.0%}). "
            f"Likely causes: {'; '.join(named) if named else 'links slower than described'}. "
            "Check with NCCL_DEBUG=INFO which transport each channel uses.",
            {
                "collective": fit.collective,
                "ranks": fit.ranks,
                "nodes": fit.nodes,
                "busbw_GBps": fit.busbw_GBps,
                "ceiling_GBps": ceiling,
                "fraction": frac,
                "causes": named,
            },
        )
    ]
