"""Partial host descriptions that importers return, and how two of them merge.

Each importer reads what one tool prints about a machine into :class:`Imported`: one or more
:class:`HostFacts` (a partial node description: only what that tool says, everything else None),
an optional explicit rank placement (rank tables) and notes (inferences and quirks worth telling
the user). :func:`merge_hosts` combines what several files say about the same host (for example
``nvidia-smi topo -m`` gives cards, links and NICs, ``numactl -H`` the NUMA nodes' CPUs and
memory); :mod:`xpuperf.topology.importers.assemble` turns the result into a
:class:`~xpuperf.topology.model.Cluster`.

Units follow the model: ``speed_Gbps`` gigabits per second, ``memory_MB`` 1e6 bytes. Conflicting
facts raise :class:`~xpuperf.errors.InputError` naming both files.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from xpuperf.errors import InputError
from xpuperf.topology.model import Link


@dataclass
class DeviceFacts:
    """What a tool says about one card (``index`` as the tool numbers it, e.g. GPU3 → 3).

    ``cpu_affinity``: the CPUs the tool lists for the card (``nvidia-smi`` CPU Affinity; under a
    Slurm/cgroup limit only the CPUs the job may use). ``nic``: the nearest NIC by the tool's own
    distances. ``bus_id``: PCI address, kept for messages only.
    """

    index: int
    model: str | None = None
    numa_node: int | None = None
    cpu_affinity: tuple[int, ...] | None = None
    nic: str | None = None
    pcie_switch: str | None = None
    bus_id: str | None = None


@dataclass
class NicFacts:
    """One NIC. ``near_devices``: cards the tool puts on the NIC's own NUMA node (PIX…NODE in
    ``nvidia-smi topo -m``); the NIC's NUMA node is taken from them once theirs is known."""

    name: str
    speed_Gbps: float | None = None  # noqa: N815 (unit in the name, style.md rule 8)
    numa_node: int | None = None
    pcie_switch: str | None = None
    near_devices: tuple[int, ...] = ()


@dataclass
class NumaFacts:
    """One NUMA node: ``cpus`` None when the tool does not list them, () for a CPU-less node."""

    id: int
    cpus: tuple[int, ...] | None = None
    memory_MB: float | None = None  # noqa: N815 (unit in the name, style.md rule 8)


@dataclass
class HostFacts:
    """A partial description of one host, as read from one or more files.

    Attributes:
        name: host name when the source gives one (rank tables: ``server_id``), else None.
        devices / nics / numa_nodes: keyed by index, name and id.
        links: card pairs (a < b) → :class:`~xpuperf.topology.model.Link`.
        pcie_gen: PCIe generation of the cards' slots when the source gives it.
        distances: ``numactl -H`` NUMA distance matrix, (from, to) → relative distance (10 = local).
        cpu_info: lscpu facts (``cpus``, ``sockets``, ``cores_per_socket``, ``threads_per_core``,
            ``model_name``), kept for reports; the model has no field for them.
        sources: the files these facts came from.
        links_known: True when a source says which card pairs are joined directly (a link
            matrix: ``nvidia-smi topo -m``, ``rocm-smi --showtopo``, an NCCL XML with ``<gpu>``
            elements …); pairs without a link are then PCIe paths. False: ``links`` holds at most
            the PCIe paths of the tree, and direct links are not in the input.
    """

    name: str | None = None
    devices: dict[int, DeviceFacts] = field(default_factory=dict)
    nics: dict[str, NicFacts] = field(default_factory=dict)
    numa_nodes: dict[int, NumaFacts] = field(default_factory=dict)
    links: dict[tuple[int, int], Link] = field(default_factory=dict)
    pcie_gen: int | None = None
    distances: dict[tuple[int, int], int] = field(default_factory=dict)
    cpu_info: dict[str, Any] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    links_known: bool = False

    def device(self, index: int) -> DeviceFacts:
        """The card's facts, created empty on first use."""
        return self.devices.setdefault(index, DeviceFacts(index))

    def add_link(self, link: Link) -> None:
        """Record a link, stored with a < b."""
        a, b = min(link.a, link.b), max(link.a, link.b)
        self.links[(a, b)] = replace(link, a=a, b=b)


@dataclass
class Imported:
    """What one importer (or the merge of several) read.

    Attributes:
        hosts: one :class:`HostFacts` per host. Single-host tools (``nvidia-smi``, ``numactl``,
            ``lscpu``, NCCL XML, ``rocm-smi``, ``npu-smi``) give one host with ``name`` None.
        placement: rank → (position in ``hosts``, device index), or None (node-major).
        notes: inferences and quirks, one line each, prefixed with the file.
        formats: importer names that contributed.
    """

    hosts: list[HostFacts] = field(default_factory=list)
    placement: list[tuple[int, int]] | None = None
    notes: list[str] = field(default_factory=list)
    formats: list[str] = field(default_factory=list)


def single_host(source: str, fmt: str) -> tuple[Imported, HostFacts]:
    """A fresh :class:`Imported` holding one unnamed host read from ``source``."""
    host = HostFacts(sources=[source])
    return Imported(hosts=[host], formats=[fmt]), host


def _where(a: HostFacts, b: HostFacts) -> str:
    return f"{', '.join(a.sources) or '?'} vs {', '.join(b.sources) or '?'}"


def _merge_obj(old: Any, new: Any, what: str, a: HostFacts, b: HostFacts) -> Any:
    """Field by field: a value known on one side fills the other; two known values must agree."""
    out = {}
    for f in fields(old):
        x, y = getattr(old, f.name), getattr(new, f.name)
        if f.name == "near_devices":
            out[f.name] = tuple(sorted(set(x) | set(y)))
        elif x is None or x == ():
            out[f.name] = y if y is not None else x
        elif y is None or y == () or x == y or f.name == "bus_id":
            out[f.name] = x
        elif f.name == "cpu_affinity" and (set(x) <= set(y) or set(y) <= set(x)):
            out[f.name] = x if set(y) <= set(x) else y  # a cgroup-limited list is a subset
        else:
            raise InputError(
                f"{what}: {f.name} is {x!r} in one file and {y!r} in another ({_where(a, b)}); "
                "are these files from the same machine?"
            )
    return type(old)(**out)


PATH_KINDS = frozenset({"pcie", "sys"})
"""Link kinds that name the PCIe path between two cards rather than a direct link: tools that
see only the PCIe tree (lstopo, NCCL XML without ``<nvlink>``) report them for pairs another tool
(``nvidia-smi topo -m``) shows joined by NVLink; the direct link wins the merge."""


def merge_hosts(a: HostFacts, b: HostFacts) -> HostFacts:
    """Combine what two files say about the same host (see the module docstring). A card pair
    that one file links directly (nvlink, xgmi, hccs, other) and another only by its PCIe path
    (pcie, sys) keeps the direct link.

    Raises:
        InputError: the files disagree on a fact (a card's NUMA node, a NUMA node's CPUs, a link
            kind …), naming both files.
    """
    out = HostFacts(name=a.name or b.name, sources=list(dict.fromkeys(a.sources + b.sources)))
    if a.name and b.name and a.name != b.name:
        raise InputError(f"host name {a.name!r} vs {b.name!r} ({_where(a, b)})")
    for attr, what in (("devices", "card"), ("nics", "NIC"), ("numa_nodes", "NUMA node")):
        mine, theirs, dest = getattr(a, attr), getattr(b, attr), getattr(out, attr)
        for key in sorted(set(mine) | set(theirs), key=str):
            if key in mine and key in theirs:
                dest[key] = _merge_obj(mine[key], theirs[key], f"{what} {key}", a, b)
            else:
                dest[key] = mine.get(key) or theirs[key]
    for key in sorted(set(a.links) | set(b.links)):
        la, lb = a.links.get(key), b.links.get(key)
        if (
            la is not None
            and lb is not None
            and {la.kind, lb.kind} & PATH_KINDS
            and (la.kind not in PATH_KINDS or lb.kind not in PATH_KINDS)
        ):  # a direct link (nvlink …) from one file beats the PCIe path another file saw
            la = lb = la if la.kind not in PATH_KINDS else lb
        if la is not None and lb is not None and (la.kind, la.count) != (lb.kind, lb.count):
            raise InputError(
                f"cards {key[0]} and {key[1]}: link {_link(la)} in one file and {_link(lb)} in "
                f"another ({_where(a, b)}); are these files from the same machine?"
            )
        out.links[key] = la if la is not None else lb  # type: ignore[assignment]
    if a.pcie_gen and b.pcie_gen and a.pcie_gen != b.pcie_gen:
        raise InputError(f"PCIe Gen{a.pcie_gen} vs Gen{b.pcie_gen} ({_where(a, b)})")
    out.pcie_gen = a.pcie_gen or b.pcie_gen
    out.distances = {**b.distances, **a.distances}
    out.cpu_info = {**b.cpu_info, **a.cpu_info}
    out.links_known = a.links_known or b.links_known
    return out


def _link(lk: Link) -> str:
    return f"{lk.kind} ×{lk.count}" if lk.count else lk.kind


def merge(parts: list[Imported]) -> Imported:
    """Merge the results of several files.

    Unnamed single hosts all describe the same machine and merge into one. When a rank table
    names several servers, that merged single-host description applies to every server (the
    servers of one job are alike); its cards must then match each server's cards.

    Raises:
        InputError: conflicting facts, two rank tables, or card sets that do not match.
    """
    out = Imported()
    template: HostFacts | None = None
    multi: Imported | None = None
    for p in parts:
        out.notes += p.notes
        out.formats += p.formats
        if p.placement is not None or any(h.name for h in p.hosts):
            if multi is not None:
                raise InputError("two files name the servers of the job (rank tables); give one")
            multi = p
            continue
        for h in p.hosts:
            template = h if template is None else merge_hosts(template, h)
    if multi is None:
        out.hosts = [template] if template is not None else []
        return out
    out.placement = multi.placement
    for h in multi.hosts:
        if template is None:
            out.hosts.append(h)
            continue
        if h.devices and template.devices and set(h.devices) != set(template.devices):
            raise InputError(
                f"server {h.name}: {', '.join(h.sources)} lists cards {_ids(h.devices)} but "
                f"{', '.join(template.sources)} lists {_ids(template.devices)}; "
                "import files from the same kind of server"
            )
        out.hosts.append(merge_hosts(h, _copy(template)))
    return out


def _copy(h: HostFacts) -> HostFacts:
    return HostFacts(
        None,
        {k: replace(v) for k, v in h.devices.items()},
        {k: replace(v) for k, v in h.nics.items()},
        {k: replace(v) for k, v in h.numa_nodes.items()},
        dict(h.links),
        h.pcie_gen,
        dict(h.distances),
        dict(h.cpu_info),
        list(h.sources),
        h.links_known,
    )


def _ids(d: dict[int, Any]) -> str:
    from xpuperf.topology.build import format_cpus

    return format_cpus(d)
