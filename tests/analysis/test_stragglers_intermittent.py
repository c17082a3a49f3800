"""Intermittent straggler: one rank stalls on a few steps and owes most of the sync cost (XP101,
kind "intermittent"), not "random stragglers" (XP103)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from xpuperf.analysis.breakdown import decompose, waiting_share
from xpuperf.analysis.stragglers import find_stragglers

COMPUTE, DATA, COMM, STALL = 0.200, 0.005, 0.040, 0.600


def table(stalls: dict[int, list[int]], steps: int = 40, ranks: int = 4) -> pd.DataFrame:
    """ranks × steps, no noise: work = compute + data; a stalled rank's data wait grows by
    STALL at its steps and every other rank waits that long more in the allreduce (comm)."""
    rows = []
    for s in range(steps):
        late = {r for r, at in stalls.items() if s in at}
        for r in range(ranks):
            data = DATA + (STALL if r in late else 0.0)
            comm = COMM + (STALL if late and r not in late else 0.0)
            t = COMPUTE + data + comm
            rows.append((s, r, t, COMPUTE, comm, data))
    cols = ["step", "rank", "step_time_s", "compute_s", "comm_s", "data_s"]
    return pd.DataFrame(rows, columns=cols).sort_values(["rank", "step"], ignore_index=True)


def noisy(df: pd.DataFrame, seed: int = 7) -> pd.DataFrame:
    """1 % seeded noise on compute (no ties: the slowest rank of a quiet step is random)."""
    rng = np.random.default_rng(seed)
    df["compute_s"] *= 1 + 0.01 * rng.standard_normal(len(df))
    df["step_time_s"] = df[["compute_s", "comm_s", "data_s"]].sum(axis=1)
    return df


@pytest.mark.parametrize("path", ["grid", "frame"])
def test_one_rank_stalling_every_ten_steps(path):
    df = table({1: [5, 15, 25, 35]})
    if path == "frame":  # unsorted rows: no grid, the DataFrame path
        df = df.sample(frac=1.0, random_state=0, ignore_index=True)
    res, findings = find_stragglers(df)
    (s,) = res.stragglers
    assert (s.kind, s.rank, s.ranks, s.slow_phase) == ("intermittent", 1, [1], "data_s")
    # by hand: gap = STALL on 4 of 40 steps, 0 elsewhere; Σ step time = 36·0.245 + 4·0.845
    total = 36 * 0.245 + 4 * 0.845
    assert s.cost_fraction == pytest.approx(4 * STALL / total)  # 19.7 %
    assert res.sync_cost_fraction == pytest.approx((4 * STALL / 40) / (total / 40))
    assert s.slowdown == pytest.approx((COMPUTE + DATA + STALL) / (COMPUTE + DATA) - 1)  # 293 %
    (f,) = [f for f in findings if f.code.startswith("XP10")]
    assert f.code == "XP101"
    assert "rank 1 is an intermittent straggler" in f.message
    assert "steps 5, 15, 25, 35 (every 10 steps)" in f.message
    assert "owes 100% of the sync cost" in f.message
    assert "threshold 50%" in f.message
    assert "data wait: +0.600 s" in f.message
    assert "data loader" in f.message  # remedy of the slow phase
    assert f.data["steps"] == [5, 15, 25, 35]
    assert f.data["owed_share"] == pytest.approx(1.0)
    # the breakdown's "fix the straggler first" names the rank
    # comm share by hand: (36·4·0.04 + 4·(3·0.64 + 0.04)) / (4·total) = 27.9 %; the wait
    # (19.7 %) is more than half of it
    wait = waiting_share(res, 0.279)
    assert wait is not None
    assert wait[1] == "rank 1 (XP101, intermittent)"
    _, bd = decompose(df, stragglers=res)
    assert "waiting for rank 1 (XP101, intermittent)" in bd[0].message


def test_two_ranks_sharing_the_stalls_stay_random():
    # ranks 1 and 2 stall twice each: each owes 50 %, not > 50 % → random stragglers (XP103)
    res, findings = find_stragglers(noisy(table({1: [5, 25], 2: [15, 35]})))
    assert [s.kind for s in res.stragglers] == ["random"]
    assert "XP103" in [f.code for f in findings]


def test_one_stall_is_not_called_intermittent():
    # a single stalled step is a one-off, not a recurring straggler (≥ 2 slow steps needed)
    res, _ = find_stragglers(table({1: [5]}))
    assert "intermittent" not in [s.kind for s in res.stragglers]


def test_noisy_run_still_names_the_rank():
    res, findings = find_stragglers(noisy(table({2: [10, 30, 50, 70, 90]}, steps=100)))
    (s,) = res.stragglers
    assert (s.kind, s.rank) == ("intermittent", 2)
    f = next(f for f in findings if f.code == "XP101")
    assert f.data["owed_share"] > 0.9  # the noise owes ≈ 1·σ·0.2 s per step vs 0.6 s stalls
    assert f.data["steps"] == [10, 30, 50, 70, 90]
