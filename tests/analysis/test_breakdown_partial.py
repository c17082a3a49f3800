"""Breakdown when phase times are logged on some steps only (Megatron prints its timers on a few
iterations): shares come from the rows where the phase is known, never with the others as 0."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xpuperf.analysis.breakdown import decompose
from xpuperf.analysis.grid import grid_of
from xpuperf.findings import Severity
from xpuperf.readers import read_logs

DATA = Path(__file__).parent.parent / "data" / "breakdown_megatron_partial_timers"


def one_rank_one_timer() -> pd.DataFrame:
    """1 rank × 30 steps of 1.5 s; compute_s = 1.2 s on step 15 only."""
    compute = np.full(30, np.nan)
    compute[15] = 1.2
    return pd.DataFrame(
        {"rank": 0, "step": np.arange(30), "step_time_s": 1.5, "compute_s": compute}
    )


@pytest.mark.parametrize("path", ["frame", "grid"])
def test_one_timer_row_gives_its_share_and_is_weak(path):
    df = one_rank_one_timer()
    res, findings = decompose(df if path == "frame" else grid_of(df))
    # by hand: 1.2 / 1.5 = 0.8 compute, 0.3 / 1.5 = 0.2 other, from the one row with compute_s;
    # before the fix the 29 rows without it counted as 0 compute: 1.2 / 45 = 2.7 %
    assert res.compute_fraction == pytest.approx(0.8)
    assert res.other_fraction == pytest.approx(0.2)
    assert res.comm_fraction is None
    assert res.data_fraction is None
    assert res.n_steps == 30
    assert res.phase_steps == {"compute_s": 1}
    # floor: max(3, ceil(5 % of 30 = 1.5)) = 3 steps; 1 < 3 → weak
    assert res.min_phase_steps == 3
    assert res.weak
    row = res.per_rank.iloc[0]
    assert row["compute_s"] == pytest.approx(1.2)
    assert row["other_s"] == pytest.approx(0.3)
    (f,) = findings
    assert f.code == "XP303"
    assert f.severity is Severity.INFO
    assert "20.0% of step time" in f.message
    assert "from 1 of 30 steps with compute_s logged" in f.message
    assert "weak evidence" in f.message
    assert "threshold 10%" in f.message
    assert f.data["weak"] is True
    assert f.data["phase_steps"] == 1


@pytest.mark.parametrize("path", ["frame", "grid"])
def test_two_ranks_timers_every_fifth_step(path):
    # 2 ranks × 20 steps of 1.0 s; comm 0.1 s every step; compute on steps 0, 5, 10, 15 only:
    # rank 0 0.6 s, rank 1 0.7 s there; elsewhere NaN
    steps = np.arange(20)
    rows = []
    for r, c in ((0, 0.6), (1, 0.7)):
        comp = np.where(steps % 5 == 0, c, np.nan)
        rows.append(
            pd.DataFrame(
                {"rank": r, "step": steps, "step_time_s": 1.0, "compute_s": comp, "comm_s": 0.1}
            )
        )
    df = pd.concat(rows, ignore_index=True)
    res, findings = decompose(df if path == "frame" else grid_of(df))
    # by hand over the 8 timer rows: compute (4·0.6 + 4·0.7) / 8 = 0.65; other 1 − 0.65 − 0.1
    assert res.compute_fraction == pytest.approx(0.65)
    assert res.other_fraction == pytest.approx(0.25)
    assert res.comm_fraction == pytest.approx(0.1)  # every row
    assert res.phase_steps == {"compute_s": 4, "comm_s": 20}
    assert not res.weak  # 4 ≥ max(3, ceil(0.05·20) = 1)
    pr = res.per_rank.set_index("rank")
    assert pr.loc[1, "compute_s"] == pytest.approx(0.7)  # median of the known rows, not 0
    assert pr.loc[1, "other_s"] == pytest.approx(0.2)
    by_code = {f.code: f for f in findings}
    assert by_code["XP303"].severity is Severity.WARNING  # 25 % > 10 %, from 4 steps: a verdict
    assert "from 4 of 20 steps with compute_s logged" in by_code["XP303"].message
    assert "weak" not in by_code["XP303"].message


def test_every_step_logged_is_neither_partial_nor_weak():
    df = one_rank_one_timer().assign(compute_s=1.2)
    res, findings = decompose(df)
    assert res.phase_steps == {"compute_s": 30}
    assert not res.weak
    assert "steps with" not in findings[0].message
    assert findings[0].severity is Severity.WARNING


def test_megatron_log_with_one_timer_line():
    """Hand-written Megatron log: 12 iterations at 1200.0 ms, one timer line after iteration 60
    (forward-compute 400 + backward-compute 700 + optimizer 20 = 1120 ms, the reader's
    compute_s)."""
    table = read_logs([DATA / "train.log"]).table
    for src in (table, grid_of(table)):
        res, findings = decompose(src)
        assert res.compute_fraction == pytest.approx(1120 / 1200)  # 93.3 %, not 1120/14400
        assert res.other_fraction == pytest.approx(80 / 1200)  # 6.7 % < 10 %: no XP303
        assert res.weak
        assert res.phase_steps == {"compute_s": 1}
        assert res.n_steps == 12
        assert findings == []
