"""The registry (sniffing, merging files about the same host) and ``xpuperf topo import``:
round trips through the loader, refusals, and ``topo show`` on a raw tool output."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xpuperf.cli.topo import topo_app
from xpuperf.errors import InputError, UsageError
from xpuperf.topology import load, to_json_dict
from xpuperf.topology.importers import detect, import_files, import_topology, load_any

from .conftest import all_fixtures, fixture_path
from .test_nvsmi import tabbed

runner = CliRunner()
FORMATS = {
    "01": ["nccl-xml"], "02": ["nccl-xml"], "14": ["nvidia-smi"], "20": ["rocm-smi"],
    "21": ["lscpu"], "22": ["hccl-ranktable"], "24": ["numactl"], "25": ["nvidia-smi"],
    "45": ["lscpu", "npu-smi"], "50": ["mx-smi"], "51": ["mx-smi"], "52": ["npu-smi-topo"],
    "53": ["npu-smi-topo"], "54": ["npu-smi-topo"], "55": ["nvidia-smi-nvlink"],
    "56": ["nvidia-smi-nvlink"], "57": ["nvidia-smi-nvlink"], "58": ["lstopo"], "59": ["lstopo"],
    "60": ["lstopo"], "61": ["nccl-graph"],
}  # fmt: skip
HOST_ONLY = {"21", "24"}  # CPUs and memory only: no cards to build a node from
REFUSED = {"61": "this is a graph dump, not a topology"}  # NCCL_GRAPH_DUMP_FILE


def run(*args: str):
    return runner.invoke(topo_app, list(args), catch_exceptions=True)


def test_every_fixture_is_sniffed_as_its_format() -> None:
    got = {p.name[:2]: detect(p.read_text(encoding="utf-8")) for p in all_fixtures()}
    assert got == FORMATS


@pytest.mark.parametrize("path", all_fixtures(), ids=lambda p: p.name[:2])
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_import_round_trip(path: Path, suffix: str, tmp_path: Path) -> None:
    out = tmp_path / f"cluster{suffix}"
    r = run("import", str(path), "-o", str(out))
    if path.name[:2] in HOST_ONLY:
        assert isinstance(r.exception, InputError)
        assert r.exception.exit_code == 2
        assert "no cards found" in str(r.exception)
        return
    if path.name[:2] in REFUSED:
        assert isinstance(r.exception, InputError)
        assert r.exception.exit_code == 2
        assert REFUSED[path.name[:2]] in str(r.exception)
        assert not out.exists()
        return
    assert r.exit_code == 0, r.output
    assert load(out) == import_topology([path])
    assert to_json_dict(load(out)) == to_json_dict(import_topology([path]))


def test_import_to_stdout_has_the_json_contract_fields(tmp_path: Path) -> None:
    r = run("import", str(fixture_path("nvsmi", "25")))
    assert r.exit_code == 0
    assert r.stdout.startswith("# imported by xpuperf topo import")
    assert "note: " not in r.stdout  # notes go to stderr
    p = tmp_path / "c.yaml"
    p.write_text(r.stdout, encoding="utf-8")
    d = to_json_dict(load(p))
    dev = d["nodes"][0]["devices"][1]
    assert (dev["index"], dev["numa_node"], dev["nic"]) == (1, 0, "mlx5_3")
    assert d["nodes"][0]["nics"][1] == {"name": "mlx5_1", "speed_Gbps": None, "numa_node": None,
                                        "cards": [], "pcie_switch": "sw8"}  # fmt: skip
    link = next(lk for lk in d["nodes"][0]["links"] if (lk["a"], lk["b"]) == (0, 7))
    assert (link["kind"], link["count"]) == ("nvlink", 18)


DGX1_NUMACTL = (
    "available: 2 nodes (0-1)\n"
    f"node 0 cpus: {' '.join(map(str, [*range(12), *range(24, 36)]))}\n"
    "node 0 size: 257889 MB\nnode 0 free: 1000 MB\n"
    f"node 1 cpus: {' '.join(map(str, [*range(12, 24), *range(36, 48)]))}\n"
    "node 1 size: 258044 MB\nnode 1 free: 1000 MB\n"
    "node distances:\nnode   0   1 \n  0:  10  21 \n  1:  21  10 \n"
)


def test_nvidia_smi_plus_numactl_merge(tmp_path: Path) -> None:
    """Synthetic numactl -H of a DGX-1 (two 12-core sockets) with corpus file 14."""
    numa = tmp_path / "numactl.txt"
    numa.write_text(DGX1_NUMACTL, encoding="utf-8")
    res = import_files([fixture_path("nvsmi", "14"), numa])
    node = res.cluster.nodes[0]
    assert [d.numa_node for d in node.devices] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert node.numa_nodes[1].memory_MB == pytest.approx(258044 * 1.048576)
    assert not any("inferred" in n for n in res.notes)  # numactl confirmed it
    assert res.formats[str(numa)] == ["numactl"]


def test_merge_with_a_mismatched_host_leaves_numa_unknown(tmp_path: Path) -> None:
    res = import_files([fixture_path("nvsmi", "14"), fixture_path("numactl", "24")])
    assert all(d.numa_node is None for d in res.cluster.nodes[0].devices)
    assert any("not within one NUMA node's CPUs" in n for n in res.notes)


def test_conflicting_files_are_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(tabbed(), encoding="utf-8")
    b.write_text(tabbed().replace("GPU0\t X \tNV4", "GPU0\t X \tNV2"), encoding="utf-8")
    with pytest.raises(InputError, match="nvlink ×4 in one file and nvlink ×2 in another"):
        import_topology([a, b])
    b.write_text(tabbed().replace("0-31,64-95\t0\t\tN/A", "0-31,64-95\t1\t\tN/A", 1))
    with pytest.raises(InputError, match="card 0: numa_node is 0 in one file and 1"):
        import_topology([a, b])


def test_45_one_file_two_formats() -> None:
    res = import_files([fixture_path("lscpu", "45")])
    node = res.cluster.nodes[0]
    assert len(node.devices) == 16
    assert [n.id for n in node.numa_nodes] == list(range(8))
    assert node.numa_nodes[7].cpus == tuple(range(560, 640))


def test_rank_table_with_a_host_template(tmp_path: Path) -> None:
    chips = tmp_path / "npu.txt"
    rows = ["| NPU   Name                | Health        | Power(W)  |",
            "| Chip                      | Bus-Id        | AICore(%) |"]  # fmt: skip
    for i in range(8):
        rows += [f"| {i}     910B3               | OK            | 93.2      |",
                 f"| 0                         | 0000:C{i}:00.0  | 0         |"]  # fmt: skip
    chips.write_text("\n".join(rows), encoding="utf-8")
    c = import_topology([fixture_path("ranktable", "22"), chips])
    assert [n.name for n in c.nodes] == ["10.0.0.1", "10.0.0.10"]
    assert {d.model for n in c.nodes for d in n.devices} == {"910B3"}
    assert c.n_ranks == 16
    with pytest.raises(InputError, match="lists cards 0-7 but"):
        import_topology([fixture_path("ranktable", "22"), fixture_path("lscpu", "45")])


def test_import_refuses_to_overwrite_an_input() -> None:
    src = str(fixture_path("nvsmi", "14"))
    r = run("import", src, "-o", src)
    assert isinstance(r.exception, UsageError)
    assert r.exception.exit_code == 2


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("log.txt", "epoch 1 loss 0.3\n", "not a topology format"),
        ("bin.txt", b"\xff\xfe\x00", "not a UTF-8 text file"),
    ],
)
def test_import_unrecognised_input(tmp_path: Path, name: str, content, message: str) -> None:
    p = tmp_path / name
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    r = run("import", str(p))
    assert isinstance(r.exception, InputError)
    assert message in str(r.exception)
    assert r.exception.exit_code == 2


def test_show_accepts_raw_nvidia_smi() -> None:
    r = run("show", str(fixture_path("nvsmi", "25")), "--json", "-")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert [x["nic"] for x in d["nodes"][0]["devices"]][:2] == ["mlx5_0", "mlx5_3"]
    r = run("check", str(fixture_path("nvsmi", "14")))
    assert "XP501 warning" in r.output  # cards 4-7 reach mlx5_0 across the socket


def test_load_any_still_reads_descriptions() -> None:
    example = Path(__file__).resolve().parents[2] / "data" / "topology_example" / "cluster.yaml"
    assert load_any(example) == load(example)


@pytest.mark.parametrize("path", all_fixtures(), ids=lambda p: p.name[:2])
def test_cut_files_give_input_errors_not_tracebacks(path: Path, tmp_path: Path) -> None:
    """Excerpts end in cut lines: any prefix of a fixture either imports or is an InputError."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for n in sorted({1, 2, 3, len(lines) // 3, len(lines) // 2, len(lines) - 1}):
        for cut in ("".join(lines[:n]), "".join(lines[:n]) + lines[n][: len(lines[n]) // 2]):
            p = tmp_path / "cut.txt"
            p.write_text(cut, encoding="utf-8")
            with contextlib.suppress(InputError):
                import_topology([p])
