"""`calibrate --link` on fitted curves, busbw above the link, and the NCCL checks printed once
(issue 16, QA pass).

tests/data/calibrate_curve_h100_link/ holds two curves written for these tests in the nccl-tests
2.13+ layout (8 ranks, one host, 8 B to 1 GiB by 2), from time = 15 µs + S·2(n−1)/n / B with
B = 20 GB/s (plateau20) and 360 GB/s (plateau360); busbw = algbw·2·7/8 as nccl-tests prints it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xpuperf.calibrate.run import calibrate_files
from xpuperf.calibrate.single import Measurement, judge, parse_link
from xpuperf.cli.app import app
from xpuperf.findings import CheckStatus

DATA = Path(__file__).resolve().parent.parent / "data"
CURVES = DATA / "calibrate_curve_h100_link"
SLOW = CURVES / "all_reduce_8xh100_plateau20.txt"
FAST = CURVES / "all_reduce_8xh100_plateau360.txt"
NCCL_PLUS_TESTS = (
    DATA / "calibrate_eks_efa_t4" / "16_nccltests_eks-efa-2node-t4-mpirun-tagged-with-nccl-info.txt"
)


def _checks(result):
    return {c.name: c for c in result.checks}


def test_link_is_compared_with_a_fitted_plateau():
    r = calibrate_files([SLOW], link=parse_link("nvlink-h100"))
    (fit,) = r.fits
    assert fit.busbw_GBps == pytest.approx(20.0, rel=0.01)
    (f,) = [f for f in r.findings if f.code == "XP601"]
    # nvlink-h100: 18 NVLinks x 20.6 GB/s (NCCL SM90) = 370.8 GB/s; 20 / 370.8 = 5.4 %
    assert f.data["ceiling_GBps"] == pytest.approx(370.8)
    assert f.data["fraction"] == pytest.approx(20.0 / 370.8, rel=0.01)
    assert "is 5% of the 371 GB/s --link gives (18 NVLinks of a H100" in f.message
    c = _checks(r)["calibrate.busbw_vs_topology"]
    assert c.status == CheckStatus.PROBLEM
    assert c.codes == ("XP601",)


def test_healthy_plateau_against_its_link_is_clean():
    # 360 / 370.8 = 97 %: between 70 % and 110 %
    r = calibrate_files([FAST], link=parse_link("nvlink-h100"))
    assert not [f for f in r.findings if f.code == "XP601"]
    c = _checks(r)["calibrate.busbw_vs_topology"]
    assert c.status == CheckStatus.CLEAN
    assert "fit 360 GB/s vs 371 GB/s" in c.evidence  # the fit compared, the peak quoted first
    assert "measured peak" in c.evidence


def test_plateau_above_the_link_is_not_checked():
    # 360 GB/s on 'pcie4' (24 GB/s): 1500 % — these bytes went over NVLink, not PCIe
    r = calibrate_files([FAST], link=parse_link("pcie4"))
    assert not [f for f in r.findings if f.code == "XP601"]
    c = _checks(r)["calibrate.busbw_vs_topology"]
    assert c.status == CheckStatus.NOT_CHECKED
    assert "did not go over that link alone" in c.evidence
    assert "the ranks share one node" in c.evidence


def test_no_link_and_no_topology_names_both_flags():
    c = _checks(calibrate_files([SLOW]))["calibrate.busbw_vs_topology"]
    assert c.status == CheckStatus.NOT_CHECKED
    assert "pass --topology FILE or --link" in c.evidence


def _row(busbw: float, nodes: int | None = None) -> Measurement:
    # 32 MiB all_reduce on 8 ranks, as an old nccl-tests table without a preamble prints it
    return Measurement("old.txt", 4, "all_reduce", 8, nodes, 32 << 20, 2000.5, busbw / 1.75, busbw)


def test_single_row_above_the_link_is_not_clean():
    # 29.35 GB/s busbw vs 100 Gb/s = 12.5 GB/s: 235 % — more than the NIC carries
    check, found = judge(_row(29.35), parse_link("100Gbps"))
    assert check.status == CheckStatus.NOT_CHECKED
    assert "235% of the 12.5 GB/s" in check.evidence
    assert "did not go over that link alone" in check.evidence
    assert "several NICs" in check.evidence  # node count unknown: multi-rail is possible
    assert not found
    # 13.0 / 12.5 = 104 %: within the 110 % margin of a link figure, clean
    check, _ = judge(_row(13.0), parse_link("100Gbps"))
    assert check.status == CheckStatus.CLEAN
    # one node: only intra-node links explain it
    check, _ = judge(_row(29.35, nodes=1), parse_link("100Gbps"))
    assert "the ranks share one node" in check.evidence
    assert "several NICs" not in check.evidence


def test_cli_json_single_row_above_link(tmp_path: Path):
    f = tmp_path / "old.txt"
    f.write_text(
        "#       size         count    type   redop     time   algbw   busbw  error     time"
        "   algbw   busbw  error\n"
        "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)"
        "  (GB/s)  (GB/s)\n"
        "    33554432       8388608   float     sum   2000.5   16.77   29.35  5e-07   1999.0"
        "   16.79   29.38  5e-07\n"
    )
    r = CliRunner().invoke(app, ["calibrate", str(f), "--link", "100Gbps", "--ranks", "8",
                                 "--json", "-"])  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    (c,) = [c for c in doc["checks"] if c["name"] == "calibrate.single_vs_link"]
    assert c["status"] == "not_checked"  # before: "clean" at 235 %


def test_nccl_checks_printed_once():
    # corpus 16: nccl-tests output with NCCL INFO lines: before, the NCCL section printed its
    # "checks:" block again below the calibrate one
    r = CliRunner().invoke(app, ["calibrate", str(NCCL_PLUS_TESTS)])
    assert r.exit_code == 0, r.output
    assert r.stdout.count("checks:") == 1
    assert r.stdout.count("nccl.warn") == 1


def test_topology_may_be_tool_output(tmp_path: Path):
    # --topology took only description files; `nvidia-smi topo -m` output (.gz too) now works.
    # 4 cards all PHB (tests/data/topology_vm_flat): ring link = PCIe, NCCL's 12 GB/s default
    topo = DATA / "topology_vm_flat" / "nvidia-smi-topo-m.txt"
    gz = tmp_path / "topo.txt.gz"
    gz.write_bytes(gzip.compress(topo.read_bytes()))
    rtx = DATA / "calibrate_single_4090" / "all_reduce_28MiB_4x4090.txt"
    r = CliRunner().invoke(app, ["calibrate", str(rtx), "--topology", str(gz), "--json", "-"])
    assert r.exit_code == 0, r.output
    (m,) = json.loads(r.stdout)["measurements"]
    # busbw 3.10 GB/s / 12 GB/s = 25.8 %
    assert m["link_GBps"] == pytest.approx(12.0)
    assert m["fraction"] == pytest.approx(3.10 / 12.0)
