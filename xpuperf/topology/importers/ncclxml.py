"""Importer for NCCL topology XML: files given to ``NCCL_TOPO_FILE`` (hand-written, e.g. the
Azure ND/NC images) and dumps written by ``NCCL_TOPO_DUMP_FILE`` (NCCL 2.7+).

Input shape::

    <system version="1">
      <cpu numaid="0" affinity="00000000,00ffffff" arch="x86_64" vendor="AuthenticAMD">
        <pci busid="ffff:ff:01.0" class="0x060400" link_speed="16 GT/s" link_width="16">  # bridge
          <pci busid="0003:00:00.0" class="0x030200" …>                                  # GPU
            <gpu dev="0" sm="80" rank="0" gdr="1"><nvlink target="…" count="12" tclass="…"/></gpu>
          </pci>
          <pci busid="0103:00:00.0" class="0x020700"> <nic><net name="mlx5_0" speed="200000"/></nic>
        </pci>
        <nic><net name="eth0" dev="0" speed="100000" gdr="0"/></nic>                       # no PCI
      </cpu>
    </system>

Classes: 0x03xxxx display/3D controller = GPU, 0x02xxxx network (0x020000 Ethernet, 0x020700
InfiniBand) = NIC, 0x0604xx PCI bridge = PCIe switch (the outermost bridge under a CPU names the
switch; bus ids may have non-zero domains such as 0101:). ``affinity`` is a hexadecimal CPU mask in
32-bit words separated by commas, most significant first. ``speed`` is in Mb/s.

Extracted: cards (index = ``<gpu dev>`` when every card has one, else PCI bus id order, which is
the ``nvidia-smi`` order), their NUMA node and PCIe switch; NICs (``<net name>``, else the PCI bus
id) with speed in Gb/s, NUMA node and switch; each NUMA node's CPUs from the mask; PCIe generation
from ``link_speed`` (2.5/5/8/16/32/64 GT/s → Gen1–6); NVLink peers and counts (an NVSwitch target,
class 0x068000, links every card that reaches it; a card whose ``nvlink target`` is its own bus id,
a VM artefact, gets no peer). Pairs without NVLink are ``pcie`` on one NUMA node, ``sys`` across;
when a card has no ``<gpu>`` element (hand-written ``NCCL_TOPO_FILE``, e.g. Azure NDv4) the file
does not say which pairs NVLink joins, and the host's links are marked not known.
Each card's NIC is one under its switch, else on its NUMA node (ties spread in blocks), else the
host's only NIC; with several NICs and none near, it stays unknown (never guessed).

Errors: :class:`~xpuperf.errors.InputError` for XML that does not parse (with line), a root other
than ``<system>``, bad attributes, or a DOCTYPE/ENTITY declaration (refused for safety: entity
expansion attacks).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from xpuperf.errors import InputError
from xpuperf.topology.importers.base import HostFacts, Imported, NicFacts, NumaFacts, single_host
from xpuperf.topology.model import Link

NAME = "nccl-xml"
GT_TO_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
NVSWITCH_CLASS = "0x068000"
MAX_GPUS = 256
"""Most GPUs in one file: NCCL's own ``NCCL_TOPO_MAX_NODES`` (src/graph/topo.h, 256 through
NCCL 2.2x; later releases raise it for multi-node NVLink domains). Cards are linked in pairs,
so the work grows with the square of the count; past the cap the file is refused in
seconds instead of running for minutes (issue 21)."""
_GPU_CLASS = re.compile(r"""\bclass\s*=\s*["']0x03""")


def sniff(text: str) -> bool:
    """True for an NCCL topology XML (a ``<system`` root with ``<cpu`` children)."""
    head = text.lstrip()[:4096]
    if re.match(r"(<\?xml[^>]*>\s*)?<!\s*DOCTYPE\b", head, re.I):  # refused by parse, by name
        return bool(re.search(r"<system\b", head))
    return bool(re.match(r"(<\?xml[^>]*>\s*)?<system\b", head)) and "<cpu" in text


def mask_cpus(mask: str) -> tuple[int, ...]:
    """``"00000000,0000ffff,ff000000"`` → (24, …, 47). Raises ValueError on non-hex text."""
    value = int(mask.replace(",", "").strip() or "0", 16)
    return tuple(i for i in range(value.bit_length()) if value >> i & 1)


def parse(text: str, source: str = "<text>") -> Imported:
    """Read an NCCL topology XML into one host's facts (see the module docstring).

    Raises:
        InputError: unsafe or malformed XML, or attributes that cannot be read.
    """
    if re.search(r"<!\s*(DOCTYPE|ENTITY)", text, re.I):
        raise InputError("XML with a DOCTYPE or ENTITY declaration is refused (unsafe); "
                         "NCCL topology files have none", source)  # fmt: skip
    n_gpus = len(_GPU_CLASS.findall(text))  # before parsing: a huge file is refused fast
    if n_gpus > MAX_GPUS:
        raise InputError(
            f"{n_gpus} GPUs in one topology XML, more than {MAX_GPUS} (NCCL_TOPO_MAX_NODES): "
            "not one host's topology; import each host's NCCL_TOPO_DUMP_FILE separately",
            source,
        )
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise InputError(f"not well-formed XML: {e}", source, e.position[0]) from None
    if root.tag != "system":
        raise InputError(f"root element is <{root.tag}>, expected <system>", source)
    imp, host = single_host(source, NAME)
    gpus: list[dict] = []
    nics: list[NicFacts] = []
    for cpu in root.iter("cpu"):
        numa = _int(cpu.get("numaid"), "cpu numaid", source)
        if numa is not None:
            aff = cpu.get("affinity")
            try:
                cpus = mask_cpus(aff) if aff else None
            except ValueError:
                raise InputError(
                    f"cpu {numa}: affinity {aff!r} is not a hex CPU mask", source
                ) from None
            host.numa_nodes[numa] = NumaFacts(numa, cpus)
        _walk(cpu, numa, None, gpus, nics, source)
    if not gpus and not nics:
        raise InputError("no GPU (class 0x03…) or NIC (class 0x02…) in the topology XML", source)
    _cards(host, gpus, nics, source, imp.notes)
    return imp


def _int(v: str | None, what: str, path: str) -> int | None:
    if v is None or v == "":
        return None
    try:
        return int(v, 0)
    except ValueError:
        raise InputError(f"{what} {v!r} is not an integer", path) from None


def _walk(
    el: ET.Element, numa: int | None, switch: str | None, gpus: list, nics: list, path: str
) -> None:
    for child in el:
        if child.tag == "nic":  # a NIC directly under the CPU (no PCI device)
            nics += _nets(child, None, numa, switch, path)
        if child.tag != "pci":
            continue
        cls = (child.get("class") or "").lower()
        bus = (child.get("busid") or "").lower()
        if cls.startswith("0x0604"):
            _walk(child, numa, switch or bus, gpus, nics, path)
        elif cls.startswith("0x03"):
            gpu = child.find("gpu")
            links = [] if gpu is None else [
                (n.get("target", "").lower(), _int(n.get("count"), "nvlink count", path) or 1,
                 (n.get("tclass") or "").lower())
                for n in gpu.iter("nvlink")
            ]  # fmt: skip
            gpus.append({"bus": bus, "numa": numa, "switch": switch, "links": links,
                         "dev": None if gpu is None else _int(gpu.get("dev"), "gpu dev", path),
                         "described": gpu is not None,
                         "speed": child.get("link_speed") or ""})  # fmt: skip
        elif cls.startswith("0x02"):
            found = _nets(child, bus, numa, switch, path)
            nics += found or [NicFacts(bus, None, numa, switch)]
        else:
            _walk(child, numa, switch, gpus, nics, path)


def _nets(el: ET.Element, bus: str | None, numa: int | None, switch: str | None, path: str) -> list:
    out = []
    for net in el.iter("net"):
        name = net.get("name") or bus or f"net{net.get('dev', len(out))}"
        speed = _int(net.get("speed"), f"net {name} speed", path)
        out.append(NicFacts(name, speed / 1000.0 if speed else None, numa, switch))
    return out


def _cards(host: HostFacts, gpus: list[dict], nics: list[NicFacts], path: str, notes: list) -> None:
    devs = [g["dev"] for g in gpus]
    if None in devs or len(set(devs)) != len(devs):
        gpus = sorted(gpus, key=lambda g: g["bus"])
        devs = list(range(len(gpus)))
    index = {g["bus"]: d for g, d in zip(gpus, devs, strict=True)}
    gens = set()
    for g, d in zip(gpus, devs, strict=True):
        dev = host.device(d)
        dev.numa_node, dev.pcie_switch, dev.bus_id = g["numa"], g["switch"], g["bus"]
        m = re.match(r"\s*([\d.]+)\s*GT/s", g["speed"])
        if m and float(m.group(1)) in GT_TO_GEN:
            gens.add(GT_TO_GEN[float(m.group(1))])
    host.pcie_gen = min(gens) if gens else None
    for n in nics:
        if n.name in host.nics:
            raise InputError(f"NIC {n.name} listed twice", path)
        host.nics[n.name] = n
    nvswitch: dict[int, int] = {}
    for g, d in zip(gpus, devs, strict=True):
        for target, count, tclass in g["links"]:
            if target == g["bus"]:
                notes.append(f"{path}: GPU {d} ({g['bus']}): nvlink target is the card itself "
                             f"(count {count}); no NVLink peer recorded")  # fmt: skip
            elif target in index:
                host.add_link(Link(d, index[target], "nvlink", count))
            elif tclass == NVSWITCH_CLASS:
                nvswitch[d] = nvswitch.get(d, 0) + count
    for a in sorted(nvswitch):
        for b in sorted(nvswitch):
            if a < b and (a, b) not in host.links:
                host.add_link(Link(a, b, "nvlink", min(nvswitch[a], nvswitch[b])))
    for i, a in enumerate(devs):
        for b in devs[i + 1 :]:
            key = (min(a, b), max(a, b))
            na, nb = host.devices[a].numa_node, host.devices[b].numa_node
            if key not in host.links and na is not None and nb is not None:
                host.add_link(Link(key[0], key[1], "pcie" if na == nb else "sys"))
    _assign_nics(host, sorted(devs), list(host.nics.values()), notes, path)
    host.links_known = all(g["described"] for g in gpus)
    if gpus and not host.links_known:
        bare = [d for g, d in zip(gpus, devs, strict=True) if not g["described"]]
        from xpuperf.topology.build import format_cpus

        notes.append(
            f"{path}: cards {format_cpus(bare)} have no <gpu> element (a hand-written "
            "NCCL_TOPO_FILE: NCCL finds NVLink itself at run time), so links between cards are "
            "not in the input; import NCCL_TOPO_DUMP_FILE or nvidia-smi topo -m for them"
        )


def _assign_nics(
    host: HostFacts,
    devs: list[int],
    nics: list[NicFacts],
    notes: list[str] | None = None,
    source: str = "",
) -> None:
    """Nearest NIC per card: same switch, else same NUMA node (ties spread in blocks); the host's
    only NIC when it has one; else unknown (None, with a note): a NIC is never invented."""
    if not nics:
        return
    by_cands: dict[tuple[str, ...], list[int]] = {}
    unknown = []
    for d in devs:
        dev = host.devices[d]
        cands = [n for n in nics if dev.pcie_switch and n.pcie_switch == dev.pcie_switch]
        if not cands and dev.numa_node is not None:
            cands = [n for n in nics if n.numa_node == dev.numa_node]
        if not cands and len(nics) > 1:
            unknown.append(d)
            continue
        by_cands.setdefault(tuple(n.name for n in cands or nics), []).append(d)
    for names, cards in by_cands.items():
        for j, c in enumerate(cards):
            host.devices[c].nic = names[j * len(names) // len(cards)]
    if unknown and notes is not None:
        from xpuperf.topology.build import format_cpus

        notes.append(
            f"{source}: cards {format_cpus(unknown)}: no NIC under their PCIe switch or on their "
            f"NUMA node among {len(nics)} NICs; NIC left unknown (not guessed)"
        )
