"""Importer for ``mx-smi topo -m`` (MetaX C500/C550 driver tools; mx-smi 2.1–2.3).

Input shape: the ``=== MetaX System Management Interface Log ===`` banner and ``Attached GPUs``
line (both optional), newer versions a ``Device link type matrix`` line, then a matrix in the
shape of ``nvidia-smi topo -m``; newer versions add ``Node Affinity`` and ``CPU Affinity``
columns, and a legend follows::

            GPU0    GPU1    GPU2    GPU3    Node Affinity  CPU Affinity
    GPU0    X       MX      MX      MX      0              0-15

Cells: ``X`` (self), ``MX`` (MetaXLink), ``PIX``/``PXB``/``PHB``/``NODE`` (PCIe, as in
``nvidia-smi``), ``SYS`` (across sockets), ``ETH`` (over Ethernet), ``NA`` (unknown).

Extracted: cards; MX → link kind ``other`` (MetaXLink has no published per-link figure, so the
model gets no bandwidth: give ``bw`` by hand), PIX/PXB/PHB/NODE → ``pcie``, SYS → ``sys``, ETH →
``other``, NA → no link; PCIe switches as groups joined by PIX; NUMA node (``Node Affinity``) and
CPU affinity per card. No NIC is printed, so no card has a NIC (never guessed).

Errors: :class:`~xpuperf.errors.InputError` with file and line (see
:func:`xpuperf.topology.importers.matrix.read`), or for an affinity that cannot be read.
"""

from __future__ import annotations

import re

from xpuperf.topology.importers import matrix
from xpuperf.topology.importers.base import Imported, single_host
from xpuperf.topology.model import Link

NAME = "mx-smi"
KINDS = {"MX": "other", "PIX": "pcie", "PXB": "pcie", "PHB": "pcie", "NODE": "pcie",
         "SYS": "sys", "ETH": "other"}  # fmt: skip
NAMED = ("CPU Affinity", "Node Affinity", "NUMA Affinity")
_LABEL = re.compile(r"GPU(\d{1,4})")


def sniff(text: str) -> bool:
    """True for ``mx-smi topo -m``: a ``GPU0`` matrix with MetaX's banner, an ``MX`` cell or a
    ``Node Affinity`` column (what ``nvidia-smi topo -m`` never prints)."""
    if not re.search(r"^[ \t]+GPU0\b", text, re.M) or not re.search(r"^GPU0[ \t]+X\b", text, re.M):
        return False
    return bool(
        "MetaX" in text[:4096]
        or re.search(r"^GPU\d+[ \t].*[ \t]MX\d*[ \t]", text, re.M)
        or re.search(r"^[ \t]+GPU0\b.*Node Affinity", text, re.M)
    )


def parse(text: str, source: str = "<text>") -> Imported:
    """Read ``mx-smi topo -m`` into one host's facts (see the module docstring).

    Raises:
        InputError: as :func:`xpuperf.topology.importers.matrix.read`; a bad affinity value.
    """
    imp, host = single_host(source, NAME)
    m = matrix.read(text, source, _LABEL, NAMED, {*KINDS, "NA"}, "mx-smi topo -m")
    for card in m.cards:
        dev = host.device(card)
        vals = m.values.get(card, {})
        numa = vals.get("Node Affinity") or vals.get("NUMA Affinity") or ""
        if re.fullmatch(r"[0-9]{1,6}", numa):
            dev.numa_node = int(numa)
        dev.cpu_affinity = m.cpus(card, "CPU Affinity", source)
    unknown, mx = [], 0
    host.links_known = True  # the matrix gives every card pair
    for a, b, code in m.pairs("GPU", imp.notes, source):
        if code == "NA":
            unknown.append(f"{a}-{b}")
            continue
        mx += code == "MX"
        host.add_link(Link(a, b, KINDS[code]))
    _switches(host, m)
    if mx:
        imp.notes.append(
            f"{source}: {mx} MetaXLink (MX) pair(s) imported as kind 'other': no published "
            "per-link figure, so give their bw (e.g. from a measured p2p test) by hand"
        )
    if unknown:
        imp.notes.append(f"{source}: pairs {', '.join(unknown[:8])}: NA (unknown), no link")
    return imp


def _switches(host, m: matrix.Matrix) -> None:
    """Cards joined by PIX share a PCIe switch: sw0, sw1, … in header order."""
    k = 0
    done: set[int] = set()
    for a in m.cards:
        if a in done:
            continue
        group = [a] + [b for b in m.cards if b != a and m.codes[(a, b)] == "PIX"]
        if len(group) > 1:
            for c in group:
                host.device(c).pcie_switch = f"sw{k}"
            done |= set(group)
            k += 1
