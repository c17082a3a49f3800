"""Importer for the device table of ``npu-smi info`` (Huawei Ascend driver tools; 23.x–25.x).

Input shape: a box-drawn table with two rows per chip::

    | NPU   Name                | Health        | Power(W) …                                   |
    | Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)  |
    | 0     Ascend910           | OK            | 165.4       37                0    / 0     |
    | 0     0                   | 0000:9D:00.0  | 0           0    / 0          3173 / 65536 |

Older tables (Atlas 800 A2) have a ``Chip`` column only, one chip per NPU. The per-process table
that may follow (``| NPU  Chip | Process id |``) is ignored.

Extracted: one device per chip, indexed by Phy-ID (else by NPU id, or by order when an NPU has
several chips), model from the Name column, PCI bus id. HBM capacity (MB) is read into the note
only; the model has no per-card memory field.

Errors: :class:`~xpuperf.errors.InputError` when the header is present but no chip rows are.
"""

from __future__ import annotations

import re

from xpuperf.errors import InputError
from xpuperf.topology.importers.base import Imported, single_host

NAME = "npu-smi"
_HEAD = re.compile(r"^\|\s*NPU\s+Name\s*\|", re.M)
_ROW1 = re.compile(r"^\|\s*(\d+)\s+(\S+)\s*\|\s*(\S+)\s*\|")
_ROW2 = re.compile(r"^\|\s*(\d+)(?:\s+(\d+))?\s*\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f:.]+)\s*\|(.*)\|")


def sniff(text: str) -> bool:
    """True for ``npu-smi info`` output (its ``| NPU  Name |`` header)."""
    return bool(_HEAD.search(text))


def parse(text: str, source: str = "<text>") -> Imported:
    """Read the ``npu-smi info`` chip table into one host's devices (see the module docstring).

    Raises:
        InputError: the table has no chip rows.
    """
    imp, host = single_host(source, NAME)
    npu: tuple[str, str] | None = None
    chips: list[tuple[int, int | None, str, str, str]] = []  # npu, phy, model, bus, rest
    for line in text.splitlines():
        if "Process id" in line or "Process name" in line:
            break
        if m := _ROW2.match(line):
            if npu is not None:
                chips.append((int(npu[0]), int(m.group(2)) if m.group(2) else None, npu[1],
                              m.group(3), m.group(4)))  # fmt: skip
            npu = None
        elif m := _ROW1.match(line):
            npu = (m.group(1), m.group(2)) if re.fullmatch(r"[0-9]{1,18}", m.group(1)) else None
    if not chips:
        raise InputError(
            "npu-smi table without chip rows (| NPU Name | then | Chip … | Bus-Id |)", source
        )
    by_phy = all(c[1] is not None for c in chips)
    one_per_npu = len({c[0] for c in chips}) == len(chips)
    hbm = set()
    for i, (n, phy, model, bus, rest) in enumerate(chips):
        idx = phy if by_phy else n if one_per_npu else i
        dev = host.device(idx)  # type: ignore[arg-type]
        dev.model, dev.bus_id = model, bus
        sizes = re.findall(r"(\d+)\s*/\s*(\d+)", rest)
        if sizes:
            hbm.add(int(sizes[-1][1]))
    per_npu = len(chips) // max(1, len({c[0] for c in chips}))
    imp.notes.append(
        f"{source}: npu-smi: {len(chips)} chips on {len({c[0] for c in chips})} NPUs "
        f"({per_npu} per NPU), HBM {'/'.join(str(h) for h in sorted(hbm)) or '?'} MB each; "
        "chip-to-chip links are not in this table"
    )
    return imp
