"""CLI polish (issue 19 part 5): ``-q`` on every subcommand, and terminal output that a CI log
(stdout piped) keeps whole — one finding or check per line, indented, not wrapped at 80."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from xpuperf.cli import app as cli_app
from xpuperf.readers import FORMATS

ROOT = Path(__file__).resolve().parents[2]
NCCL_XML = (
    ROOT / "tests/data/topology_import_ncclxml/01_topo_azure-ndv4-a100-nccl-topo-file-xml.txt"
)
CLUSTER = ROOT / "tests/data/topology_example/cluster.yaml"


def _leaves(cmd, path=()):
    sub = getattr(cmd, "commands", None)
    if sub is None:
        yield " ".join(path), cmd
        return
    for name in cli_app.SUBCOMMANDS if not path else list(sub):
        child = cli_app.load_command(name) if not path else sub[name]
        yield from _leaves(child, (*path, name))


def test_every_subcommand_has_quiet() -> None:
    import typer

    root = typer.main.get_command(cli_app.app)
    leaves = dict(_leaves(root))
    assert {"analyze", "compare", "plan", "calibrate", "ingest", "formats"} <= set(leaves)
    assert {"topo show", "topo check", "topo import"} <= set(leaves)
    missing = [
        name
        for name, cmd in leaves.items()
        if not any({"-q", "--quiet"} <= set(p.opts) for p in cmd.params)
    ]
    assert missing == []


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """``xpuperf ARGS`` with stdout and stderr piped (as in a CI job), ``$COLUMNS`` unset."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run(
        [sys.executable, "-m", "xpuperf", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )


def test_piped_findings_stay_on_one_line() -> None:
    p = run("analyze", str(ROOT / "sample_logs" / "slow_rank_16rank"))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    xp101 = [ln for ln in lines if "XP101" in ln and "works" in ln]
    assert len(xp101) == 1
    # the whole message on one indented line: from the severity to the remedy's last words
    assert xp101[0].startswith("  warning XP101  rank 5 (node00) works ")
    assert "Remedy:" in xp101[0]
    assert xp101[0].rstrip().endswith(".")
    assert max(len(ln) for ln in lines) > 200  # rich's 80-column wrap would have cut it
    checks = lines[lines.index(next(ln for ln in lines if ln.startswith("checks"))) + 1 :]
    assert checks
    assert all(ln.startswith("  ") for ln in checks)


def test_formats_quiet_lists_the_names() -> None:
    p = run("formats", "-q")
    assert p.returncode == 0
    assert p.stdout.split() == [f.name for f in FORMATS]


@pytest.mark.parametrize(
    "args",
    [
        ("topo", "check", str(CLUSTER), "-q"),
        ("topo", "show", str(CLUSTER), "-q"),
        ("calibrate", str(next((ROOT / "tests/data/calibrate_k8s_h100").glob("*.txt"))), "-q"),
        ("analyze", str(ROOT / "sample_logs" / "healthy_8rank"), "-q"),
    ],
)
def test_quiet_prints_nothing(args: tuple[str, ...]) -> None:
    p = run(*args)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""


def test_topo_import_quiet_writes_the_file_only(tmp_path: Path) -> None:
    out = tmp_path / "t.yaml"
    loud = run("topo", "import", str(NCCL_XML), "-o", str(out))
    assert loud.returncode == 0
    assert f"wrote {out}: 1 node(s), 8 cards" in loud.stderr
    quiet = run("topo", "import", str(NCCL_XML), "-o", str(tmp_path / "q.yaml"), "-q")
    assert quiet.returncode == 0
    assert (quiet.stdout, quiet.stderr) == ("", "")
    assert (tmp_path / "q.yaml").read_text() == out.read_text()
