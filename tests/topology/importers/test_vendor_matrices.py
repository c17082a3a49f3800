"""``mx-smi topo -m`` (samples 50, 51) and ``npu-smi info -t topo`` (52-54). The samples were
written for these tests in the layouts the tools print (mx-smi 2.1 without affinity columns,
2.2.9 with ``Device link type matrix`` / ``Node Affinity`` / ``CPU Affinity``; Ascend A2 with a
tab-led header and CPU Affinity, Atlas 800 with two HCCS rings, A3 ``Phy-ID`` labels with SIO and
HCCS_SW); the expected values are read off the matrices by hand."""

from __future__ import annotations

import pytest

from xpuperf.errors import InputError
from xpuperf.topology.importers import detect, import_files, mxsmi, npusmi, npusmi_topo, nvsmi
from xpuperf.topology.importers.base import merge

from .conftest import fixture_path


def test_50_mxsmi_two_metaxlink_groups(read) -> None:
    text, src = read("mxsmi", "50")
    assert mxsmi.sniff(text)
    assert not nvsmi.sniff(text)  # same shape as nvidia-smi topo -m, but MX cells
    imp = mxsmi.parse(text, src)
    (host,) = imp.hosts
    assert sorted(host.devices) == list(range(8))
    # GPU0-3 and GPU4-7 are MX meshes (6 pairs each), the 16 pairs across are SYS
    kinds = {k: lk.kind for k, lk in host.links.items()}
    assert sum(v == "other" for v in kinds.values()) == 12
    assert sum(v == "sys" for v in kinds.values()) == 16
    assert kinds[(0, 3)] == "other"
    assert kinds[(4, 7)] == "other"
    assert kinds[(3, 4)] == "sys"
    assert all(lk.bw_GBps is None for lk in host.links.values())  # no published MX figure
    assert all(d.cpu_affinity is None and d.numa_node is None for d in host.devices.values())
    assert all(d.nic is None for d in host.devices.values())  # no NIC printed, none invented
    assert any("12 MetaXLink (MX) pair(s)" in n for n in imp.notes)


def test_51_mxsmi_pcie_box_with_node_and_cpu_affinity(read) -> None:
    text, src = read("mxsmi", "51")
    (host,) = mxsmi.parse(text, src).hosts
    numa = {i: d.numa_node for i, d in host.devices.items()}
    assert numa == {0: 0, 1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1, 7: 1}
    assert host.devices[0].cpu_affinity == (*range(32), *range(64, 96))
    assert host.devices[7].cpu_affinity == (*range(32, 64), *range(96, 128))
    assert host.devices[6].cpu_affinity is None  # blank CPU Affinity: Node Affinity still read
    # PIX pairs 0-1, 2-3, 4-5 become switches in header order; 6-7 are PXB: no switch
    sw = {i: d.pcie_switch for i, d in host.devices.items()}
    assert sw == {0: "sw0", 1: "sw0", 2: "sw1", 3: "sw1", 4: "sw2", 5: "sw2", 6: None, 7: None}
    assert host.links[(0, 2)].kind == "pcie"  # PXB
    assert host.links[(4, 6)].kind == "pcie"  # NODE
    assert host.links[(3, 4)].kind == "sys"
    node = import_files([fixture_path("mxsmi", "51")]).cluster.nodes[0]
    assert node.device(5).numa_node == 1


def test_52_npusmi_topo_a2_hccs_mesh_and_affinity(read) -> None:
    text, src = read("npusmitopo", "52")
    assert npusmi_topo.sniff(text)
    assert detect(text) == ["npu-smi-topo"]
    (host,) = npusmi_topo.parse(text, src).hosts
    assert len(host.links) == 28  # 8 NPUs, every pair HCCS
    assert {lk.kind for lk in host.links.values()} == {"hccs"}
    aff = {i: d.cpu_affinity for i, d in host.devices.items()}
    assert aff[0] == aff[1] == tuple(range(144, 168))
    assert aff[4] == tuple(range(24))
    assert aff[6] == tuple(range(48, 72))
    # no NUMA information in the file: the 4 distinct affinity sets become NUMA 0-3, lowest first
    result = import_files([fixture_path("npusmitopo", "52")])
    node = result.cluster.nodes[0]
    assert [node.device(i).numa_node for i in range(8)] == [3, 3, 2, 2, 0, 0, 1, 1]
    assert any("inferred from the 4 distinct CPU affinity sets" in n for n in result.notes)


def test_53_npusmi_topo_two_hccs_rings(read) -> None:
    text, src = read("npusmitopo", "53")
    imp = npusmi_topo.parse(text, src)
    (host,) = imp.hosts
    # two rings of 4: 2 x 6 HCCS pairs inside, 4 x 4 SYS pairs across
    assert sorted(k for k, lk in host.links.items() if lk.kind == "hccs") == [
        (0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3),
        (4, 5), (4, 6), (4, 7), (5, 6), (5, 7), (6, 7),
    ]  # fmt: skip
    assert sum(lk.kind == "sys" for lk in host.links.values()) == 16
    assert "pairs HCCS ×12, SYS ×16" in imp.notes[0]


def test_54_npusmi_topo_a3_phy_ids_sio_and_switch(read) -> None:
    text, src = read("npusmitopo", "54")
    assert detect(text) == ["npu-smi-topo"]
    imp = npusmi_topo.parse(text, src)
    (host,) = imp.hosts
    assert sorted(host.devices) == [0, 1, 2, 3]  # Phy-ID0..3
    assert set(host.links) == {(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)}
    assert {lk.kind for lk in host.links.values()} == {"hccs"}  # SIO and HCCS_SW
    assert all(d.cpu_affinity is None for d in host.devices.values())
    assert "SIO (die-to-die inside one package) imported as kind hccs" in imp.notes[0]
    assert "no CPU Affinity column" in imp.notes[0]


def test_npusmi_topo_merges_with_the_chip_table() -> None:
    # sample 45 holds `npu-smi info` (16 chips, by Phy-ID) with lscpu; the topo matrix of two
    # of its chips merges into the same devices
    chips = fixture_path("lscpu", "45").read_text()
    topo = "            NPU0       NPU1\nNPU0        X          HCCS\nNPU1        HCCS       X\n"
    (host,) = merge([npusmi_topo.parse(topo, "t.txt"), npusmi.parse(chips, "c.txt")]).hosts
    assert host.links[(0, 1)].kind == "hccs"
    assert host.devices[0].model
    assert host.devices[0].bus_id


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("        GPU0    GPU1\nGPU0    X       MX\nGPU1    MX      Q\n", "'Q' (X marks"),
        ("        GPU0    GPU1\nGPU0    X       MX\nGPU1    XX      X\n", "unknown code 'XX'"),
        ("        GPU0    GPU1\nGPU0    X       MX\n", "no row for GPU1"),
        ("        GPU0    GPU1\nGPU0    X\nGPU1    MX      X\n", "1 cells for 2 columns"),
        (
            "        GPU0    GPU1    CPU Affinity\nGPU0    X       MX      0-x\n"
            "GPU1    MX      X       0-3\n",
            "CPU Affinity '0-x' is not a CPU list",
        ),
    ],
)
def test_mxsmi_refusals(text: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        mxsmi.parse(text, "m.txt")
    assert message in str(e.value)


def test_npusmi_topo_na_pairs_get_no_link() -> None:
    text = (
        "           NPU0       NPU1       NPU2       CPU Affinity\n"
        "NPU0       X          PIX        NA         0-7\n"
        "NPU1       PIX        X          PHB        0-7\n"
        "NPU2       NA         PHB        X          8-15\n"
        "# printed by npu-smi 24.1.rc2\n"
    )
    imp = npusmi_topo.parse(text, "t.txt")
    (host,) = imp.hosts
    assert set(host.links) == {(0, 1), (1, 2)}
    assert host.links[(0, 1)].kind == "pcie" == host.links[(1, 2)].kind
    assert "NA pairs" in imp.notes[0]
