"""``xpuperf formats --explain FILE [--pattern P]`` and ``--pattern`` on the commands that read
step logs (issue 18, scope 1). Runs :func:`xpuperf.cli.app.main` in-process.

Expected values: tests/data/formats_pattern/README.md (worked out by hand).
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from xpuperf.cli import app as cli_app

DATA = Path(__file__).resolve().parent.parent / "data"
INHOUSE = DATA / "formats_pattern" / "inhouse_trainer.log"
TEE = DATA / "formats_pattern" / "torchrun_tee_colour.log"
PADDLE = next((DATA / "formats_paddle").glob("*.txt"))
NCCL_TIMEOUT = DATA / "events_nccl_timeout" / "torch24_rank_prefixed.log"
DRAFT = (
    "{timestamp} | ep {_} it {step}/{_} | loss {_} | {step_time_ms} ms/it | {samples_per_s} img/s"
)
TOKENS = "step {step}/{_} | loss {_} | {step_time_ms} ms/step | {tokens_per_s} tok/s | mfu {mfu}%"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        cli_app.main([*args])
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def test_unknown_log_gets_nearest_misses_first_lines_and_a_working_draft(capsys) -> None:
    code, out, _ = run(capsys, "formats", "--explain", str(INHOUSE))
    assert code == 0
    assert "no format recognises it" in out
    # megatron's example line shares 'iteration' with line 2 ('5000 iterations per epoch') only
    assert "megatron: nearest is line 2, which has 'iteration' but not 'consumed samples'" in out
    assert "    1: '2026-01-03 09:59:48,112 | INFO | trainer.py:41 | config:" in out
    # six lines share the step-line shape (lines 4–9, one repeated); 'it' grows 120→124 by 1
    assert "draft --pattern from the 6 line(s) shaped like line 4" in out
    assert f"--pattern '{DRAFT}'" in out
    assert "it matches 6 of the first 12 lines" in out


def test_the_draft_pattern_reads_the_hand_checked_steps(capsys) -> None:
    code, out, _ = run(capsys, "formats", "--explain", str(INHOUSE), "--pattern", DRAFT)
    assert code == 0
    assert "matched 6 of 12 lines" in out
    assert "    4: timestamp=2026-01-03 10:00:01,000  step=120  step_time_ms=812.5" in out
    assert "    6: timestamp=2026-01-03 10:00:02,824  step=122  step_time_ms=1,024.0" in out
    # five steps after the repeated line 8; median of 0.64, 0.8, 0.8125, 0.816, 1.024 = 0.8125
    assert "step table: 5 rows, 1 rank(s) (0), steps 120–124" in out
    assert "median step time 0.8125 s" in out
    assert "inhouse_trainer.log:8: skipped 1 row: matching line repeats the step" in out


def test_pattern_on_prefixed_colour_log_names_the_rank_source(capsys) -> None:
    code, out, _ = run(capsys, "formats", "--explain", str(TEE), "--pattern", TOKENS)
    assert code == 0
    assert (
        "    8: step=11  step_time_ms=512.0  tokens_per_s=32,000  mfu=30.8  (prefix rank 1)" in out
    )
    assert "rank from the launcher prefixes" in out
    assert (
        "step table: 6 rows, 2 rank(s) (0, 1), steps 10–12; columns: step_time_s, tokens, mfu"
        in out
    )


def test_pattern_that_matches_nothing_shows_where_it_stops(capsys) -> None:
    bad = DRAFT.replace("ms/it", "ms/step")
    code, out, _ = run(capsys, "formats", "--explain", str(INHOUSE), "--pattern", bad)
    assert code == 0
    assert "matched no line of 12; the closest line was line 4" in out
    assert "the pattern wants 'ms/step' where the line has 'ms/it | 157.5 img/s'" in out


def test_known_format_says_which_sniff_matched_and_the_step_lines(capsys) -> None:
    code, out, _ = run(capsys, "formats", "--explain", str(PADDLE))
    assert code == 0
    assert "read by paddle (its sniff accepts line 1: '[2021/02/23 22:52:57] root INFO:" in out
    assert "4 step line(s) of 5 lines; 1 other lines are noise" in out
    assert "steps 11550–11580" in out
    assert run(capsys, "formats", "--explain", str(PADDLE), "-q")[1] == "paddle\n"
    assert run(capsys, "formats", "--explain", str(INHOUSE), "-q")[1] == "none\n"


def test_gzip_file_is_explained_like_the_plain_one(capsys, tmp_path: Path) -> None:
    gz = tmp_path / "train.log.gz"
    gz.write_bytes(gzip.compress(INHOUSE.read_bytes()))
    code, out, _ = run(capsys, "formats", "--explain", str(gz))
    assert code == 0
    assert f"--pattern '{DRAFT}'" in out


def test_job_output_without_steps_points_to_analyze_checks(capsys) -> None:
    code, out, _ = run(capsys, "formats", "--explain", str(NCCL_TIMEOUT))
    assert code == 0
    assert "job output without step lines (framework warnings/settings: nccl_timeout (4×" in out
    assert "reads it for its NCCL and framework-warning checks" in out
    assert "draft --pattern" not in out  # its only numeric lines give no step time


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--explain", "BIN"), "binary file (NUL bytes in the first 8192 bytes), not a text log"),
        (("--explain", "DIR"), "--explain takes one file"),
        (("--pattern", "it {step} {step_time_s}"), "--pattern goes with --explain FILE"),
        (("--explain", str(INHOUSE), "--pattern", "it {stp}"), "unknown pattern field {stp}"),
    ],
)
def test_errors_are_one_line_exit_2(capsys, tmp_path: Path, args, says: str) -> None:
    (tmp_path / "a.bin").write_bytes(b"\x7fELF\x00\x00\x01" * 100)
    args = [{"BIN": str(tmp_path / "a.bin"), "DIR": str(tmp_path)}.get(a, a) for a in args]
    code, out, err = run(capsys, "formats", *args)
    assert code == 2
    assert says in err
    assert len(err.strip().splitlines()) == 1
    assert out == ""


def test_analyze_pattern_reads_the_log_and_its_rank_from_the_file_name(
    capsys, tmp_path: Path
) -> None:
    log = tmp_path / "rank2.log"
    shutil.copy(INHOUSE, log)
    code, out, err = run(
        capsys, "analyze", str(log), "--pattern", DRAFT, "--warmup", "0", "--json", "-"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["summary"]["ranks"] == 1
    # mean of 0.8125, 0.8, 1.024, 0.64, 0.816 = 4.0925 / 5 = 0.8185 s
    assert doc["summary"]["step_time_s"]["mean"] == pytest.approx(0.8185)
    # wall time from timestamps: 04,280 − 01,000 = 3.28 s plus the first step's 0.8125 s
    # = 4.0925 s for 5 × 128 samples: 640 / 4.0925 = 156.38 samples/s
    assert doc["summary"]["throughput_wallclock_samples_per_s"] == pytest.approx(156.3836, 1e-4)
    assert "repeats the step" in err


def test_analyze_pattern_matching_nothing_exits_2_even_on_job_output(capsys) -> None:
    code, _, err = run(capsys, "analyze", str(NCCL_TIMEOUT), "--pattern", DRAFT, "-q")
    assert code == 2
    assert "the pattern matched no line of the file; the closest line was line 1" in err
    assert "xpuperf formats --explain" in err


def test_format_and_pattern_together_is_a_usage_error(capsys) -> None:
    code, _, err = run(capsys, "analyze", str(INHOUSE), "--format", "csv", "--pattern", DRAFT)
    assert code == 2
    assert "give --format NAME or --pattern '…', not both" in err
