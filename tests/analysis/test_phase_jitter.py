"""XP210: a phase whose time spreads while the step time is flat (issue 18 §2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from xpuperf.analysis.analyze import analyze
from xpuperf.analysis.phase_jitter import phase_jitter
from xpuperf.analysis.results import WarmupResult
from xpuperf.findings import CheckStatus

STEPS = 61
ALL = WarmupResult(0, 0, "user")


def _table(step_time: float | None, ranks: int = 4, steps: int = STEPS) -> pd.DataFrame:
    """Each rank's comm_s takes the values of linspace(0.282, 0.487, steps) in a shuffled order;
    forward_s + comm_s = 0.65 s, data_s 0.010–0.012 s; step time 0.700 s flat, or
    ``step_time`` + comm_s when given (the step moves with the phase)."""
    rng = np.random.default_rng(3)
    parts = []
    for r in range(ranks):
        comm = rng.permutation(np.linspace(0.282, 0.487, steps))
        st = np.full(steps, 0.700) if step_time is None else step_time + comm
        parts.append(
            pd.DataFrame(
                {
                    "rank": r,
                    "step": np.arange(steps),
                    "step_time_s": st,
                    "data_s": 0.010 + 0.002 * (np.arange(steps) % 2),
                    "forward_s": 0.65 - comm,
                    "comm_s": comm,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def test_allreduce_spread_under_flat_step_is_reported() -> None:
    findings, check = phase_jitter(_table(None), ALL)
    # p5 of linspace(a, b, 61) is a + 0.05 (b − a) exactly (index 3 of 60): 0.282 + 0.01025
    by_phase = {f.data["phase"]: f for f in findings}
    assert set(by_phase) == {"comm_s", "forward_s"}  # forward_s = 0.65 − comm_s moves too
    f = by_phase["comm_s"]
    assert f.code == "XP210"
    assert f.data["p5_s"] == pytest.approx(0.29225)
    assert f.data["p95_s"] == pytest.approx(0.47675)
    assert f.data["spread_s"] == pytest.approx(0.1845)
    assert f.data["spread_fraction_of_step"] == pytest.approx(0.1845 / 0.700)  # 26.4 % > 10 %
    assert f.data["step_spread_s"] == pytest.approx(0.0)
    assert "0.292–0.477 s" in f.message
    assert "26.4%" in f.message
    assert "threshold 10%" in f.message
    assert "waiting for the slowest rank" in f.message
    assert check is not None
    assert check.status is CheckStatus.PROBLEM
    assert check.codes == ("XP210",)


def test_phase_that_moves_the_step_is_not_reported() -> None:
    # step = 0.2 + comm: the step spreads as much as the phase (ratio 1 < 2): ordinary jitter
    findings, check = phase_jitter(_table(0.2), ALL)
    assert findings == []
    assert check is not None
    assert check.status is CheckStatus.CLEAN
    assert check.evidence == "data_s, forward_s, comm_s over 61 steady step(s) × 4 rank(s)"


def test_small_phase_spread_is_not_reported() -> None:
    t = _table(None)
    t["comm_s"] = 0.300 + 0.001 * (t["step"] % 7)  # spread 0.006 s < 10 % of 0.700 s
    t["forward_s"] = 0.35
    assert phase_jitter(t, ALL)[0] == []


def test_few_steps_and_no_phases() -> None:
    findings, check = phase_jitter(_table(None, steps=15), ALL)
    assert findings == []
    assert check is not None
    assert check.status is CheckStatus.NOT_CHECKED
    assert "15 steady step(s)" in check.evidence
    bare = _table(None)[["rank", "step", "step_time_s"]]
    assert phase_jitter(bare, ALL) == ([], None)
    # the warm-up rows are left out: 61 − 50 = 11 steady steps
    assert phase_jitter(_table(None), WarmupResult(50, 50, "user"))[1].status is (
        CheckStatus.NOT_CHECKED
    )


def test_analyze_reports_it_and_lists_the_check() -> None:
    result = analyze(_table(None), warmup=0)
    codes = [f.code for f in result.findings]
    assert codes.count("XP210") == 2
    (check,) = [c for c in result.checks if c.name == "steps.phase_jitter"]
    assert check.status is CheckStatus.PROBLEM
    plain = analyze(_table(None)[["rank", "step", "step_time_s"]], warmup=0)
    assert not [c for c in plain.checks if c.name == "steps.phase_jitter"]
