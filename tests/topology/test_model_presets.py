"""Presets and the model's answers for the cost model, with values worked out by hand.

Sources of the expected figures: docs/formulas.md §2 (NCCL link bandwidths: NVLink 20 GB/s per
link on A100, 20.6 on H100; PCIe Gen3 x16 12 GB/s; UPI Skylake 10, AMD 16; 100 Gb/s NIC 12) and
the vendor figures listed in docs/topology.md.
"""

from __future__ import annotations

import math

import pytest

from xpuperf.topology import Cluster, generic, preset
from xpuperf.topology.model import Device, Link, Network, Nic, Node

# preset -> NIC bandwidth per card in GB/s = NIC Gb/s / 8 / cards sharing it
PER_CARD = {
    "dgx-a100": 200 / 8,  # 8 × 200 Gb/s HDR, one per GPU → 25 GB/s
    "dgx-h100": 400 / 8,  # 8 × 400 Gb/s NDR → 50 GB/s
    "hgx-h100": 400 / 8,
    "pcie-8gpu": 100 / 8 / 4,  # one 100 Gb/s NIC per socket, 4 GPUs each → 3.125 GB/s
    "npu-2x4": 100 / 8,  # one 100 Gb/s port per NPU → 12.5 GB/s
    "eflops": 100 / 8,  # one 100 Gb/s ConnectX-5 per GPU → 12.5 GB/s
}


@pytest.mark.parametrize(("name", "expected"), sorted(PER_CARD.items()))
def test_nic_bandwidth_per_card(name: str, expected: float) -> None:
    node = preset(name).nodes[0]
    per_card = node.nic_bw_per_card_GBps()
    assert sorted(per_card) == [d.index for d in node.devices]
    assert list(per_card.values()) == pytest.approx([expected] * len(per_card))


# (preset, rank a, rank b, kind, GB/s) on 2 nodes; b = cards per node is the first rank of node 1
PATHS = [
    ("dgx-a100", 0, 7, "nvlink", 12 * 20.0),  # NVSwitch: 12 NVLinks × 20 GB/s = 240
    ("dgx-a100", 0, 8, "net", 24.0),  # min(25 GB/s NIC, 24 GB/s PCIe Gen4); 8 × 24 = 192 measured
    ("dgx-h100", 3, 4, "nvlink", 18 * 20.6),  # 370.8
    ("dgx-h100", 0, 8, "net", 48.0),  # min(50 GB/s NIC, 48 GB/s Gen5); NDR measured 46–48
    ("pcie-8gpu", 0, 1, "pcie", 12.0),  # same PCIe switch
    ("pcie-8gpu", 0, 2, "pcie", 12.0),  # same socket, via the host bridge
    ("pcie-8gpu", 0, 4, "sys", 10.0),  # across sockets: min(PCIe 12, UPI 10)
    ("pcie-8gpu", 0, 8, "net", 3.125),  # 100 Gb/s shared by 4 cards
    ("npu-2x4", 0, 3, "hccs", 30.0),  # inside a group: 240 Gb/s HCCS link = 30 GB/s
    ("npu-2x4", 3, 4, "sys", 10.0),  # across groups (and sockets)
    ("npu-2x4", 0, 8, "net", 12.5),
    ("eflops", 0, 1, "pcie", 12.0),
    ("eflops", 0, 4, "net", 12.0),  # min(12.5 GB/s NIC, 12 GB/s PCIe Gen3)
]


@pytest.mark.parametrize(("name", "a", "b", "kind", "bw"), PATHS)
def test_path_between_ranks(name: str, a: int, b: int, kind: str, bw: float) -> None:
    p = preset(name, nodes=2).path(a, b)
    assert p.kind == kind
    assert p.bw_GBps == pytest.approx(bw)
    assert p.bw_GBps == preset(name, nodes=2).path(b, a).bw_GBps  # symmetric


def test_same_card_path_and_latencies() -> None:
    c = preset("dgx-a100", nodes=2)
    p = c.path(5, 5)
    assert (p.kind, p.bw_GBps, p.latency_us) == ("self", math.inf, 0.0)
    assert c.path(0, 1).latency_us == 0.6  # NCCL NVLink LL
    assert c.path(0, 8).latency_us == 2.7  # NCCL network LL (ring)
    assert preset("pcie-8gpu").path(0, 1).latency_us == 1.0  # NCCL PCIe LL


def test_rank_to_node_and_device_node_major() -> None:
    c = preset("dgx-h100", nodes=3)
    assert c.n_ranks == 24
    node, dev = c.slot(17)
    assert (node.name, dev.index) == ("dgx-h100-2", 1)
    with pytest.raises(ValueError, match="out of range"):
        c.slot(24)


def test_explicit_placement_and_world_size() -> None:
    base = preset("eflops", nodes=2)
    c = Cluster(base.nodes, base.network, placement=((1, 0), (0, 0)))
    assert c.n_ranks == 2
    assert c.slot(0)[0].name == "eflops-1"
    assert c.path(0, 1).kind == "net"
    assert Cluster(base.nodes, world_size=5).n_ranks == 5


def test_eflops_defaults_to_16_nodes_on_bigraph() -> None:
    c = preset("eflops")
    assert len(c.nodes) == 16
    assert c.n_ranks == 64
    assert c.network.fabric == "bigraph"


def test_generic_builder_spreads_cards_over_nics() -> None:
    c = generic(nodes=3, cards_per_node=8, nic_speed_Gbps=200, nics_per_node=2)
    node = c.nodes[0]
    assert [n.cards for n in node.nics] == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert set(node.nic_bw_per_card_GBps().values()) == {200 / 8 / 4}
    assert c.path(0, 8).bw_GBps == pytest.approx(6.25)
    assert node.pcie_bw_GBps == 24.0  # smallest PCIe generation that carries 25 GB/s
    with pytest.raises(ValueError, match=">= 1"):
        generic(0, 8)


def _two_leaf_cluster(oversub: float, nodes_per_leaf: int | None) -> Cluster:
    dev = (Device(0, numa_node=0, nic="n0"),)
    nic = (Nic("n0", 100.0, 0, (0,)),)
    nodes = tuple(Node(f"h{i}", dev, nics=nic) for i in range(4))
    return Cluster(nodes, Network("fat-tree", 2, oversub, nodes_per_leaf))


def test_oversubscription_applies_across_leaves_only() -> None:
    c = _two_leaf_cluster(3.0, 2)
    assert c.path(0, 1).bw_GBps == pytest.approx(12.0)  # same leaf: min(12.5 NIC, 12 PCIe)
    assert c.path(0, 2).bw_GBps == pytest.approx(4.0)  # across leaves: 12 / 3
    assert _two_leaf_cluster(3.0, None).path(0, 1).bw_GBps == pytest.approx(4.0)  # unknown: worst


def test_nic_across_socket_caps_network_path() -> None:
    devs = (Device(0, numa_node=0, nic="n0"),)
    node = Node("h", devs, nics=(Nic("n0", 400.0, 1, (0,)),), pcie_bw_GBps=48.0, sys_bw_GBps=22.0)
    bw, via, assumed = node.card_net_bw_GBps(0)
    assert bw == 22.0
    assert "across NUMA nodes 0→1" in via
    assert not assumed


def test_unknown_link_bandwidth_is_flagged_assumed() -> None:
    devs = (Device(0), Device(1))
    node = Node("h", devs, links=(Link(0, 1, "xgmi", 1),))
    p = node.path(0, 1)
    assert p.kind == "xgmi"
    assert p.assumed
    assert p.bw_GBps == 12.0
