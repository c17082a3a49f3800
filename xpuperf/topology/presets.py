"""Built-in node and cluster presets, and the generic builder.

Each preset's figures and their sources are listed in docs/topology.md ("Presets"). Bandwidths
not given explicitly come from NCCL's constants (:mod:`xpuperf.topology.model`, formulas.md §2).

- ``dgx-a100``: 8 × A100-SXM4 on NVSwitch (12 NVLinks per GPU = 240 GB/s per pair), 8 × 200 Gb/s
  HDR NICs (one per GPU, two GPUs and two NICs per PCIe Gen4 switch), 2 AMD EPYC 7742 sockets.
- ``dgx-h100`` (alias ``hgx-h100``): 8 × H100-SXM5, 18 NVLinks per GPU (370.8 GB/s), 8 × 400 Gb/s
  NDR NICs, PCIe Gen5, 2 Intel Xeon 8480C (Sapphire Rapids) sockets.
- ``pcie-8gpu``: 8 PCIe GPUs behind 4 PCIe Gen3 switches (2 per socket), 2 Intel Skylake-class
  sockets, one 100 Gb/s NIC per socket (4 GPUs share each).
- ``npu-2x4``: 8 Ascend-910-class NPUs as two fully connected HCCS groups of four (30 GB/s per
  link), one 100 Gb/s RoCE port per NPU.
- ``eflops``: 4 × V100-32GB-PCIe, one 100 Gb/s ConnectX-5 per GPU (GPU and NIC pairs under
  shared PCIe switches), on the two-layer BiGraph network (Alibaba EFLOPS, HPCA 2020).
- ``dgx1-v100`` (in :data:`MORE_PRESETS`, not yet in docs/topology.md): 8 × V100-SXM2 on the
  hybrid cube mesh (6 NVLinks per GPU: NV2 on 0-3, 0-4, 1-2, 1-5, 2-3, 4-7, 5-6, 6-7 and NV1 on
  0-1, 0-2, 1-3, 2-6, 3-7, 4-5, 4-6, 5-7, as ``nvidia-smi topo -m`` shows on a DGX-1V), 4 × 100 Gb/s
  EDR NICs (one per PCIe switch of two GPUs), 2 Intel Xeon E5-2698 v4 sockets (QPI taken as the
  Skylake UPI figure, 10 GB/s), PCIe Gen3.

:data:`ALIASES` maps the names issue 5 uses (``pcie-8gpu-2socket``, ``npu-8card-2x4``,
``eflops-4gpu-bigraph``) to these presets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from xpuperf.topology import build
from xpuperf.topology.model import (
    NETWORK_FIGURES,
    NODE_FIGURES,
    PCIE_GBPS_BY_GEN,
    SYS_GBPS,
    Cluster,
    Device,
    Link,
    Network,
    Node,
    NumaNode,
    PcieSwitch,
)

MAX_CARDS = 1_000_000  # 10× what `plan` models (100 000 cards); bounds memory and time


def _devices(n: int, model: str, tflops: float, numa: list[int], switches: list[str]) -> tuple:
    return tuple(
        Device(i, model, tflops, numa[i], None, switches[i] if switches else None) for i in range(n)
    )


def _switches(devs: tuple[Device, ...], nics: tuple, numa: list[int]) -> tuple[PcieSwitch, ...]:
    names = sorted({d.pcie_switch for d in devs if d.pcie_switch})
    return tuple(
        PcieSwitch(
            s,
            next(d.numa_node for d in devs if d.pcie_switch == s),
            tuple(d.index for d in devs if d.pcie_switch == s),
            tuple(n.name for n in nics if n.pcie_switch == s),
        )
        for s in names
    )


def _sockets(cores: int, threads: int = 2, count: int = 2) -> tuple[NumaNode, ...]:
    """One NUMA node per socket; CPU ids as Linux numbers them (all cores, then the SMT twins)."""
    total = cores * count
    return tuple(
        NumaNode(
            s,
            tuple(range(s * cores, (s + 1) * cores))
            + (tuple(range(total + s * cores, total + (s + 1) * cores)) if threads == 2 else ()),
        )
        for s in range(count)
    )


def _sxm_node(
    name: str,
    model: str,
    tflops: float,
    nvlinks: int,
    nic_gbps: float,
    gen: int,
    cores: int,
    sys_bw: float,
) -> Node:
    numa = [0, 0, 0, 0, 1, 1, 1, 1]
    sw = [f"sw{i // 2}" for i in range(8)]
    devs = _devices(8, model, tflops, numa, sw)
    nics = build.nics_for([f"mlx5_{i}" for i in range(8)], nic_gbps, numa, sw)
    node = Node(
        name,
        devs,
        _sockets(cores),
        nics,
        build.merge_links(build.full_mesh(range(8), "nvlink", nvlinks)),
        _switches(devs, nics, numa),
        PCIE_GBPS_BY_GEN[gen],
        sys_bw,
    )
    return build.assign_nearest_nics(node)


def dgx_a100() -> Node:
    """DGX A100 node (see module docstring)."""
    return _sxm_node("dgx-a100", "A100-SXM4", 312.0, 12, 200.0, 4, 64, SYS_GBPS["amd"])


def dgx_h100() -> Node:
    """DGX H100 / HGX H100 node (see module docstring)."""
    return _sxm_node("dgx-h100", "H100-SXM5", 989.0, 18, 400.0, 5, 56, SYS_GBPS["sapphire-rapids"])


def pcie_8gpu() -> Node:
    """8-GPU PCIe server, two sockets, four PCIe switches, one NIC per socket."""
    numa = [0, 0, 0, 0, 1, 1, 1, 1]
    sw = [f"sw{i // 2}" for i in range(8)]
    devs = _devices(8, "A100-PCIE-40GB", 312.0, numa, sw)
    nics = build.nics_for(["mlx5_0", "mlx5_1"], 100.0, [0, 1], ["sw0", "sw2"])
    node = Node(
        "pcie-8gpu",
        devs,
        _sockets(20),
        nics,
        build.pcie_tree(devs),
        _switches(devs, nics, numa),
        PCIE_GBPS_BY_GEN[3],
        SYS_GBPS["skylake"],
    )
    return build.assign_nearest_nics(node)


def npu_2x4() -> Node:
    """8 NPUs as two fully connected groups of four (HCCS 30 GB/s per link)."""
    numa = [0, 0, 0, 0, 1, 1, 1, 1]
    devs = _devices(8, "Ascend-910", 256.0, numa, [])
    nics = build.nics_for([f"eth{i}" for i in range(8)], 100.0, numa)
    links = build.groups([[0, 1, 2, 3], [4, 5, 6, 7]], "hccs", 1, 30.0)
    node = Node(
        "npu-2x4", devs, _sockets(48, 1), nics, build.merge_links(links), (),
        PCIE_GBPS_BY_GEN[4], SYS_GBPS["skylake"],
    )  # fmt: skip
    return build.assign_nearest_nics(node)


def eflops() -> Node:
    """EFLOPS node: 4 PCIe V100, one 100 Gb/s NIC per GPU, GPU+NIC pairs on PCIe switches."""
    numa = [0, 0, 1, 1]
    sw = ["sw0", "sw0", "sw1", "sw1"]
    devs = _devices(4, "V100-PCIE-32GB", 112.0, numa, sw)
    nics = build.nics_for([f"mlx5_{i}" for i in range(4)], 100.0, numa, sw)
    node = Node(
        "eflops", devs, _sockets(24), nics, build.pcie_tree(devs), _switches(devs, nics, numa),
        PCIE_GBPS_BY_GEN[3], SYS_GBPS["skylake"],
    )  # fmt: skip
    return build.assign_nearest_nics(node)


DGX1_V100_NVLINKS: tuple[tuple[int, int, int], ...] = (
    (0, 3, 2), (0, 4, 2), (1, 2, 2), (1, 5, 2), (2, 3, 2), (4, 7, 2), (5, 6, 2), (6, 7, 2),
    (0, 1, 1), (0, 2, 1), (1, 3, 1), (2, 6, 1), (3, 7, 1), (4, 5, 1), (4, 6, 1), (5, 7, 1),
)  # fmt: skip
"""DGX-1V hybrid cube mesh: (GPU a, GPU b, NVLinks between them); 6 links per GPU."""


def dgx1_v100() -> Node:
    """DGX-1V node: 8 V100-SXM2 on the hybrid cube mesh (see module docstring)."""
    numa = [0, 0, 0, 0, 1, 1, 1, 1]
    sw = [f"sw{i // 2}" for i in range(8)]
    devs = _devices(8, "V100-SXM2", 125.0, numa, sw)
    nics = build.nics_for([f"mlx5_{i}" for i in range(4)], 100.0, [0, 0, 1, 1],
                          ["sw0", "sw1", "sw2", "sw3"])  # fmt: skip
    links = [Link(a, b, "nvlink", n) for a, b, n in DGX1_V100_NVLINKS]
    node = Node(
        "dgx1-v100", devs, _sockets(20), nics, build.merge_links(links),
        _switches(devs, nics, numa), PCIE_GBPS_BY_GEN[3], SYS_GBPS["skylake"],
    )  # fmt: skip
    return build.assign_nearest_nics(node)


NODE_PRESETS: dict[str, Callable[[], Node]] = {
    "dgx-a100": dgx_a100,
    "dgx-h100": dgx_h100,
    "hgx-h100": dgx_h100,
    "pcie-8gpu": pcie_8gpu,
    "npu-2x4": npu_2x4,
    "eflops": eflops,
}
"""Preset name → node builder (each has an example in docs/topology.md)."""

MORE_PRESETS: dict[str, Callable[[], Node]] = {"dgx1-v100": dgx1_v100}
"""Presets without a docs/topology.md example yet (accepted by :func:`preset`)."""

ALIASES: dict[str, str] = {
    "pcie-8gpu-2socket": "pcie-8gpu",
    "npu-8card-2x4": "npu-2x4",
    "eflops-4gpu-bigraph": "eflops",
}
"""Other names of presets (issue 5's names)."""

_NETWORKS: dict[str, Network] = {
    "dgx-a100": Network("rail", 2),
    "dgx-h100": Network("rail", 2),
    "hgx-h100": Network("rail", 2),
    "eflops": Network("bigraph", 2),
}
_DEFAULT_NODES = {"eflops": 16}


def node_template(name: str) -> Node:
    """A fresh node of preset ``name`` (:data:`NODE_PRESETS`, :data:`MORE_PRESETS` or an
    :data:`ALIASES` name); KeyError if unknown."""
    name = ALIASES.get(name, name)
    return {**NODE_PRESETS, **MORE_PRESETS}[name]()


def preset(name: str, nodes: int | None = None) -> Cluster:
    """A cluster of ``nodes`` identical preset nodes (default 1; EFLOPS 16, as in the paper),
    named ``<preset>-0`` …, on the preset's network (fat-tree, one level, if it has none).

    Raises KeyError for an unknown preset, ValueError for ``nodes`` < 1.
    """
    template = node_template(name)
    name = ALIASES.get(name, name)
    n = _DEFAULT_NODES.get(name, 1) if nodes is None else nodes
    if n < 1 or n > 100_000:
        raise ValueError(f"nodes must be between 1 and 100000 (got {n})")
    members = tuple(_rename(template, f"{name}-{i}") for i in range(n))
    return Cluster(members, _NETWORKS.get(name, Network()), name=name)


def generic(
    nodes: int,
    cards_per_node: int,
    nic_speed_Gbps: float | None = None,
    nics_per_node: int = 1,
    model: str | None = None,
    peak_tflops: float | None = None,
) -> Cluster:
    """``nodes`` × ``cards_per_node`` cards, ``nics_per_node`` NICs of ``nic_speed_Gbps`` each,
    cards spread over the NICs in contiguous blocks; no NUMA or link information (pairs talk over
    PCIe of the smallest generation that carries the NIC). Links, PCIe and inter-socket figures
    and the network are marked ``assumed`` (the options do not give them). Raises ValueError for
    counts < 1."""
    if nodes < 1 or cards_per_node < 1 or nics_per_node < 1:
        raise ValueError("nodes, cards per node and NICs per node must be >= 1")
    if nodes > 100_000 or cards_per_node > 4096 or nodes * cards_per_node > MAX_CARDS:
        raise ValueError(
            f"at most 100000 nodes, 4096 cards per node and {MAX_CARDS} cards in all "
            f"(got {nodes} × {cards_per_node})"
        )
    devs = tuple(Device(i, model, peak_tflops) for i in range(cards_per_node))
    nics = build.nics_for([f"nic{i}" for i in range(nics_per_node)], nic_speed_Gbps)
    node = Node("node", devs, nics=nics, pcie_bw_GBps=build.infer_pcie_GBps(nics),
                assumed=frozenset(NODE_FIGURES))  # fmt: skip
    template = build.assign_nearest_nics(node)
    nodes_ = tuple(_rename(template, f"node-{i}") for i in range(nodes))
    return Cluster(nodes_, Network(assumed=frozenset(NETWORK_FIGURES)), name="generic")


def _rename(node: Node, name: str) -> Node:
    return replace(node, name=name)
