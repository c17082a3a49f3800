"""``xpuperf analyze TABLE``: scaling report when every input is a scaling table, exit codes,
and step logs still on the normal path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xpuperf", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120, check=False)  # fmt: skip


def test_terminal_report_of_a_markdown_table() -> None:
    p = run("analyze", str(DATA / "scaling_markdown_intra/table.md"))
    assert p.returncode == 0, p.stderr
    assert "scaling table" in p.stdout
    assert "XP311" in p.stdout
    assert "XP313" in p.stdout
    assert "not_checked" in p.stdout
    assert "scaling.inter_node" in p.stdout


def test_json_and_gate(tmp_path: Path) -> None:
    table = str(DATA / "scaling_csv_internode/scaling.csv")
    p = run("analyze", table, "--json", "-")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["schema"] == "xpuperf.scaling/1"
    assert doc["tables"][0]["location"] == "across nodes"
    p = run("analyze", table, "-q", "--fail-on", "efficiency<0.9")
    assert p.returncode == 1
    assert "efficiency = 0.7" in p.stderr
    p = run("analyze", table, "-q", "--fail-on", "code=XP311")
    assert p.returncode == 0, p.stderr


def test_markdown_output(tmp_path: Path) -> None:
    out = tmp_path / "s.md"
    p = run("analyze", str(DATA / "scaling_text_healthy/results.txt"), "--markdown", str(out))
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert "| clean | loss across nodes (network) |" in text
    assert "no finding" in text


def test_table_without_one_card_row_exits_2() -> None:
    p = run("analyze", str(DATA / "scaling_tsv_no_baseline/table.tsv"))
    assert p.returncode == 2
    assert "table.tsv:1: no one-card row" in p.stderr
    assert "xpuperf plan --measured" in p.stderr  # advice with a command that takes a number
    assert "Traceback" not in p.stderr


def test_step_logs_still_take_the_normal_path() -> None:
    p = run("analyze", str(DATA / "readers_mixed"), "--json", "-")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["schema"] == "xpuperf.analyze/1"
