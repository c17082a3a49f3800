"""Host tools: ``numactl -H`` (corpus 24), ``lscpu`` (21, 45) and ``npu-smi info`` (45)."""

from __future__ import annotations

import pytest

from xpuperf.errors import InputError
from xpuperf.topology.importers import lscpu, npusmi, numactl


def test_24_numactl_eight_nodes(read) -> None:
    text, src = read("numactl", "24")
    assert numactl.sniff(text)
    assert not lscpu.sniff(text)
    (host,) = numactl.parse(text, source=src).hosts
    assert sorted(host.numa_nodes) == list(range(8))
    for k in range(8):
        assert host.numa_nodes[k].cpus == tuple(range(16 * k, 16 * k + 16))
    assert host.numa_nodes[0].memory_MB == pytest.approx(64992 * 1.048576)  # numactl MB = MiB
    assert host.numa_nodes[7].memory_MB == pytest.approx(64436 * 1.048576)
    assert host.distances[(0, 4)] == 28
    assert host.distances[(0, 1)] == 22
    assert host.distances[(7, 7)] == 10  # last row has no trailing space
    assert len(host.distances) == 64
    assert {host.distances[(i, j)] for i in range(8) for j in range(8) if i != j} == {22, 28}


def test_numactl_cpuless_nodes_and_cut_distance_row() -> None:
    text = (
        "available: 3 nodes (0-1,4)\nnode 0 cpus: 0 1\nnode 0 size: 1024 MB\n"
        "node 1 cpus:\nnode 1 size: 96000 MB\nnode 4 cpus: \nnode 4 size: 0 MB\n"
        "node distances:\nnode   0   1   4 \n  0:  10  40  80 \n  1:  40  10  80 \n  4:  80  80"
    )
    imp = numactl.parse(text, "n.txt")
    (host,) = imp.hosts
    assert sorted(host.numa_nodes) == [0, 1, 4]
    assert host.numa_nodes[1].cpus == () == host.numa_nodes[4].cpus
    assert (4, 0) not in host.distances
    assert any("cut" in n for n in imp.notes)


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("available: 1 nodes (0)\nnode 0 cpus: 0 x\n", "cannot read '0 x'", 2),
        ("available: 1 nodes (0)\nnode 0 cpus: 0\nnode 0 size: lots\n", "'N MB'", 3),
        ("available: 2 nodes (0-1)\nnode 0 cpus: 0\n", "'available: 2 nodes'", None),
        (
            "available: 1 nodes (0)\nnode 0 cpus: 0\nnode distances:\nnode 0 1\n 0: 10\n 1: 1 2\n",
            "distance row 0 has 1 values for 2 nodes",
            5,
        ),
    ],
)
def test_numactl_refusals(text: str, message: str, line: int | None) -> None:
    with pytest.raises(InputError) as e:
        numactl.parse(text, "n.txt")
    assert message in str(e.value)
    assert e.value.line == line


def test_21_gh200_lscpu_tree_layout(read) -> None:
    text, src = read("lscpu", "21")
    assert lscpu.sniff(text)
    assert not npusmi.sniff(text)
    imp = lscpu.parse(text, source=src)
    (host,) = imp.hosts
    assert host.cpu_info == {
        "cpus": 72, "sockets": 1, "cores_per_socket": 72, "threads_per_core": 1,
        "model_name": "Neoverse-V2",
    }  # fmt: skip
    assert sorted(host.numa_nodes) == [0, 2, 3, 4, 5, 6, 7, 8]  # node1 missing
    assert host.numa_nodes[0].cpus == tuple(range(72))
    assert [k for k, n in host.numa_nodes.items() if n.cpus == ()] == [2, 3, 4, 5, 6, 7, 8]
    assert imp.notes == []  # NUMA node(s): 8 and 8 lists


def test_45_ascend_a3_lscpu_and_npu_smi(read) -> None:
    text, src = read("lscpu", "45")
    assert lscpu.sniff(text)
    assert npusmi.sniff(text)
    (host,) = lscpu.parse(text, source=src).hosts
    assert host.cpu_info == {
        "cpus": 640,
        "sockets": 4,
        "cores_per_socket": 80,
        "threads_per_core": 2,
    }  # fmt: skip  ("Model name: -" dropped)
    assert sorted(host.numa_nodes) == list(range(8))
    for k in range(8):
        assert host.numa_nodes[k].cpus == tuple(range(80 * k, 80 * k + 80))
    imp = npusmi.parse(text, source=src)
    (chips,) = imp.hosts
    assert sorted(chips.devices) == list(range(16))  # Phy-ID 0-15
    assert {d.model for d in chips.devices.values()} == {"Ascend910"}
    assert chips.devices[0].bus_id == "0000:9D:00.0"
    assert chips.devices[15].bus_id == "0000:83:00.0"
    assert "16 chips on 8 NPUs (2 per NPU), HBM 65536 MB each" in imp.notes[0]


def test_npu_smi_one_chip_per_npu_layout() -> None:
    text = "\n".join(
        [
            "| NPU   Name        | Health   | Power(W)  Temp(C)  Hugepages-Usage(page)|",
            "| Chip              | Bus-Id   | AICore(%) Memory-Usage(MB) HBM-Usage(MB)|",
            "+===================+==========+=========================================+",
            "| 0     910B3       | OK       | 93.2      45       0    / 0             |",
            "| 0                 | 0000:C1:00.0 | 0     0    / 0   3393 / 65536       |",
            "+===================+==========+=========================================+",
            "| 1     910B3       | OK       | 93.2      45       0    / 0             |",
            "| 0                 | 0000:C2:00.0 | 0     0    / 0   3393 / 65536       |",
            "+===================+==========+=========================================+",
            "| NPU     Chip      | Process id    | Process name  | Process memory(MB) |",
            "| 0       0         | 1234          | python        | 1000               |",
        ]
    )
    (host,) = npusmi.parse(text, "n.txt").hosts
    assert sorted(host.devices) == [0, 1]
    assert host.devices[1].model == "910B3"


def test_host_tool_refusals() -> None:
    with pytest.raises(InputError, match="cannot read CPU list 'x-y'"):
        lscpu.parse("Architecture: x86_64\nCPU(s): 4\nNUMA node0 CPU(s): x-y\n", "l.txt")
    with pytest.raises(InputError, match="no lscpu fields"):
        lscpu.parse("Architecture: x86_64\n", "l.txt")
    with pytest.raises(InputError, match="without chip rows"):
        npusmi.parse("| NPU   Name   | Health |\n", "n.txt")
