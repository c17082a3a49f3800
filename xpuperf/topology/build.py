"""Helpers that build model pieces, shared by the loader, the presets and the importers.

Link patterns (full mesh, groups, ring, PCIe tree) expand to explicit :class:`Link` pairs; NICs
get their cards; CPU lists convert between ``"0-11,24-35"`` and tuples of ints.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from itertools import combinations

from xpuperf.topology.model import PCIE_GBPS_BY_GEN, Device, Link, Nic, Node

NIC_PCIE_TOLERANCE = 1.25
"""A NIC may exceed its PCIe figure by this factor: the PCIe figures are usable, not raw, rates
(DGX-A100's 25 GB/s HDR NIC on Gen4's 24); a Gb/s vs GB/s mix-up is a factor of 8."""


def infer_pcie_GBps(nics: Iterable[Nic]) -> float:
    """PCIe figure of a node that does not give one: the smallest generation (Gen3 at least)
    whose :data:`PCIE_GBPS_BY_GEN` figure carries the fastest NIC (within the tolerance)."""
    fastest = max((n.bw_GBps for n in nics if n.bw_GBps is not None), default=0.0)
    for gen in sorted(PCIE_GBPS_BY_GEN):
        if fastest <= PCIE_GBPS_BY_GEN[gen] * NIC_PCIE_TOLERANCE:
            return PCIE_GBPS_BY_GEN[gen]
    return PCIE_GBPS_BY_GEN[max(PCIE_GBPS_BY_GEN)]


def full_mesh(
    devices: Sequence[int],
    kind: str,
    count: int | None = None,
    bw_GBps: float | None = None,
    latency_us: float | None = None,
) -> list[Link]:
    """A link between every pair of ``devices`` (also how an NVSwitch node is described:
    ``count`` = NVLinks per card, every pair can use all of them)."""
    return [Link(a, b, kind, count, bw_GBps, latency_us) for a, b in combinations(devices, 2)]


def groups(
    groups_: Iterable[Sequence[int]],
    kind: str,
    count: int | None = None,
    bw_GBps: float | None = None,
    latency_us: float | None = None,
) -> list[Link]:
    """A full mesh inside each group (e.g. ``[[0, 1, 2, 3], [4, 5, 6, 7]]``), nothing between."""
    return [lk for g in groups_ for lk in full_mesh(g, kind, count, bw_GBps, latency_us)]


def ring(
    devices: Sequence[int],
    kind: str,
    count: int | None = None,
    bw_GBps: float | None = None,
    latency_us: float | None = None,
) -> list[Link]:
    """Links between neighbours of ``devices`` in the given order, closing the ring."""
    n = len(devices)
    if n < 2:
        return []
    pairs = [(devices[i], devices[(i + 1) % n]) for i in range(n if n > 2 else 1)]
    return [Link(min(a, b), max(a, b), kind, count, bw_GBps, latency_us) for a, b in pairs]


def pcie_tree(
    devices: Sequence[Device], bw_GBps: float | None = None, latency_us: float | None = None
) -> list[Link]:
    """PCIe links between cards that share a PCIe switch."""
    by_switch: dict[str, list[int]] = {}
    for d in devices:
        if d.pcie_switch is not None:
            by_switch.setdefault(d.pcie_switch, []).append(d.index)
    return [
        lk for g in by_switch.values() for lk in full_mesh(g, "pcie", None, bw_GBps, latency_us)
    ]


def merge_links(links: Iterable[Link]) -> tuple[Link, ...]:
    """One link per pair, a < b; a later entry replaces an earlier one for the same pair."""
    out: dict[tuple[int, int], Link] = {}
    for lk in links:
        a, b = min(lk.a, lk.b), max(lk.a, lk.b)
        out[(a, b)] = replace(lk, a=a, b=b)
    return tuple(out[k] for k in sorted(out))


def assign_nearest_nics(node: Node) -> Node:
    """Give every card a NIC when none has one: a NIC on its PCIe switch, else on its NUMA node,
    else any (the only NIC, or NICs whose place is not described); cards with the same candidates
    are split over them in contiguous blocks (8 cards on 2 NICs: 0–3 and 4–7). A card on a known
    NUMA node with several placed NICs, none near it, keeps no NIC: it is not guessed.

    Returns the node unchanged when it has no NICs or any card or NIC already has an assignment.
    """
    if not node.nics or any(d.nic for d in node.devices) or any(n.cards for n in node.nics):
        return node
    by_cands: dict[tuple[str, ...], list[int]] = {}
    located = any(n.numa_node is not None or n.pcie_switch for n in node.nics)
    for d in node.devices:
        cands = [n for n in node.nics if d.pcie_switch and n.pcie_switch == d.pcie_switch]
        if not cands and d.numa_node is not None:
            cands = [n for n in node.nics if n.numa_node == d.numa_node]
        if not cands and located and len(node.nics) > 1 and d.numa_node is not None:
            continue  # the NICs are placed and none is near this card: unknown, not guessed
        names = tuple(n.name for n in (cands or node.nics))
        by_cands.setdefault(names, []).append(d.index)
    chosen: dict[int, str] = {}
    for names, cards in by_cands.items():  # contiguous blocks of cards per NIC
        for j, c in enumerate(cards):
            chosen[c] = names[j * len(names) // len(cards)]
    devices = tuple(replace(d, nic=chosen.get(d.index)) for d in node.devices)
    nics = tuple(
        replace(n, cards=tuple(i for i, nm in chosen.items() if nm == n.name)) for n in node.nics
    )
    return replace(node, devices=devices, nics=nics)


MAX_CPUS = 65_536  # far above any host (Linux NR_CPUS tops out at 8192); bounds hostile ranges


def parse_cpus(text: str) -> tuple[int, ...]:
    """``"0-11,24-35"`` → (0, …, 11, 24, …, 35).

    Raises ValueError on malformed text or more than :data:`MAX_CPUS` CPUs.
    """
    out: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if not re.fullmatch(r"[0-9]{1,9}", lo) or (sep and not re.fullmatch(r"[0-9]{1,9}", hi)):
            raise ValueError(
                f"bad CPU range {part[:40]!r}; write CPU ids and ranges like 0-11,24-35"
            )
        a, b = int(lo), int(hi) if sep else int(lo)
        if b < a or a < 0:
            raise ValueError(f"bad CPU range {part!r}")
        if b - a + 1 + len(out) > MAX_CPUS:
            raise ValueError(f"more than {MAX_CPUS} CPUs in {text[:40]!r}")
        out.extend(range(a, b + 1))
    return tuple(out)


def format_cpus(cpus: Iterable[int]) -> str:
    """(0, 1, 2, 5) → ``"0-2,5"``."""
    vals = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        parts.append(str(vals[i]) if i == j else f"{vals[i]}-{vals[j]}")
        i = j + 1
    return ",".join(parts)


def nics_for(
    names: Sequence[str],
    speed_Gbps: float | None,
    numa_nodes: Sequence[int | None] | None = None,
    switches: Sequence[str | None] | None = None,
) -> tuple[Nic, ...]:
    """NICs of one speed, with optional per-NIC NUMA node and PCIe switch."""
    return tuple(
        Nic(
            name,
            speed_Gbps,
            numa_nodes[i] if numa_nodes else None,
            (),
            switches[i] if switches else None,
        )
        for i, name in enumerate(names)
    )
