# ruff: noqa: E501 (tables of expected messages read best one per line)
"""Loading descriptions: formats, patterns, count expansion, round trips, and every refusal
with its exact dotted path (exit code 2)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from xpuperf.errors import EXIT_INPUT, InputError
from xpuperf.topology import from_dict, load, loads, preset, to_json_dict
from xpuperf.topology.presets import NODE_PRESETS

DATA = Path(__file__).resolve().parent.parent / "data" / "topology_example"


def base() -> dict[str, Any]:
    """Two 4-card nodes, two NUMA nodes each, one 100 Gb/s NIC per socket."""
    node = {
        "numa_nodes": 2,
        "devices": [{"index": i, "numa_node": i // 2} for i in range(4)],
        "nics": [
            {"name": "nic0", "speed_Gbps": 100, "numa_node": 0, "cards": [0, 1]},
            {"name": "nic1", "speed": "100Gbps", "numa_node": 1, "cards": [2, 3]},
        ],
        "links": [{"pattern": "full_mesh", "kind": "nvlink", "count": 2}],
    }
    return {
        "schema": "xpuperf.topology/1",
        "nodes": [{"name": "a", **node}, {"name": "b", **copy.deepcopy(node)}],
    }


def test_base_loads() -> None:
    c = from_dict(base())
    assert [n.name for n in c.nodes] == ["a", "b"]
    assert c.n_ranks == 8
    assert c.path(0, 3).bw_GBps == 40.0  # 2 NVLinks × 20 GB/s
    assert c.nodes[0].nic_bw_per_card_GBps() == {0: 6.25, 1: 6.25, 2: 6.25, 3: 6.25}


def test_example_file() -> None:
    c = load(DATA / "cluster.yaml")
    assert [n.name for n in c.nodes] == ["npu-0", "npu-1", "npu-2", "npu-3"]
    node = c.nodes[0]
    assert node.pcie_bw_GBps == 24.0
    assert node.sys_bw_GBps == 16.0
    assert [n.speed_Gbps for n in node.nics] == [100.0] * 4  # "12.5GB/s" is 100 Gb/s too
    assert node.numa_nodes[0].memory_MB == 256000.0
    assert len(node.numa_nodes[1].cpus) == 48
    assert c.network.oversubscription == 2.0
    assert c.network.latency_us == 5.0
    assert c.path(0, 1).kind == "hccs"
    assert c.path(0, 1).latency_us == 1.0
    assert c.path(0, 4).kind == "sys"
    assert c.path(0, 4).bw_GBps == 16.0
    assert c.path(0, 8).bw_GBps == 6.25  # same leaf: 100 Gb/s / 2 cards
    assert c.path(0, 16).bw_GBps == 3.125  # other leaf: / 2 oversubscription


def test_patterns_and_overrides() -> None:
    d = base()
    d["nodes"][0]["links"] = [
        {"pattern": "ring", "kind": "nvlink", "count": 1},
        {"a": 0, "b": 2, "kind": "nvlink", "count": 2},  # later entries win for a pair
    ]
    d["nodes"][1]["links"] = [{"pattern": "groups", "groups": [[0, 1], [2, 3]], "kind": "xgmi"}]
    c = from_dict(d)
    a, b = c.nodes
    assert [(lk.a, lk.b, lk.count) for lk in a.links] == [
        (0, 1, 1),
        (0, 2, 2),
        (0, 3, 1),
        (1, 2, 1),
        (2, 3, 1),
    ]
    assert a.path(1, 3).kind == "sys"  # not neighbours in the ring, different sockets
    assert [(lk.a, lk.b, lk.kind) for lk in b.links] == [(0, 1, "xgmi"), (2, 3, "xgmi")]


def test_pcie_tree_and_switches() -> None:
    d = base()
    node = d["nodes"][0]
    node["pcie_switches"] = [
        {"name": "sw0", "numa_node": 0, "devices": [0, 1], "nics": ["nic0"]},
        {"name": "sw1", "numa_node": 1, "devices": [2, 3], "nics": ["nic1"]},
    ]
    node["links"] = [{"pattern": "pcie_tree"}]
    c = from_dict(d)
    n = c.nodes[0]
    assert [(lk.a, lk.b, lk.kind) for lk in n.links] == [(0, 1, "pcie"), (2, 3, "pcie")]
    assert n.device(2).pcie_switch == "sw1"
    assert n.nic("nic1").pcie_switch == "sw1"
    assert n.path(0, 1).via == "pcie switch sw0"


def test_count_expands_identical_nodes_and_shorthand_devices() -> None:
    text = """
schema: xpuperf.topology/1
nodes:
  - name: dgx
    count: 128
    devices: {count: 8, model: A100-SXM4, peak_tflops: 312, nic: [m0, m0, m1, m1, m2, m2, m3, m3]}
    nics:
      - {name: m0, speed: "200Gbps"}
      - {name: m1, speed: "200Gbps"}
      - {name: m2, speed: "200Gbps"}
      - {name: m3, speed: "200Gbps"}
    links: [{pattern: full_mesh, kind: nvlink, count: 12}]
"""
    c = loads(text)
    assert len(c.nodes) == 128
    assert c.n_ranks == 1024
    assert c.nodes[127].name == "dgx-127"
    assert c.nodes[5].nic("m1").cards == (2, 3)
    assert c.path(0, 1023).bw_GBps == 12.5  # 200 Gb/s shared by 2 cards
    assert c.path(0, 7).bw_GBps == 240.0


def test_preset_nodes_in_a_file() -> None:
    c = loads("schema: xpuperf.topology/1\nnodes: [{preset: dgx-h100, count: 2, name: 'h{i}'}]")
    assert [n.name for n in c.nodes] == ["h0", "h1"]
    assert c.path(0, 8).kind == "net"


def test_nics_assigned_to_nearest_when_not_given() -> None:
    d = base()
    for node in d["nodes"]:
        for nic in node["nics"]:
            del nic["cards"]
    c = from_dict(d)
    assert [n.cards for n in c.nodes[0].nics] == [(0, 1), (2, 3)]  # by NUMA node


def test_explicit_placement() -> None:
    d = base()
    d["placement"] = ["a:0", ["b", 0], {"node": "a", "device": 1}, "b:1"]
    c = from_dict(d)
    assert c.n_ranks == 4
    assert [(c.slot(r)[0].name, c.slot(r)[1].index) for r in range(4)] == [
        ("a", 0), ("b", 0), ("a", 1), ("b", 1)
    ]  # fmt: skip


@pytest.mark.parametrize("name", sorted(NODE_PRESETS))
def test_json_round_trip_of_presets(name: str) -> None:
    c = preset(name, nodes=2)
    d = to_json_dict(c)
    back = from_dict(json.loads(json.dumps(d)))
    assert back == c
    assert to_json_dict(back) == d


def test_yaml_round_trip_of_example(tmp_path: Path) -> None:
    c = load(DATA / "cluster.yaml")
    out = tmp_path / "again.yaml"
    out.write_text(yaml.safe_dump(to_json_dict(c), sort_keys=False), encoding="utf-8")
    assert load(out) == c
    js = tmp_path / "again.json"
    js.write_text(json.dumps(to_json_dict(c)), encoding="utf-8")
    assert load(js) == c


def test_json_contract_fields() -> None:
    d = to_json_dict(preset("dgx-a100", nodes=2))
    assert d["schema"] == "xpuperf.topology/1"
    node = d["nodes"][1]
    assert node["devices"][0] == {
        "index": 0, "model": "A100-SXM4", "peak_tflops": 312.0, "numa_node": 0,
        "nic": "mlx5_0", "pcie_switch": "sw0",
    }  # fmt: skip
    assert node["nics"][7]["name"] == "mlx5_7"
    assert node["nics"][7]["speed_Gbps"] == 200.0
    assert {"a": 0, "b": 1, "kind": "nvlink", "count": 12}.items() <= node["links"][0].items()
    g = to_json_dict(preset("npu-2x4"))
    assert len(g["nodes"][0]["links"]) == 12  # two groups of four: 2 × 6 pairs


def _mutate(path: str, value: Any) -> dict[str, Any]:
    d = base()
    target: Any = d
    parts = path.replace("]", "").replace("[", ".").split(".")
    for p in parts[:-1]:
        target = target[int(p)] if p.isdigit() else target[p]
    last = parts[-1]
    if value is DELETE:
        del target[last]
    elif isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return d


DELETE = object()

INVALID = [
    ("ranks", 9, "ranks: 9 ranks but the cluster has only 8 card slots"),
    ("nodes[0].devices[3].numa_node", 2, "nodes[0].devices[3].numa_node: NUMA node 2 does not exist"),
    ("nodes[1].nics[0].speed_Gbps", 0, "nodes[1].nics[0].speed_Gbps: must be > 0"),
    ("nodes[1].nics[1].speed", "-100Gbps", "nodes[1].nics[1].speed: must be > 0"),
    ("nodes[0].links[0].bw_GBps", -5, "nodes[0].links[0].bw_GBps: must be > 0"),
    ("nodes[0].nics[1].speed", 100, "nodes[0].nics[1].speed: a bare number (100) has no unit"),
    ("nodes[0].nics[0].speed_gbps", 100, "nodes[0].nics[0].speed_gbps: unknown key; did you mean 'speed_Gbps'?"),
    ("nodes[0].devise", 4, "nodes[0].devise: unknown key; did you mean 'devices'?"),
    ("node", [], "node: unknown key; did you mean 'nodes'?"),
    ("schema", "xpuperf.topology/2", "schema: 'xpuperf.topology/2' is not supported"),
    ("schema", DELETE, "schema: missing"),
    ("nodes[0].links[0]", {"a": 0, "b": 9, "kind": "nvlink"}, "nodes[0].links[0].b: device 9 does not exist"),
    ("nodes[0].links[0]", {"a": 1, "b": 1, "kind": "pcie"}, "nodes[0].links[0].b: a link joins two different cards"),
    ("nodes[0].links[0].kind", "nvlnk", "nodes[0].links[0].kind: 'nvlnk' is not one of"),
    ("nodes[0].links[0].pattern", "mesh", "nodes[0].links[0].pattern: 'mesh' is not one of"),
    ("nodes[0].devices[0].nic", "nic9", "nodes[0].devices[0].nic: NIC 'nic9' is not in nics"),
    ("nodes[0].devices[0].nic", "nic1", "nodes[0].devices[0].nic: nic1 but nics lists card 0 on nic0"),
    ("nodes[0].nics[1].cards", [1, 2], "nodes[0].nics[1].cards[0]: card 1 is already on nic0"),
    ("nodes[1].nics", [], "nodes[1].nics: node b has no NIC, but the cluster has 2 nodes"),
    ("nodes[1].name", "a", "nodes[1].name: node name 'a' already used by nodes[0]"),
    ("nodes[0].count", 0, "nodes[0].count: must be >= 1"),
    ("placement", ["a:0", "a:0"], "placement[1]: slot a:0 is already rank 0"),
    ("placement", ["a:7"], "placement[0]: node a has no device 7"),
    ("placement", ["c:0"], "placement[0]: node 'c' does not exist"),
    ("network", {"fabric": "fat_tree"}, "network.fabric: 'fat_tree' is not one of fat-tree, rail, bigraph, single-switch; did you mean 'fat-tree'?"),
    ("network", {"oversubscription": 0.5}, "network.oversubscription: must be >= 1"),
    ("nodes[0].numa_nodes", [{"id": 0, "cpus": "0-3,x"}], "nodes[0].numa_nodes[0].cpus:"),
]  # fmt: skip


@pytest.mark.parametrize(("path", "value", "message"), INVALID, ids=[i[2][:40] for i in INVALID])
def test_invalid_descriptions_name_the_path(path: str, value: Any, message: str) -> None:
    with pytest.raises(InputError) as e:
        from_dict(_mutate(path, value), source="t.yaml")
    assert e.value.message.startswith(message), e.value.message
    assert e.value.path == "t.yaml"
    assert e.value.exit_code == EXIT_INPUT


@pytest.mark.parametrize(
    ("speed", "message"),
    [
        # pcie_gen 4 (24 GB/s): 200 written as GB/s is 1600 Gb/s
        ({"speed_GBps": 200}, "nodes[0].nics[0].speed_GBps: 1600 Gb/s (200 GB/s) is faster than the PCIe link"),
        # no PCIe generation given: still caught against the PCIe Gen6 x16 ceiling
        ({"speed": "400GB/s"}, "nodes[0].nics[0].speed: 3200 Gb/s (400 GB/s) is faster than"),
    ],
)  # fmt: skip
def test_gbit_gbyte_mix_up_is_refused(speed: dict, message: str) -> None:
    d = base()
    nic = d["nodes"][0]["nics"][0]
    del nic["speed_Gbps"]
    nic.update(speed)
    if "speed_GBps" in speed:
        d["nodes"][0]["pcie_gen"] = 4
    with pytest.raises(InputError) as e:
        from_dict(d)
    assert e.value.message.startswith(message), e.value.message
    assert "did you mean" in e.value.message


def test_realistic_fast_nics_are_accepted() -> None:
    d = base()
    d["nodes"][0]["pcie_gen"] = 5
    d["nodes"][0]["nics"][0]["speed_Gbps"] = 400  # 50 GB/s on Gen5 (48 usable): fine
    assert from_dict(d).nodes[0].nics[0].speed_Gbps == 400


def test_yaml_errors_carry_line_numbers(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(
        "schema: xpuperf.topology/1\nnodes:\n  - name: a\n    devices: 2\n"
        "    nics:\n      - {name: n0, speed: 100}\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as e:
        load(f)
    assert e.value.line == 6
    assert str(e.value).startswith(f"{f}:6: nodes[0].nics[0].speed: a bare number")


def test_unparsable_and_missing_files(tmp_path: Path) -> None:
    f = tmp_path / "broken.yaml"
    f.write_text("schema: [unclosed\n", encoding="utf-8")
    with pytest.raises(InputError, match="not valid YAML"):
        load(f)
    j = tmp_path / "broken.json"
    j.write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        load(j)
    with pytest.raises(InputError, match="cannot read"):
        load(tmp_path / "missing.yaml")
    with pytest.raises(InputError, match="a topology description is a mapping"):
        loads("- 1\n- 2\n")


def test_unknown_preset_in_file() -> None:
    with pytest.raises(
        InputError, match=r"nodes\[0\].preset: unknown preset 'dgx-a10'; did you mean"
    ):
        loads("schema: xpuperf.topology/1\nnodes: [{preset: dgx-a10}]")
