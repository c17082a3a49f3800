"""Check ``topology.nvlink_links``: NVLinks that are down (XP523) or slow (XP524), read from
``nvidia-smi nvlink -s`` output (:mod:`xpuperf.topology.importers.nvlinks`).

An ``<inactive>`` link takes its share of the card's NVLink bandwidth away: NCCL still builds its
rings and trees over NVLink, and every channel that crosses the card runs at the rate its
remaining links allow (a V100 with 2 of 6 links down has 4 × 25 = 100 GB/s per direction left
instead of 150). Operators check exactly this (Azure/azhpc-diagnostics#73: a V100 with links 3
and 5 ``<inactive>``). A link printing less than its generation's full rate
(:data:`~xpuperf.topology.constants.NVLINK_GENERATIONS`) trained at reduced speed.

The check runs only when an ``nvidia-smi nvlink -s`` output is among the inputs (no other input
says whether a link is up), and then is ``problem`` or ``clean``; output with no ``Link`` line
at all is not ``nvidia-smi nvlink -s`` output for this check (``nvidia-smi -L`` looks the same).
"""

from __future__ import annotations

from collections.abc import Iterable

from xpuperf.errors import InputError
from xpuperf.findings import Check, CheckStatus, Finding, Severity
from xpuperf.topology.build import format_cpus
from xpuperf.topology.constants import NVLINK_GENERATIONS, nvlink_generation
from xpuperf.topology.importers import nvlinks

NAME = "topology.nvlink_links"
TITLE = "NVLinks up and at full rate"
SLOW_FRACTION = 0.95
"""A link printing less than this fraction of its generation's full rate is slow (XP524)."""
REMEDY = (
    "read the link error counters (`nvidia-smi nvlink -e`) and remapped rows "
    "(`nvidia-smi -q -d ROW_REMAPPER`), reset the GPU (`nvidia-smi -r -i N`, jobs stopped) or "
    "reboot; on NVSwitch systems check that nvidia-fabricmanager runs; a link that stays down "
    "needs the board (or NVLink bridge) serviced"
)


def _data_rate(card: nvlinks.CardLinks) -> tuple[int | None, float | None, float | None]:
    """(generation, data GB/s per link per direction, full printed rate) of a card."""
    best = max(card.active.values(), default=None)
    gen = nvlink_generation(card.model, None) or nvlink_generation(None, best)
    if gen is None:
        return None, None, best
    data, signal, _ = NVLINK_GENERATIONS[gen]
    return gen, data, signal


def check(
    texts: Iterable[tuple[str, str]], has_nvlink: bool = False
) -> tuple[list[Check], list[Finding]]:
    """The check over ``(source, text)`` pairs. Without ``nvidia-smi nvlink -s`` output it is
    ``not_checked`` when the topology has NVLinks (``has_nvlink``: a link that is down would not
    show in ``topo -m`` or an NCCL dump of the links that work), else absent (``([], [])``).
    A broken output (:class:`~xpuperf.errors.InputError`) is left to the importer."""
    cards: list[tuple[str, nvlinks.CardLinks]] = []
    for source, text in texts:
        if nvlinks.sniff(text):
            try:
                cards += [(source, c) for c in nvlinks.link_status(text, source)]
            except InputError:
                continue
    if not cards:
        if not has_nvlink:
            return [], []
        why = (
            "no `nvidia-smi nvlink -s` output among the files: whether every NVLink is up and "
            "at full rate is not in the topology; add that output of the same host as one more "
            "file"
        )
        return [Check(NAME, TITLE, CheckStatus.NOT_CHECKED, why, ("XP523", "XP524"))], []
    findings = [f for src, c in cards for f in _card_findings(src, c)]
    if not findings:
        n = sum(len(c.rates) for _, c in cards)
        rates = sorted({v for _, c in cards for v in c.active.values()})
        what = f"{len(cards)} card(s), {n} NVLinks all active"
        what += f" at {'/'.join(f'{r:g}' for r in rates)} GB/s" if rates else ""
        return [Check(NAME, TITLE, CheckStatus.CLEAN, f"nvidia-smi nvlink -s: {what}")], []
    codes = tuple(sorted({f.code for f in findings}))
    worst = "; ".join(f.data["summary"] for f in findings[:3])
    more = f" (+{len(findings) - 3} more)" if len(findings) > 3 else ""
    return [Check(NAME, TITLE, CheckStatus.PROBLEM, worst + more, codes)], findings


def _card_findings(source: str, card: nvlinks.CardLinks) -> list[Finding]:
    gen, data, full = _data_rate(card)
    out = []
    label = f"GPU {card.index} ({card.model})"
    total, down = len(card.rates), card.inactive
    if down:
        left = total - len(down)
        per = f"{data:g}" if data else "?"
        bw = (
            f"; {left} × {per} = {left * data:g} of {total * data:g} GB/s per direction left "
            f"(NVLink{gen}: {per} GB/s per link per direction)"
            if data
            else ""
        )
        summary = f"{label}: {len(down)} of {total} NVLinks inactive (links {format_cpus(down)})"
        msg = (
            f"{summary}{bw} (threshold: every link of the card active). NCCL traffic through "
            f"this card runs at what the remaining links carry; if every link is inactive the "
            f"card has no working NVLink (a PCIe card without bridge, or the fabric is down). "
            f"Remedy: {REMEDY}."
        )
        data_ = {"source": source, "gpu": card.index, "model": card.model, "inactive": down,
                 "links": total, "value": len(down), "threshold": 0,
                 "summary": summary}  # fmt: skip
        out.append(Finding("XP523", Severity.WARNING, msg, data_))
    if full:
        slow = {k: v for k, v in card.active.items() if v < SLOW_FRACTION * full}
        if slow:
            rates = ", ".join(f"link {k} {v:g}" for k, v in sorted(slow.items()))
            summary = f"{label}: {len(slow)} NVLink(s) below full rate ({rates} GB/s)"
            ref = f"NVLink{gen} full rate" if gen else "the card's fastest link"
            msg = (
                f"{summary}; {ref} is {full:g} GB/s as nvidia-smi prints it (threshold: "
                f"{SLOW_FRACTION:.0%} of it). A link that trained at reduced speed slows every "
                f"NCCL channel over it. Remedy: {REMEDY}."
            )
            data_ = {"source": source, "gpu": card.index, "model": card.model,
                     "slow": {str(k): v for k, v in sorted(slow.items())}, "full_GBps": full,
                     "value": min(slow.values()), "threshold": SLOW_FRACTION * full,
                     "summary": summary}  # fmt: skip
            out.append(Finding("XP524", Severity.WARNING, msg, data_))
    return out
