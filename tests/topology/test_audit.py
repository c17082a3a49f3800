"""``check()``: each XP5xx finding with value, threshold and remedy; healthy presets are quiet."""

from __future__ import annotations

from dataclasses import replace

from xpuperf.findings import CODES, Severity
from xpuperf.topology import Cluster, check, from_dict, preset
from xpuperf.topology.build import full_mesh, merge_links
from xpuperf.topology.model import Device, Nic, Node


def codes(findings) -> list[str]:
    return [f.code for f in findings]


def test_every_code_is_registered_and_findings_carry_value_threshold_remedy() -> None:
    assert all(f"XP50{i}" in CODES for i in range(1, 9))
    for name in ("pcie-8gpu", "npu-2x4"):
        for f in check(preset(name, nodes=2)):
            assert {"value", "threshold", "remedy"} <= set(f.data)
            assert "threshold" in f.message
            assert "Remedy:" in f.message


def test_one_nic_per_card_presets_are_clean() -> None:
    for name in ("dgx-a100", "dgx-h100", "eflops"):
        assert check(preset(name, nodes=4)) == [], name


def test_shared_nic_xp502_reported_once_for_identical_nodes() -> None:
    found = check(preset("pcie-8gpu", nodes=16))
    assert codes(found) == ["XP502", "XP502"]  # one per NIC, not per node
    f = found[0]
    assert f.severity is Severity.WARNING
    assert f.data["value"] == 4
    assert f.data["threshold"] == 2
    assert f.data["per_card_GBps"] == 100 / 8 / 4
    assert "(×16)" in f.message


def test_two_groups_of_four_is_non_uniform_xp504() -> None:
    (f,) = check(preset("npu-2x4"))
    assert f.code == "XP504"
    assert f.data["slowest_GBps"] == 10.0
    assert f.data["fastest_GBps"] == 30.0
    assert f.data["value"] == round(10 / 30, 4)
    assert f.data["threshold"] == 0.5


def _node(**kw) -> Node:
    devs = tuple(Device(i, numa_node=i // 2, nic=f"n{i // 2}") for i in range(4))
    nics = (Nic("n0", 200.0, 0, (0, 1)), Nic("n1", 200.0, 1, (2, 3)))
    return replace(Node("h", devs, nics=nics, pcie_bw_GBps=24.0), **kw)


def test_nic_across_socket_xp501() -> None:
    nics = (Nic("n0", 200.0, 1, (0, 1)), Nic("n1", 200.0, 1, (2, 3)))
    found = check(Cluster((_node(nics=nics),)))
    assert codes(found) == ["XP501", "XP504"]  # PCIe 24 GB/s vs inter-socket 10 GB/s: XP504 too
    f = found[0]
    assert f.data["cards"] == [0, 1]
    assert f.data["value"] == 2
    assert f.data["threshold"] == 0
    assert "card 0 (NUMA 0) → n0 (NUMA 1)" in f.message


def test_missing_numa_and_unknown_speed_and_unassigned_nic() -> None:
    devs = tuple(Device(i) for i in range(2))
    node = Node("h", devs, nics=(Nic("n0", None),))
    found = check(Cluster((node, replace(node, name="g"))))
    assert codes(found) == ["XP503", "XP507", "XP508"]
    assert all(f.severity is Severity.INFO for f in found)


def test_uneven_link_groups_xp505() -> None:
    devs = tuple(Device(i, numa_node=0, nic="n0") for i in range(8))
    links = merge_links(full_mesh([0, 1, 2], "nvlink", 2) + full_mesh([3, 4, 5, 6, 7], "nvlink", 2))
    node = Node("h", devs, nics=(Nic("n0", 100.0, 0, tuple(range(8))),), links=links)
    found = check(Cluster((node,)))
    assert "XP505" in codes(found)
    f = next(f for f in found if f.code == "XP505")
    assert f.data["value"] == [3, 5]


def test_interleaved_rank_order_xp506() -> None:
    d = {
        "schema": "xpuperf.topology/1",
        "nodes": [
            {"name": n, "devices": 2, "nics": [{"name": "e0", "speed": "100Gbps"}]}
            for n in ("a", "b")
        ],
        "placement": ["a:0", "b:0", "a:1", "b:1"],
    }
    (f,) = [f for f in check(from_dict(d)) if f.code == "XP506"]
    assert f.data["value"] == 4
    assert f.data["threshold"] == 2
    d["placement"] = ["a:0", "a:1", "b:0", "b:1"]
    assert "XP506" not in codes(check(from_dict(d)))
