"""Importer for ``npu-smi info -t topo`` (Huawei Ascend driver tools; 23.x–25.x).

Input shape: a matrix of NPUs (``NPU0 …``; on Atlas A3 the chips by physical id, ``Phy-ID12 …``)
with a ``CPU Affinity`` column on Atlas A2 (Atlas A3/A5 print none), then a legend::

               NPU0       NPU1       …   CPU Affinity
    NPU0       X          HCCS       …   144-167
    Legend:
      X    = Self
      HCCS = Connection traversing HCCS.

Cells: ``X``, ``HCCS`` (Huawei Cache Coherence System link), ``HCCS_SW`` (HCCS through a
switch, Atlas A3), ``SIO`` (between the two dies of one package, Atlas A3), ``PIX``/``PXB``/
``PHB`` (PCIe), ``SYS`` (across NUMA nodes), ``NA`` (unknown). The same codes as CANN's
``aclrtGetDevicesTopo`` (ACL_RT_DEVS_TOPOLOGY_*).

Extracted: one card per NPU (index = the number in the label: the NPU id, or the physical chip id
as ``npu-smi info`` indexes A3 chips); HCCS and HCCS_SW → link kind ``hccs``; SIO → ``hccs`` (the
model has no die-to-die kind; a note says so); PIX/PXB/PHB → ``pcie``; SYS → ``sys``; NA → no
link; each card's CPU affinity (its NUMA node then follows from ``lscpu``/``numactl -H`` of the
same host, or from the distinct affinity sets). No NIC is printed: none is assigned.

Errors: :class:`~xpuperf.errors.InputError` with file and line (see
:func:`xpuperf.topology.importers.matrix.read`), or for an affinity that cannot be read.
"""

from __future__ import annotations

import re

from xpuperf.topology.importers import matrix
from xpuperf.topology.importers.base import Imported, single_host
from xpuperf.topology.model import Link

NAME = "npu-smi-topo"
KINDS = {"HCCS": "hccs", "HCCS_SW": "hccs", "SIO": "hccs", "PIX": "pcie", "PXB": "pcie",
         "PHB": "pcie", "SYS": "sys"}  # fmt: skip
_LABEL = re.compile(r"(?:NPU|Phy-ID)(\d{1,4})")


def sniff(text: str) -> bool:
    """True for ``npu-smi info -t topo``: an ``NPU0``/``Phy-IDn`` header and its first row."""
    head = re.search(r"^[ \t]*(NPU0|Phy-ID\d+)[ \t]+(NPU1|Phy-ID\d+)?", text, re.M)
    return bool(head and re.search(rf"^{head.group(1)}[ \t]+X\b", text, re.M))


def parse(text: str, source: str = "<text>") -> Imported:
    """Read ``npu-smi info -t topo`` into one host's facts (see the module docstring).

    Raises:
        InputError: as :func:`xpuperf.topology.importers.matrix.read`; a bad CPU affinity.
    """
    imp, host = single_host(source, NAME)
    m = matrix.read(text, source, _LABEL, ("CPU Affinity",), {*KINDS, "NA"}, "npu-smi info -t topo")
    for card in m.cards:
        host.device(card).cpu_affinity = m.cpus(card, "CPU Affinity", source)
    seen: dict[str, int] = {}
    host.links_known = True  # the matrix gives every card pair
    for a, b, code in m.pairs("NPU", imp.notes, source):
        seen[code] = seen.get(code, 0) + 1
        if code != "NA":
            host.add_link(Link(a, b, KINDS[code]))
    counts = ", ".join(f"{k} ×{v}" for k, v in sorted(seen.items()))
    note = f"{source}: npu-smi topo: {len(m.cards)} NPUs, pairs {counts}"
    if "SIO" in seen:
        note += "; SIO (die-to-die inside one package) imported as kind hccs"
    if "NA" in seen:
        note += "; NA pairs (unknown relation) get no link"
    if not any(m.values.get(c, {}).get("CPU Affinity") for c in m.cards):
        note += "; no CPU Affinity column (Atlas A3/A5): import lscpu or numactl -H for NUMA"
    imp.notes.append(note)
    return imp
