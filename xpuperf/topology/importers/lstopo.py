"""Importer for ``lstopo`` / ``lstopo-no-graphics`` text output (hwloc 1.11–2.x, console/txt).

Input shape: an indented tree (two spaces per level) from ``Machine``; several objects on one
line are joined by `` + `` (each inside the previous)::

    Machine (504GB total)
      Package L#0
        NUMANode L#0 (P#0 252GB)                  # hwloc 2: a memory child of its Package/Group
        L3 L#0 (22MB)
          L2 L#0 (1024KB) + L1d L#0 (32KB) + L1i L#0 (32KB) + Core L#0
            PU L#0 (P#0)
        HostBridge                                # hwloc 2.5+: "HostBridge L#0"
          PCIBridge
            PCI 04:00.0 (3D)                      # or "PCI 10de:2330 (3D)"; -v: busid=… class=…
              CoProc(CUDA) "cuda0"
              GPU(NVML) "nvml0"                   # hwloc 1.x: GPU L#3 "nvml0"
            PCI 08:00.0 (InfiniBand)
              Net "ib0"
              OpenFabrics "mlx5_0"

hwloc 1.x nests ``Package`` (``Socket``) and the PUs under ``NUMANode L#0 (P#0 63GB) + …``.

Extracted: NUMA nodes (OS index ``P#``) with their CPUs (the ``P#`` of the PUs under the NUMA
node, or under its parent in hwloc 2; a second NUMA node under the same parent, a memory-only
node, gets an unknown CPU list) and memory (hwloc's binary units → 1e6-byte MB); cards = PCI
devices with a CUDA/NVML/RSMI/Level Zero/OpenCL child or of class 3D, indexed by the ``nvmlN``
(else ``rsmiN``, ``cudaN``, else order of appearance) number; model from ``GPUModel=`` when
verbose; NICs = PCI devices with a ``Net``/``OpenFabrics`` child or of class InfiniBand/Ethernet/
Network, named by the OpenFabrics name, else the first Net name; each device's NUMA node from the
object its host bridge hangs under (unknown when under ``Machine`` on a multi-NUMA host); PCIe
switch = the first ``PCIBridge`` under the host bridge when it holds two or more cards/NICs;
links ``pcie`` on one NUMA node, ``sys`` across (NVLink is not in lstopo's text: merge
``nvidia-smi topo -m``); each card's NIC under its switch, else on its NUMA node, else unknown.

Errors: :class:`~xpuperf.errors.InputError` when no ``Machine`` tree is found, or with file and
line for a ``P#`` that is not a number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from xpuperf.errors import InputError
from xpuperf.topology.importers.base import HostFacts, Imported, NicFacts, NumaFacts, single_host
from xpuperf.topology.importers.ncclxml import _assign_nics
from xpuperf.topology.model import Link

NAME = "lstopo"
UNITS = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
"""hwloc prints memory sizes in binary units (KB = 1024 bytes)."""
NIC_CLASSES = ("InfiniBand", "Ethernet", "Network")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_MACHINE = re.compile(r"^([ \t]*)Machine\b", re.M)
_OSDEV = re.compile(r'^(GPU|CoProc|Net|OpenFabrics|Block|DMA|Misc)\b(?:\((\w+)\))?[^"]*"([^"]*)"')
_CARD_DEV = re.compile(r"^(nvml|rsmi|cuda|ze|opencl\d+d)(\d+)$")


@dataclass
class _Obj:
    kind: str
    text: str
    line: int
    parent: _Obj | None = None
    children: list[_Obj] = field(default_factory=list)

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


def sniff(text: str) -> bool:
    """True for lstopo text: a ``Machine`` line and a ``PU``/``NUMANode`` object (``L#`` or,
    with ``-p``, ``P#``)."""
    text = _ANSI.sub("", text)
    return bool(_MACHINE.search(text) and re.search(r"\b(PU|NUMANode) [LP]#\d+", text))


def _tree(text: str, source: str) -> _Obj:
    lines = _ANSI.sub("", text).splitlines()
    start = next((i for i, ln in enumerate(lines) if _MACHINE.match(ln)), None)
    if start is None:
        raise InputError("no lstopo `Machine` line", source)
    base = len(lines[start]) - len(lines[start].lstrip())
    root = _Obj("Machine", lines[start].strip(), start + 1)
    stack: list[tuple[int, _Obj]] = [(base, root)]
    for i in range(start + 1, len(lines)):
        raw = lines[i].expandtabs(8)
        if not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip())
        if indent <= base:
            break  # the tree ended (a prompt, another tool's output)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        for part in raw.strip().split(" + "):
            obj = _Obj(part.split(" ", 1)[0].split("(", 1)[0], part, i + 1, parent)
            parent.children.append(obj)
            parent = obj
        stack.append((indent, parent))
    return root


def _p_index(obj: _Obj, source: str) -> int | None:
    m = re.search(r"\bP#([^ )]*)", obj.text)
    if m is None:
        return None
    if not re.fullmatch(r"[0-9]{1,7}", m.group(1)):
        raise InputError(f"{obj.kind}: P#{m.group(1)!r} is not a number", source, obj.line)
    return int(m.group(1))


def _memory_MB(obj: _Obj) -> float | None:
    m = re.search(r"\((?:P#\d+ )?(?:local=)?(\d+(?:\.\d+)?)\s?([KMGT]B)", obj.text)
    return None if m is None else float(m.group(1)) * UNITS[m.group(2)] / 1e6


def parse(text: str, source: str = "<text>") -> Imported:
    """Read lstopo text output into one host's facts (see the module docstring).

    Raises:
        InputError: no ``Machine`` tree, a bad ``P#``.
    """
    imp, host = single_host(source, NAME)
    root = _tree(text, source)
    numa_of_scope = _numa(root, host, source, imp.notes)
    only = next(iter(host.numa_nodes)) if len(host.numa_nodes) == 1 else None
    cards, nics = [], []
    for obj in root.walk():
        if obj.kind != "PCI":
            continue
        osdevs = [m for c in obj.children if (m := _OSDEV.match(c.text))]
        names = {m.group(3) for m in osdevs}
        cls = re.search(r"\((\w[\w-]*)\)\s*$", obj.text) or re.search(
            r"class=\w+\((\w+)\)", obj.text
        )
        cls_name = cls.group(1) if cls else ""
        where = _where(obj, numa_of_scope, only)
        if any(_CARD_DEV.match(n) for n in names) or cls_name == "3D":
            model = re.search(r'GPUModel="([^"]+)"', " ".join(c.text for c in obj.children))
            cards.append((names, where, model.group(1) if model else None, obj))
        elif cls_name in NIC_CLASSES or any(m.group(1) in ("Net", "OpenFabrics") for m in osdevs):
            fabric = [m.group(3) for m in osdevs if m.group(1) == "OpenFabrics"]
            net = [m.group(3) for m in osdevs if m.group(1) == "Net"]
            nics.append(((fabric or net or [_bus(obj)])[0], where, obj))
    if not cards and not nics:
        raise InputError("lstopo output without cards or NICs (run lstopo with its I/O "
                         "devices shown, e.g. lstopo-no-graphics --whole-io)", source)  # fmt: skip
    switches = _switches([c[3] for c in cards] + [n[2] for n in nics])
    for idx, (_, where, model, obj) in zip(_indices(cards), cards, strict=True):
        dev = host.device(idx)
        dev.numa_node, dev.model, dev.bus_id = where, model, _bus(obj)
        dev.pcie_switch = switches.get(id(obj))
    for name, where, obj in nics:
        if name in host.nics:
            raise InputError(f"NIC {name} listed twice", source, obj.line)
        host.nics[name] = NicFacts(name, None, where, switches.get(id(obj)))
    devs = sorted(host.devices)
    for i, a in enumerate(devs):
        for b in devs[i + 1 :]:
            na, nb = host.devices[a].numa_node, host.devices[b].numa_node
            if na is not None and nb is not None:
                host.add_link(Link(a, b, "pcie" if na == nb else "sys"))
    _assign_nics(host, devs, list(host.nics.values()), imp.notes, source)
    imp.notes.append(
        f"{source}: lstopo: {len(devs)} card(s), {len(host.nics)} NIC(s); NVLink and NIC "
        "speeds are not in lstopo's text (merge nvidia-smi topo -m for NVLink pairs)"
    )
    return imp


def _numa(root: _Obj, host: HostFacts, source: str, notes: list[str]) -> dict[int, int]:
    """Fill the NUMA nodes; return id(scope object) → NUMA id for locating PCI devices."""
    scope: dict[int, int] = {}
    shared: list[int] = []
    for obj in root.walk():
        if obj.kind != "NUMANode":
            continue
        nid = _p_index(obj, source)
        if nid is None:
            continue
        pus = _pus(obj, source)
        owner = obj if pus or obj.parent is None else obj.parent
        if not pus and obj.parent is not None:
            if id(obj.parent) in scope:  # a second node under the same parent: memory-only
                shared.append(nid)
                host.numa_nodes[nid] = NumaFacts(nid, None, _memory_MB(obj))
                continue
            pus = _pus(obj.parent, source)
        scope.setdefault(id(owner), nid)
        host.numa_nodes[nid] = NumaFacts(nid, tuple(sorted(pus)), _memory_MB(obj))
    if shared:
        notes.append(f"{source}: NUMA nodes {shared}: share their CPUs' parent with another "
                     "node (memory-only nodes?); CPU lists left unknown")  # fmt: skip
    return scope


def _pus(obj: _Obj, source: str) -> list[int]:
    return [p for o in obj.walk() if o.kind == "PU" and (p := _p_index(o, source)) is not None]


def _where(obj: _Obj, scope: dict[int, int], only: int | None) -> int | None:
    """The NUMA node of a PCI device: that of the nearest ancestor owning one."""
    a = obj.parent
    while a is not None:
        if id(a) in scope:
            return scope[id(a)]
        a = a.parent
    return only


def _bus(obj: _Obj) -> str:
    m = re.search(r"busid=([0-9a-fA-F:.]+)", obj.text) or re.search(r"^PCI\s+(\S+)", obj.text)
    return m.group(1).lower() if m else f"line{obj.line}"


def _switches(objs: list[_Obj]) -> dict[int, str]:
    """id(device) → ``swK`` for devices sharing the first PCIBridge under their host bridge."""
    first: dict[int, _Obj] = {}
    for o in objs:
        chain, a = [], o.parent
        while a is not None and a.kind != "HostBridge":
            chain.append(a)
            a = a.parent
        bridges = [b for b in reversed(chain) if b.kind == "PCIBridge"]
        if bridges:
            first[id(o)] = bridges[0]
    groups: dict[int, list[int]] = {}
    for dev, br in first.items():
        groups.setdefault(id(br), []).append(dev)
    out, k = {}, 0
    for members in groups.values():
        if len(members) >= 2:
            out |= dict.fromkeys(members, f"sw{k}")
            k += 1
    return out


def _indices(cards: list[tuple]) -> list[int]:
    """Card indices: the nvml (else rsmi, cuda, ze) number when every card has a distinct one,
    else the order of appearance."""
    for prefix in ("nvml", "rsmi", "cuda", "ze"):
        nums = []
        for names, *_ in cards:
            hits = [int(m.group(2)) for n in names if (m := _CARD_DEV.match(n))
                    and m.group(1) == prefix]  # fmt: skip
            nums.append(hits[0] if hits else None)
        if None not in nums and len(set(nums)) == len(nums):
            return nums  # type: ignore[return-value]
    return list(range(len(cards)))
