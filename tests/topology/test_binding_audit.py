"""Binding audit (XP510–XP516) on real corpus topologies with hand-worked bindings, and the
``topo check --binding`` CLI (terminal, JSON, gates, exit 2 on bad input).

Topologies: corpus 14 (DGX-1V ``nvidia-smi topo -m``: cards 0-3 on NUMA 0 = CPUs 0-11,24-35,
cards 4-7 on NUMA 1 = CPUs 12-23,36-47), corpus 45 (Ascend A3 lscpu + npu-smi: 8 NUMA nodes of 80
CPUs, cards without NUMA affinity), corpus 25 (H200 under a cgroup: no NUMA CPU lists) and 25
with corpus 24's ``numactl -H`` as the host's NUMA layout (a hand-made pair: 24 is another host's
output; it gives NUMA node k CPUs 16k…16k+15 and the distance matrix, e.g. d(0,4) = 28).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xpuperf.cli.topo import topo_app
from xpuperf.errors import GateFailedError, InputError, UsageError
from xpuperf.findings import CODES
from xpuperf.topology import preset
from xpuperf.topology.binding import read_binding
from xpuperf.topology.binding.audit import check
from xpuperf.topology.importers import import_topology, load_any

ROOT = Path(__file__).resolve().parents[1] / "data"
B = ROOT / "topology_binding"
T14 = next((ROOT / "topology_import_nvsmi").glob("14_*"))
T25 = next((ROOT / "topology_import_nvsmi").glob("25_*"))
T24 = next((ROOT / "topology_import_numactl").glob("24_*"))
T45 = next((ROOT / "topology_import_lscpu").glob("45_*"))
runner = CliRunner()


def audit(cluster, text: str, tmp_path: Path, name: str = "b.csv", fmt=None):
    p = tmp_path / name
    p.write_text(text)
    return check(cluster, read_binding(p, fmt))


def by_code(findings) -> dict[str, object]:
    return {f.code: f for f in findings}


def test_codes_registered() -> None:
    assert all(f"XP51{i}" in CODES for i in range(7))


def test_correct_bindings_give_no_finding() -> None:
    dgx1 = load_any(T14)
    assert check(dgx1, read_binding(B / "cpus_dgx1_exclusive.csv"))[0] == []
    a100 = preset("dgx-a100", nodes=2)
    for name in ("slurm_cpu_bind_verbose.txt", "launcher_torchrun.yaml"):
        found, ranks = check(a100, read_binding(B / name))
        assert found == [], name
        assert len(ranks) == 16
    found, _ = check(preset("eflops", nodes=1), read_binding(B / "openmpi5_report_bindings.txt"))
    assert found == []


def test_swapped_numactl_blocks_name_ranks_and_numa_nodes() -> None:
    found, _ranks = check(load_any(T14), read_binding(B / "numactl_show_torchrun_tee.txt"))
    assert [f.code for f in found] == ["XP510"]
    f = found[0]
    assert f.data["ranks"] == [3, 4]
    assert f.data["pairs"] == [
        {"rank": 3, "cpu_numa": [1], "card_numa": 0},
        {"rank": 4, "cpu_numa": [0], "card_numa": 1},
    ]
    assert "rank 3 (card 3 of node, NUMA 0) on CPUs of NUMA 1" in f.message
    assert "rank 4 → numactl --cpunodebind=1 --membind=1 (taskset -c 12-23,36-47)" in f.message
    assert (f.data["value"], f.data["threshold"]) == (2, 0)


def test_openmpi_map_by_socket_puts_ranks_1_and_2_remote() -> None:
    # eflops: cards 0,1 on NUMA 0 (CPUs 0-23,48-71), cards 2,3 on NUMA 1; map-by socket puts
    # rank 1 on core 24 (NUMA 1) and rank 2 on core 1 (NUMA 0).
    bf = read_binding(B / "openmpi4_report_bindings_map_by_socket.txt")
    found, _ = check(preset("eflops", nodes=1), bf)
    assert [f.code for f in found] == ["XP510"]
    assert found[0].data["ranks"] == [1, 2]


def test_planted_faults_each_found_once() -> None:
    found, _ = check(load_any(T14), read_binding(B / "ranks_dgx1_faults.yaml"))
    got = by_code(found)
    assert sorted(got) == ["XP510", "XP511", "XP512", "XP513", "XP514", "XP515"]
    assert got["XP510"].data["ranks"] == [0]  # CPUs 12-14 are NUMA 1, card 0 is on NUMA 0
    assert got["XP511"].data["ranks"] == [1]  # 0-23 = NUMA 0 (0-11) + NUMA 1 (12-23)
    assert got["XP511"].data["value"] == 2
    assert got["XP512"].data["pairs"] == [[2, 3]]  # 6-8 ∩ 8-10 = {8}
    assert got["XP512"].data["value"] == 1
    assert got["XP513"].data["ranks"] == [5]  # 0-47 = every CPU
    assert got["XP514"].data["ranks"] == [6]  # CPUs 18-20 on NUMA 1, membind 0
    assert got["XP515"].data["ranks"] == [7]
    assert got["XP515"].severity.value == "info"
    for f in found:
        assert {"value", "threshold", "remedy"} <= set(f.data)
        assert "Remedy:" in f.message


def test_unbound_taskset_and_torchrun_without_numa_binding(tmp_path: Path) -> None:
    found, _ = check(load_any(T14), read_binding(B / "taskset_cp_srun_l.txt"))
    assert [f.code for f in found] == ["XP513"]
    assert found[0].data["ranks"] == list(range(8))
    assert "ranks 0-3 → numactl --cpunodebind=0 --membind=0" in found[0].message
    found, _ = audit(preset("dgx-a100", nodes=2), "launcher: torchrun\n", tmp_path, "l.yaml")
    assert [f.code for f in found] == ["XP513"]
    assert found[0].data["value"] == 16


def test_wrappers_by_local_rank_apply_to_every_node() -> None:
    bf = read_binding(B / "launcher_numactl_wrappers.yaml")
    found, ranks = check(preset("dgx-a100", nodes=2), bf)
    assert [f.code for f in found] == ["XP510"]
    assert found[0].data["ranks"] == [7, 15]  # local rank 7 on both nodes
    assert len(ranks) == 16


def test_exclusive_shares_are_disjoint_and_local(tmp_path: Path) -> None:
    text = "launcher: torchrun\nnuma_binding: exclusive\n"
    found, ranks = audit(preset("dgx-a100"), text, tmp_path, "l.yaml")
    assert found == []
    # NUMA 0 has 128 CPUs (0-63,128-191) for cards 0-3: 32 each
    assert [len(r.cpus) for r in ranks] == [32] * 8
    assert ranks[1].cpus == tuple(range(32, 64))


def test_distance_stated_from_numactl_matrix(tmp_path: Path) -> None:
    cluster = import_topology([T25, T24])
    assert cluster.nodes[0].numa_distance(0, 4) == 28
    found, _ = audit(cluster, "rank,cpus\n0,64-79\n4,16-31\n", tmp_path)
    f = by_code(found)["XP510"]
    assert f.data["ranks"] == [0]  # rank 4: card 4 on NUMA 1 = CPUs 16-31, correct
    assert "on CPUs of NUMA 4, distance 28 vs 10 local" in f.message


def test_cards_without_numa_are_reported_not_guessed(tmp_path: Path) -> None:
    cluster = import_topology([T45])  # lscpu gives 8 NUMA nodes, npu-smi no card affinity
    found, _ = audit(cluster, "local_rank,cpus\n0,0-79\n1,80-159\n", tmp_path)
    got = by_code(found)
    assert sorted(got) == ["XP515", "XP516"]
    assert got["XP516"].data["ranks"] == [0, 1]


def test_topology_without_numa_cpus_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no NUMA CPU lists.*numa_nodes\[\]\.cpus"):
        audit(load_any(T25), "rank,cpus\n0,0-3\n", tmp_path)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("rank,cpus\n0,0-3\n9,4-7\n", r"b.csv:3: rank 9 is not in the topology \(ranks 0-7\)"),
        ("rank,cpus\n0,0-3\n0,4-7\n", r"b.csv:3: rank 0 is bound twice \(also at line 2\)"),
        ("rank,cpus\n0,48\n", r"b.csv:2: rank 0: CPU 48 is not in the NUMA CPU lists"),
        ("rank,cpunodebind\n0,2\n", r"b.csv:2: cpunodebind: NUMA node 2 does not exist"),
        ("local_rank,host,cpus\n0,nodeX,0\n", r"b.csv:2: host 'nodeX' is not a node"),
        ("local_rank,cpus\n8,0\n", r"b.csv:2: local rank 8 but nodes run at most 8 ranks"),
    ],
)
def test_binding_that_does_not_fit_the_topology(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(InputError, match=match):
        audit(load_any(T14), text, tmp_path)


def test_cli_terminal_json_and_gate(tmp_path: Path) -> None:
    swapped = str(B / "numactl_show_torchrun_tee.txt")
    r = runner.invoke(topo_app, ["check", str(T14), "--binding", swapped])
    assert r.exit_code == 0, r.output
    assert "binding: 8 rank(s)" in r.output
    assert "6 bound to their card's NUMA node only" in r.output
    assert "XP510 warning: 2 rank(s)" in r.output
    r = runner.invoke(topo_app, ["check", str(T14), "--binding", swapped, "--json", "-"])
    d = json.loads(r.output)
    assert "XP510" in [f["code"] for f in d["findings"]]
    assert d["binding"]["format"] == "numactl"
    assert d["binding"]["ranks"][3] == {
        "rank": 3, "node": "node", "device": 3, "card_numa": 0, "cpus": "12-23,36-47",
        "cpu_numa": [1], "mem_numa": [1], "unbound": False, "line": 19,
    }  # fmt: skip
    r = runner.invoke(topo_app, ["check", str(T14), "--binding", swapped, "--fail-on", "warning"])
    assert isinstance(r.exception, GateFailedError)
    r = runner.invoke(topo_app, ["check", "--preset", "dgx-a100", "--binding-format", "cpus"])
    assert isinstance(r.exception, UsageError)
    bad = tmp_path / "bad.csv"
    bad.write_text("rank,cpus\n0,zz\n")
    r = runner.invoke(topo_app, ["check", str(T14), "--binding", str(bad)])
    assert isinstance(r.exception, InputError)
    assert r.exception.exit_code == 2
    assert str(r.exception).startswith(f"{bad}:2: cpus 'zz'")
    r = runner.invoke(topo_app, ["check", str(T14), "--binding", swapped, "--json", swapped])
    assert r.exception is not None
    assert "input" in str(r.exception).lower()


def test_numa_distances_load_and_are_checked() -> None:
    from xpuperf.topology import from_dict

    numa = [
        {"id": 0, "cpus": "0-3", "distances": [10, 21]},
        {"id": 1, "cpus": "4-7", "distances": [21, 10]},
    ]
    node = {"devices": 2, "numa_nodes": numa}
    c = from_dict({"schema": "xpuperf.topology/1", "nodes": [node]})
    assert c.nodes[0].numa_distance(1, 0) == 21
    node["numa_nodes"][1]["distances"] = [21]
    with pytest.raises(InputError, match=r"numa_nodes\[1\]\.distances: has 1 values for 2"):
        from_dict({"schema": "xpuperf.topology/1", "nodes": [node]})
