"""Topology evidence (xpuperf/topology/evidence.py): consumer GPUs without P2P (XP520), flat
PCIe trees in VMs (XP521/XP522). Samples in tests/data/topology_* were written for these tests in
the formats of `nvidia-smi topo -m` (driver 535+, tab separated), `nvidia-smi -L` and `lscpu`."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from xpuperf.cli.app import app
from xpuperf.findings import CheckStatus
from xpuperf.topology import evidence
from xpuperf.topology.importers import import_files

DATA = Path(__file__).resolve().parent.parent / "data"
VM = DATA / "topology_vm_flat"
PIX = DATA / "topology_consumer_pix"
CORPUS_02 = DATA / "topology_import_ncclxml"


def _assess(*paths: Path):
    texts = [(str(p), p.read_text()) for p in paths]
    topo = [p for p in paths if "-L" not in p.name]
    cluster = import_files(topo).cluster if topo else None
    checks, findings, _ = evidence.assess(texts, cluster)
    return {c.name: c for c in checks}, findings


def test_consumer_pix_pairs_fire_with_pairs_named():
    checks, findings = _assess(PIX / "nvidia-smi-topo-m.txt", PIX / "nvidia-smi-L.txt")
    (f,) = [f for f in findings if f.code == "XP520"]
    # the matrix: GPU0-1 and GPU2-3 are PIX (same switch), the 4 other pairs SYS
    assert f.data["same_switch_pairs"] == [(0, 1), (2, 3)]
    assert f.data["cross_socket_pairs"] == [(0, 2), (0, 3), (1, 2), (1, 3)]
    assert "about half the bandwidth" in f.message
    assert "NCCL_P2P_DISABLE" in f.message
    assert checks["topology.consumer_p2p"].status == CheckStatus.PROBLEM


def test_consumer_from_nccl_tests_rank_lines():
    text = "#  Rank  0 Group  0 Pid   4242 on    box01 device  0 [0x01] NVIDIA GeForce RTX 4090\n"
    assert evidence.scan(text).gpu_names == ["NVIDIA GeForce RTX 4090"]


def test_data_center_cards_are_clean_and_unknown_cards_not_checked():
    check, found = evidence.consumer_p2p(["NVIDIA H100 80GB HBM3"])
    assert check.status == CheckStatus.CLEAN
    assert not found
    check, found = evidence.consumer_p2p([])
    assert check.status == CheckStatus.NOT_CHECKED
    assert "nvidia-smi -L" in check.evidence


def test_vm_flat_with_hypervisor_hint_is_a_problem():
    checks, findings = _assess(VM / "nvidia-smi-topo-m.txt", VM / "lscpu.txt")
    (f,) = [f for f in findings if f.code == "XP521"]
    assert "Hypervisor vendor: KVM" in f.message
    assert "NCCL_TOPO_FILE" in f.message
    # 4 cards, 12 off-diagonal GPU cells, all PHB
    assert "PHB ×12" in f.message
    assert checks["topology.vm_flat"].status == CheckStatus.PROBLEM


def test_vm_flat_without_hint_is_not_checked():
    checks, findings = _assess(VM / "nvidia-smi-topo-m.txt")
    assert [f.code for f in findings] == ["XP522"]
    assert checks["topology.vm_flat"].status == CheckStatus.NOT_CHECKED
    assert "lscpu" in checks["topology.vm_flat"].evidence


def test_switches_visible_is_clean():
    checks, findings = _assess(PIX / "nvidia-smi-topo-m.txt")
    assert checks["topology.vm_flat"].status == CheckStatus.CLEAN
    assert not [f for f in findings if f.code in ("XP521", "XP522")]


def test_ncclxml_self_nvlink_is_a_vm_hint():
    # corpus 02 (Azure NC A100 v4 dump): every card alone under its CPU, nvlink target = itself
    xml = CORPUS_02 / "02_topo_azure-ncv4-a100-nccl-topo-dump-xml.txt"
    checks, findings = _assess(xml)
    assert [f.code for f in findings] == ["XP521"]
    assert "0001:00:00.0" in findings[0].message  # the first card's own bus id
    # the NDv4 topology file (corpus 01) has a PCIe switch per NUMA node: clean
    checks, findings = _assess(CORPUS_02 / "01_topo_azure-ndv4-a100-nccl-topo-file-xml.txt")
    assert checks["topology.vm_flat"].status == CheckStatus.CLEAN


def test_cloud_names_and_bare_metal():
    assert evidence.scan("instance: p4d.24xlarge").hypervisor
    assert evidence.scan("vm size Standard_ND96asr_v4").hypervisor
    assert not evidence.scan("instance: g4dn.metal").hypervisor


def test_topo_check_json_has_checks():
    r = CliRunner().invoke(app, ["topo", "check", str(VM / "nvidia-smi-topo-m.txt"), "--json", "-"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    names = {c["name"]: c["status"] for c in doc["checks"]}
    assert names["topology.vm_flat"] == "not_checked"
    assert names["topology.consumer_p2p"] == "not_checked"
    assert names["topology.nic_sharing"] == "not_checked"  # no NICs in this matrix


def test_topo_import_takes_a_card_list_as_evidence():
    r = CliRunner().invoke(app, ["topo", "import", *map(str, sorted(PIX.iterdir()))])
    assert r.exit_code == 0, r.output
    assert "XP520" in r.output
    assert "card names and VM hints only" in r.output
