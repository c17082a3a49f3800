"""Time outside the logged steps (XP211) is not called jitter: hand-worked samples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from xpuperf.analysis import analyze
from xpuperf.report.figures import summary_rows


def _gapped(n: int = 60, step_s: float = 0.5, every_s: float = 0.6) -> pd.DataFrame:
    """``n`` steps of ``step_s`` each, their end stamps ``every_s`` apart (the QA sample)."""
    return pd.DataFrame(
        {
            "rank": np.zeros(n, dtype="int32"),
            "step": np.arange(n),
            "step_time_s": step_s,
            "samples": 32.0,
            "t_end_s": every_s * np.arange(1, n + 1),
        }
    )


def test_time_between_flat_steps_is_xp211_not_jitter() -> None:
    res = analyze(_gapped(), warmup=0)
    s = res.summary
    # by hand: wall = 59 × 0.6 + 0.5 = 35.9 s; Σ steps = 60 × 0.5 = 30 s; median 0.5 s
    assert s.wallclock_source == "timestamps"
    assert s.wall_time_s == pytest.approx(35.9)
    assert s.throughput_wallclock_samples_per_s == pytest.approx(60 * 32 / 35.9)  # headline kept
    assert s.jitter_cost_s == pytest.approx(0.0)  # every logged step is at the median
    assert s.outside_steps_s == pytest.approx(5.9)
    assert s.outside_steps_fraction == pytest.approx(5.9 / 35.9)  # 16.4 %
    codes = [f.code for f in res.findings]
    assert "XP211" in codes
    assert "XP206" not in codes  # no "flat FPS line … nothing to do"
    f = next(f for f in res.findings if f.code == "XP211")
    assert f.severity.value == "warning"
    assert "5.9 s = 16.4%" in f.message
    assert "threshold 5%" in f.message
    assert "evaluation, checkpointing" in f.message
    check = next(c for c in res.checks if c.name == "steps.between_steps")
    assert check.status.value == "problem"
    assert check.codes == ("XP211",)
    rows = dict(summary_rows(res))
    assert rows["jitter & spikes"].startswith("cost 0.0% of wall time (0.0 s of 35.9 s)")
    assert rows["outside the steps"].startswith("16.4% of wall time (5.9 s of 35.9 s)")


def test_small_gap_is_clean_and_keeps_the_flat_line() -> None:
    # 200 steps of 0.5 s stamped 0.51 s apart: 199 × 0.51 + 0.5 = 101.99 s, 100 s of steps:
    # 1.99 s = 1.95 % outside, under the 5 % threshold
    res = analyze(_gapped(200, 0.5, 0.51), warmup=0)
    assert res.summary.outside_steps_s == pytest.approx(1.99)
    codes = [f.code for f in res.findings]
    assert "XP211" not in codes
    assert "XP206" in codes
    check = next(c for c in res.checks if c.name == "steps.between_steps")
    assert check.status.value == "clean"


def test_no_timestamps_no_outside_figure() -> None:
    res = analyze(_gapped().drop(columns="t_end_s"), warmup=0)
    assert res.summary.outside_steps_s is None
    assert all(c.name != "steps.between_steps" for c in res.checks)
    assert "outside the steps" not in dict(summary_rows(res))


def test_stamps_shorter_than_the_steps_show_no_negative_share() -> None:
    # 200 steps of 0.5 s stamped 0.499 s apart: 199 × 0.499 + 0.5 = 99.801 s < 100 s of steps
    res = analyze(_gapped(200, 0.5, 0.499), warmup=0)
    assert res.summary.outside_steps_s == pytest.approx(-0.199)
    assert dict(summary_rows(res))["outside the steps"].startswith(
        "none: the timestamps span 0.2 s less than Σ step times"
    )
    # the check line says the same (it printed "= -0.2 s (-0.2% of wall time …)")
    (check,) = [c for c in res.checks if c.name == "steps.between_steps"]
    assert check.status.value == "clean"
    assert "none outside the steps (the stamps span 0.2 s less" in check.evidence
    assert "-0." not in check.evidence
