"""Every output path is checked before any input is read: a folder that does not exist, a file
where a folder should be, a folder that takes no new file (``/proc``) — one line, exit 2. The
inputs here are not logs at all, so an error about the input would mean it was read first."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import Run


@pytest.fixture
def junk(tmp_path: Path) -> Path:
    path = tmp_path / "junk.txt"
    path.write_text("not a log, not nccl-tests output, not a topology\n")
    return path


def commands(junk: Path, out: str) -> list[list[str]]:
    """One command per output option, each given an input no reader accepts."""
    j = str(junk)
    return [
        ["analyze", j, "--json", out],
        ["analyze", j, "--html", out],
        ["analyze", j, "--markdown", out],
        ["compare", j, j, "--json", out],
        ["calibrate", j, "-o", out],
        ["calibrate", j, "--html", out],
        ["topo", "import", j, "-o", out],
        ["topo", "check", j, "--json", out],
        ["plan", "--from-log", j, "--model", "resnet50", "--json", out],
        ["ingest", j, "-o", out],
    ]


def test_missing_folder_is_refused_before_reading(xp: Run, tmp_path: Path, junk: Path) -> None:
    out = tmp_path / "no-such-folder" / "result.json"
    for argv in commands(junk, str(out)):
        code, stdout, err = xp(*argv)
        assert (code, stdout) == (2, ""), argv
        assert err == (
            f"xpuperf: error: cannot write {out}: folder {out.parent} does not exist; choose "
            "another path\n"
        ), argv


def test_file_in_place_of_a_folder_is_refused_before_reading(xp: Run, junk: Path) -> None:
    out = junk / "result.json"
    for argv in commands(junk, str(out)):
        code, _, err = xp(*argv)
        assert code == 2, argv
        assert err == (
            f"xpuperf: error: cannot write {out}: {junk} is a file, not a folder; choose another "
            "path\n"
        ), argv


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_proc_is_refused_before_reading(xp: Run, junk: Path) -> None:
    # root may write anywhere as far as os.access knows; /proc still takes no new file
    why = (
        "takes no new file (No such file or directory; /proc, /sys and read-only mounts refuse "
        "them)"
        if os.geteuid() == 0
        else "is read-only (no write permission, a read-only mount or an immutable folder)"
    )
    code, _, err = xp("analyze", str(junk), "--json", "/proc/x.json")
    assert code == 2
    assert (
        err
        == f"xpuperf: error: cannot write /proc/x.json: folder /proc {why}; choose another path\n"
    )


def test_the_check_leaves_a_writable_folder_as_it_was(xp: Run, tmp_path: Path, junk: Path) -> None:
    os.utime(tmp_path, ns=(10**18, 10**18))
    before = (sorted(p.name for p in tmp_path.iterdir()), tmp_path.stat().st_mtime_ns)
    code, _, err = xp("analyze", str(junk), "--json", str(tmp_path / "r.json"))
    assert code == 2
    assert "junk.txt:1: cannot tell the format" in err  # the output passed; the input did not
    assert (sorted(p.name for p in tmp_path.iterdir()), tmp_path.stat().st_mtime_ns) == before
