"""NCCL topology XML: corpus files 01 (hand-written NDv4 file) and 02 (NCv4 dump with
self-targeted NVLinks), an NVSwitch dump shape, and the refusals."""

from __future__ import annotations

import pytest

from xpuperf.errors import InputError
from xpuperf.topology.importers import ncclxml
from xpuperf.topology.importers.assemble import to_cluster

GPU_NUMA_01 = {0: 1, 1: 1, 2: 0, 3: 0, 4: 3, 5: 3, 6: 2, 7: 2}  # index = PCI bus id order


def test_mask_cpus() -> None:
    assert ncclxml.mask_cpus("00000000,00000000,00ffffff") == tuple(range(24))
    assert ncclxml.mask_cpus("00000000,0000ffff,ff000000") == tuple(range(24, 48))
    assert ncclxml.mask_cpus("ffffff00,00000000,00000000") == tuple(range(72, 96))


def test_01_ndv4_hand_written_file(read) -> None:
    text, src = read("ncclxml", "01")
    assert ncclxml.sniff(text)
    imp = ncclxml.parse(text, source=src)
    (host,) = imp.hosts
    assert sorted(host.numa_nodes) == [0, 1, 2, 3]
    assert host.numa_nodes[1].cpus == tuple(range(24, 48))
    assert {i: d.numa_node for i, d in host.devices.items()} == GPU_NUMA_01
    assert host.devices[0].bus_id == "0001:00:00.0"  # non-zero PCI domains kept
    assert len(host.nics) == 8
    assert all(n.speed_Gbps is None for n in host.nics.values())  # no <net>: speed unknown
    assert host.pcie_gen == 4  # 16 GT/s
    node = to_cluster(imp).nodes[0]
    assert node.pcie_bw_GBps == 24.0
    for numa in range(4):  # one PCIe switch per NUMA node: 2 GPUs and 2 NICs, GPU:NIC = 1:1
        (sw,) = [s for s in node.pcie_switches if s.numa_node == numa]
        assert len(sw.devices) == 2
        assert len(sw.nics) == 2
    assert all(len(n.cards) == 1 for n in node.nics)
    for d in node.devices:  # each card's NIC sits under its own switch
        assert node.nic(d.nic).pcie_switch == d.pcie_switch
        assert node.nic(d.nic).numa_node == d.numa_node
    assert node.device(0).nic == "0101:00:00.0"
    # no <gpu> element: the file does not say which cards NVLink joins (NCCL finds it at run
    # time), so no link is recorded and every card-to-card path is marked assumed
    assert not host.links_known
    assert node.links == ()
    assert "links" in node.assumed
    assert any("no <gpu> element" in n for n in imp.notes)
    p01, p02 = node.path(0, 1), node.path(0, 2)
    assert (p01.kind, p01.via, p01.assumed) == ("pcie", "pcie switch ffff:ff:02.0", True)
    assert (p02.kind, p02.assumed) == ("sys", True)  # NUMA 1 vs 0


def test_02_ncv4_dump_self_targeted_nvlink(read) -> None:
    text, src = read("ncclxml", "02")
    imp = ncclxml.parse(text, source=src)
    (host,) = imp.hosts
    assert {i: d.numa_node for i, d in host.devices.items()} == {0: 0, 1: 1, 2: 2, 3: 3}
    assert not [lk for lk in host.links.values() if lk.kind == "nvlink"]  # targets are self
    assert sum("nvlink target is the card itself" in n for n in imp.notes) == 4
    assert list(host.nics) == ["eth0"]
    assert host.nics["eth0"].speed_Gbps == 100.0
    assert host.nics["eth0"].numa_node == 0
    assert host.pcie_gen is None  # link_speed="" link_width="0"
    assert host.links_known  # every card has a <gpu> element: no NVLink peer means none
    node = to_cluster(imp).nodes[0]
    assert all(node.link(a, b).kind == "sys" for a in range(4) for b in range(a + 1, 4))
    assert node.assumed == {"pcie_bw_GBps", "sys_bw_GBps"}  # link_speed="", no inter-socket figure
    assert node.nic("eth0").cards == (0, 1, 2, 3)  # the only NIC is every card's nearest


NVSWITCH = """<system version="1">
  <cpu numaid="0" affinity="0000ffff" arch="x86_64" vendor="GenuineIntel">
    <pci busid="0000:0f:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:10:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">
        <gpu dev="1" sm="90" rank="1" gdr="1">
          <nvlink target="fffffff:ffff:ff" count="18" tclass="0x068000"/>
        </gpu>
      </pci>
      <pci busid="0000:11:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16">
        <nic><net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1"/></nic>
      </pci>
    </pci>
    <pci busid="0000:1f:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="90" rank="0" gdr="1">
        <nvlink target="fffffff:ffff:ff" count="18" tclass="0x068000"/>
      </gpu>
    </pci>
  </cpu>
</system>
"""


def test_nvswitch_dump_shape() -> None:
    (host,) = ncclxml.parse(NVSWITCH, "dump.xml").hosts
    assert (host.links[(0, 1)].kind, host.links[(0, 1)].count) == ("nvlink", 18)
    assert host.nics["mlx5_0"].speed_Gbps == 400.0
    assert host.devices[1].nic == "mlx5_0"  # under its switch
    assert host.devices[0].nic == "mlx5_0"  # same NUMA node
    assert host.pcie_gen == 5


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ('<!DOCTYPE x [<!ENTITY a "b">]><system/>', "DOCTYPE or ENTITY", None),
        ("<system>\n<cpu numaid='0'>\n</system>", "not well-formed XML", 3),
        ("<topology><cpu/></topology>", "expected <system>", None),
        ('<system><cpu numaid="zero"/></system>', "numaid 'zero' is not an integer", None),
        ('<system><cpu numaid="0" affinity="xyz"/></system>', "not a hex CPU mask", None),
        ('<system><cpu numaid="0"/></system>', "no GPU", None),
    ],
)
def test_refusals(text: str, message: str, line: int | None) -> None:
    with pytest.raises(InputError) as e:
        ncclxml.parse(text, "t.xml")
    assert message in str(e.value)
    assert e.value.line == line
