"""Turn merged importer facts (:class:`~xpuperf.topology.importers.base.Imported`) into a
:class:`~xpuperf.topology.model.Cluster`.

The facts become a description dict (``schema: xpuperf.topology/1``, every card, NUMA node, NIC,
PCIe switch and link explicit) that :func:`xpuperf.topology.loader.from_dict` validates, so an
imported cluster obeys every rule a hand-written file does and its JSON view loads back equal.

Inferences made here (each reported as a note):

- a card without a NUMA node but with a CPU affinity gets the NUMA node whose CPU list holds that
  affinity (``nvidia-smi topo -m`` + ``numactl -H``);
- with no NUMA information at all, distinct, disjoint CPU affinity sets become NUMA nodes
  0, 1, … ordered by their lowest CPU (old ``nvidia-smi`` without a NUMA Affinity column);
- a NUMA node's CPU list, when no tool lists it, is the CPU affinity of its cards, but only when
  every card has one and the cards of a node agree (otherwise a cgroup limited the lists);
- a NIC's NUMA node is that of the cards the tool places on its NUMA node.

A host whose files say nothing about which card pairs are joined directly (rank tables,
``npu-smi info``, ``lstopo``, an NCCL XML without ``<gpu>`` elements) gets no ``links`` key, so
the loader marks its links as not in the input (:attr:`~xpuperf.topology.model.Node.assumed`).
"""

from __future__ import annotations

from typing import Any

from xpuperf.errors import InputError
from xpuperf.topology.build import format_cpus
from xpuperf.topology.importers.base import HostFacts, Imported, NumaFacts
from xpuperf.topology.loader import from_dict
from xpuperf.topology.model import PCIE_GBPS_BY_GEN, Cluster
from xpuperf.topology.schema import SCHEMA_ID


def to_description(imp: Imported) -> dict[str, Any]:
    """The description dict of the merged facts (see the module docstring); adds notes to
    ``imp.notes``.

    Raises:
        InputError: no cards were found (only host files such as ``numactl -H`` or ``lscpu``).
    """
    if not imp.hosts:
        raise InputError("nothing to import")
    names = [
        h.name or ("node" if len(imp.hosts) == 1 else f"node{i}") for i, h in enumerate(imp.hosts)
    ]
    nodes = [_node(h, name, imp.notes) for h, name in zip(imp.hosts, names, strict=True)]
    out: dict[str, Any] = {"schema": SCHEMA_ID, "nodes": nodes}
    if imp.placement is not None:
        out["placement"] = [f"{names[n]}:{d}" for n, d in imp.placement]
    return out


def to_cluster(imp: Imported) -> Cluster:
    """Validate the merged facts as a description and return the Cluster.

    Raises:
        InputError: no cards, or facts the loader refuses (message names the sources).
    """
    data = to_description(imp)
    sources = sorted({s for h in imp.hosts for s in h.sources})
    try:
        return from_dict(data, source=None)
    except InputError as e:
        raise InputError(
            f"imported topology is inconsistent: {e.message}", ", ".join(sources)
        ) from None


def _node(h: HostFacts, name: str, notes: list[str]) -> dict[str, Any]:
    src = ", ".join(h.sources)
    if not h.devices:
        raise InputError(
            f"no cards found for {h.name or 'the host'}: these files describe only CPUs and "
            "memory; "
            "import them together with a card listing (nvidia-smi topo -m, rocm-smi --showtopo, "
            "npu-smi info, an NCCL topology XML or an HCCL rank table)",
            src,
        )
    devices = [h.devices[i] for i in sorted(h.devices)]
    numa = dict(h.numa_nodes)
    numa_of = {d.index: d.numa_node for d in devices}
    with_cpus = {k: set(v.cpus) for k, v in numa.items() if v.cpus}
    spanning = []
    for d in devices:  # affinity within one NUMA node's CPUs → that node
        if numa_of[d.index] is None and d.cpu_affinity and with_cpus:
            hits = [k for k, cpus in with_cpus.items() if set(d.cpu_affinity) <= cpus]
            if len(hits) == 1:
                numa_of[d.index] = hits[0]
            else:
                spanning.append(d.index)
    if spanning:
        notes.append(
            f"{src}: cards {format_cpus(spanning)}: CPU affinity not within one NUMA node's CPUs; "
            "NUMA node left unknown (are the files from the same host?)"
        )
    aff = {d.index: d.cpu_affinity for d in devices}
    if not numa and all(v is None for v in numa_of.values()) and all(aff.values()):
        sets = sorted({tuple(sorted(v)) for v in aff.values() if v}, key=min)
        if all(set(a).isdisjoint(b) for i, a in enumerate(sets) for b in sets[i + 1 :]):
            for d in devices:
                numa_of[d.index] = sets.index(tuple(sorted(aff[d.index] or ())))
            notes.append(
                f"{src}: no NUMA information; NUMA nodes 0-{len(sets) - 1} inferred from the "
                f"{len(sets)} distinct CPU affinity sets (lowest CPU first); import numactl -H "
                "from the same host to confirm"
            )
    used = {v for v in numa_of.values() if v is not None}
    used |= {n.numa_node for n in h.nics.values() if n.numa_node is not None}
    for k in used - set(numa):
        numa[k] = NumaFacts(k)
    numa_out, unknown = [], []
    for k in sorted(numa):
        cpus = numa[k].cpus
        if cpus is None:
            cpus = _cpus_from_affinity(k, devices, numa_of)
            if cpus is None:
                unknown.append(k)
        item: dict[str, Any] = {"id": k, "cpus": format_cpus(cpus or ())}
        if numa[k].memory_MB is not None:
            item["memory_MB"] = numa[k].memory_MB
        row = [h.distances.get((k, j)) for j in sorted(numa)]
        if all(d is not None for d in row):
            item["distances"] = row
        numa_out.append(item)
    if unknown:
        notes.append(
            f"{src}: NUMA nodes {format_cpus(unknown)}: CPU lists unknown (no card CPU affinity, "
            "or one limited by a cgroup); import numactl -H or lscpu from the same host"
        )
    nics = []
    for n in h.nics.values():
        nn = n.numa_node
        if nn is None and n.near_devices:
            near = {numa_of.get(c) for c in n.near_devices}
            nn = near.pop() if len(near) == 1 else None
        nics.append({"name": n.name, "speed_Gbps": n.speed_Gbps, "numa_node": nn,
                     "pcie_switch": n.pcie_switch})  # fmt: skip
    out: dict[str, Any] = {"name": name}
    if h.pcie_gen in PCIE_GBPS_BY_GEN:
        out["pcie_gen"] = h.pcie_gen
    if numa_out:
        out["numa_nodes"] = numa_out
    out["devices"] = [
        {
            "index": d.index,
            "model": d.model,
            "numa_node": numa_of[d.index],
            "nic": d.nic,
            "pcie_switch": d.pcie_switch,
        }
        for d in devices
    ]
    out["pcie_switches"] = _switches(devices, nics, numa_of)
    out["nics"] = nics
    if h.links_known:  # else no `links` key: the loader marks the node's links as assumed
        out["links"] = [
            {"a": lk.a, "b": lk.b, "kind": lk.kind, "count": lk.count, "bw_GBps": lk.bw_GBps}
            for _, lk in sorted(h.links.items())
        ]
    return out


def _cpus_from_affinity(
    k: int, devices: list[Any], numa_of: dict[int, int | None]
) -> tuple[int, ...] | None:
    """CPUs of NUMA node ``k`` from its cards' affinities, or None when they cannot be trusted."""
    if not devices or not all(d.cpu_affinity for d in devices):
        return None
    lists = {tuple(sorted(d.cpu_affinity)) for d in devices if numa_of[d.index] == k}
    return lists.pop() if len(lists) == 1 else None


def _switches(
    devices: list[Any], nics: list[dict[str, Any]], numa_of: dict[int, int | None]
) -> list[dict[str, Any]]:
    """PCIe switches named by the cards and NICs, with their NUMA node when the members agree."""
    out: dict[str, dict[str, Any]] = {}
    for d in devices:
        if d.pcie_switch:
            sw = out.setdefault(d.pcie_switch, {"name": d.pcie_switch, "devices": [], "nics": []})
            sw["devices"].append(d.index)
    for n in nics:
        if n["pcie_switch"]:
            sw = out.setdefault(
                n["pcie_switch"], {"name": n["pcie_switch"], "devices": [], "nics": []}
            )
            sw["nics"].append(n["name"])
    for sw in out.values():
        seen = {numa_of[i] for i in sw["devices"]}
        seen |= {n["numa_node"] for n in nics if n["name"] in sw["nics"]}
        seen.discard(None)
        if len(seen) == 1:
            sw["numa_node"] = seen.pop()
    return [out[k] for k in sorted(out, key=lambda s: _switch_key(s, out))]


def _switch_key(name: str, out: dict[str, dict[str, Any]]) -> tuple[int, str]:
    devs = out[name]["devices"]
    return (min(devs) if devs else 1 << 30, name)
