"""End-to-end CLI tests: exit codes, one-line errors, JSON to stdout, the bundled default."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from xpuperf.cli import app as cli_app


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xpuperf", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_default_analyses_bundled_sample_and_names_rank_5(tmp_path: Path) -> None:
    # The bundled sample plants a 15 % compute slowdown on rank 5 (sample_logs/README.md).
    p = run("analyze", "--json", "-", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["schema"] == "xpuperf.analyze/1"
    assert doc["summary"]["ranks"] == 16
    assert [s["rank"] for s in doc["stragglers"]] == [5]
    assert doc["stragglers"][0]["kind"] == "deterministic"
    assert doc["stragglers"][0]["slowdown"] == pytest.approx(0.15, abs=0.02)
    assert 0 < doc["breakdown"]["speedup"] < 1
    assert "bundled sample" in p.stderr


def test_terminal_summary_on_default(tmp_path: Path) -> None:
    p = run("analyze", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "XP101" in p.stdout
    assert "speedup" in p.stdout


def test_help_lists_columns() -> None:
    p = run("analyze", "--help")
    assert p.returncode == 0
    assert "samples_per_sec" in p.stdout


@pytest.mark.parametrize(
    ("setup", "expect"),
    [
        ("missing", "no such file"),
        ("empty", "empty"),
        ("binary", "binary"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path: Path, setup: str, expect: str) -> None:
    f = tmp_path / "rank0.csv"
    if setup == "empty":
        f.write_text("")
    elif setup == "binary":
        f.write_bytes(b"\x00\x01\x02\xff" * 100)
    p = run("analyze", str(f))
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, p.stderr
    assert expect in lines[0].lower()
    assert str(f) in lines[0]


def test_unknown_option_is_usage_error() -> None:
    p = run("analyze", "--no-such-option")
    assert p.returncode == 2
    assert "Traceback" not in p.stderr


def test_refuses_to_overwrite_input(samples: Path, tmp_path: Path) -> None:
    src = samples / "single_card" / "baseline.csv"
    before = src.read_bytes()
    p = run("analyze", str(src), "--json", str(src))
    assert p.returncode == 2
    assert "refusing to write" in p.stderr
    assert src.read_bytes() == before


def test_json_file_written(samples: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    p = run("analyze", str(samples / "healthy_8rank"), "--json", str(out), "-q")
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    doc = json.loads(out.read_text())
    assert doc["summary"]["ranks"] == 8
    assert doc["stragglers"] == []


def test_internal_error_exit_3(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    def boom(*a, **k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr("xpuperf.pipeline.analyze_logs", boom)
    with pytest.raises(SystemExit) as e:
        cli_app.main(["analyze", "x.csv"])
    assert e.value.code == 3
    err = capsys.readouterr().err
    assert "internal error" in err
    assert "kaboom" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "args",
    [
        ("analyze", "--no-such-option"),
        ("analyze", "--warmup", "-1"),
        ("topo", "show", "--cards-per-node", "8", "--nodes", "0"),
        ("analyze", "x.csv", "--json", ""),
    ],
)
def test_usage_errors_are_one_line_exit_2(args: tuple[str, ...]) -> None:
    p = run(*args)
    assert p.returncode == 2
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("cmd", ["analyze {samples}/healthy_8rank", "formats"])
def test_broken_pipe_is_not_a_failed_gate(samples: Path, cmd: str) -> None:
    # `xpuperf … | head`: stdout closes early; exit 1 is reserved for failed gates
    p = subprocess.run(
        [
            "bash",
            "-o",
            "pipefail",
            "-c",
            f"{sys.executable} -m xpuperf {cmd.format(samples=samples)} | head -c 10",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert p.returncode == 0, p.stderr


def test_debug_is_accepted_by_every_subcommand(tmp_path: Path) -> None:
    p = run("topo", "show", "--preset", "dgx-a100", "--debug")
    assert p.returncode == 0, p.stderr


def test_control_characters_from_files_never_reach_stderr(tmp_path: Path) -> None:
    f = tmp_path / "rank0.csv"
    f.write_bytes(b"step,rank,\x1b[31mx\n1,0,0.3\n")  # an ANSI escape in a column name
    p = run("analyze", str(f))
    assert p.returncode == 2
    assert "\x1b" not in p.stderr
