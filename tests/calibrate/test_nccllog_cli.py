"""`xpuperf analyze` and `xpuperf calibrate` on NCCL INFO logs (in-process CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpuperf.cli import app as cli_app

from .conftest import DATA, FILES

LOG41 = DATA / "calibrate_nccllog_41" / "41_nccllog_2node-16rank-ib-channels-trees-excerpt.txt"
SAMPLE = Path(__file__).resolve().parents[2] / "sample_logs" / "healthy_8rank"


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        cli_app.main(list(args))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def test_analyze_nccl_log_alone_gives_the_nccl_report(capsys) -> None:
    code, out, err = run(capsys, "analyze", str(LOG41), "--json", "-")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "xpuperf.analyze/1"
    assert doc["summary"] is None
    nccl = doc["nccl"]
    assert (nccl["ranks"], nccl["channels"]) == (16, 8)
    # ranks 8-15 (nNodes 2, localRanks 8) print no host: the label says so (was '?node2')
    assert nccl["hosts"] == ["node01", "node 2 (name not in the log)"]
    assert nccl["rings"][0]["order"][8] == 8
    assert nccl["rings"][0]["cross_node_edges"] == 2
    assert sorted(f["code"] for f in doc["findings"]) == ["XP650", "XP659"]
    # issue 16: one check record per NCCL check; the excerpt has rings but no transport lines
    checks = {c["name"]: c["status"] for c in nccl["checks"]}
    assert len(checks) == 8
    assert checks["nccl.ring_crossings"] == "clean"
    assert checks["nccl.network"] == "not_checked"
    code, out, err = run(capsys, "analyze", str(LOG41))
    assert code == 0
    assert "16 rank(s) on 2 host(s)" in out
    assert "XP650" in out
    assert "clean       ring node crossings" in out


def test_analyze_step_logs_plus_nccl_log(capsys, tmp_path: Path) -> None:
    code, out, err = run(capsys, "analyze", str(SAMPLE), str(FILES["p4d_old"]), "--json", "-")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["summary"]["ranks"] == 8
    assert doc["nccl"]["version"] == "2.9.9"
    assert doc["nccl"]["ranks"] == 16
    assert "XP650" in [f["code"] for f in doc["findings"]]
    assert any("16 ranks, the step logs 8" in w for w in doc["warnings"])
    assert any("NCCL debug log without step records" in w for w in doc["warnings"])


def test_training_log_with_nccl_lines(capsys, tmp_path: Path) -> None:
    lines = [
        f"host{r}:1{r}:2{r} [0] NCCL INFO comm 0x{r} rank {r} nranks 2 cudaDev 0 busId {r}000"
        " - Init START"
        for r in range(2)
    ]
    lines += [
        "host0:10:20 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>",
        "host1:11:21 [0] NCCL INFO Channel 00/0 : 1[1000] -> 0[0] [send] via NET/Socket/0",
    ]
    lines += [
        f" iteration {i:8d}/     100 | consumed samples: {64 * i:10d} | elapsed time per "
        f"iteration (ms): {1000.0 + i % 3:.1f} | global batch size:    64 | lm loss: 2.0E+00 |"
        for i in range(1, 31)
    ]
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "analyze", str(p), "--json", "-")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["summary"]["steps"] == 30
    assert doc["findings"][0]["code"] == "XP651"  # error first: TCP although mlx5_0 exists
    assert doc["nccl"]["transports"] == [
        {"scope": "inter", "transport": "NET/Socket", "connections": 1}
    ]


def test_analyze_unknown_text_still_fails_with_one_line(capsys, tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("hello\nworld\n")
    code, _, err = run(capsys, "analyze", str(p))
    assert code == 2
    assert "cannot tell the format" in err
    assert "Traceback" not in err


def test_calibrate_shows_nccl_findings(capsys) -> None:
    code, out, err = run(
        capsys, "calibrate", str(FILES["eks_efa_t4"]), "--max-lines", "1", "--json", "-"
    )
    assert code == 0, err
    codes = [f["code"] for f in json.loads(out)["findings"]]
    assert "XP653" in codes  # corpus 16: NET/AWS Libfabric without /GDRDMA
    code, out, err = run(capsys, "calibrate", str(FILES["p4d_old"]), "--max-lines", "1")
    assert code == 0
    assert "XP650" in out
    assert "NCCL 2.9.9" in out


def test_calibrate_on_a_pure_nccl_log_points_to_analyze(capsys) -> None:
    code, _, err = run(capsys, "calibrate", str(LOG41))
    assert code == 2
    assert "41_nccllog" in err
    assert "`xpuperf analyze FILE` reports on them" in err
