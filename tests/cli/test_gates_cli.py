"""CLI: --html/--markdown/--fail-on of analyze, CI integration, and `compare` exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from xpuperf.cli import app as cli_app
from xpuperf.cli import compare as compare_cmd
from xpuperf.synth import Scenario, generate


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "xpuperf", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={**os.environ, "GITHUB_ACTIONS": "", "GITHUB_STEP_SUMMARY": "", **(env or {})},
    )


@pytest.fixture
def slow(samples: Path) -> list[str]:
    return [str(samples / "slow_rank_16rank"), "--baseline", str(samples / "single_card")]


def test_gates_pass_exit_0(slow: list[str]) -> None:
    p = run("analyze", *slow, "-q", "--fail-on", "speedup<0.5,jitter.cv>0.05", "--fail-on",
            "code=XP999")  # fmt: skip
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize(
    ("gate", "shown"),
    [
        ("speedup<0.9", "speedup<0.9 (speedup = 0.81"),
        ("stragglers>0", "stragglers>0 (stragglers = 1)"),
        ("severity>=warning", "severity>=warning (severity = warning)"),
        ("code=XP101", "code=XP101 (code = present)"),
        (
            "summary.step_time_s.p99>0.3",
            "summary.step_time_s.p99>0.3 (summary.step_time_s.p99 = 0.39",
        ),
    ],
)
def test_each_gate_fails_exit_1(slow: list[str], tmp_path: Path, gate: str, shown: str) -> None:
    out = tmp_path / "r.html"
    p = run("analyze", *slow, "-q", "--fail-on", gate, "--html", str(out))
    assert p.returncode == 1, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("xpuperf: error: 1 of 1 gate(s) failed")
    assert shown in last
    assert out.exists()  # the report is written before the gate fails the job


def test_two_failed_gates_are_both_listed(slow: list[str]) -> None:
    p = run("analyze", *slow, "-q", "--fail-on", "speedup<0.9,stragglers>0,jitter.cv>0.5")
    assert p.returncode == 1
    assert "2 of 3 gate(s) failed" in p.stderr
    assert "speedup<0.9" in p.stderr
    assert "stragglers>0" in p.stderr


def test_gate_on_null_is_usage_error_exit_2(samples: Path) -> None:
    p = run("analyze", str(samples / "healthy_8rank"), "-q", "--fail-on", "speedup<0.9")
    assert p.returncode == 2
    assert "breakdown.speedup is null" in p.stderr
    assert "--baseline" in p.stderr
    assert "Traceback" not in p.stderr


def test_malformed_gate_exit_2_before_reading(tmp_path: Path) -> None:
    p = run("analyze", str(tmp_path / "missing.csv"), "--fail-on", "speedup<<0.9")
    assert p.returncode == 2
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert len(lines) == 1
    assert "'speedup<<0.9'" in lines[0]
    assert "Accepted:" in lines[0]


def test_html_markdown_and_github_integration(slow: list[str], tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("previous step\n")
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    p = run(
        "analyze", *slow, "-q", "--html", str(html), "--markdown", str(md),
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert html.read_text().count('id="fig-heatmap"') == 1
    text = md.read_text()
    assert summary.read_text() == "previous step\n" + text  # appended, not overwritten
    title = "::warning title=XP101 straggler rank (deterministic or intermittent)::rank 5"
    assert title in p.stderr


def test_no_annotations_outside_actions(slow: list[str]) -> None:
    p = run("analyze", *slow, "-q")
    assert "::warning" not in p.stderr


def test_html_refuses_to_overwrite_input(samples: Path) -> None:
    src = samples / "single_card" / "baseline.csv"
    p = run("analyze", str(src), "--html", str(src))
    assert p.returncode == 2
    assert "refusing to write" in p.stderr


# ---- compare (registered on a local app until the lead adds it to xpuperf.cli.app) -------------


@pytest.fixture
def main_with_compare(monkeypatch: pytest.MonkeyPatch):
    app = typer.Typer(pretty_exceptions_enable=False, rich_markup_mode=None)
    app.command("analyze")(cli_app.analyze_cmd.analyze)
    app.command("compare")(compare_cmd.compare)
    monkeypatch.setattr(cli_app, "app", app)

    def main(*args: str) -> int:
        with pytest.raises(SystemExit) as e:
            cli_app.main(list(args))
        return int(e.value.code)

    return main


def _write(tmp_path: Path, name: str, factor: float, seed: int) -> str:
    df = generate(Scenario(ranks=4, steps=150, compute_s=0.2 * factor, seed=seed))
    d = tmp_path / name
    d.mkdir()
    df.to_csv(d / "steps.csv", index=False)
    return str(d)


def test_compare_exit_codes(main_with_compare, tmp_path: Path, capsys) -> None:
    base = _write(tmp_path, "base", 1.0, 1)
    same = _write(tmp_path, "same", 1.0, 2)
    slower = _write(tmp_path, "slower", 1.05, 3)
    out = tmp_path / "c.json"
    assert main_with_compare("compare", base, same, "--max-regression", "2%", "-q") == 0
    code = main_with_compare(
        "compare", base, slower, "--max-regression", "2%", "--json", str(out),
        "--markdown", str(tmp_path / "c.md"), "--html", str(tmp_path / "c.html"),
    )  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err
    assert "regression beyond --max-regression: median step time +" in err
    doc = json.loads(out.read_text())
    assert doc["schema"] == "xpuperf.compare/1"
    assert doc["metrics"]["step_time_median"]["verdict"] == "regression"
    assert (tmp_path / "c.html").exists()
    assert (tmp_path / "c.md").exists()
    assert main_with_compare("compare", base, slower, "--max-regression", "five") == 2
    assert main_with_compare("compare", base, str(tmp_path / "nope")) == 2


def test_compare_saved_json(main_with_compare, samples: Path, tmp_path: Path, capsys) -> None:
    j = tmp_path / "a.json"
    assert main_with_compare("analyze", str(samples / "healthy_8rank"), "-q", "--json", str(j)) == 0
    assert main_with_compare("compare", str(j), str(samples / "healthy_8rank")) == 0
    out = capsys.readouterr().out
    # saved JSON carries job_steps, so the comparison is tested step by step
    assert "without per-step series" not in out
    assert "no regression detected" in out
