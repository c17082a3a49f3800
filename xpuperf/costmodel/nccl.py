"""NCCL's own allreduce tuning model, and our model's ranking of the same choice.

:func:`nccl_table` rebuilds the latency / algorithm-bandwidth table NCCL computes at init
(``src/graph/tuning.cc``, ``ncclTopoTuneModel``) for ring and tree with LL, LL128 and Simple;
:func:`nccl_time_s` applies ``ncclTopoGetAlgoTime`` (time = latency + S / algBw, with the tree
correction factors and the ring "plateau" multiplier); :func:`nccl_choice` returns what NCCL would
pick. :func:`model_choice` ranks the same candidates with our α–β formulas
(:func:`~xpuperf.costmodel.collectives.allreduce_s`) on NCCL's default latencies and protocol
efficiencies, so the validation suite can check that both agree (issue 5).

Constants: base and per-hop latencies from formulas.md §2 (tuning.cc v2.30.x); protocol
refinements, per-channel caps and tree correction factors from tuning.cc (2.19–2.21 era, as stored
in the public NVIDIA/nccl repository). Bandwidths GB/s (1e9 B/s), latencies µs, results seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from xpuperf.costmodel.checks import CostModelError, nonneg, positive, positive_int
from xpuperf.costmodel.collectives import allreduce_s
from xpuperf.costmodel.levels import PROTOCOLS, LinkLevels, nccl_latencies_us

NCCL_ALGOS: tuple[str, ...] = ("ring", "tree")
"""Algorithms NCCL chooses between for allreduce without NVLS/CollNet."""

# tuning.cc tables (GB/s), columns 1 node / 2 nodes / ≥ 4 nodes: llMaxBws (rows Volta, Ampere,
# Hopper on one node; across nodes row 0 = Intel host, 1 = AMD host), perChMaxRingLL128Bws,
# perChMaxTreeLL128Bws, perChMaxTreeBws (rows Volta, Ampere, Hopper; per channel).
_CC_IDX = {70: 0, 80: 1, 90: 2}
_LL_MAX_BW = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (87.7, 22.5, 19.0))
_RING_LL128_PER_CH = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7))
_TREE_LL128_PER_CH = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0))
_TREE_PER_CH = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0))
_TREE_CORRECTION = {
    "ll": (1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7,
           0.8, 0.9, 1.0, 1.0, 1.0, 1.0),
    "ll128": (1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6,
              0.8, 0.9, 0.9, 0.9, 0.9, 1.0, 1.0),
    "simple": (0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6,
               0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9),
}  # fmt: skip
"""tuning.cc ``treeCorrectionFactor``: tree bandwidth factor for S = 64 B · 2^i, i = 0..22."""

PROTOCOL_BW_EFFICIENCY: dict[tuple[str, str], float] = {
    ("ring", "ll"): 1 / 4,
    ("ring", "ll128"): 0.92,
    ("ring", "simple"): 1.0,
    ("tree", "ll"): 0.92 / 3.8,
    ("tree", "ll128"): 0.92 * 120 / 128,
    ("tree", "simple"): 0.92,
}
"""Share of the link bandwidth each algorithm/protocol achieves in NCCL's model (tuning.cc:
LL carries 8-byte lines with 4 data bytes and is further limited; LL128 120 of 128 bytes; the tree
runs at 0.92 of the bus bandwidth). Multi-node values; used by :func:`model_choice`."""

PLATEAU_A100_PLUS = 1.4
PLATEAU_PRE_A100 = 1.9
"""Multi-node ring/Simple latency multipliers for large messages (tuning.cc "plateau effect of
ring": ×1.4 on compute capability ≥ 8.0, ×1.9 before; formulas.md §2)."""


@dataclass(frozen=True)
class NcclEntry:
    """One cell of NCCL's table: ``latency_us`` and algorithm bandwidth ``algbw_GBps`` (0 =
    disabled)."""

    algorithm: str
    protocol: str
    latency_us: float
    algbw_GBps: float  # noqa: N815 (unit in the name, style.md rule 8)


@dataclass(frozen=True)
class NcclTable:
    """NCCL's tuning table for one communicator (see :func:`nccl_table`)."""

    n_ranks: int
    n_nodes: int
    n_channels: int
    comp_cap: int
    entries: tuple[NcclEntry, ...]


def nccl_table(
    n_ranks: int,
    n_nodes: int,
    bus_bw_GBps: float,
    intra_kind: str = "nvlink",
    *,
    n_channels: int = 8,
    comp_cap: int = 80,
    amd_cpu: bool = False,
    ll128: bool | None = None,
) -> NcclTable:
    """NCCL's latency / algorithm-bandwidth table for allreduce (``ncclTopoTuneModel``).

    Args:
        n_ranks, n_nodes: N and M (M divides N).
        bus_bw_GBps: nChannels × per-channel bandwidth of the ring/tree graph, GB/s (from the
            topology: min(intra ring bandwidth, node NIC bandwidth) when M > 1).
        intra_kind: ``"nvlink"`` or ``"pcie"`` (NCCL's intra hardware latency row).
        n_channels: channels, for the per-channel caps. comp_cap: 70, 80 or 90.
        amd_cpu: network overhead 2 µs instead of 1 µs per step; LL caps of AMD hosts.
        ll128: LL128 enabled (default: only on NVLink nodes, as NCCL does).

    Returns:
        The 6 entries ring/tree × LL/LL128/Simple: latency (µs) = base + per-step hardware
        latencies (ring: (2(N−1) − nInter)·intra + nInter·inter, nInter = 2(M−1); tree:
        2((G−1)·intra + log2 M·inter)); algBw (GB/s) = protocol-capped busBw × N/(2(N−1)) for
        the ring, × 0.5 for the tree.

    Raises:
        CostModelError: bad counts, bandwidth ≤ 0, unknown compute capability.

    Source: NCCL ``src/graph/tuning.cc`` ``ncclTopoTuneModel`` (caps and factors 2.19–2.21,
    latencies and nInterSteps v2.30.x); formulas.md §2.
    """
    n = positive_int("n_ranks", n_ranks)
    m = positive_int("n_nodes", n_nodes)
    nch = positive_int("n_channels", n_channels)
    bw = positive("bus_bw_GBps", bus_bw_GBps)
    if comp_cap not in _CC_IDX:
        raise CostModelError(f"compute capability must be one of 70, 80, 90, got {comp_cap}")
    if n % m:
        raise CostModelError(f"{n} ranks do not split over {m} nodes")
    cc, i2 = _CC_IDX[comp_cap], min(m - 1, 2)
    ll_max = _LL_MAX_BW[cc if m == 1 else (1 if amd_cpu else 0)][i2]
    ll128_on = (intra_kind in ("nvlink", "xgmi", "hccs")) if ll128 is None else ll128
    g, nsteps = n // m, 2 * (n - 1)
    n_inter = 2 * (m - 1)  # formulas.md §2 (v2.30.x); 2.19 counted 2M
    overhead = 2.0 if amd_cpu else 1.0
    entries = []
    for algo in NCCL_ALGOS:
        for proto in PROTOCOLS:
            bus = bw
            if algo == "ring" and proto == "ll":
                bus = min(ll_max, bus / 4)
            if algo == "ring" and proto == "ll128":
                bus = min(bus * (0.7 if g < 2 else 0.92), nch * _RING_LL128_PER_CH[cc][i2])
            if algo == "tree":
                bus = min(bus * 0.92, nch * _TREE_PER_CH[cc][i2])
            if algo == "tree" and proto == "ll":
                bus = min(bus / 3.8, ll_max)
            if algo == "tree" and proto == "ll128":
                bus = min(bus * (7 / 9 if m == 1 else 120 / 128), nch * _TREE_LL128_PER_CH[cc][i2])
            algbw = bus * (n / nsteps if algo == "ring" else 0.5)
            if proto == "ll128" and not ll128_on:
                algbw = 0.0
            intra, inter, base = nccl_latencies_us(algo, proto, intra_kind)
            if algo == "ring":
                if m > 1:
                    intra = max(intra, overhead * (3 if proto == "simple" else 1))
                lat = base + (nsteps - n_inter) * intra + n_inter * inter
            else:
                lat = base + 2 * ((g - 1) * intra + (m.bit_length() - 1) * inter)
            entries.append(NcclEntry(algo, proto, lat, algbw))
    return NcclTable(n, m, nch, comp_cap, tuple(entries))


def nccl_time_s(table: NcclTable, entry: NcclEntry, size_B: float) -> float:
    """NCCL's predicted time of one allreduce of ``size_B`` bytes, seconds (``inf`` if disabled).

    ``ncclTopoGetAlgoTime``: tree bandwidth × correction factor for S < 256 MiB; multi-node
    ring/Simple latency × 1.4 (≥ sm80; × 1.9 before) when S/(nChannels·N) ≥ 64 bytes; time =
    latency + S / algBw. Raises :class:`CostModelError` for S < 0.
    Source: NCCL ``src/graph/tuning.cc`` ``ncclTopoGetAlgoTime``; formulas.md §2.
    """
    s = nonneg("message size (bytes)", size_B)
    if entry.algbw_GBps <= 0:
        return float("inf")
    bw, lat = entry.algbw_GBps, entry.latency_us
    log_size = (int(s) >> 6).bit_length() - 1
    if entry.algorithm == "tree" and 0 <= log_size < 23:
        bw *= _TREE_CORRECTION[entry.protocol][log_size]
    if (
        entry.algorithm == "ring"
        and entry.protocol == "simple"
        and table.n_nodes > 1
        and s / (table.n_channels * table.n_ranks) >= 64
    ):
        lat *= PLATEAU_A100_PLUS if table.comp_cap >= 80 else PLATEAU_PRE_A100
    return (lat + s / (1000 * bw)) * 1e-6


def nccl_choice(table: NcclTable, size_B: float) -> tuple[str, str, float]:
    """(algorithm, protocol, seconds) NCCL would pick for ``size_B`` bytes: the fastest entry.

    Source: the argmin over (algorithm, protocol) of ``ncclTopoGetAlgoTime`` in NCCL
    ``src/enqueue.cc`` (``getAlgoInfo`` / ``topoGetAlgoInfo``, by version). Raises
    :class:`CostModelError` for S < 0.
    """
    best = min(table.entries, key=lambda e: nccl_time_s(table, e, size_B))
    return best.algorithm, best.protocol, nccl_time_s(table, best, size_B)


def bus_bw_for(levels: LinkLevels, n_nodes: int) -> float:
    """Bus bandwidth NCCL's graph search would reach on these levels, GB/s: the intra ring
    bandwidth on one node, else min(intra, all NICs of a node). Raises nothing.

    Source: NCCL's ring search (``src/graph/search.cc``) in spirit: one channel per NIC, so a
    node-contiguous ring leaves a node through all its NICs (formulas.md §2: DGX-A100 192 GB/s
    measured multi-node busbw).
    """
    if n_nodes <= 1:
        return levels.intra_bw_GBps
    return min(levels.intra_bw_GBps, levels.node_net_bw_GBps)


def _scaled(lv: LinkLevels, factor: float) -> LinkLevels:
    return replace(
        lv,
        intra_bw_GBps=lv.intra_bw_GBps * factor,
        card_net_bw_GBps=lv.card_net_bw_GBps * factor,
        node_net_bw_GBps=lv.node_net_bw_GBps * factor,
        leader_net_bw_GBps=lv.leader_net_bw_GBps * factor,
    )


def model_times(
    size_B: float,
    n_ranks: int,
    levels: LinkLevels,
    protocols: tuple[str, ...] | None = None,
    *,
    nccl_refinements: bool = True,
    comp_cap: int = 80,
    n_channels: int = 8,
) -> dict[tuple[str, str], float]:
    """Our model's time (s) for each NCCL (algorithm, protocol) candidate.

    The α–β formula of :func:`~xpuperf.costmodel.collectives.allreduce_s` with NCCL's default
    latencies for that pair (:meth:`LinkLevels.with_nccl_latency`) and bandwidth ×
    :data:`PROTOCOL_BW_EFFICIENCY` (tree/LL128 on one node: 0.92 × 7/9, as NCCL). With
    ``nccl_refinements`` (default) three measured effects NCCL encodes are applied too: the
    multi-node ring/Simple latency plateau (× 1.4 from sm80, × 1.9 before; formulas.md §2), the
    tree's medium-size bandwidth correction (``treeCorrectionFactor``) and the bus-bandwidth
    caps of :func:`nccl_table` (per-channel tree / LL128 maxima × ``n_channels``, the LL maximum)
    against the bus bandwidth of the levels (:func:`bus_bw_for`). NCCL's network-overhead floor
    is not modelled.
    ``protocols``: default all three on NVLink-class nodes, LL and Simple otherwise (NCCL enables
    LL128 only with NVLink).

    Returns seconds per ``(algorithm, protocol)``. Raises :class:`CostModelError` for S < 0 or G
    not dividing N or a protocol outside :data:`PROTOCOLS`.
    Sources: formulas.md §1–2, NCCL ``src/graph/tuning.cc``.
    """
    s = nonneg("message size (bytes)", size_B)
    if protocols is None:
        nvl = levels.intra_kind in ("nvlink", "xgmi", "hccs")
        protocols = PROTOCOLS if nvl else ("ll", "simple")
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown:
        raise CostModelError(
            f"unknown NCCL protocol {unknown[0]!r}: use one of {', '.join(PROTOCOLS)}"
        )
    n_nodes = max(1, n_ranks // levels.cards_per_node)
    log_size = (int(s) >> 6).bit_length() - 1
    caps = bus_caps(levels, n_ranks, n_nodes, comp_cap, n_channels) if nccl_refinements else {}
    out = {}
    for algo in NCCL_ALGOS:
        for proto in protocols:
            eff = PROTOCOL_BW_EFFICIENCY[algo, proto]
            if (algo, proto) == ("tree", "ll128") and n_nodes == 1:
                eff = 0.92 * 7 / 9
            if (algo, proto) in caps:
                eff = caps[algo, proto]
            if nccl_refinements and algo == "tree" and 0 <= log_size < 23:
                eff *= _TREE_CORRECTION[proto][log_size]
            lv = _scaled(levels.with_nccl_latency(algo, proto), eff)
            if nccl_refinements and (algo, proto) == ("ring", "simple") and n_nodes > 1:
                plateau = PLATEAU_A100_PLUS if comp_cap >= 80 else PLATEAU_PRE_A100
                lv = replace(
                    lv,
                    intra_latency_us=lv.intra_latency_us * plateau,
                    net_latency_us=lv.net_latency_us * plateau,
                    base_latency_us=lv.base_latency_us * plateau,
                )
            out[algo, proto] = allreduce_s(algo, s, n_ranks, lv)
    return out


def bus_caps(
    levels: LinkLevels, n_ranks: int, n_nodes: int, comp_cap: int = 80, n_channels: int = 8
) -> dict[tuple[str, str], float]:
    """Bandwidth share per (algorithm, protocol) after NCCL's caps: NCCL's bus bandwidth for
    these levels (:func:`nccl_table` on :func:`bus_bw_for`) over the levels' bus bandwidth.
    Empty when the bus bandwidth is not finite or the compute capability is not in NCCL's
    tables. Raises nothing."""
    bus = bus_bw_for(levels, n_nodes)
    if n_ranks < 2 or not (math.isfinite(bus) and bus > 0) or comp_cap not in _CC_IDX:
        return {}
    if n_ranks % n_nodes:
        return {}
    table = nccl_table(n_ranks, n_nodes, bus, levels.intra_kind, n_channels=n_channels,
                       comp_cap=comp_cap, ll128=True)  # fmt: skip
    out = {}
    for e in table.entries:
        bus_nccl = e.algbw_GBps * (2 * (n_ranks - 1) / n_ranks if e.algorithm == "ring" else 2)
        out[e.algorithm, e.protocol] = bus_nccl / bus
    return out


def model_choice(
    size_B: float,
    n_ranks: int,
    levels: LinkLevels,
    protocols: tuple[str, ...] | None = None,
    **kwargs: object,
) -> tuple[str, str, float]:
    """(algorithm, protocol, seconds) our model ranks first among :func:`model_times`
    (keyword options are passed on to it). Raises as :func:`model_times`."""
    times = model_times(size_B, n_ranks, levels, protocols, **kwargs)
    (algo, proto), t = min(times.items(), key=lambda kv: kv[1])
    return algo, proto, t
