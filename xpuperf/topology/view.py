"""Views of a Cluster: the JSON contract (:func:`to_json_dict`) and a plain-text picture
(:func:`describe`) that the CLI prints.

JSON contract (``xpuperf topo show FILE --json -``, issue 4 item 5), stable for CI and other tools::

    {"schema": "xpuperf.topology/1", "name": str|null, "ranks": int|null (null: every slot),
     "placement": "node-major" | ["node:device", ...],
     "network": {"fabric", "switch_levels", "oversubscription", "nodes_per_leaf", "latency_us"},
     "nodes": [{"name", "pcie_bw_GBps", "sys_bw_GBps",
                "numa_nodes": [{"id", "cpus": "0-11,24-35", "memory_MB"|null,
                                "distances": [int]|null}],
                "devices": [{"index", "model", "peak_tflops", "numa_node"|null, "nic"|null,
                             "pcie_switch"|null}],
                "nics": [{"name", "speed_Gbps"|null, "numa_node"|null, "cards": [int]}],
                "links": [{"a", "b", "kind", "count"|null, "bw_GBps"|null, "latency_us"|null}],
                "pcie_switches": [{"name", "numa_node", "devices", "nics"}]}]}

Nodes are listed one by one (a ``count: 128`` entry becomes 128 nodes). The loader reads this
dict back into an equal Cluster.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict
from itertools import combinations
from typing import Any

from xpuperf.topology.build import format_cpus
from xpuperf.topology.model import Cluster, Network, Node
from xpuperf.topology.schema import SCHEMA_ID


def to_json_dict(cluster: Cluster) -> dict[str, Any]:
    """The JSON view of ``cluster`` (shape in the module docstring); loads back unchanged."""
    placement: Any = "node-major"
    if cluster.placement is not None:
        placement = [f"{cluster.nodes[n].name}:{d}" for n, d in cluster.placement]
    out: dict[str, Any] = {
        "schema": SCHEMA_ID,
        "name": cluster.name,
        "ranks": cluster.world_size,
        "placement": placement,
        "network": {**asdict(cluster.network), "assumed": sorted(cluster.network.assumed)},
        "nodes": [_node(n) for n in cluster.nodes],
    }
    return out


def _node(node: Node) -> dict[str, Any]:
    return {
        "name": node.name,
        "pcie_bw_GBps": node.pcie_bw_GBps,
        "sys_bw_GBps": node.sys_bw_GBps,
        "assumed": sorted(node.assumed),
        "numa_nodes": [
            {
                "id": n.id,
                "cpus": format_cpus(n.cpus),
                "memory_MB": n.memory_MB,
                "distances": list(n.distances) or None,
            }
            for n in node.numa_nodes
        ],
        "devices": [asdict(d) for d in node.devices],
        "nics": [{**asdict(n), "cards": list(n.cards)} for n in node.nics],
        "links": [asdict(lk) for lk in node.links],
        "pcie_switches": [
            {**asdict(s), "devices": list(s.devices), "nics": list(s.nics)}
            for s in node.pcie_switches
        ],
    }


def _shape(node: Node) -> tuple:
    """Everything but the name: nodes with the same shape are shown once."""
    return (node.devices, node.numa_nodes, node.nics, node.links, node.pcie_switches,
            node.pcie_bw_GBps, node.sys_bw_GBps, node.assumed)  # fmt: skip


def _ranges(ids: list[int]) -> str:
    return format_cpus(ids)


def describe(cluster: Cluster) -> list[str]:
    """A readable picture: per group of identical nodes, cards grouped by link kind, then NUMA
    and NIC affinity. Plain lines, no markup."""
    n_nodes = len(cluster.nodes)
    net = cluster.network
    title = f"cluster {cluster.name}" if cluster.name else "cluster"
    lines = [
        f"{title}: {n_nodes} node(s), {len(cluster.slots)} card slots, "
        f"{cluster.n_ranks} ranks ({'explicit placement' if cluster.placement else 'node-major'})",
        _network_line(net),
    ]
    groups: dict[tuple, list[Node]] = defaultdict(list)
    for node in cluster.nodes:
        groups[_shape(node)].append(node)
    for members in groups.values():
        lines.append("")
        lines.extend(_describe_node(members))
    return lines


def _mark(text: str, assumed: bool) -> str:
    return f"{text} (assumed)" if assumed else text


def _network_line(net: Network) -> str:
    """The network line; defaults that stand in for figures the input did not give say so."""
    parts = [
        (net.fabric, "fabric"),
        (f"{net.switch_levels} switch level(s)", "switch_levels"),
        (f"oversubscription {net.oversubscription:g}:1", "oversubscription"),
        (f"latency {net.latency_us:g} µs", "latency_us"),
    ]
    if all(key in net.assumed for _, key in parts):
        return "network: not in the input; assumed " + ", ".join(t for t, _ in parts)
    return "network: " + ", ".join(_mark(t, key in net.assumed) for t, key in parts)


def _describe_node(members: list[Node]) -> list[str]:
    node = members[0]
    names = node.name if len(members) == 1 else f"{node.name} … {members[-1].name}"
    models = sorted({d.model or "card" for d in node.devices})
    tf = {d.peak_tflops for d in node.devices} - {None}
    tf_txt = f", {next(iter(tf)):g} TFLOPS peak" if len(tf) == 1 else ""
    pcie = _mark(f"PCIe {node.pcie_bw_GBps:g} GB/s", "pcie_bw_GBps" in node.assumed)
    sys_bw = _mark(f"between NUMA nodes {node.sys_bw_GBps:g} GB/s", "sys_bw_GBps" in node.assumed)
    out = [
        f"node {names}" + (f" (×{len(members)})" if len(members) > 1 else "")
        + f": {len(node.devices)} × {'/'.join(models)}{tf_txt}; {pcie}, {sys_bw}"
    ]  # fmt: skip
    out.append(
        "  links between cards:"
        if node.links_known
        else "  links between cards: not in the input; the model falls back to PCIe paths "
        "(assumed):"
    )
    by_kind: dict[tuple[str, float, bool], list[tuple[int, int]]] = defaultdict(list)
    for a, b in combinations([d.index for d in node.devices], 2):
        p = node.path(a, b)
        via = re.sub(r" \d+→\d+$", "", p.via)  # one row for every pair across NUMA nodes
        by_kind[(via, p.bw_GBps, p.assumed)].append((a, b))
    for (via, bw, assumed), pairs in sorted(by_kind.items(), key=lambda kv: -kv[0][1]):
        out.append(_mark(f"    {via:<34} {bw:>7.1f} GB/s  {_pairs_text(pairs)}", assumed))
    if not by_kind:
        out.append("    (one card)")
    out.append("  NUMA and NIC affinity:")
    nic_bw = node.nic_bw_per_card_GBps()
    numa_ids = [n.id for n in node.numa_nodes] + [None]
    for nid in numa_ids:
        cards = [d.index for d in node.devices if d.numa_node == nid]
        nics = [n for n in node.nics if n.numa_node == nid]
        if not cards and not nics:
            continue
        numa = next((n for n in node.numa_nodes if n.id == nid), None)
        head = "    NUMA ?" if nid is None else f"    NUMA {nid}"
        if numa is not None and numa.cpus:
            head += f" (CPUs {format_cpus(numa.cpus)})"
        out.append(f"{head}: cards {_ranges(cards) or '-'}")
        for n in nics:
            speed = "? Gb/s" if n.speed_Gbps is None else f"{n.speed_Gbps:g} Gb/s"
            share = [nic_bw[c] for c in n.cards]
            per = f", {share[0]:g} GB/s per card" if share and share[0] is not None else ""
            out.append(f"      NIC {n.name} {speed} → cards {_ranges(list(n.cards)) or '-'}{per}")
    orphans = [d.index for d in node.devices if d.nic is None]
    if orphans and node.nics:
        out.append(f"    cards whose NIC is unknown (not in the input): {_ranges(orphans)}")
    return out


def _pairs_text(pairs: list[tuple[int, int]]) -> str:
    """``all pairs of 0-7`` / ``within 0-3, 4-7`` / explicit pairs."""
    cards = sorted({c for p in pairs for c in p})
    parent = {c: c for c in cards}

    def find(c: int) -> int:
        while parent[c] != c:
            parent[c] = parent[parent[c]]  # path halving: near O(1), not O(cards), per call
            c = parent[c]
        return c

    for a, b in pairs:
        parent[find(a)] = find(b)
    comps: dict[int, list[int]] = defaultdict(list)
    for c in cards:
        comps[find(c)].append(c)
    complete = all(
        len([p for p in pairs if p[0] in g and p[1] in g]) == len(g) * (len(g) - 1) // 2
        for g in comps.values()
    )
    left, right = {a for a, _ in pairs}, {b for _, b in pairs}
    if not left & right and len(pairs) == len(left) * len(right) and len(pairs) > 1:
        return f"between {_ranges(sorted(left))} and {_ranges(sorted(right))}"
    if complete:
        parts = [_ranges(g) for g in comps.values()]
        return ("all pairs of " if len(parts) == 1 else "within ") + ", ".join(parts)
    if len(pairs) <= 12:
        return " ".join(f"{a}-{b}" for a, b in pairs)
    return f"{len(pairs)} pairs: " + " ".join(f"{a}-{b}" for a, b in pairs[:10]) + " …"
