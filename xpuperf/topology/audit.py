"""``xpuperf topo check``: audit a Cluster for placements that cost bandwidth.

:func:`check` returns :class:`~xpuperf.findings.Finding` s (codes XP5xx), each message stating
the value, the threshold and the remedy, with the same three in ``data``. Identical nodes are
audited once and reported together.

Codes: XP501 NIC across the socket, XP502 NIC shared by more than 2 cards, XP503 cards without
NUMA affinity, XP504 non-uniform intra-node links, XP505 uneven link groups, XP506 rank order
crossing nodes more than needed, XP507 cards without an assigned NIC, XP508 NIC speed unknown.

Sources for the remedies: background.md (NUMA, network per card, EFLOPS), formulas.md §1 (ring
order: only 2(M−1) steps need cross nodes) and §5 (cross-NUMA NICs halved busbw, nccl-tests #347).
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Any

from xpuperf.findings import Check, CheckStatus, Finding, Severity
from xpuperf.topology.build import format_cpus
from xpuperf.topology.model import Cluster, Node
from xpuperf.topology.view import _shape

CHECK_SCHEMA = "xpuperf.topo-check/1"
"""``schema`` of the ``topo check --json`` document: ``inputs`` (files), ``findings``, ``checks``
and, with ``--binding``, ``binding`` (docs/topology.md)."""

MAX_CARDS_PER_NIC = 2
"""XP502 fires when more cards than this share one NIC."""

MIN_LINK_RATIO = 0.5
"""XP504 fires when the slowest card pair of a node gets less than this fraction of the fastest."""

FAST_KINDS = ("nvlink", "xgmi", "hccs")


def check(cluster: Cluster) -> list[Finding]:
    """All findings for ``cluster``, most severe first (then by code)."""
    groups: dict[tuple, list[Node]] = defaultdict(list)
    for node in cluster.nodes:
        groups[_shape(node)].append(node)
    out: list[Finding] = []
    multi = len(cluster.nodes) > 1
    for members in groups.values():
        where = _where(members)
        node = members[0]
        out += _nic_numa(node, where)
        out += _nic_sharing(node, where)
        out += _numa_unknown(node, where)
        if node.links_known:  # else which pairs are linked is not in the input: not checked
            out += _link_uniformity(node, where)
            out += _link_groups(node, where)
        if multi:
            out += _nic_unassigned(node, where)
        out += _nic_speed_unknown(node, where)
    out += _rank_order(cluster)
    return sorted(out, key=lambda f: (-f.severity.rank, f.code))


def _where(members: list[Node]) -> str:
    if len(members) == 1:
        return f"node {members[0].name}"
    return f"nodes {members[0].name} … {members[-1].name} (×{len(members)})"


def _f(code: str, sev: Severity, msg: str, value: Any, threshold: Any, remedy: str, **kw: Any):
    data = {"value": value, "threshold": threshold, "remedy": remedy, **kw}
    return Finding(code, sev, f"{msg} Remedy: {remedy}", data)


def _nic_numa(node: Node, where: str) -> list[Finding]:
    far: list[tuple[int, int, str, int]] = []
    for d in node.devices:
        nic = node.nic(d.nic) if d.nic else None
        known = nic is not None and nic.numa_node is not None and d.numa_node is not None
        if known and nic.numa_node != d.numa_node:
            far.append((d.index, d.numa_node, nic.name, nic.numa_node))
    if not far:
        return []
    pairs = ", ".join(f"card {c} (NUMA {a}) → {n} (NUMA {b})" for c, a, n, b in far)
    return [
        _f(
            "XP501",
            Severity.WARNING,
            f"{where}: {len(far)} card(s) reach the network through a NIC on another NUMA node "
            f"({pairs}); threshold: the NIC on the card's own NUMA node. Traffic crosses the "
            f"link between NUMA nodes ({_fig(node, 'sys_bw_GBps')}); cross-NUMA NICs halved "
            "multi-node busbw on a 2-node H100 cluster (nccl-tests #347).",
            len(far),
            0,
            "use a NIC on the card's NUMA node (NCCL_CROSS_NIC=0, NCCL_IB_HCA ordering) or move "
            "the card or NIC so each card has a NIC on its own NUMA node.",
            cards=[c for c, *_ in far],
        )
    ]


def _as(assumed: bool) -> str:
    return " (assumed: not in the input)" if assumed else ""


def _fig(node: Node, name: str) -> str:
    """``10 GB/s`` or ``10 GB/s, assumed: not in the input`` for a node figure."""
    text = f"{getattr(node, name):g} GB/s"
    return f"{text}, assumed: not in the input" if name in node.assumed else text


def _nic_sharing(node: Node, where: str) -> list[Finding]:
    out = []
    per = node.nic_bw_per_card_GBps()
    for n in node.nics:
        if len(n.cards) > MAX_CARDS_PER_NIC:
            bw = per[n.cards[0]]
            bw_txt = f"{bw:g} GB/s per card" if bw is not None else "an unknown share per card"
            out.append(
                _f(
                    "XP502",
                    Severity.WARNING,
                    f"{where}: NIC {n.name} is shared by {len(n.cards)} cards "
                    f"({format_cpus(n.cards)}), {bw_txt}; threshold: {MAX_CARDS_PER_NIC} cards "
                    "per NIC. Every cross-node collective is capped by this NIC.",
                    len(n.cards),
                    MAX_CARDS_PER_NIC,
                    "one NIC per card (EFLOPS scaled near-linearly to 64 GPUs that way), or a "
                    "hierarchical (2D) allreduce so the NIC carries 1/G of the bytes per card.",
                    nic=n.name,
                    per_card_GBps=bw,
                )
            )
    return out


def _numa_unknown(node: Node, where: str) -> list[Finding]:
    cards = [d.index for d in node.devices if d.numa_node is None]
    if not cards:
        return []
    return [
        _f(
            "XP503",
            Severity.INFO,
            f"{where}: {len(cards)} of {len(node.devices)} cards have no NUMA affinity "
            f"(cards {format_cpus(cards)}); threshold: 0. Data workers and pinned buffers cannot "
            "be checked against the card's NUMA node (correct binding is typically worth 1–10%).",
            len(cards),
            0,
            "give numa_node per card (or import `nvidia-smi topo -m` run outside a cgroup), then "
            "bind each rank's data workers to its card's NUMA node.",
            cards=cards,
        )
    ]


def _link_uniformity(node: Node, where: str) -> list[Finding]:
    idx = [d.index for d in node.devices]
    if len(idx) < 2:
        return []
    paths = {(a, b): node.path(a, b) for a, b in combinations(idx, 2)}
    (sa, sb), slow = min(paths.items(), key=lambda kv: kv[1].bw_GBps)
    (fa, fb), fast = max(paths.items(), key=lambda kv: kv[1].bw_GBps)
    ratio = slow.bw_GBps / fast.bw_GBps
    if ratio >= MIN_LINK_RATIO:
        return []
    return [
        _f(
            "XP504",
            Severity.WARNING,
            f"{where}: card pairs range from {slow.bw_GBps:g} GB/s{_as(slow.assumed)} ({sa}-{sb}, "
            f"{slow.via}) to {fast.bw_GBps:g} GB/s{_as(fast.assumed)} ({fa}-{fb}, {fast.via}), "
            f"ratio {ratio:.2f}; threshold "
            f"{MIN_LINK_RATIO}. A flat ring over the node runs at its slowest hop.",
            round(ratio, 4),
            MIN_LINK_RATIO,
            "allreduce hierarchically: inside each group of directly linked cards first, then "
            "across groups; or order the ring so it crosses the slow pairs only twice.",
            slowest_GBps=slow.bw_GBps,
            fastest_GBps=fast.bw_GBps,
        )
    ]


def _link_groups(node: Node, where: str) -> list[Finding]:
    fast = [lk for lk in node.links if lk.kind in FAST_KINDS]
    if not fast:
        return []
    parent = {d.index: d.index for d in node.devices}

    def find(c: int) -> int:
        while parent[c] != c:
            c = parent[c]
        return c

    for lk in fast:
        parent[find(lk.a)] = find(lk.b)
    comps: dict[int, list[int]] = defaultdict(list)
    for d in node.devices:
        comps[find(d.index)].append(d.index)
    sizes = sorted(len(g) for g in comps.values())
    if len(comps) < 2 or sizes[0] == sizes[-1]:
        return []
    text = ", ".join("{" + format_cpus(g) + "}" for g in comps.values())
    return [
        _f(
            "XP505",
            Severity.WARNING,
            f"{where}: fast-link groups have unequal sizes ({text}); threshold: equal groups. "
            "Hierarchical collectives over the groups are unbalanced and the smallest group's "
            "cards leave their fast links idle.",
            sizes,
            "equal",
            "check for a missing or failed link (nvidia-smi nvlink -s); otherwise place ranks so "
            "each group hosts the same number of ranks.",
            groups=list(comps.values()),
        )
    ]


def _nic_unassigned(node: Node, where: str) -> list[Finding]:
    cards = [d.index for d in node.devices if d.nic is None]
    if not cards or not node.nics:
        return []
    return [
        _f(
            "XP507",
            Severity.INFO,
            f"{where}: cards {format_cpus(cards)} have no assigned NIC; they are assumed to share "
            f"all {len(node.nics)} NIC(s) equally; threshold: every card has a NIC.",
            len(cards),
            0,
            "give devices[].nic or nics[].cards (or import nvidia-smi topo -m output).",
            cards=cards,
        )
    ]


def _nic_speed_unknown(node: Node, where: str) -> list[Finding]:
    names = [n.name for n in node.nics if n.speed_Gbps is None]
    if not names:
        return []
    return [
        _f(
            "XP508",
            Severity.INFO,
            f"{where}: NIC speed unknown for {', '.join(names)}; assumed 100 Gb/s (NCCL's default "
            "network figure); threshold: every NIC speed known.",
            len(names),
            0,
            'give speed_Gbps (or speed: "400Gbps") for each NIC; ibstat shows the rate.',
            nics=names,
        )
    ]


def _rank_order(cluster: Cluster) -> list[Finding]:
    slots = cluster.rank_slots
    n = len(slots)
    if n < 2:
        return []
    crossings = sum(slots[i][0] != slots[(i + 1) % n][0] for i in range(n))
    used = len({s[0] for s in slots})
    minimum = used if used > 1 else 0
    if crossings <= minimum:
        return []
    return [
        _f(
            "XP506",
            Severity.WARNING,
            f"rank order: a ring over ranks 0…{n - 1} crosses a node boundary {crossings} times; "
            f"threshold: {minimum} (one entry and one exit per node). Each crossing is a network "
            "step instead of an intra-node one for collectives that follow rank order.",
            crossings,
            minimum,
            "place ranks node-major (all ranks of a node contiguous), e.g. with the launcher's "
            "--map-by / block distribution.",
        )
    ]


_NO_LINKS = (
    "links between cards not in the input (which card pairs are joined directly): add "
    "nvidia-smi topo -m, rocm-smi --showtopo, npu-smi info -t topo or an NCCL_TOPO_DUMP_FILE "
    "of the host"
)

_CHECKS = (
    # name, title, codes, evidence test (node-level; None: always has evidence), missing text
    ("topology.nic_numa", "NIC on each card's NUMA node", ("XP501",),
     lambda n: bool(n.nics) and any(d.numa_node is not None for d in n.devices),
     "no NICs or no NUMA node per card in the description (nvidia-smi topo -m run on the host "
     "lists both)"),
    ("topology.nic_sharing", "cards per NIC", ("XP502",), lambda n: bool(n.nics),
     "no NICs in the description"),
    ("topology.numa_affinity", "NUMA affinity of every card", ("XP503",), None, ""),
    ("topology.link_uniformity", "uniform card-to-card links", ("XP504",),
     lambda n: len(n.devices) >= 2 and n.links_known,
     lambda c: _NO_LINKS if any(not n.links_known for n in c.nodes)
     else "fewer than 2 cards per node"),
    ("topology.link_groups", "equal fast-link groups", ("XP505",), lambda n: n.links_known,
     _NO_LINKS),
    ("topology.nic_assignment", "a NIC for every card", ("XP507",), lambda n: bool(n.nics),
     "no NICs in the description"),
    ("topology.nic_speed", "NIC speeds known", ("XP508",), lambda n: bool(n.nics),
     "no NICs in the description"),
    ("topology.rank_order", "rank order crosses nodes only where needed", ("XP506",), None, ""),
)  # fmt: skip


def checks(cluster: Cluster, findings: list[Finding]) -> list[Check]:
    """One :class:`~xpuperf.findings.Check` per audit rule of :func:`check`, from its findings:
    ``problem`` for a warning or error, ``not_checked`` when the description lacks the facts the
    rule needs (or an info finding says they are unknown, XP503/XP508), else ``clean``."""
    out = []
    for name, title, codes, has, missing in _CHECKS:
        got = [f for f in findings if f.code in codes]
        hit = tuple(sorted({f.code for f in got}))
        if any(f.severity.rank >= Severity.WARNING.rank for f in got):
            status, ev = CheckStatus.PROBLEM, got[0].message.split(" Remedy:")[0]
        elif got:
            status, ev = CheckStatus.NOT_CHECKED, got[0].message.split(" Remedy:")[0]
        elif has is not None and not all(has(n) for n in cluster.nodes):
            status = CheckStatus.NOT_CHECKED
            ev = missing(cluster) if callable(missing) else missing
        else:
            status, ev = CheckStatus.CLEAN, _clean_evidence(name, cluster)
        out.append(Check(name, title, status, ev, hit))
    return out


def _clean_evidence(name: str, cluster: Cluster) -> str:
    cards = sum(len(n.devices) for n in cluster.nodes)
    nics = sum(len(n.nics) for n in cluster.nodes)
    return {
        "topology.rank_order": f"{len(cluster.rank_slots)} ranks on {len(cluster.nodes)} node(s)",
        "topology.link_groups": "fast-link groups of equal size, or no fast links",
        "topology.numa_affinity": f"all {cards} card(s) have a NUMA node",
        "topology.link_uniformity": f"{cards} card(s): in each node the slowest card pair gets "
        f"at least {MIN_LINK_RATIO} of the fastest",
    }.get(
        name, f"{cards} card(s), {nics} NIC(s) on {len(cluster.nodes)} node(s) in the description"
    )
