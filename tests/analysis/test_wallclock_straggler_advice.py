"""Exposed communication that is mostly waiting for a straggler: 'fix the straggler first'."""

from __future__ import annotations

import pandas as pd
import pytest

from xpuperf.analysis import analyze
from xpuperf.analysis.breakdown import waiting_share
from xpuperf.analysis.results import Straggler, StragglerResult
from xpuperf.synth import Scenario, generate


def _result(stragglers: list[Straggler], sync_frac: float) -> StragglerResult:
    return StragglerResult("compute_s", 0.05, stragglers, pd.DataFrame(), 0.0, sync_frac, 100)


DET = Straggler("deterministic", 5, "n0", [5], 0.25, 0.12, 100)


@pytest.mark.parametrize(
    ("stragglers", "sync", "comm", "expected"),
    [
        # 0.12 (rank 5's cost) + 0.01 (healthy ranks' wait) = 0.13 ≥ half of 0.20
        ([DET], 0.01, 0.20, (0.13, "rank 5 (XP101)")),
        ([DET], 0.01, 0.30, None),  # 0.13 < 0.15: mostly the collectives themselves
        ([DET], 0.30, 0.20, (0.20, "rank 5 (XP101)")),  # capped at the comm share
        ([], 0.20, 0.20, None),  # no straggler found: no attribution
        ([DET], 0.01, None, None),  # comm not logged
        # random only: no deterministic cost; the wait is the sync cost 0.08 ≥ half of 0.12
        ([Straggler("random", None, None, [], 0.1, 0.08, 100)], 0.08, 0.12,
         (0.08, "random stragglers (XP103)")),
    ],
)  # fmt: skip
def test_waiting_share(stragglers, sync, comm, expected) -> None:
    got = waiting_share(_result(stragglers, sync), comm)
    if expected is None:
        assert got is None
        return
    assert got[0] == pytest.approx(expected[0])
    assert got[1] == expected[1]


def test_straggler_run_says_fix_the_straggler_first() -> None:
    r = analyze(generate(Scenario(ranks=8, steps=200, seed=4, slow_ranks={5: 0.25})))
    xp101 = next(f for f in r.findings if f.code == "XP101")
    xp301 = next(f for f in r.findings if f.code == "XP301")
    assert "Fix the straggler first" in xp301.message
    assert "waiting for rank 5 (XP101)" in xp301.message
    assert "overlap the allreduce" not in xp301.message
    # the wait is rank 5's cost plus the healthy ranks' sync cost, never above the comm share
    wait = xp101.data["cost_fraction"] + r.stragglers.sync_cost_fraction
    assert xp301.data["waiting_fraction"] == pytest.approx(min(wait, xp301.data["value"]))


def test_slow_network_without_straggler_keeps_the_comm_advice() -> None:
    r = analyze(generate(Scenario(ranks=8, steps=200, seed=4, allreduce_s=0.08)))
    assert not r.stragglers.stragglers
    xp301 = next(f for f in r.findings if f.code == "XP301")
    assert "overlap the allreduce" in xp301.message
    assert "straggler first" not in xp301.message


def test_speedup_advice_names_the_straggler() -> None:
    run = generate(Scenario(ranks=8, steps=200, seed=4, slow_ranks={5: 0.25}))
    one = generate(Scenario(ranks=1, steps=200, seed=5))
    r = analyze(run, baseline=one)
    xp304 = next(f for f in r.findings if f.code == "XP304")
    assert "fix the straggler first: rank 5 (XP101)" in xp304.message
