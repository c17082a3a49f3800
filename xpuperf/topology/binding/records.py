"""What a binding file says: one :class:`RankBinding` per rank (or per local rank), and helpers
shared by the parsers (CPU lists, hex masks, streaming a file's lines with file:line errors).

A rank's CPUs are given either as CPU ids (``cpus``) or as NUMA nodes whose CPUs it may use
(``cpu_nodes``, e.g. ``numactl --cpunodebind=1``); the audit resolves nodes to CPUs with the
topology. ``mem_nodes`` is a strict memory policy (``--membind``/``--preferred``), None when memory
follows the default local allocation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from xpuperf.errors import InputError, read_hint
from xpuperf.topology.build import MAX_CPUS, parse_cpus

MAX_BINDING_BYTES = 64 * 1024 * 1024
"""Binding files larger than this are refused (a 100 000-rank Slurm log is ~10 MB)."""


@dataclass(frozen=True)
class RankBinding:
    """The CPU and memory binding of one rank.

    Attributes:
        rank: global rank; None when the entry is by ``local_rank`` (a launcher setting that
            applies to every node, or to the node named ``host``).
        local_rank: rank within its node, when the source gives it.
        host: host name as the source prints it (messages; the node for local-rank entries).
        cpus: OS CPU ids the rank may run on, or None when given as NUMA nodes.
        cpu_nodes: NUMA node ids whose CPUs the rank may run on (``numactl --cpunodebind``).
        mem_nodes: NUMA nodes memory is bound to (``--membind``, ``--preferred``), None: local.
        unbound: True when the source says the rank is not bound (all CPUs).
        line: 1-based line in the binding file where the entry starts.
        follow_card: ``"node"`` or ``"exclusive"`` for torchrun ``--numa-binding``: the CPUs of
            the card's NUMA node (all of them, or a disjoint share), resolved by the audit.

    An entry with neither ``rank`` nor ``local_rank`` applies to every rank (launcher configs).
    """

    rank: int | None
    cpus: tuple[int, ...] | None = None
    cpu_nodes: tuple[int, ...] | None = None
    mem_nodes: tuple[int, ...] | None = None
    unbound: bool = False
    local_rank: int | None = None
    host: str | None = None
    line: int | None = None
    follow_card: str | None = None


@dataclass
class BindingFile:
    """A parsed binding file: ``format`` name, ``entries`` in file order, ``notes`` for stderr,
    ``nproc_per_node`` when a launcher config gives it."""

    source: str
    format: str
    entries: list[RankBinding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    nproc_per_node: int | None = None


def read_text(path: str | Path) -> str:
    """A binding file's text; InputError when unreadable, not UTF-8 or too large."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_BINDING_BYTES:
            raise InputError(
                f"binding file is larger than {MAX_BINDING_BYTES >> 20} MB; give only the "
                "binding lines (grep cpu-bind / bound to / affinity)",
                p,
            )
        return p.read_text(encoding="utf-8-sig")  # a BOM (Excel CSV export) is dropped
    except OSError as e:
        raise InputError(f"cannot read binding file: {e.strerror or e}{read_hint(e)}", p) from None
    except UnicodeDecodeError:
        raise InputError("binding file is not UTF-8 text", p) from None


def lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line_number, line)`` for every line of ``text``, 1-based, line ends stripped."""
    yield from enumerate(text.splitlines(), start=1)


def cpu_list(text: str, source: str, line: int | None, what: str = "CPU list") -> tuple[int, ...]:
    """``"0-11,24-35"``, ``"0-11 24-35"`` or ``"0 1 2"`` → sorted CPU ids.

    Raises:
        InputError: not a CPU list (file:line), naming the accepted spellings.
    """
    parts = [p for p in re.split(r"[,\s]+", str(text).strip()) if p]
    try:
        out: set[int] = set()
        for p in parts:
            out.update(parse_cpus(p))
            if len(out) > MAX_CPUS:
                raise ValueError("too many")
    except ValueError:
        raise InputError(
            f"{what} {str(text)[:60]!r} cannot be read; write CPU ids and ranges like "
            "0-11,24-35 or 0 1 2 3",
            source,
            line,
        ) from None
    if not out:
        raise InputError(f"{what} is empty", source, line)
    return tuple(sorted(out))


def hex_mask(text: str, source: str, line: int | None) -> tuple[int, ...]:
    """A CPU mask (``0x30``, ``ff,ffffffff`` as in ``/proc/PID/status``) → CPU ids (bit i = CPU i).

    Raises:
        InputError: not a hex mask or more than MAX_CPUS bits.
    """
    digits = text.strip().lower().removeprefix("0x").replace(",", "")
    if not digits or not re.fullmatch(r"[0-9a-f]+", digits) or len(digits) * 4 > MAX_CPUS:
        raise InputError(f"CPU mask {text[:40]!r} is not a hexadecimal mask", source, line)
    value = int(digits, 16)
    out = tuple(i for i in range(value.bit_length()) if value >> i & 1)
    if not out:
        raise InputError(f"CPU mask {text!r} selects no CPU", source, line)
    return out


def node_list(text: str, source: str, line: int | None, what: str) -> tuple[int, ...]:
    """NUMA node list as numactl writes it (``0``, ``0,1``, ``0-1``, ``0 1``)."""
    return cpu_list(text, source, line, what)
