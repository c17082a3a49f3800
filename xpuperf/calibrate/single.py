"""Single nccl-tests measurements: one size (e.g. a 25 MiB DDP bucket) against the link under it.

A group (file, collective, ranks, nodes) with fewer than 2 sizes cannot be fitted; its largest
row is reported as a :class:`Measurement` (size, time, algbw, busbw) and compared with what the
link under it should give:

- busbw = algbw · f(n) (all_reduce f = 2(n−1)/n; nccl-tests doc/PERFORMANCE.md); nccl-tests
  prints busbw itself, it is recomputed only when that column is missing and n is known;
- the link: from ``--topology`` (the slowest intra-node ring link, or the NICs of a node, as
  XP601 does) or from ``--link``: ``pcie3`` … ``pcie6`` = 12, 24, 48, 96 GB/s (NCCL's PCI_BW
  12 GB/s for Gen3 x16 — 8 GT/s · 16 lanes · 128/130 ≈ 15.8 GB/s raw — doubled each generation
  as the PCIe spec doubles the per-lane rate; NCCL ``src/graph/topo.h``, topology/constants.py),
  ``nvlink-<card>`` = NVLinks per card × NCCL's per-link figure (V100 6, A100 12, A800/H800 8,
  H100/H200/B200 18 links; ``SM80_NVLINK_BW`` 20, ``SM90`` 20.6, ``SM100`` 40.1 GB/s), or a
  bandwidth with unit (``400Gbps`` NIC line rate, ``25GB/s``);
- below 1 MiB a collective is latency-bound (the α term dominates; fit.py XP604 uses the same
  boundary), so no bandwidth verdict is given (XP607, info);
- XP606 when busbw is below 50 % of the link at ≥ 16 MiB, or below 25 % between 1 and 16 MiB
  (the curve is still rising there on healthy clusters);
- above 110 % of the link (:data:`ABOVE_LINK`) the bytes did not go over that link alone: the
  link figures are what NCCL assumes a link gives, within ~1.3x of its raw rate (PCIe Gen3 x16
  raw 15.8 vs 12 GB/s; a NIC's line rate is a hard cap), so busbw well above them means the
  ranks shared a node (NVLink/PCIe P2P), a node used several NICs (a multi-node ring's busbw is
  bounded by the sum of a node's NICs, checks.py), NVLink SHARP reduced in the switch, or
  ``--link`` names the wrong link: ``not_checked``, never ``clean``.

Without any link the comparison is ``not_checked`` and names the flags that give it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from xpuperf.calibrate.infer import bus_factor
from xpuperf.errors import UsageError
from xpuperf.findings import Check, CheckStatus, Finding, Severity
from xpuperf.topology.constants import NVLINK_GBPS_PER_LINK, PCIE_GBPS_BY_GEN
from xpuperf.topology.schema import UnitError, parse_quantity

MIB = 1 << 20
LATENCY_BOUND_BYTES = MIB
LARGE_BYTES = 16 * MIB
FRACTION_LARGE = 0.50
FRACTION_MID = 0.25
ABOVE_LINK = 1.10
NVLINKS_PER_CARD = {"V100": 6, "A100": 12, "A800": 8, "H100": 18, "H800": 8, "H200": 18, "B200": 18}
"""NVLinks per card (vendor data sheets: V100 6, A100 12, H100 18 links; A800/H800 8)."""


@dataclass(frozen=True)
class Link:
    """What one link gives per direction: ``bw_GBps`` and a label ("PCIe Gen4 x16")."""

    bw_GBps: float  # noqa: N815 (unit in the name)
    label: str


def parse_link(text: str | None) -> Link | None:
    """``--link`` value → :class:`Link` (see the module docstring); None when not given.

    Raises:
        UsageError: an unknown name or an unreadable bandwidth.
    """
    if text is None:
        return None
    t = text.strip().lower().replace("_", "-")
    if t.startswith("pcie") and t[4:].lstrip("gen").isdigit():
        gen = int(t[4:].lstrip("gen"))
        if gen in PCIE_GBPS_BY_GEN:
            return Link(PCIE_GBPS_BY_GEN[gen], f"PCIe Gen{gen} x16")
    if t.startswith("nvlink-"):
        card = t[7:].upper()
        if card in NVLINKS_PER_CARD:
            per = NVLINK_GBPS_PER_LINK.get(card, NVLINK_GBPS_PER_LINK["A100"])
            n = NVLINKS_PER_CARD[card]
            return Link(n * per, f"{n} NVLinks of a {card}")
    try:
        bw = parse_quantity(text, "bandwidth")
    except UnitError:
        cards = ", ".join(f"nvlink-{c.lower()}" for c in NVLINKS_PER_CARD)
        raise UsageError(
            f"--link {text!r}: expected pcie3, pcie4, pcie5, pcie6, {cards}, or a bandwidth "
            "such as 400Gbps or 25GB/s"
        ) from None
    if not bw > 0 or math.isinf(bw):
        raise UsageError(f"--link must be > 0 and finite, got {text}")
    return Link(bw, f"{text} link")


@dataclass
class Measurement:
    """The largest row of a group that could not be fitted (units in the names)."""

    source: str
    line: int
    collective: str
    ranks: int | None
    nodes: int | None
    size_bytes: int
    time_us: float
    algbw_GBps: float  # noqa: N815
    busbw_GBps: float  # noqa: N815
    link_GBps: float | None = None  # noqa: N815
    link: str | None = None
    fraction: float | None = None

    def to_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in asdict(self).items()}  # fmt: skip


def measurement(src: str, g: pd.DataFrame) -> Measurement | None:
    """The largest-size row of group ``g`` (rows of one file/collective/ranks/nodes)."""
    g = g[g["size_bytes"] > 0]
    if g.empty:
        return None
    r = g.loc[g["size_bytes"].idxmax()]
    ranks = None if pd.isna(r["ranks"]) else int(r["ranks"])
    nodes = None if pd.isna(r["nodes"]) else int(r["nodes"])
    alg, bus = float(r["algbw_GBps"]), float(r["busbw_GBps"])
    if not math.isfinite(bus) and ranks and math.isfinite(alg):
        bus = alg * bus_factor(str(r["collective"]), ranks)
    return Measurement(src, int(r["line"]), str(r["collective"]), ranks, nodes,
                       int(r["size_bytes"]), float(r["time_us"]), alg, bus)  # fmt: skip


def _size(n: int) -> str:
    return f"{n / MIB:g} MiB" if n >= MIB else f"{n / 1024:g} KiB" if n >= 1024 else f"{n} B"


def above_link(nodes: int | None) -> str:
    """Why busbw above :data:`ABOVE_LINK` × the link says nothing about that link, and what to
    pass instead (``nodes``: the group's node count, None when unknown)."""
    where = {1: "the ranks share one node (NVLink or PCIe P2P between its cards)"}.get(
        nodes or 0,
        "the ranks share a node (NVLink or PCIe P2P inside it), or a node used several NICs (a "
        "multi-node ring's busbw is bounded by the sum of a node's NICs)",
    )
    return (
        f"above {ABOVE_LINK:.0%} of the link, more than it carries: this traffic did not go over "
        f"that link alone — {where}, NVLink SHARP reduced in the switch, or the link given is "
        "the wrong one; not compared. Pass the link the ranks use (--link nvlink-h100, pcie4, "
        "or the NIC rate × NICs per node) or --topology FILE"
    )


def judge(m: Measurement, link: Link | None) -> tuple[Check, list[Finding]]:
    """Check ``calibrate.single_vs_link`` for one measurement (XP606 / XP607)."""
    title = "single measurement vs the link under it"
    who = (
        f"{Path(m.source).name}:{m.line}: {m.collective} at {_size(m.size_bytes)} on "
        f"{m.ranks if m.ranks is not None else '?'} ranks"
    )
    got = f"algbw {m.algbw_GBps:.3g} GB/s, busbw {m.busbw_GBps:.3g} GB/s"
    data = {**m.to_dict()}
    if m.size_bytes < LATENCY_BOUND_BYTES:
        msg = (
            f"{who}: {got} in {m.time_us:.3g} µs; below {_size(LATENCY_BOUND_BYTES)} the time is "
            "mostly latency, so busbw says nothing about the link (threshold 1 MiB). Remedy: "
            "compare the time with the latency floor of a full curve (nccl-tests -b 8 -e 1G -f 2)."
        )
        return Check(
            "calibrate.single_vs_link", title, CheckStatus.NOT_CHECKED,
            f"{who}: {got}; latency-bound (< 1 MiB), not compared with a bandwidth", ("XP607",),
        ), [Finding("XP607", Severity.INFO, msg, data)]  # fmt: skip
    if link is None:
        return Check(
            "calibrate.single_vs_link", title, CheckStatus.NOT_CHECKED,
            f"{who}: {got}; no link to compare with: pass --topology FILE or --link "
            "(pcie4, nvlink-h100, 400Gbps)",
        ), []  # fmt: skip
    m.link_GBps, m.link = link.bw_GBps, link.label
    m.fraction = frac = m.busbw_GBps / link.bw_GBps
    bar = FRACTION_LARGE if m.size_bytes >= LARGE_BYTES else FRACTION_MID
    what = f"{got} is {frac:.0%} of the {link.bw_GBps:.3g} GB/s of {link.label}"
    if frac > ABOVE_LINK:
        return Check(
            "calibrate.single_vs_link", title, CheckStatus.NOT_CHECKED,
            f"{who}: {what}; {above_link(m.nodes)}",
        ), []  # fmt: skip
    if frac >= bar:
        return Check(
            "calibrate.single_vs_link", title, CheckStatus.CLEAN,
            f"{who}: {what} (threshold {bar:.0%})",
        ), []  # fmt: skip
    msg = (
        f"{who}: {what} (threshold {bar:.0%} at this size): a topology or NCCL graph problem, "
        "not compute — the link is idle most of the time. Remedy: rerun with NCCL_DEBUG=INFO "
        "NCCL_DEBUG_SUBSYS=INIT,GRAPH and check the transport (P2P or SHM through host memory, "
        "NET/Socket instead of IB) and the rings; consumer cards without P2P and flat VM "
        "topologies are common causes (`xpuperf topo check`); measure a full curve with "
        "nccl-tests -b 8 -e 1G -f 2."
    )
    return Check(
        "calibrate.single_vs_link", title, CheckStatus.PROBLEM, f"{who}: {what}", ("XP606",)
    ), [Finding("XP606", Severity.WARNING, msg, {**m.to_dict(), "threshold": bar})]
