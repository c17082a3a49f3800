"""Step time from timestamp differences: the first row of each rank has no predecessor.

Its drop is how such a log is read (corpus 09, 30, 40: MLPerf, torchtitan, ms-swift), not a
gap in the log: it is a note, so the log-completeness check stays clean (no XP401); a row that
really is bad still makes it a problem.
"""

from __future__ import annotations

import pytest

from xpuperf.findings import CheckStatus
from xpuperf.pipeline import analyze_logs
from xpuperf.readers import read_logs

# 2 ranks × 4 rows, timestamps 1.0 s apart: 3 step times of 1.0 s per rank
ROWS = "rank,step,timestamp\n" + "".join(
    f"{r},{s},{100.0 + s + 0.001 * r}\n" for r in (0, 1) for s in (1, 2, 3, 4)
)


def _completeness(result):
    return next(c for c in result.checks if c.name == "steps.completeness")


def test_the_first_row_of_each_rank_is_a_note_not_a_problem(tmp_path) -> None:
    log = tmp_path / "steps.csv"
    log.write_text(ROWS, encoding="utf-8")
    run = read_logs([log])
    assert run.table["step"].tolist() == [2, 3, 4, 2, 3, 4]
    assert run.table["step_time_s"].tolist() == pytest.approx([1.0] * 6)
    (said,) = run.warnings  # still said, on stderr and in the JSON …
    assert "skipped 2 rows" in said
    assert "first row of each rank has no step time" in said
    assert run.notes == [said]
    assert run.problems() == []  # … but not as a problem
    r = analyze_logs([log])
    assert "XP401" not in {f.code for f in r.findings}
    assert _completeness(r).status is CheckStatus.CLEAN
    assert said in r.read_warnings


def test_a_bad_row_besides_is_still_a_problem(tmp_path) -> None:
    log = tmp_path / "steps.csv"
    log.write_text(ROWS + "1,5,not-a-time\n", encoding="utf-8")
    run = read_logs([log])
    assert len(run.problems()) == 1
    assert "first row" not in run.problems()[0]
    r = analyze_logs([log])
    (f,) = [f for f in r.findings if f.code == "XP401"]
    assert f.message.startswith("1 reader warning(s)")
    assert _completeness(r).status is CheckStatus.PROBLEM
