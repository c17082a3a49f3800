"""Audit a job's CPU/NUMA binding against its topology: findings XP510–XP516.

:func:`resolve` maps every binding entry to ranks (rank → node and card by the topology's
placement; a local rank is the k-th rank placed on a node, in rank order, as torchrun's
LOCAL_RANK) and its CPUs to NUMA nodes (``numa_nodes[].cpus`` of the rank's node).
:func:`check` returns the findings, each stating value, threshold and remedy:

===== ======== ===================================================================================
code  severity fires when
===== ======== ===================================================================================
XP510 warning  a rank's CPUs are all on NUMA nodes other than its card's (remote binding)
XP511 warning  a rank's CPUs span several NUMA nodes (and it is not simply unbound)
XP512 warning  two ranks of one node, each within one NUMA node, share CPUs, and neither is
               bound to a whole NUMA node (a whole-node pool, as torchrun
               ``--numa-binding=node`` makes, is shared by design and not flagged)
XP513 warning  a rank may run on every CPU of a host with several NUMA nodes (not bound)
XP514 warning  a rank's memory is bound (membind/preferred) to NUMA nodes its CPUs are not on
XP515 info     ranks of the topology that the binding file does not mention
XP516 info     ranks whose card has no NUMA node, or one without CPUs: remote binding not checked
===== ======== ===================================================================================

Why it matters: remote CPUs put every host-device copy and every data-loader page across the
inter-socket link; PyTorch's NUMA binding documentation reports 1–10 % end-to-end from binding
ranks to their card's NUMA node (docs.pytorch.org, "NUMA Binding").

Errors: :class:`~xpuperf.errors.UsageError` when a rank's node has no NUMA CPU lists (add
``numa_nodes[].cpus`` or import ``numactl -H``/``lscpu``); :class:`~xpuperf.errors.InputError`
(binding file:line) for a rank, local rank, host, CPU or NUMA node the topology does not have.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xpuperf.errors import InputError, UsageError
from xpuperf.findings import Finding, Severity
from xpuperf.topology.binding.records import BindingFile, RankBinding
from xpuperf.topology.build import format_cpus
from xpuperf.topology.model import Cluster, Node

SHOW = 6
"""Ranks spelled out in a message; the full list is in the finding's data."""


@dataclass(frozen=True)
class Resolved:
    """One rank's binding against the topology.

    ``cpus`` OS CPU ids; ``cpu_numa`` the NUMA nodes holding them; ``mem_numa`` the memory
    binding (None: local allocation); ``card_numa`` None when unknown; ``unbound`` True when the
    rank may use every CPU of its host; ``line`` the binding file line.
    """

    rank: int
    node: str
    node_pos: int
    device: int
    card_numa: int | None
    cpus: tuple[int, ...]
    cpu_numa: tuple[int, ...]
    mem_numa: tuple[int, ...] | None
    unbound: bool
    line: int | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (``cpus`` as a ``"0-11,24-35"`` list)."""
        return {
            "rank": self.rank,
            "node": self.node,
            "device": self.device,
            "card_numa": self.card_numa,
            "cpus": format_cpus(self.cpus),
            "cpu_numa": list(self.cpu_numa),
            "mem_numa": None if self.mem_numa is None else list(self.mem_numa),
            "unbound": self.unbound,
            "line": self.line,
        }


class _Host:
    """CPU → NUMA lookups of one node; UsageError when it has no NUMA CPU lists."""

    def __init__(self, node: Node):
        self.node = node
        self.numa_of = {c: n.id for n in node.numa_nodes for c in n.cpus}
        self.cpus_of = {n.id: n.cpus for n in node.numa_nodes}
        if not self.numa_of:
            raise UsageError(
                f"node {node.name}: the topology has no NUMA CPU lists, so CPUs cannot be mapped "
                'to NUMA nodes; add numa_nodes[].cpus (e.g. {id: 0, cpus: "0-63,128-191"}) or '
                "import numactl -H or lscpu with the card listing (xpuperf topo import topo.txt "
                "numactl.txt -o cluster.yaml)"
            )
        self.all = frozenset(self.numa_of)
        self.multi = sum(1 for n in node.numa_nodes if n.cpus) > 1


def _ranks_by_node(cluster: Cluster) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for r, (pos, _) in enumerate(cluster.rank_slots):
        out.setdefault(pos, []).append(r)
    return out


def _targets(cluster: Cluster, bf: BindingFile, e: RankBinding, by_node) -> list[int]:
    """The ranks an entry applies to."""
    n = cluster.n_ranks
    if e.rank is not None:
        if e.rank >= n:
            raise InputError(
                f"rank {e.rank} is not in the topology (ranks 0-{n - 1}); is the binding from "
                "a larger job, or is the topology's ranks/placement wrong?",
                bf.source,
                e.line,
            )
        return [e.rank]
    if e.local_rank is None:
        return list(range(n))
    positions = sorted(by_node)
    if e.host is not None:
        names = {cluster.nodes[p].name: p for p in positions}
        if e.host not in names:
            raise InputError(
                f"host {e.host!r} is not a node of the topology ({', '.join(list(names)[:8])}); "
                "give rank instead of local_rank, or name the nodes as the hosts",
                bf.source,
                e.line,
            )
        positions = [names[e.host]]
    out = [by_node[p][e.local_rank] for p in positions if e.local_rank < len(by_node[p])]
    if not out:
        most = max(len(by_node[p]) for p in positions)
        raise InputError(
            f"local rank {e.local_rank} but nodes run at most {most} ranks (local 0-{most - 1})",
            bf.source,
            e.line,
        )
    return out


def resolve(cluster: Cluster, bf: BindingFile) -> list[Resolved]:
    """Every bound rank with its CPUs, NUMA nodes and card (see the module docstring).

    Raises:
        UsageError: a rank's node has no NUMA CPU lists.
        InputError: the binding names ranks, hosts, CPUs or NUMA nodes the topology lacks.
    """
    by_node = _ranks_by_node(cluster)
    _check_nproc(bf, by_node)
    hosts: dict[int, _Host] = {}
    owner: dict[int, RankBinding] = {}
    for e in bf.entries:
        for r in _targets(cluster, bf, e, by_node):
            if r in owner and (owner[r].rank is not None or e.rank is None):
                raise InputError(
                    f"rank {r} is bound twice (also at line {owner[r].line})", bf.source, e.line
                )
            owner[r] = e
    out = []
    for r in sorted(owner):
        e = owner[r]
        pos, dev = cluster.rank_slots[r]
        node = cluster.nodes[pos]
        host = hosts.get(pos) or hosts.setdefault(pos, _Host(node))
        card = node.device(dev).numa_node
        if card is not None and not host.cpus_of.get(card):
            card = None  # unknown, or a CPU-less (memory-only) NUMA node
        cpus = _cpus(e, host, card, r, by_node[pos], cluster, bf)
        if cpus is None:
            out.append(Resolved(r, node.name, pos, dev, None, (), (), None, False, e.line))
            continue
        numa = tuple(sorted({host.numa_of[c] for c in cpus}))
        mem = None
        if e.mem_nodes is not None:
            _exist(e.mem_nodes, host, bf, e, "membind")
            mem = e.mem_nodes
        unbound = e.unbound or host.all <= set(cpus)
        out.append(Resolved(r, node.name, pos, dev, card, cpus, numa, mem, unbound, e.line))
    return out


def _check_nproc(bf: BindingFile, by_node: dict[int, list[int]]) -> None:
    """A launcher's ``nproc_per_node`` against the ranks the topology places on each node."""
    n = bf.nproc_per_node
    most = max((len(v) for v in by_node.values()), default=0)
    if n is None or n == most:
        return
    if n > most:
        raise InputError(
            f"nproc_per_node {n} but the topology places at most {most} ranks on a node (one "
            "per card); is the launcher config from another machine?",
            bf.source,
        )
    bf.notes.append(
        f"{bf.source}: nproc_per_node {n} but the topology places {most} ranks on a node; "
        "give the topology the job's ranks/placement so local ranks match"
    )


def _exist(ids: tuple[int, ...], host: _Host, bf: BindingFile, e: RankBinding, what: str) -> None:
    bad = [i for i in ids if i not in host.cpus_of]
    if bad:
        raise InputError(
            f"{what}: NUMA node {bad[0]} does not exist on node {host.node.name} (it has "
            f"{format_cpus(host.cpus_of)})",
            bf.source,
            e.line,
        )


def _cpus(e, host, card, r, node_ranks, cluster, bf) -> tuple[int, ...] | None:
    """The rank's CPUs; None when they follow a card whose NUMA node is unknown or CPU-less."""
    if e.unbound:
        return tuple(sorted(host.all))
    if e.follow_card is not None:
        if card is None or not host.cpus_of.get(card):
            return None
        pool = tuple(sorted(host.cpus_of[card]))
        if e.follow_card == "node":
            return pool
        node = host.node
        peers = [q for q in node_ranks if node.device(cluster.rank_slots[q][1]).numa_node == card]
        k, n = peers.index(r), len(peers)
        share = pool[k * len(pool) // n : (k + 1) * len(pool) // n]
        return share or pool
    if e.cpu_nodes is not None:
        _exist(e.cpu_nodes, host, bf, e, "cpunodebind")
        return tuple(sorted({c for i in e.cpu_nodes for c in host.cpus_of[i]}))
    bad = [c for c in e.cpus or () if c not in host.numa_of]
    if bad:
        raise InputError(
            f"rank {r}: CPU {bad[0]} is not in the NUMA CPU lists of node {host.node.name} "
            f"({format_cpus(host.all)}); is the binding from another machine?",
            bf.source,
            e.line,
        )
    return tuple(e.cpus or ())


def check(cluster: Cluster, bf: BindingFile) -> tuple[list[Finding], list[Resolved]]:
    """Findings XP510–XP516 (most severe first) and the resolved ranks."""
    res = resolve(cluster, bf)
    multi = {r.node_pos: sum(1 for n in cluster.nodes[r.node_pos].numa_nodes if n.cpus) > 1
             for r in res}  # fmt: skip
    out: list[Finding] = []
    out += _remote(cluster, [r for r in res if r.cpus and not r.unbound and r.card_numa is not None
                             and r.card_numa not in r.cpu_numa])  # fmt: skip
    out += _spanning([r for r in res if len(r.cpu_numa) > 1 and not r.unbound
                      and (r.card_numa is None or r.card_numa in r.cpu_numa)])  # fmt: skip
    out += _overlap(cluster, res)
    out += _unbound(cluster, [r for r in res if r.unbound and multi[r.node_pos]])
    out += _membind([r for r in res if r.mem_numa is not None and r.cpus and not r.unbound
                     and not set(r.mem_numa) <= set(r.cpu_numa)])  # fmt: skip
    explicit = all(e.rank is not None or e.local_rank is not None for e in bf.entries)
    missing = sorted(set(range(cluster.n_ranks)) - {r.rank for r in res})
    if missing and explicit:
        out.append(_f("XP515", Severity.INFO,
            f"{len(missing)} of {cluster.n_ranks} ranks have no binding in {bf.source} (ranks "
            f"{_short(missing)}); threshold: every rank listed. They were not audited.",
            len(missing), 0, "collect the binding of every rank (e.g. run the same command on "
            "every rank, or srun -l so lines carry their rank)", ranks=missing))  # fmt: skip
    unknown = [r.rank for r in res if r.card_numa is None]
    if unknown:
        out.append(_f("XP516", Severity.INFO,
            f"{len(unknown)} rank(s) have a card without a known NUMA node with CPUs (ranks "
            f"{_short(unknown)}); threshold: 0. Their binding cannot be checked against the card.",
            len(unknown), 0, "give devices[].numa_node (or import nvidia-smi topo -m run outside "
            "a cgroup) and numa_nodes[].cpus", ranks=unknown))  # fmt: skip
    return sorted(out, key=lambda f: (-f.severity.rank, f.code)), res


def _f(code: str, sev: Severity, msg: str, value: Any, threshold: Any, remedy: str, **kw: Any):
    data = {"value": value, "threshold": threshold, "remedy": remedy, **kw}
    return Finding(code, sev, f"{msg} Remedy: {remedy}", data)


def _short(ranks: list[int]) -> str:
    return format_cpus(ranks)


def _some(items: list[str]) -> str:
    more = f", … and {len(items) - SHOW} more" if len(items) > SHOW else ""
    return "; ".join(items[:SHOW]) + more


def _dist(cluster: Cluster, r: Resolved) -> str:
    node = cluster.nodes[r.node_pos]
    far = [node.numa_distance(r.card_numa, n) for n in r.cpu_numa]
    near = node.numa_distance(r.card_numa, r.card_numa)
    if near is None or any(d is None for d in far):
        return ""
    return f", distance {'/'.join(str(d) for d in far)} vs {near} local"


def _fixes(cluster: Cluster, rs: list[Resolved]) -> str:
    """``ranks 0-3 → numactl --cpunodebind=0 --membind=0 (taskset -c 0-63)``, grouped by target."""
    groups: dict[tuple[int, str], list[int]] = {}
    for r in rs:
        if r.card_numa is None:
            continue
        node = cluster.nodes[r.node_pos]
        cpus = next((n.cpus for n in node.numa_nodes if n.id == r.card_numa), ())
        groups.setdefault((r.card_numa, format_cpus(cpus)), []).append(r.rank)
    items = [
        f"rank{'s' if len(ranks) > 1 else ''} {format_cpus(ranks)} → numactl --cpunodebind={n} "
        f"--membind={n} (taskset -c {cpus})"
        for (n, cpus), ranks in groups.items()
    ]
    return _some(items)


def _remote(cluster: Cluster, rs: list[Resolved]) -> list[Finding]:
    if not rs:
        return []
    items = [f"rank {r.rank} (card {r.device} of {r.node}, NUMA {r.card_numa}) on CPUs of NUMA "
             f"{format_cpus(r.cpu_numa)}{_dist(cluster, r)}" for r in rs]  # fmt: skip
    fixes = _fixes(cluster, rs)
    return [_f("XP510", Severity.WARNING,
        f"{len(rs)} rank(s) run on CPUs of a NUMA node other than their card's: {_some(items)}; "
        "threshold: the card's own NUMA node. Host-device copies and data-loader memory cross "
        "the inter-socket link (binding is typically worth 1–10%, PyTorch NUMA binding docs).",
        len(rs), 0, f"bind each rank to its card's NUMA node: {fixes}; with torchrun use "
        "--numa-binding=node.",
        ranks=[r.rank for r in rs],
        pairs=[{"rank": r.rank, "cpu_numa": list(r.cpu_numa), "card_numa": r.card_numa}
               for r in rs])]  # fmt: skip


def _spanning(rs: list[Resolved]) -> list[Finding]:
    if not rs:
        return []
    items = [f"rank {r.rank} on NUMA {format_cpus(r.cpu_numa)} (card on "
             f"{'?' if r.card_numa is None else r.card_numa})" for r in rs]  # fmt: skip
    return [_f("XP511", Severity.WARNING,
        f"{len(rs)} rank(s) are bound across several NUMA nodes: {_some(items)}; threshold: 1 "
        "NUMA node per rank. Threads and pages of one rank wander across sockets.",
        max(len(r.cpu_numa) for r in rs), 1, "bind each rank to the NUMA node of its card only "
        "(numactl --cpunodebind=N --membind=N, torchrun --numa-binding=node).",
        ranks=[r.rank for r in rs])]  # fmt: skip


def _overlap(cluster: Cluster, res: list[Resolved]) -> list[Finding]:
    by_node: dict[int, list[Resolved]] = {}
    for r in res:  # unbound (XP513) and spanning (XP511) ranks are reported there
        if r.cpus and not r.unbound and len(r.cpu_numa) == 1:
            by_node.setdefault(r.node_pos, []).append(r)
    pairs = []
    for pos, rs in by_node.items():
        for i, a in enumerate(rs):
            for b in rs[i + 1 :]:
                shared = set(a.cpus) & set(b.cpus)
                node = cluster.nodes[pos]
                pool = _is_union(a.cpus, a.cpu_numa, node) or _is_union(b.cpus, b.cpu_numa, node)
                if shared and not pool:
                    pairs.append((a, b, len(shared)))
    if not pairs:
        return []
    items = [f"ranks {a.rank} and {b.rank} on {a.node} share {n} CPU(s)" for a, b, n in pairs]
    return [_f("XP512", Severity.WARNING,
        f"{len(pairs)} pair(s) of ranks share CPUs: {_some(items)}; threshold: 0 shared CPUs "
        "(a shared whole NUMA node is allowed). The ranks' threads compete for the same cores.",
        max(n for *_, n in pairs), 0, "give each rank a disjoint CPU range on its card's NUMA "
        "node (e.g. torchrun --numa-binding=exclusive, srun --cpu-bind=cores with "
        "--cpus-per-task), or bind whole NUMA nodes.",
        pairs=[[a.rank, b.rank] for a, b, _ in pairs])]  # fmt: skip


def _is_union(cpus: tuple[int, ...], numa: tuple[int, ...], node: Node) -> bool:
    """True when ``cpus`` are exactly all the CPUs of the NUMA nodes ``numa``."""
    want = {c for n in node.numa_nodes if n.id in numa for c in n.cpus}
    return set(cpus) == want


def _unbound(cluster: Cluster, rs: list[Resolved]) -> list[Finding]:
    if not rs:
        return []
    fixes = _fixes(cluster, rs)
    return [_f("XP513", Severity.WARNING,
        f"{len(rs)} rank(s) are not bound: they may run on every CPU of their host (ranks "
        f"{_short([r.rank for r in rs])}); threshold: bound to the card's NUMA node. The "
        "scheduler moves their threads across sockets, away from the card.",
        len(rs), 0, "bind each rank to its card's NUMA node: torchrun --numa-binding=node, or a "
        f"per-rank wrapper{': ' + fixes if fixes else ''}.",
        ranks=[r.rank for r in rs])]  # fmt: skip


def _membind(rs: list[Resolved]) -> list[Finding]:
    if not rs:
        return []
    items = [f"rank {r.rank} memory on NUMA {format_cpus(r.mem_numa or ())}, CPUs on NUMA "
             f"{format_cpus(r.cpu_numa)}" for r in rs]  # fmt: skip
    return [_f("XP514", Severity.WARNING,
        f"{len(rs)} rank(s) bind memory away from their CPUs: {_some(items)}; threshold: memory "
        "on the NUMA nodes of the rank's CPUs. Every page access crosses the inter-socket link.",
        len(rs), 0, "use the same node for both: numactl --cpunodebind=N --membind=N (or "
        "--localalloc).", ranks=[r.rank for r in rs])]  # fmt: skip
