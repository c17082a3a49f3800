"""Default constants of the topology model, each with its source.

Most come from NCCL's own model (docs/formulas.md §2; NCCL ``src/graph/topo.h`` and
``tuning.cc``, v2.30.x). Units are in the names (GB/s = 1e9 bytes/s, µs).
"""

from __future__ import annotations

LINK_KINDS: tuple[str, ...] = ("nvlink", "pcie", "sys", "xgmi", "hccs", "other")
"""Kinds of intra-node card-to-card links."""

FABRICS: tuple[str, ...] = ("fat-tree", "rail", "bigraph", "single-switch")
"""Inter-node network kinds: fat-tree (leaf/spine), rail-optimized (NIC k of every node on
rail switch k), EFLOPS two-layer BiGraph (HPCA 2020), one switch for all nodes."""

NVLINK_GBPS_PER_LINK: dict[str, float] = {
    "V100": 20.0,
    "A100": 20.0,
    "H100": 20.6,
    "H200": 20.6,
    "H800": 20.6,
    "B100": 40.1,
    "B200": 40.1,
}
"""GB/s per NVLink per direction by card model, as NCCL assumes (formulas.md §2)."""

DEFAULT_NVLINK_GBPS = 20.0
"""GB/s per NVLink when the card model is unknown (NCCL's V100/A100 value, formulas.md §2)."""

NVLINK_GENERATIONS: dict[int, tuple[float, float, dict[str, int]]] = {
    1: (20.0, 20.0, {"P100": 4}),
    2: (25.0, 25.781, {"V100": 6}),
    3: (25.0, 25.0, {"A100": 12, "A800": 8, "A30": 4}),
    4: (25.0, 26.562, {"H100": 18, "H200": 18, "H800": 8, "H20": 18, "GH200": 18}),
    5: (50.0, 53.125, {"B100": 18, "B200": 18, "B300": 18, "GB200": 18, "GB300": 18}),
}
"""NVIDIA's published NVLink figures by generation: (data GB/s per link per direction, the rate
``nvidia-smi nvlink -s`` prints for a link at full speed, links per card by model).

Per link and direction: NVLink1 (P100) 4 links, 160 GB/s both directions in total = 20 GB/s;
NVLink2 (V100) 6 links, 300 GB/s = 25 GB/s; NVLink3 (A100) 12 links, 600 GB/s = 25 GB/s (A800: 8
links, 400 GB/s); NVLink4 (H100/H200 SXM) 18 links, 900 GB/s = 25 GB/s (H800: 8 links, 400 GB/s);
NVLink5 (B200/GB200) 18 links, 1.8 TB/s = 50 GB/s. Sources: NVIDIA Tesla P100 whitepaper (2016),
Tesla V100 datasheet ("NVLink 300 GB/s"), A100 datasheet and Ampere whitepaper ("12 third-generation
NVLinks … 600 GB/s"), H100 datasheet and Hopper whitepaper ("18 NVLink 4 links … 900 GB/s"),
DGX B200 / GB200 datasheets ("1.8 TB/s NVLink bandwidth per GPU"); the per-direction split is the
one hwloc adopted (open-mpi/hwloc#574: v3 and v4 are 25 GB/s per link and direction, not 50).

``nvidia-smi nvlink -s`` prints the signalling rate, a little above the data rate: V100 25.781
(8 lanes × 25.78125 Gb/s), A100 25, H100 26.562 (2 lanes × 106.25 Gb/s), GB200 53.125 GB/s
(seen in Azure/azhpc-diagnostics#73, NVIDIA/nccl-tests#228, NVIDIA/k8s-test-infra#371).
These are peak link rates, used to read and check link status; the cost model keeps NCCL's own
effective per-link figures (:data:`NVLINK_GBPS_PER_LINK`: 20.6 GB/s on Hopper, not 25).
"""


def nvlink_generation(model: str | None = None, printed_GBps: float | None = None) -> int | None:
    """The NVLink generation of a card: from its model name (``"NVIDIA H100 80GB HBM3"`` → 4;
    longest matching key wins, so GH200 is not read as H20), else from the per-link rate
    ``nvidia-smi nvlink -s`` printed (within 1 %: 25.781 → 2, 25 → 3, 26.562 → 4); None when
    neither tells."""
    if model:
        upper = model.upper()
        hits = [(len(k), g) for g, (_, _, cards) in NVLINK_GENERATIONS.items() for k in cards
                if k in upper]  # fmt: skip
        if hits:
            return max(hits)[1]
    if printed_GBps:
        for g, (_, signal, _) in NVLINK_GENERATIONS.items():
            if abs(printed_GBps - signal) <= 0.01 * signal:
                return g
    return None


PCIE_GBPS_BY_GEN: dict[int, float] = {3: 12.0, 4: 24.0, 5: 48.0, 6: 96.0}
"""Usable GB/s of a PCIe x16 link by generation. Gen3 = 12 is NCCL's PCI_BW (formulas.md §2);
each later generation doubles the per-lane rate, so the same fraction of it is assumed."""

DEFAULT_PCIE_GBPS = PCIE_GBPS_BY_GEN[3]
"""PCIe bandwidth used when a node does not say its PCIe generation (NCCL PCI_BW, Gen3 x16)."""

PCIE_GEN6_X16_RAW_GBPS = 128.0
"""Raw PCIe Gen6 x16 rate per direction (64 GT/s × 16 lanes / 8): no NIC port on one PCIe slot can
be faster; used to catch Gb/s vs GB/s mix-ups when a node does not give its PCIe generation."""

SYS_GBPS: dict[str, float] = {"skylake": 10.0, "sapphire-rapids": 22.0, "amd": 16.0}
"""GB/s of the inter-socket link: UPI Skylake 10, Sapphire Rapids 22, AMD 16 (formulas.md §2)."""

DEFAULT_SYS_GBPS = SYS_GBPS["skylake"]
"""Inter-socket bandwidth used when a node does not give one (NCCL's Skylake UPI value)."""

NET_GBPS_UNKNOWN_NIC = 12.0
"""GB/s assumed for a NIC of unknown speed: NCCL's value for a 100 Gb/s NIC (formulas.md §2)."""

LATENCY_US: dict[str, float] = {"nvlink": 0.6, "pcie": 1.0, "net": 2.7}
"""Per-hop hardware latency in µs: NCCL's ring latency for the LL protocol (formulas.md §2), the
closest of its figures to the raw link latency. The cost model adds protocol and base latency."""

LINK_LATENCY_KIND = {
    "nvlink": "nvlink",
    "xgmi": "nvlink",
    "hccs": "nvlink",
    "pcie": "pcie",
    "sys": "pcie",
    "other": "pcie",
}
"""Which :data:`LATENCY_US` row each link kind uses (NCCL treats SYS paths as PCI)."""


def nvlink_gbps_per_link(model: str | None) -> float:
    """GB/s of one NVLink for a card model (substring match, e.g. ``"A100-SXM4-80GB"`` → 20.0)."""
    if model:
        upper = model.upper()
        for key, bw in NVLINK_GBPS_PER_LINK.items():
            if key in upper:
                return bw
    return DEFAULT_NVLINK_GBPS


def default_link_bw_GBps(
    kind: str, count: int | None, model: str | None, pcie_bw_GBps: float, sys_bw_GBps: float
) -> float | None:
    """Bandwidth NCCL would assume for a link, in GB/s, or None when no source gives one.

    nvlink: ``count`` × per-link figure of the card model; pcie: the node's PCIe figure;
    sys: the node's inter-socket figure. xgmi, hccs and other have no figure in formulas.md §2 and
    must be given explicitly (``bw_GBps``).
    """
    if kind == "nvlink":
        return (count or 1) * nvlink_gbps_per_link(model)
    if kind == "pcie":
        return pcie_bw_GBps
    if kind == "sys":
        return sys_bw_GBps
    return None


NODE_FIGURES: tuple[str, ...] = ("links", "pcie_bw_GBps", "sys_bw_GBps")
"""Node facts that may be missing from the input, named in :attr:`Node.assumed`: ``links`` (which
card pairs are joined directly; without it every pair is taken to talk over PCIe),
``pcie_bw_GBps`` and ``sys_bw_GBps`` (defaults from :mod:`xpuperf.topology.constants`)."""

NETWORK_FIGURES: tuple[str, ...] = ("fabric", "switch_levels", "oversubscription", "latency_us")
"""Network facts that may be missing from the input, named in :attr:`Network.assumed`."""
