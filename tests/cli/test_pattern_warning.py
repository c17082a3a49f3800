"""``--pattern`` without literal text (``'{step_time_ms}'``) matches the first number of any
line: a one-line warning on stderr says so and how to anchor it; the run goes on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import Run
from xpuperf.cli.options import bare_pattern_warning

WARNING = (
    "warning: --pattern {pat!r} has no literal text, so it matches the first number of any "
    "line (an epoch, a date, a loss): anchor it with the text the log prints around the value, "
    "e.g. 'time {{step_time_ms}}ms' (`xpuperf formats --explain FILE --pattern '…'` shows what "
    "it matches)\n"
)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """40 steps of 120 ms; the first number of each line is the epoch (1)."""
    path = tmp_path / "train.log"
    path.write_text("".join(f"epoch 1 iter {i} loss 2.5 time 120ms\n" for i in range(1, 41)))
    return path


@pytest.mark.parametrize("pattern", ["{step_time_ms}", "{_} {step_time_ms}"])
def test_pattern_without_literal_text_warns_and_runs(xp: Run, log: Path, pattern: str) -> None:
    code, out, err = xp("analyze", str(log), "--pattern", pattern, "--json", "-")
    assert code == 0
    assert err == WARNING.format(pat=pattern)
    json.loads(out)  # the analysis still ran (on what the pattern matched)


def test_anchored_pattern_reads_the_value_without_warning(xp: Run, log: Path) -> None:
    code, out, err = xp("analyze", str(log), "--pattern", "iter {step} loss {_} time "
                         "{step_time_ms}ms", "--json", "-", "--warmup", "0")  # fmt: skip
    assert code == 0
    assert "warning" not in err
    assert json.loads(out)["summary"]["step_time_s"]["median"] == pytest.approx(0.120)


def test_explain_warns_too(xp: Run, log: Path) -> None:
    code, _, err = xp("formats", "--explain", str(log), "--pattern", "{step_time_ms}")
    assert code == 0
    assert err == WARNING.format(pat="{step_time_ms}")


def test_fields_and_blanks_alone_warn_and_any_literal_does_not() -> None:
    want = WARNING.format(pat="{step} {step_time_ms}").removeprefix("warning: ").rstrip("\n")
    assert bare_pattern_warning("{step} {step_time_ms}") == want
    assert bare_pattern_warning("{step}: {step_time_ms}") is None  # ':' anchors it
    assert bare_pattern_warning("{step_time_ms}ms") is None
