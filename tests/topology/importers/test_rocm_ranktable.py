"""``rocm-smi --showtopo`` (corpus 20) and the Ascend HCCL rank table (corpus 22)."""

from __future__ import annotations

import json

import pytest

from xpuperf.errors import InputError
from xpuperf.topology.importers import ranktable, rocmsmi
from xpuperf.topology.importers.assemble import to_cluster


def test_20_archer2_mi210_xgmi(read) -> None:
    text, src = read("rocmsmi", "20")
    assert rocmsmi.sniff(text)
    imp = rocmsmi.parse(text, source=src)
    (host,) = imp.hosts
    assert sorted(host.devices) == [0, 1, 2, 3]
    assert len(host.links) == 6
    assert {lk.kind for lk in host.links.values()} == {"xgmi"}
    assert {i: d.numa_node for i, d in host.devices.items()} == {0: 0, 1: 1, 2: 2, 3: 3}
    node = to_cluster(imp).nodes[0]
    assert node.path(0, 3).kind == "xgmi"
    assert [n.id for n in node.numa_nodes] == [0, 1, 2, 3]


def test_rocm_smi_old_numa_form_and_pcie() -> None:
    text = (
        "========================= Link Type between two GPUs =========================\n"
        "       GPU0         GPU1\nGPU0   0            PCIE\nGPU1   PCIE         0\n"
        "================================== Numa Nodes ==================================\n"
        "GPU[0]\t\t: (Topology) Numa Node: 0\nGPU[1]\t\t: (Topology) Numa Node: -1\n"
    )
    (host,) = rocmsmi.parse(text, "r.txt").hosts
    assert host.links[(0, 1)].kind == "pcie"
    assert (host.devices[0].numa_node, host.devices[1].numa_node) == (0, None)


@pytest.mark.parametrize(
    ("row", "message"),
    [("GPU1   XGMI", "1 values for 2 GPUs"), ("GPU1   NVLINK       0", "link type 'NVLINK'")],
)
def test_rocm_smi_refusals(row: str, message: str) -> None:
    text = (
        "========================= Link Type between two GPUs =========================\n"
        f"       GPU0         GPU1\nGPU0   0            XGMI\n{row}\n"
    )
    with pytest.raises(InputError, match=message) as e:
        rocmsmi.parse(text, "r.txt")
    assert e.value.line == 4


def test_22_hccl_rank_table_two_servers(read) -> None:
    text, src = read("ranktable", "22")
    assert ranktable.sniff(text)
    imp = ranktable.parse(text, source=src)
    assert [h.name for h in imp.hosts] == ["10.0.0.1", "10.0.0.10"]
    for h in imp.hosts:
        assert sorted(h.devices) == list(range(8))
    assert imp.hosts[0].devices[0].nic == "10.0.0.2"
    assert imp.hosts[1].devices[7].nic == "10.0.0.18"
    assert imp.placement == [(0, d) for d in range(8)] + [(1, d) for d in range(8)]
    c = to_cluster(imp)
    assert c.n_ranks == 16
    node, dev = c.slot(9)
    assert (node.name, dev.index) == ("10.0.0.10", 1)
    assert node.nic(dev.nic).cards == (1,)


def _table(**over: object) -> str:
    data = {
        "version": "1.0", "server_count": "1", "status": "completed",
        "server_list": [{"server_id": "s1", "device": [
            {"device_id": "0", "device_ip": "1.1.1.1", "rank_id": "1"},
            {"device_id": "1", "device_ip": "1.1.1.2", "rank_id": "0"},
        ]}],
    }  # fmt: skip
    data.update(over)
    return json.dumps(data)


def test_rank_table_explicit_order_and_group_list() -> None:
    imp = ranktable.parse(_table(), "r.json")
    assert imp.placement == [(0, 1), (0, 0)]
    old = {"status": "completed", "group_list": [{"instance_list": [
        {"server_id": "a", "devices": [{"device_id": 0, "device_ip": "x"}]},
        {"server_id": "b", "devices": [{"device_id": 0, "device_ip": "y"}]},
    ]}]}  # fmt: skip
    imp = ranktable.parse(json.dumps(old), "r.json")
    assert imp.placement == [(0, 0), (1, 0)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"server_list": [\n  {"device_id": "0",}\n]}', "not valid JSON"),
        (_table(server_count="2"), "server_count is 2 but 1 servers"),
        (_table(server_list=[]), "server_list is empty"),
        (_table(server_list=[{"server_id": "s", "device": [{"device_id": "a"}]}]), "integer"),
        (
            _table(
                server_list=[
                    {
                        "server_id": "s",
                        "device": [
                            {"device_id": "0", "rank_id": "0"},
                            {"device_id": "1", "rank_id": "0"},
                        ],
                    }
                ]
            ),
            "rank_id 0 is already used",
        ),
        (
            _table(
                server_list=[{"server_id": "s", "device": [{"device_id": "0", "rank_id": "3"}]}]
            ),
            "rank_id values must be 0…0",
        ),
    ],
)
def test_rank_table_refusals(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        ranktable.parse(text, "r.json")
