"""Output files: atomic, never over an input, never replacing a device, symlink or directory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from xpuperf.errors import UsageError
from xpuperf.report.output import check_not_input, write_text_atomic


def test_new_file_gets_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "a.json", "{}\n")
    finally:
        os.umask(old)
    assert (tmp_path / "a.json").read_text() == "{}\n"
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]  # no temp file left


def test_existing_file_keeps_mode(tmp_path: Path) -> None:
    f = tmp_path / "a.json"
    f.write_text("old")
    f.chmod(0o640)
    write_text_atomic(f, "new")
    assert f.read_text() == "new"
    assert stat.S_IMODE(f.stat().st_mode) == 0o640


def test_symlink_is_followed_not_replaced(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_text_atomic(link, "new")
    assert link.is_symlink()
    assert real.read_text() == "new"


def test_fifo_is_written_through_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    r = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_text_atomic(fifo, "data")
        assert os.read(r, 100) == b"data"
    finally:
        os.close(r)
    assert stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.parametrize("bad", ["", "missing_dir/x.json"])
def test_bad_paths_are_usage_errors(tmp_path: Path, bad: str) -> None:
    with pytest.raises(UsageError):
        write_text_atomic(str(tmp_path / bad) if bad else "", "x")


def test_directory_target_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="directory"):
        write_text_atomic(tmp_path, "x")


def test_output_equal_to_input_refused(tmp_path: Path) -> None:
    f = tmp_path / "rank0.csv"
    f.write_text("step,step_time_s\n1,0.5\n")
    with pytest.raises(UsageError, match="refusing"):
        check_not_input(tmp_path / "." / "rank0.csv", [f])


def test_step_summary_never_lands_on_an_input_or_another_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a break-it pass: GITHUB_STEP_SUMMARY naming a log appended Markdown to it (the next
    # analyze skipped 21 rows); naming the --json output made the JSON invalid; '-' made a file
    from xpuperf.report.output import write_markdown_outputs

    log = tmp_path / "rank0.csv"
    log.write_text("step,step_time_s\n1,0.1\n")
    out_json = tmp_path / "out.json"
    out_json.write_text("{}")
    for target, protect in ((log, [str(tmp_path)]), (out_json, [str(out_json)])):
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
        before = target.read_text()
        warning = write_markdown_outputs("## summary\n", None, protect)
        assert warning is not None
        assert "is an input or output of this run" in warning
        assert target.read_text() == before
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "-")
    assert "not a file" in (write_markdown_outputs("## s\n", None, []) or "")
    assert not (tmp_path / "-").exists()
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert write_markdown_outputs("## s\n", None, [str(log)]) is None
    assert summary.read_text() == "## s\n"
