"""Run ``xpuperf`` in-process: ``xp("analyze", LOG)`` → (exit code, stdout, stderr)."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable

import pytest

from xpuperf.cli import app as cli_app

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def xp(capsys: pytest.CaptureFixture[str]) -> Run:
    """Run :func:`xpuperf.cli.app.main` with the arguments; return (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as exc:
            cli_app.main([str(a) for a in args])
        out, err = capsys.readouterr()
        return int(exc.value.code), out, err

    return run


def pipe(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """Standard input holding ``text`` (not a terminal), as ``… | xpuperf`` gives it."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
