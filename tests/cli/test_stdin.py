"""`xpuperf analyze -`: a log piped in on standard input."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from xpuperf.cli.stdin import with_stdin
from xpuperf.errors import UsageError

CSV = "step,rank,step_time_ms,samples\n" + "".join(
    f"{s},{r},{100 + 10 * r},32\n" for r in (0, 1) for s in range(1, 31)
)


def test_piped_csv_is_analysed() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "xpuperf", "analyze", "-", "--json", "-", "--warmup", "0"],
        input=CSV.encode(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["summary"]["ranks"] == 2
    # every step waits for rank 1 (110 ms): job step time = median over ranks 105 ms per step
    assert doc["summary"]["step_time_s"]["median"] == pytest.approx(0.105)


def test_empty_and_repeated_stdin_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="empty"):
        with_stdin(["-"], io.BytesIO(b""))
    with pytest.raises(UsageError, match="more than once"):
        with_stdin(["-", "-"], io.BytesIO(b"x"))
    assert with_stdin(["a.csv"]) == ["a.csv"]


def test_stdin_copy_keeps_the_bytes() -> None:
    (path,) = with_stdin(["-"], io.BytesIO(CSV.encode()))
    assert Path(path).read_text(encoding="utf-8") == CSV


def test_devnull_stdin_is_an_empty_stream() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "xpuperf", "analyze", "-"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    # /dev/null is not a terminal: it reads as an empty stream
    assert p.returncode == 2
    assert "standard input was empty" in p.stderr.decode()


def test_nul_and_endless_stdin_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # `xpuperf analyze - < /dev/zero` never ended (issue 21 QA)
    import xpuperf.cli.stdin as stdin

    with pytest.raises(UsageError, match="NUL bytes only"):
        with_stdin(["-"], io.BytesIO(b"\0" * 5000))
    monkeypatch.setattr(stdin, "MAX_STDIN_BYTES", 10_000)
    monkeypatch.setattr(stdin, "BLOCK", 4096)
    with pytest.raises(UsageError, match="on standard input: save the log"):
        with_stdin(["-"], io.BytesIO(b"step,step_time_s\n" + b"1,0.1\n" * 5000))
