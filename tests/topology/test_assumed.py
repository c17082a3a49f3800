"""Figures the input did not give are marked assumed, never shown as if read (QA of corpus files
01, 02, 20, 22 and 45). Samples are small hand-written inputs; the expected values are worked out
from them and from the documented defaults (PCIe Gen3 12 GB/s, Gen4 24 GB/s, sys 10 GB/s)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from xpuperf.cli.app import app
from xpuperf.errors import InputError
from xpuperf.findings import CheckStatus
from xpuperf.topology import check, from_dict
from xpuperf.topology.audit import checks
from xpuperf.topology.evidence import consumer_p2p
from xpuperf.topology.importers import import_topology
from xpuperf.topology.view import describe, to_json_dict

# A hand-written NCCL_TOPO_FILE in the style of Azure's: PCI class codes only, no <gpu>/<nvlink>.
# NUMA 0: a switch with GPU 0000:01 and NIC 0000:02; NUMA 1: a switch with GPU 0000:03.
BARE_XML = """<system version="1">
  <cpu numaid="0" affinity="0000000f" arch="x86_64" vendor="AuthenticAMD">
    <pci busid="ffff:ff:01.0" class="0x060400" link_speed="16 GT/s" link_width="16">
      <pci busid="0000:01:00.0" class="0x030200" link_speed="16 GT/s" link_width="16"/>
      <pci busid="0000:02:00.0" class="0x020700" link_speed="16 GT/s" link_width="16"/>
    </pci>
  </cpu>
  <cpu numaid="1" affinity="000000f0" arch="x86_64" vendor="AuthenticAMD">
    <pci busid="ffff:ff:02.0" class="0x060400" link_speed="16 GT/s" link_width="16">
      <pci busid="0000:03:00.0" class="0x030200" link_speed="16 GT/s" link_width="16"/>
    </pci>
  </cpu>
</system>
"""

# The same host as an NCCL dump: both cards have a <gpu> element and no NVLink.
DUMP_XML = BARE_XML.replace(
    '<pci busid="0000:01:00.0" class="0x030200" link_speed="16 GT/s" link_width="16"/>',
    '<pci busid="0000:01:00.0" class="0x030200" link_speed="16 GT/s" link_width="16">'
    '<gpu dev="0" sm="80" rank="0" gdr="1"/></pci>',
).replace(
    '<pci busid="0000:03:00.0" class="0x030200" link_speed="16 GT/s" link_width="16"/>',
    '<pci busid="0000:03:00.0" class="0x030200" link_speed="16 GT/s" link_width="16">'
    '<gpu dev="1" sm="80" rank="1" gdr="1"/></pci>',
)

# An HCCL rank table v1.0: 1 server, 2 devices, numbers as strings.
RANKTABLE = """{"version": "1.0", "server_count": "1", "status": "completed",
 "server_list": [{"server_id": "10.0.0.1", "device": [
   {"device_id": "0", "device_ip": "10.0.0.2", "rank_id": "0"},
   {"device_id": "1", "device_ip": "10.0.0.3", "rank_id": "1"}]}]}
"""

# rocm-smi --showtopo: two cards joined by XGMI (no bandwidth printed), NUMA 0 and 1.
ROCM = """======================= ROCm System Management Interface =======================
========================== Link Type between two GPUs ==========================
       GPU0         GPU1
GPU0   0            XGMI
GPU1   XGMI         0
================================== Numa Nodes ==================================
GPU 0          : (Topology) Numa Node: 0
GPU 1          : (Topology) Numa Node: 1
============================= End of ROCm SMI Log ==============================
"""


def _write(tmp_path, name: str, text: str):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _status(cluster) -> dict[str, CheckStatus]:
    return {c.name: c.status for c in checks(cluster, check(cluster))}


def test_nccl_xml_without_gpu_elements_has_no_link_verdict(tmp_path) -> None:
    """Corpus 01: a NCCL_TOPO_FILE names no <gpu>, so NVLink may well exist (NDv4 has it);
    10 GB/s across NUMA vs 24 GB/s in the switch (ratio 0.42 < 0.5) used to be XP504."""
    cluster = import_topology([_write(tmp_path, "topo.xml", BARE_XML)])
    (node,) = cluster.nodes
    assert not node.links_known
    assert node.pcie_bw_GBps == 24.0  # 16 GT/s = Gen4: read, not assumed
    assert node.assumed == {"links", "sys_bw_GBps"}
    assert "XP504" not in [f.code for f in check(cluster)]
    status = _status(cluster)
    assert status["topology.link_uniformity"] is CheckStatus.NOT_CHECKED
    assert status["topology.link_groups"] is CheckStatus.NOT_CHECKED
    text = "\n".join(describe(cluster))
    assert "links between cards: not in the input" in text
    assert "PCIe 24 GB/s, between NUMA nodes 10 GB/s (assumed)" in text
    path = node.path(0, 1)
    assert (path.kind, path.bw_GBps, path.assumed) == ("sys", 10.0, True)  # min(24, 10)


def test_nccl_dump_with_gpu_elements_knows_there_is_no_nvlink(tmp_path) -> None:
    cluster = import_topology([_write(tmp_path, "dump.xml", DUMP_XML)])
    (node,) = cluster.nodes
    assert node.links_known
    assert node.link(0, 1).kind == "sys"  # NUMA 0 vs 1, no <nvlink>
    # the kind is read; 10 GB/s is the default sys figure, still marked
    assert node.path(0, 1).assumed
    assert _status(cluster)["topology.link_uniformity"] is CheckStatus.CLEAN  # one pair


def test_nic_on_another_numa_node_is_not_called_a_socket(tmp_path) -> None:
    """Corpus 02: NUMA nodes are not sockets; the 10 GB/s figure is a default."""
    cluster = import_topology([_write(tmp_path, "dump.xml", DUMP_XML)])
    (f,) = [f for f in check(cluster) if f.code == "XP501"]
    assert "card 1 (NUMA 1) → 0000:02:00.0 (NUMA 0)" in f.message
    assert "NIC on another NUMA node" in f.message
    assert "socket" not in f.message
    assert "10 GB/s, assumed: not in the input" in f.message


def test_rank_table_links_are_not_in_the_input(tmp_path) -> None:
    """Corpus 22: the rank table names devices and IPs, nothing about chip links or PCIe."""
    cluster = import_topology([_write(tmp_path, "rank_table.json", RANKTABLE)])
    (node,) = cluster.nodes
    assert node.links == ()
    assert node.assumed == {"links", "pcie_bw_GBps", "sys_bw_GBps"}
    lines = describe(cluster)
    assert (
        "  links between cards: not in the input; the model falls back to PCIe paths "
        "(assumed):" in lines
    )
    (row,) = [ln for ln in lines if "host bridge" in ln]
    assert row.endswith("12.0 GB/s  all pairs of 0-1 (assumed)")  # Gen3 default
    assert lines[1].startswith("network: not in the input; assumed fat-tree")


def test_xgmi_bandwidth_is_the_pcie_fallback_and_says_so(tmp_path) -> None:
    """Corpus 20: rocm-smi gives the link kind, no bandwidth; no NCCL figure for XGMI."""
    cluster = import_topology([_write(tmp_path, "rocm.txt", ROCM)])
    (node,) = cluster.nodes
    assert node.links_known
    (row,) = [ln for ln in describe(cluster) if ln.strip().startswith("xgmi")]
    assert row.endswith("12.0 GB/s  all pairs of 0-1 (assumed)")


def test_ascend_cards_are_not_judged_by_the_geforce_rule() -> None:
    """Corpus 45: 'not GeForce, PCIe P2P is available to NCCL' is no verdict for HCCL."""
    c, found = consumer_p2p(["Ascend910"])
    assert c.status is CheckStatus.NOT_CHECKED
    assert "not applicable" in c.evidence
    assert found == []
    c, _ = consumer_p2p(["NVIDIA A100-SXM4-80GB"])
    assert c.status is CheckStatus.CLEAN
    c, found = consumer_p2p(["NVIDIA GeForce RTX 4090"])
    assert (c.status, [f.code for f in found]) == (CheckStatus.PROBLEM, ["XP520"])


def _desc(**node) -> dict:
    return {"schema": "xpuperf.topology/1", "nodes": [{"name": "h", "devices": 2, **node}]}


def test_description_links_absent_vs_empty() -> None:
    absent = from_dict(_desc())
    empty = from_dict(_desc(links=[], pcie_gen=4, sys_bw_GBps=16))
    assert absent.nodes[0].assumed == {"links", "pcie_bw_GBps", "sys_bw_GBps"}
    assert empty.nodes[0].assumed == set()
    assert absent.nodes[0].path(0, 1).assumed
    p = empty.nodes[0].path(0, 1)
    assert (p.bw_GBps, p.assumed) == (24.0, False)  # Gen4, stated, no direct link stated


def test_network_line_marks_each_default() -> None:
    full = {"fabric": "rail", "switch_levels": 2, "oversubscription": "2:1", "latency_us": 3}
    c = from_dict({**_desc(links=[]), "network": full})
    assert c.network.assumed == set()
    assert describe(c)[1] == "network: rail, 2 switch level(s), oversubscription 2:1, latency 3 µs"
    c = from_dict({**_desc(links=[]), "network": {"fabric": "rail"}})
    assert c.network.assumed == {"switch_levels", "oversubscription", "latency_us"}
    assert describe(c)[1] == (
        "network: rail, 1 switch level(s) (assumed), oversubscription 1:1 (assumed), "
        "latency 2.7 µs (assumed)"
    )


def test_json_view_keeps_assumed_and_loads_back(tmp_path) -> None:
    cluster = import_topology([_write(tmp_path, "rank_table.json", RANKTABLE)])
    doc = to_json_dict(cluster)
    assert doc["nodes"][0]["assumed"] == ["links", "pcie_bw_GBps", "sys_bw_GBps"]
    assert doc["network"]["assumed"] == [
        "fabric", "latency_us", "oversubscription", "switch_levels"
    ]  # fmt: skip
    back = from_dict(json.loads(json.dumps(doc)))
    assert back == cluster
    assert back.nodes[0].assumed == cluster.nodes[0].assumed
    assert back.network.assumed == cluster.network.assumed
    bad = _desc(assumed=["nvlinks"])
    with pytest.raises(InputError, match=r"nodes\[0\].assumed\[0\]: 'nvlinks' is not one of"):
        from_dict(bad)


def test_topo_check_cli_on_bare_xml_has_no_link_problem(tmp_path) -> None:
    p = _write(tmp_path, "topo.xml", BARE_XML)
    r = CliRunner().invoke(app, ["topo", "check", str(p), "--json", "-"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    status = {c["name"]: c["status"] for c in doc["checks"]}
    assert status["topology.link_uniformity"] == "not_checked"
    assert not [f for f in doc["findings"] if f["code"] == "XP504"]
