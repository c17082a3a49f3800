"""A cut in the log (an excerpt) is not filled with median steps: hand-worked samples.

QA: the maskrcnn corpus log (07) holds iterations 50–1,250 every 50 and then 17,150; the row at
17,150 was counted as 500 iterations (10 × the interval) and the wall time 364.7 s was made up.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from xpuperf.analysis import analyze
from xpuperf.analysis.series import log_cuts
from xpuperf.report.figures import summary_rows

STEPS = [*range(50, 1251, 50), 17150]  # 25 rows every 50, then a cut


def _table(t_end: bool = False) -> pd.DataFrame:
    n = len(STEPS)
    frame = pd.DataFrame(
        {
            "rank": np.zeros(n, dtype="int32"),
            "step": STEPS,
            "step_time_s": [0.2] * 25 + [0.3],  # a window mean per iteration
            "samples": 8.0,
        }
    )
    if t_end:
        # every window of 50 × 0.2 s = 10 s ends 10 s after the one before; the run goes on
        # unlogged for 5,000 s, and the last window (50 × 0.3 s = 15 s) ends after that
        frame["t_end_s"] = [1000.0 + 10 * i for i in range(1, 26)] + [1250.0 + 5000 + 15]
    return frame


def test_cut_counts_only_the_logged_windows() -> None:
    s = analyze(_table(), warmup=0).summary
    # by hand: 26 rows × 50 iterations = 1,300 (not 1,250 + 500); wall = 25 × 50 × 0.2 +
    # 50 × 0.3 = 250 + 15 = 265 s; samples 1,300 × 8 = 10,400
    assert s.iterations == 1300
    assert s.wall_time_s == pytest.approx(265.0)
    assert s.throughput_wallclock_samples_per_s == pytest.approx(10400 / 265)
    assert s.log_cuts == [(1251, 17100)]
    rows = dict(summary_rows(analyze(_table(), warmup=0)))
    assert rows["not in the log"] == (
        "iterations 1,251–17,100 (a cut in the step numbers): the wall clock counts the 1,300 "
        "logged iterations only"
    )


def test_timestamps_do_not_span_the_cut() -> None:
    s = analyze(_table(t_end=True), warmup=0).summary
    # by hand: stamps 1010 … 1250 span 240 s + the first window 10 s = 250 s; across the cut
    # the last row's own 15 s, not the 5,015 s between the stamps: 265 s, nothing outside
    assert s.wallclock_source == "timestamps"
    assert s.wall_time_s == pytest.approx(265.0)
    assert s.outside_steps_s == pytest.approx(0.0)
    assert s.iterations == 1300


def test_no_cut_no_note() -> None:
    assert log_cuts(np.arange(50, 1251, 50)) == []
    frame = _table().iloc[:25]
    res = analyze(frame, warmup=0)
    assert res.summary.log_cuts == []
    assert "not in the log" not in dict(summary_rows(res))


def test_cut_after_the_warmup_row() -> None:
    # the first steady row far beyond the last warm-up row: iterations 11–990 are not logged
    assert log_cuts(np.array([1000, 1010, 1020]), prev_step=10) == [(11, 990)]
