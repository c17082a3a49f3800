"""``xpuperf analyze`` on scaling tables as QA handed them (issue 16): several models in one
table, gzip files, a table mixed with other inputs, a one-row table, --html, a training log
pasted under a table. Every refusal exits 2 with one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent.parent / "data"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xpuperf", *args], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip


def refused(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    assert p.stderr.count("\n") == 1, p.stderr  # one line
    return p.stderr


def test_two_models_are_reported_each_against_its_own_one_card_row() -> None:
    p = run("analyze", str(DATA / "scaling_two_models/table.md"), "--json", "-")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    tables = doc["tables"]
    assert [(t["group_column"], t["group"]) for t in tables] == [
        ("Network", "ResNet-50"),
        ("Network", "VGG-16"),
    ]
    # 2960 / 8 / 400 = 0.925 and 1200 / 8 / 200 = 0.75; the gate key is the lower one
    assert [t["largest"]["efficiency"] for t in tables] == pytest.approx([0.925, 0.75])
    assert doc["efficiency"] == pytest.approx(0.75)
    p = run("analyze", str(DATA / "scaling_two_models/table.md"))
    assert "[Network VGG-16]" in p.stdout


def test_disagreeing_one_card_rows_exit_2() -> None:
    err = refused(run("analyze", str(DATA / "scaling_one_card_disagree/table.md")))
    assert "the one-card rows disagree: line 3 gives 400 samples/s" in err


@pytest.mark.parametrize("name", ["table.md.gz", "scaling.csv.gz"])
def test_gzip_tables_are_analysed(name: str) -> None:
    p = run("analyze", str(DATA / "scaling_gzip" / name), "--json", "-")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["schema"] == "xpuperf.scaling/1"
    # intra: 2219 / 8 / 380 = 0.7299; internode: 9184 / 32 / 410 = 0.70
    want = 2219 / 8 / 380 if name == "table.md.gz" else 9184 / 32 / 410
    assert doc["efficiency"] == pytest.approx(want)


@pytest.mark.parametrize("other", ["readers_mixed/rank0.log", "readers_mixed/gpu2.tsv"])
def test_a_table_mixed_with_other_inputs_is_refused(other: str) -> None:
    table = str(DATA / "scaling_markdown_intra/table.md")
    err = refused(run("analyze", table, str(DATA / other)))
    assert f"{table}: this is a scaling table (cards vs throughput): analyse it on its own" in err
    assert f"`xpuperf analyze {table}`" in err


def test_a_table_with_baseline_is_refused() -> None:
    table = str(DATA / "scaling_markdown_intra/table.md")
    err = refused(run("analyze", table, "--baseline", str(DATA / "readers_mixed/rank0.log")))
    assert "its one-card row is the baseline" in err
    err = refused(run("analyze", str(DATA / "readers_mixed/rank0.log"), "--baseline", table))
    assert "--baseline takes the step log of one card alone, not a scaling table" in err


def test_a_one_row_table_says_so() -> None:
    err = refused(run("analyze", str(DATA / "scaling_one_row/table.md")))
    assert "a scaling table with 1 usable row(s), all at 8 card(s):" in err
    assert "add the one-card run as a row" in err
    assert "--format" not in err


def test_a_table_left_with_one_row_names_the_skipped_rows(tmp_path: Path) -> None:
    p = tmp_path / "t.md"
    p.write_text("| GPUs | img/s |\n|---|---|\n| 1 | 400 |\n| 8 | -2600 |\n")
    err = refused(run("analyze", str(p)))
    assert f"all at 1 card(s) (1 more skipped, first {p}:4: value -2600 ≤ 0)" in err
    assert "add a row with more cards or fix the skipped rows" in err


def test_html_is_refused_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    js = tmp_path / "r.json"
    p = run("analyze", str(DATA / "scaling_markdown_intra/table.md"), "--html", str(out),
            "--json", str(js))  # fmt: skip
    err = refused(p)
    assert "--html: a scaling table has no HTML report" in err
    assert "--json" in err
    assert "--markdown" in err
    assert not out.exists()
    assert not js.exists()
    assert p.stdout == ""


def test_training_log_under_a_table_is_named_and_readable_with_format() -> None:
    post = str(DATA / "scaling_table_plus_log/post.txt")
    p = run("analyze", post)
    assert p.returncode == 0, p.stderr
    assert "3 line(s) from line 10 look like a megatron step log" in " ".join(p.stdout.split())
    p = run("analyze", post, "--format", "megatron", "--json", "-")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["schema"] == "xpuperf.analyze/1"  # the step log, read by the Megatron reader
