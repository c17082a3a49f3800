"""Importer for ``rocm-smi --showtopo`` (ROCm SMI, ROCm 4.x–6.x).

Input shape: up to four matrices under ``=== title ===`` banners, then NUMA lines::

    =========================== Weight between two GPUs ============================
           GPU0         GPU1 …
    GPU0   0            15 …
    ============================ Hops between two GPUs =============================
    ========================== Link Type between two GPUs ==========================
    GPU0   0            XGMI …                        # diagonal 0 (or X); XGMI or PCIE
    ================================== Numa Nodes ==================================
    GPU 0          : (Topology) Numa Node: 0          # or GPU[0]\t\t: (Topology) Numa Node: 0
    GPU 0          : (Topology) Numa Affinity: 0

Extracted: cards, a link per pair from the Link Type matrix (XGMI → ``xgmi``, PCIE → ``pcie``;
rocm-smi gives no link count), and each card's NUMA node (``Numa Node``; ``-1`` means unknown).
Weights and hops are checked for shape only; the model has no field for them.

Errors: :class:`~xpuperf.errors.InputError` with file and line for a matrix row of the wrong
length or an unknown link type.
"""

from __future__ import annotations

import re

from xpuperf.errors import InputError
from xpuperf.topology.importers.base import Imported, single_host
from xpuperf.topology.model import Link

NAME = "rocm-smi"
KINDS = {"XGMI": "xgmi", "PCIE": "pcie"}
_NUMA = re.compile(r"^GPU\s*\[?\s*(\d+)\s*\]?\s*:\s*\(Topology\)\s*Numa Node:\s*(-?\d+)", re.I)


def sniff(text: str) -> bool:
    """True for ``rocm-smi --showtopo`` output (its matrix banners or Topology NUMA lines)."""
    return bool(
        re.search(r"(Link Type|Weight|Hops) between two GPUs", text)
        or re.search(r"\(Topology\) Numa Node:", text)
    )


def parse(text: str, source: str = "<text>") -> Imported:
    """Read ``rocm-smi --showtopo`` output into one host's facts (see the module docstring).

    Raises:
        InputError: malformed matrix rows or unknown link types (file and line).
    """
    imp, host = single_host(source, NAME)
    section, cols = "", []
    for k, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if len(line) > 1 and line[0] == line[-1] == "=":  # "==== Title ====" (a regex
            section, cols = line.strip("=").strip().lower(), []  # backtracks on long "=" runs)
            continue
        if m := _NUMA.match(line):
            nid = int(m.group(2))
            host.device(int(m.group(1))).numa_node = nid if nid >= 0 else None
            continue
        toks = line.split()
        if not toks or "between two gpus" not in section:
            continue
        if all(re.fullmatch(r"GPU\d+", t) for t in toks):
            cols = [int(t[3:]) for t in toks]
            for c in cols:
                host.device(c)
            continue
        if not cols or not re.fullmatch(r"GPU\d+", toks[0]):
            continue
        a, cells = int(toks[0][3:]), toks[1:]
        if len(cells) != len(cols):
            raise InputError(
                f"GPU{a}: {len(cells)} values for {len(cols)} GPUs ({section})", source, k
            )
        if not section.startswith("link type"):
            continue
        host.links_known = True  # the link type matrix gives every card pair
        for b, v in zip(cols, cells, strict=True):
            if a == b:
                continue
            kind = KINDS.get(v.upper())
            if kind is None:
                raise InputError(
                    f"GPU{a}/GPU{b}: link type {v!r}; expected XGMI or PCIE", source, k
                )
            if a < b:
                host.add_link(Link(a, b, kind))
    if not host.devices:
        raise InputError("no GPU matrix or NUMA lines in the rocm-smi output", source)
    return imp
