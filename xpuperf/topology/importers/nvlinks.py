"""Importer for ``nvidia-smi nvlink -s`` / ``--status`` (NVIDIA driver tools; seen 410 to 570+).

Input shape: per card a ``GPU i: NAME (UUID: …)`` line (the same line ``nvidia-smi -L`` prints),
then one indented line per NVLink of the card::

    GPU 3: Tesla V100-SXM2-32GB (UUID: GPU-…)
    \t Link 0: 25.781 GB/s
    \t Link 3: <inactive>

The rate is the link's signalling rate per direction (GB/s); ``<inactive>`` marks a link that is
down. A card without NVLink prints no ``Link`` line (or an ``NVML: Unable to retrieve NVLink
information`` line). Prompt lines, ANSI colours and other text around the blocks are skipped.

Extracted: one device per card with its model. The tool names no peer, so no card pair (link) is
made; merge it with ``nvidia-smi topo -m`` or an NCCL topology dump for the pairs. What it says
about each card's links (:func:`link_status`) is read by the ``topology.nvlink_links`` check
(:mod:`xpuperf.topology.nvlink_check`: inactive links XP523, slow links XP524); a note per file
summarises it.

Errors: :class:`~xpuperf.errors.InputError` with file and line for a ``Link`` line whose rate is
not a number, or a card listed twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from xpuperf.errors import InputError
from xpuperf.topology.build import format_cpus
from xpuperf.topology.importers.base import Imported, single_host

NAME = "nvidia-smi-nvlink"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_GPU = re.compile(r"^[ \t]*GPU (\d{1,4}): ([^\n]+?) \(UUID: [^)\n]*\)[ \t]*$")
_LINK = re.compile(r"^[ \t]+Link (\d{1,3}): ?([^\n]*?)[ \t]*$")
_SNIFF = re.compile(r"^[ \t]*GPU \d{1,4}: [^\n]*\(UUID: [^\n]*\n[ \t]+Link \d{1,3}: ", re.M)


@dataclass
class CardLinks:
    """One card's NVLinks as printed: ``rates`` link number → GB/s per direction, None when the
    link is ``<inactive>``; ``line`` the 1-based line of the card's ``GPU i:`` line."""

    index: int
    model: str
    line: int
    rates: dict[int, float | None] = field(default_factory=dict)

    @property
    def inactive(self) -> list[int]:
        """Link numbers printed ``<inactive>``."""
        return [k for k, v in self.rates.items() if v is None]

    @property
    def active(self) -> dict[int, float]:
        """Active links and their rate in GB/s."""
        return {k: v for k, v in self.rates.items() if v is not None}


def sniff(text: str) -> bool:
    """True for ``nvidia-smi nvlink -s`` output: a ``GPU i: … (UUID: …)`` line followed by an
    indented ``Link k:`` line."""
    return bool(_SNIFF.search(_ANSI.sub("", text)))


def link_status(text: str, source: str = "<text>") -> list[CardLinks]:
    """Each card's links, in the order printed.

    Raises:
        InputError: a rate that is neither ``N GB/s`` nor ``<inactive>``, a card listed twice.
    """
    cards: list[CardLinks] = []
    seen: set[int] = set()
    for no, line in enumerate(_ANSI.sub("", text).splitlines(), start=1):
        if m := _GPU.match(line):
            idx = int(m.group(1))
            if idx in seen:
                raise InputError(f"GPU {idx} is listed twice", source, no)
            seen.add(idx)
            cards.append(CardLinks(idx, m.group(2).strip(), no))
        elif (m := _LINK.match(line)) and cards:
            value = m.group(2)
            if value.lower() in ("<inactive>", "inactive"):
                cards[-1].rates[int(m.group(1))] = None
                continue
            rate = re.fullmatch(r"([0-9]{1,4}(?:\.[0-9]{1,6})?) ?GB/s", value)
            if rate is None:
                raise InputError(
                    f"GPU {cards[-1].index} link {m.group(1)}: {value[:40]!r} is neither "
                    "'N GB/s' nor '<inactive>'",
                    source,
                    no,
                )
            cards[-1].rates[int(m.group(1))] = float(rate.group(1))
    return cards


def parse(text: str, source: str = "<text>") -> Imported:
    """Read ``nvidia-smi nvlink -s`` into one host's cards (see the module docstring).

    Raises:
        InputError: as :func:`link_status`; no card at all.
    """
    imp, host = single_host(source, NAME)
    cards = link_status(text, source)
    if not cards:
        raise InputError("no 'GPU i: NAME (UUID: …)' line of nvidia-smi nvlink -s", source)
    for c in cards:
        host.device(c.index).model = c.model
    down = [c for c in cards if c.inactive]
    total = sum(len(c.rates) for c in cards)
    rates = sorted({v for c in cards for v in c.active.values()})
    summary = (
        f"{source}: nvidia-smi nvlink -s: {len(cards)} card(s), {total} NVLinks, "
        f"{total - sum(len(c.inactive) for c in down)} active"
        + (f" at {'/'.join(f'{r:g}' for r in rates)} GB/s" if rates else "")
    )
    if down:
        summary += "; inactive: " + "; ".join(
            f"GPU {c.index} links {format_cpus(c.inactive)}" for c in down
        )
    imp.notes.append(summary + "; card pairs are not in this output (add nvidia-smi topo -m)")
    return imp
