"""hwloc ``lstopo`` text (samples 58-60, written for these tests in the console layouts of hwloc
2.7, 1.11 and 2.4), NCCL graph dumps (61, refused), and NICs that are not guessed."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from xpuperf.cli.topo import topo_app
from xpuperf.errors import InputError
from xpuperf.topology.importers import import_files, lstopo, ncclgraph, ncclxml, nvsmi

from .conftest import fixture_path


def _lines(*rows: str) -> str:
    return "\n".join(rows) + "\n"


GiB_MB = 1024**3 / 1e6  # hwloc's GB are GiB; the model's MB are 1e6 bytes


def test_58_hwloc2_two_sockets_switches_and_nics(read) -> None:
    text, src = read("lstopo", "58")
    assert lstopo.sniff(text)
    imp = lstopo.parse(text, src)
    (host,) = imp.hosts
    assert host.numa_nodes[0].cpus == (0, 1, 2, 3, 8, 9, 10, 11)  # PUs of Package 0
    assert host.numa_nodes[1].cpus == (4, 5, 6, 7, 12, 13, 14, 15)
    assert host.numa_nodes[0].memory_MB == pytest.approx(251 * GiB_MB)
    assert host.numa_nodes[1].memory_MB == pytest.approx(252 * GiB_MB)
    # cards = the four 3D devices, numbered by nvmlN; the VGA (BMC) and NVMe are not cards
    assert {i: d.bus_id for i, d in host.devices.items()} == {
        0: "1b:00.0",
        1: "1c:00.0",
        2: "9b:00.0",
        3: "9c:00.0",
    }
    assert [host.devices[i].numa_node for i in range(4)] == [0, 0, 1, 1]
    # GPU0, GPU1 and mlx5_0 hang under one PCIBridge below the host bridge: a switch
    assert [host.devices[i].pcie_switch for i in range(4)] == ["sw0", "sw0", "sw1", "sw1"]
    assert list(host.nics) == ["mlx5_0", "eno1", "eno2", "mlx5_1"]  # OpenFabrics name first
    assert (host.nics["mlx5_0"].numa_node, host.nics["mlx5_0"].pcie_switch) == (0, "sw0")
    assert host.nics["eno1"].pcie_switch == host.nics["eno2"].pcie_switch == "sw2"
    assert [host.devices[i].nic for i in range(4)] == ["mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1"]
    assert host.links[(0, 1)].kind == "pcie"
    assert host.links[(1, 2)].kind == "sys"
    assert all(n.speed_Gbps is None for n in host.nics.values())  # not in lstopo's text


def test_59_hwloc1_numanode_parents(read) -> None:
    text, src = read("lstopo", "59")
    (host,) = lstopo.parse(text, src).hosts
    assert host.numa_nodes[0].cpus == (0, 1, 2, 3)
    assert host.numa_nodes[1].cpus == (4, 5, 6, 7)
    assert host.numa_nodes[0].memory_MB == pytest.approx(64 * GiB_MB)
    assert [host.devices[i].numa_node for i in (0, 1)] == [0, 1]  # nvml0, nvml1
    assert host.links[(0, 1)].kind == "sys"
    assert list(host.nics) == ["mlx5_0"]
    # the host's only NIC serves both cards (forced, not guessed); no bridge holds two devices
    assert host.devices[1].nic == "mlx5_0"
    assert all(d.pcie_switch is None for d in host.devices.values())


def test_60_hostbridge_under_machine_single_numa(read) -> None:
    text, src = read("lstopo", "60")
    (host,) = lstopo.parse(text, src).hosts
    assert host.numa_nodes[0].cpus == tuple(range(8))
    assert host.numa_nodes[0].memory_MB == pytest.approx(31 * GiB_MB)
    assert host.devices[0].numa_node == 0  # the host's one NUMA node
    assert host.devices[0].nic == "ens5"
    assert host.devices[0].bus_id == "00:1e.0"


def test_lstopo_verbose_and_physical_forms() -> None:
    text = (
        "Machine (P#0 total=16GB)\n"
        "  Package P#0\n"
        "    NUMANode P#0 (16GB)\n"
        "    Core P#0\n      PU P#0\n      PU P#2\n"
        "    HostBridge L#0\n"
        "      PCI L#0 (busid=0000:3b:00.0 id=1002:740f class=0302(3D) link=31.51GB/s)\n"
        '        GPU(RSMI) L#1 (GPUModel="AMD Instinct MI210") "rsmi0"\n'
    )
    (host,) = lstopo.parse(text, "v.txt").hosts
    assert host.numa_nodes[0].cpus == (0, 2)
    assert host.devices[0].model == "AMD Instinct MI210"
    assert host.devices[0].bus_id == "0000:3b:00.0"


def test_lstopo_without_io_devices_is_refused() -> None:
    text = "Machine (8GB total)\n  NUMANode L#0 (P#0 8GB)\n  PU L#0 (P#0)\n"
    with pytest.raises(InputError, match="without cards or NICs"):
        lstopo.parse(text, "t.txt")


def test_61_graph_dump_is_refused_with_what_it_holds(read) -> None:
    text, src = read("ncclgraph", "61")
    assert ncclgraph.sniff(text)
    assert not ncclxml.sniff(text)
    with pytest.raises(InputError) as e:
        ncclgraph.parse(text, src)
    msg = str(e.value)
    assert "this is a graph dump, not a topology" in msg
    assert "2 graph(s): ring, balanced tree; 3 channel(s)" in msg  # nchannels 2 + 1
    assert "NCCL_TOPO_DUMP_FILE" in msg


def test_ncclxml_does_not_guess_a_nic_among_several(tmp_path) -> None:
    xml = """<system version="1">
  <cpu numaid="0" affinity="000000ff" arch="x86_64" vendor="GenuineIntel">
    <pci busid="0000:1b:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16"/>
  </cpu>
  <cpu numaid="1" affinity="0000ff00" arch="x86_64" vendor="GenuineIntel"/>
  <cpu numaid="2" affinity="00ff0000" arch="x86_64" vendor="GenuineIntel">
    <nic><net name="mlx5_0" dev="0" speed="200000"/></nic>
    <nic><net name="mlx5_1" dev="1" speed="200000"/></nic>
  </cpu>
</system>"""
    imp = ncclxml.parse(xml, "t.xml")
    (host,) = imp.hosts
    assert host.devices[0].nic is None  # two NICs, neither under its switch nor on NUMA 0
    assert any("NIC left unknown (not guessed)" in n for n in imp.notes)
    f = tmp_path / "t.xml"
    f.write_text(xml)
    r = CliRunner().invoke(topo_app, ["show", str(f)])
    assert "cards whose NIC is unknown (not in the input): 0" in r.output


def test_nvsmi_several_nics_all_sys_leave_the_nic_unknown() -> None:
    text = _lines(
        "\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity",
        "GPU0\t X \tSYS\tSYS\tSYS\t0-7\t0",
        "GPU1\tSYS\t X \tPIX\tSYS\t8-15\t1",
        "NIC0\tSYS\tPIX\t X \tSYS",
        "NIC1\tSYS\tSYS\tSYS\t X ",
        "NIC Legend:",
        "  NIC0: mlx5_0",
        "  NIC1: mlx5_1",
    )
    (host,) = nvsmi.parse(text, "t.txt").hosts
    assert host.devices[0].nic is None  # mlx5_0 and mlx5_1 both SYS from GPU0
    assert host.devices[1].nic == "mlx5_0"  # PIX


def test_nvsmi_table_ends_at_legend_or_comment_lines() -> None:
    # no blank line before "NIC Legend:", and a comment after the last row: both end the table
    base = [
        "\tGPU0\tGPU1\tNIC0",
        "GPU0\t X \tNV4\tPIX",
        "GPU1\tNV4\t X \tSYS",
        "NIC0\tPIX\tSYS\t X ",
    ]
    for tail in (["NIC Legend:", "  NIC0: mlx5_0"], ["# captured 2026-01-05 on node12"]):
        (host,) = nvsmi.parse(_lines(*base, *tail), "t.txt").hosts
        assert (host.links[(0, 1)].kind, host.links[(0, 1)].count) == ("nvlink", 4)
        assert host.devices[0].nic in ("mlx5_0", "NIC0")


def test_lstopo_merges_with_nvidia_smi_topo_m(tmp_path) -> None:
    # lstopo gives the NUMA CPUs and memory, topo -m the NVLinks of the same 4 cards
    topo_m = tmp_path / "topo-m.txt"
    topo_m.write_text(_lines(
        "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity",
        "GPU0\t X \tNV12\tNV12\tNV12\t0-3,8-11\t0",
        "GPU1\tNV12\t X \tNV12\tNV12\t0-3,8-11\t0",
        "GPU2\tNV12\tNV12\t X \tNV12\t4-7,12-15\t1",
        "GPU3\tNV12\tNV12\tNV12\t X \t4-7,12-15\t1",
    ))  # fmt: skip
    node = import_files([fixture_path("lstopo", "58"), topo_m]).cluster.nodes[0]
    assert (node.link(0, 3).kind, node.link(0, 3).count) == ("nvlink", 12)  # beats lstopo's sys
    assert node.numa_nodes[1].cpus == (4, 5, 6, 7, 12, 13, 14, 15)  # from lstopo
    assert node.numa_nodes[0].memory_MB == pytest.approx(251 * GiB_MB)
    assert node.device(2).pcie_switch == "sw1"
    assert node.device(2).nic == "mlx5_1"
