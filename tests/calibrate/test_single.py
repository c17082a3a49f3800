"""Single nccl-tests measurements (xpuperf/calibrate/single.py): one row compared with the link.
Samples in tests/data/calibrate_single_* were written for these tests in the nccl-tests 2.13+
layout (rank preamble with device names, root and #wrong columns)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xpuperf.calibrate.run import calibrate_files
from xpuperf.calibrate.single import parse_link
from xpuperf.cli.app import app
from xpuperf.errors import UsageError
from xpuperf.findings import CheckStatus

DATA = Path(__file__).resolve().parent.parent / "data"
RTX = DATA / "calibrate_single_4090" / "all_reduce_28MiB_4x4090.txt"
H100 = DATA / "calibrate_single_h100" / "all_reduce_64MiB_8xh100.txt"
SMALL = DATA / "calibrate_single_h100" / "all_reduce_256KiB_no_preamble.txt"


def _checks(result):
    return {c.name: c for c in result.checks}


def test_one_row_on_pcie4_is_13_percent_of_the_link():
    r = calibrate_files([RTX], link=parse_link("pcie4"))
    assert r.fits == []
    (m,) = r.measurements
    # 29360128 B / 14204 µs = 2.067 GB/s algbw; busbw = algbw·2·3/4 = 3.10 (printed 3.10)
    assert m.size_bytes == 28 * 2**20
    assert m.ranks == 4
    assert m.busbw_GBps == pytest.approx(3.10)
    # PCIe Gen4 x16 = 24 GB/s (NCCL's 12 GB/s for Gen3 doubled): 3.10 / 24 = 12.9 %
    assert m.fraction == pytest.approx(3.10 / 24)
    (f,) = [f for f in r.findings if f.code == "XP606"]
    assert "13% of the 24 GB/s of PCIe Gen4 x16" in f.message
    assert _checks(r)["calibrate.single_vs_link"].status == CheckStatus.PROBLEM
    # the preamble names GeForce cards: no P2P
    assert _checks(r)["topology.consumer_p2p"].status == CheckStatus.PROBLEM


def test_without_link_the_comparison_is_not_checked():
    r = calibrate_files([RTX])
    c = _checks(r)["calibrate.single_vs_link"]
    assert c.status == CheckStatus.NOT_CHECKED
    assert "--link" in c.evidence
    assert not [f for f in r.findings if f.code == "XP606"]
    assert "calibrate.busbw_vs_topology" not in _checks(r)  # no fit: no plateau to compare


def test_fit_checks_on_real_h100_run():
    # corpus 17: 512 MiB–8 GiB only, so the latency floor is extrapolated (XP604, info)
    from tests.calibrate.conftest import FILES

    r = calibrate_files([FILES["k8s_h100"]])
    c = _checks(r)
    assert c["calibrate.latency_floor"].status == CheckStatus.NOT_CHECKED
    assert c["calibrate.latency_floor"].codes == ("XP604",)
    assert c["calibrate.wrong_results"].status == CheckStatus.CLEAN
    assert c["calibrate.busbw_vs_topology"].status == CheckStatus.NOT_CHECKED
    assert "--topology" in c["calibrate.busbw_vs_topology"].evidence
    assert c["calibrate.accuracy"].status == CheckStatus.CLEAN


def test_healthy_h100_row_is_clean():
    r = calibrate_files([H100], link=parse_link("nvlink-h100"))
    (m,) = r.measurements
    # 18 NVLinks × 20.6 GB/s = 370.8 GB/s; busbw 249.88 (out-of-place row) → 67 % ≥ 50 %
    assert m.link_GBps == pytest.approx(370.8)
    assert m.fraction == pytest.approx(249.88 / 370.8)
    assert _checks(r)["calibrate.single_vs_link"].status == CheckStatus.CLEAN
    assert _checks(r)["topology.consumer_p2p"].status == CheckStatus.CLEAN


def test_small_message_is_latency_bound():
    # 256 KiB, no preamble: ranks from busbw/algbw = 11.13/6.36 = 1.75 = 2(n-1)/n → n = 8
    r = calibrate_files([SMALL], link=parse_link("pcie4"))
    (m,) = r.measurements
    assert m.ranks == 8
    assert [f.code for f in r.findings] == ["XP607"]
    assert _checks(r)["calibrate.single_vs_link"].status == CheckStatus.NOT_CHECKED


def test_link_values():
    assert parse_link("pcie3").bw_GBps == 12.0
    assert parse_link("pcie5").bw_GBps == 48.0
    assert parse_link("400Gbps").bw_GBps == 50.0
    assert parse_link("nvlink-a100").bw_GBps == pytest.approx(240.0)  # 12 × 20
    with pytest.raises(UsageError, match="pcie4"):
        parse_link("pcie9")


def test_cli_json_has_measurements_and_checks():
    r = CliRunner().invoke(app, ["calibrate", str(RTX), "--link", "pcie4", "--json", "-"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["measurements"][0]["fraction"] == pytest.approx(3.10 / 24)
    status = {c["name"]: c["status"] for c in doc["checks"]}
    assert status["calibrate.single_vs_link"] == "problem"
    assert status["calibrate.wrong_results"] == "clean"


def test_link_from_topology():
    from xpuperf.calibrate.run import add_topology_findings
    from xpuperf.topology.importers import import_topology

    cluster = import_topology([DATA / "topology_consumer_pix" / "nvidia-smi-topo-m.txt"])
    r = calibrate_files([RTX])
    add_topology_findings(r, cluster, "topo")
    (m,) = r.measurements
    # ring 0-1-2-3-0 crosses SYS pairs: min(PCIe 12, inter-socket 10) = 10 GB/s; 3.10/10 = 31 %
    assert m.link_GBps == pytest.approx(10.0)
    assert [f.code for f in r.findings if f.code == "XP606"] == ["XP606"]
    # with the topology, the same-switch pairs are named in the P2P finding
    (p2p,) = [f for f in r.findings if f.code == "XP520"]
    assert p2p.data["same_switch_pairs"] == [(0, 1), (2, 3)]
