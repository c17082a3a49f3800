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
