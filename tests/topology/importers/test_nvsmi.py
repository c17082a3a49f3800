"""``nvidia-smi topo -m``: the facts a person reads off corpus files 14 and 25, a tab-separated
variant with ANSI codes and a cgroup-blank affinity, and every refusal."""

from __future__ import annotations

import pytest

from xpuperf.errors import InputError
from xpuperf.topology.importers import nvsmi
from xpuperf.topology.importers.assemble import to_cluster


def test_14_dgx1_hybrid_cube_mesh(read) -> None:
    text, src = read("nvsmi", "14")
    assert nvsmi.sniff(text)
    imp = nvsmi.parse(text, source=src)
    (host,) = imp.hosts
    assert sorted(host.devices) == list(range(8))
    assert list(host.nics) == ["mlx5_0"]  # old output: the NIC is named in the header
    # GPU0: NV1 to 1 and 2, NV2 to 3 and 4, SYS to 5-7
    assert {b: (lk.kind, lk.count) for (a, b), lk in host.links.items() if a == 0} == {
        1: ("nvlink", 1), 2: ("nvlink", 1), 3: ("nvlink", 2), 4: ("nvlink", 2),
        5: ("sys", None), 6: ("sys", None), 7: ("sys", None),
    }  # fmt: skip
    for g in range(8):  # hybrid cube mesh: every GPU has 4 NVLink peers and 3 SYS pairs
        kinds = [lk.kind for k, lk in host.links.items() if g in k]
        assert (kinds.count("nvlink"), kinds.count("sys")) == (4, 3)
    assert host.links[(6, 7)].count == 2
    assert host.links[(5, 7)].count == 1
    assert host.devices[0].cpu_affinity == tuple(range(12)) + tuple(range(24, 36))
    assert host.devices[7].cpu_affinity == tuple(range(12, 24)) + tuple(range(36, 48))
    assert all(d.numa_node is None for d in host.devices.values())  # no NUMA Affinity column
    assert all(d.nic == "mlx5_0" for d in host.devices.values())  # the only NIC is nearest
    assert host.nics["mlx5_0"].near_devices == (2, 3)  # PIX to GPU2 and GPU3
    assert host.devices[2].pcie_switch == host.devices[3].pcie_switch == "sw0"
    assert host.nics["mlx5_0"].pcie_switch == "sw0"
    assert host.devices[0].pcie_switch is None


def test_14_cluster_infers_two_numa_nodes_and_says_so(read) -> None:
    text, src = read("nvsmi", "14")
    imp = nvsmi.parse(text, source=src)
    node = to_cluster(imp).nodes[0]
    assert [d.numa_node for d in node.devices] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert node.numa_nodes[0].cpus == tuple(range(12)) + tuple(range(24, 36))
    assert node.nic("mlx5_0").numa_node == 0
    assert node.nic("mlx5_0").cards == tuple(range(8))
    assert node.path(0, 5).kind == "sys"
    assert node.path(0, 3).bw_GBps == 40.0  # NV2 × 20 GB/s
    assert any("inferred from the 2 distinct CPU affinity sets" in n for n in imp.notes)


NIC_OF_25 = {0: "mlx5_0", 1: "mlx5_3", 2: "mlx5_4", 3: "mlx5_5",
             4: "mlx5_6", 5: "mlx5_7", 6: "mlx5_8", 7: "mlx5_9"}  # fmt: skip


def test_25_h200_slurm_cgroup(read) -> None:
    text, src = read("nvsmi", "25")
    assert nvsmi.sniff(text)
    imp = nvsmi.parse(text, source=src)
    (host,) = imp.hosts
    assert sorted(host.devices) == list(range(8))
    assert all((lk.kind, lk.count) == ("nvlink", 18) for lk in host.links.values())
    assert len(host.links) == 28
    assert list(host.nics) == [f"mlx5_{i}" for i in range(10)]  # NIC legend applied
    assert {i: d.numa_node for i, d in host.devices.items()} == {i: i // 4 for i in range(8)}
    assert [host.devices[i].cpu_affinity for i in range(8)] == [None] * 4 + [(56,)] * 4
    assert {i: d.nic for i, d in host.devices.items()} == NIC_OF_25
    assert host.nics["mlx5_1"].pcie_switch == host.nics["mlx5_2"].pcie_switch  # PIX to each other
    node = to_cluster(imp).nodes[0]
    assert node.nic("mlx5_1").cards == node.nic("mlx5_2").cards == ()
    assert node.nic("mlx5_0").numa_node == 0
    assert node.nic("mlx5_9").numa_node == 1
    assert node.nic("mlx5_1").numa_node is None  # NODE to cards of both NUMA nodes
    assert node.device(4).pcie_switch == node.nic("mlx5_6").pcie_switch
    assert any("CPU lists unknown" in n for n in imp.notes)  # cgroup: no CPU list invented
    assert node.numa_nodes[1].cpus == ()


def tabbed(blank_affinity: bool = True) -> str:
    """Synthetic output in nvidia-smi's own layout: tabs, an ANSI-underlined header, a legend."""
    esc = "\x1b[4m"
    rows = [
        f"\t{esc}GPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\t"
        "CPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m",
        "GPU0\t X \tNV4\tSYS\tSYS\tPXB\tSYS\t0-31,64-95\t0\t\tN/A",
        "GPU1\tNV4\t X \tSYS\tSYS\tPXB\tSYS\t0-31,64-95\t0\t\tN/A",
        "GPU2\tSYS\tSYS\t X \tNV4\tSYS\tPIX\t" + ("" if blank_affinity else "32-63") + "\t1\t\tN/A",
        "GPU3\tSYS\tSYS\tNV4\t X \tSYS\tPHB\t32-63,96-127\t1\t\tN/A",
        "NIC0\tPXB\tPXB\tSYS\tSYS\t X \tSYS",
        "NIC1\tSYS\tSYS\tPIX\tPHB\tSYS\t X ",
        "",
        "Legend:",
        "",
        "  X    = Self",
        "",
        "NIC Legend:",
        "",
        "  NIC0: mlx5_0",
        "  NIC1: mlx5_bond_1",
    ]
    return "$ nvidia-smi topo -m\n" + "\n".join(rows) + "\n"


def test_tab_separated_with_ansi_and_blank_affinity() -> None:
    text = tabbed()
    assert nvsmi.sniff(text)
    (host,) = nvsmi.parse(text, "t.txt").hosts
    assert host.devices[2].cpu_affinity is None  # blank field, NUMA still read
    assert [host.devices[i].numa_node for i in range(4)] == [0, 0, 1, 1]
    assert host.devices[0].cpu_affinity == tuple(range(32)) + tuple(range(64, 96))
    assert {i: d.nic for i, d in host.devices.items()} == {
        0: "mlx5_0", 1: "mlx5_0", 2: "mlx5_bond_1", 3: "mlx5_bond_1"
    }  # fmt: skip
    assert host.links[(0, 1)].count == 4
    assert host.links[(1, 2)].kind == "sys"
    assert host.devices[2].pcie_switch == host.nics["mlx5_bond_1"].pcie_switch
    assert host.devices[0].pcie_switch is None  # PXB is not "the same switch"


def test_pcie_pairs_map_to_pcie_kind() -> None:
    text = tabbed().replace("GPU0\t X \tNV4\tSYS", "GPU0\t X \tPHB\tSYS")
    text = text.replace("GPU1\tNV4\t X ", "GPU1\tPHB\t X ")
    (host,) = nvsmi.parse(text, "t.txt").hosts
    assert (host.links[(0, 1)].kind, host.links[(0, 1)].count) == ("pcie", None)


@pytest.mark.parametrize(
    ("edit", "message", "line"),
    [
        (("GPU1\tNV4\t X \tSYS", "GPU1\tNV4\t X \tQPI"), "unknown code 'QPI'", 4),
        (("GPU1\tNV4\t X \tSYS\tSYS\tPXB\tSYS", "GPU1\tNV4\t X \tSYS"), "fewer than 6 cells", 4),
        (("GPU3\tSYS\tSYS\tNV4\t X ", "GPU3\tSYS\tSYS\tNV4\tNV4"), "off the diagonal", 6),
        (("0-31,64-95\t0", "zero\t0"), "is not a CPU list", 3),
        (("GPU3\tSYS", "GPU9\tSYS"), "not a column of the header", 6),
    ],
)
def test_bad_tables_name_file_and_line(edit: tuple[str, str], message: str, line: int) -> None:
    text = tabbed().replace(*edit, 1)
    with pytest.raises(InputError) as e:
        nvsmi.parse(text, "bad.txt")
    assert message in str(e.value)
    assert (e.value.path, e.value.line) == ("bad.txt", line)


def test_no_table() -> None:
    assert not nvsmi.sniff("GPU0 is hot\n")
    with pytest.raises(InputError, match="no `nvidia-smi topo -m` table"):
        nvsmi.parse("hello\n", "x.txt")
