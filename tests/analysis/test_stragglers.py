"""Straggler analysis against planted truth from the seeded synthetic generator.

Expected values are worked out from the generator's model (docs in :mod:`xpuperf.synth`) or
recomputed here with pandas pivots, independently of the implementation's numpy code.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from xpuperf import synth
from xpuperf.analysis.stragglers import PER_RANK_COLUMNS, find_stragglers

# Model defaults of synth.Scenario: own work per step = data + compute + other.
DATA, COMPUTE, OTHER = 0.010, 0.200, 0.005
WORK = DATA + COMPUTE + OTHER


def run(**kw) -> pd.DataFrame:
    """Steady steps only (no warm-up planted)."""
    return synth.generate(synth.Scenario(warmup_steps=0, **kw))


def pivot(df: pd.DataFrame, values: pd.Series) -> pd.DataFrame:
    """rank × step matrix (pandas, independent of the implementation's indexing)."""
    return df.assign(v=values).pivot(index="rank", columns="step", values="v")


def codes(findings) -> list[str]:
    return [f.code for f in findings]


def test_planted_compute_straggler_is_the_only_one_found():
    res, findings = find_stragglers(run(ranks=8, slow_ranks={3: 0.20}))
    planted = (DATA + COMPUTE * 1.20 + OTHER) / WORK - 1.0  # median work ratio, 18.6 %
    assert len(res.stragglers) == 1
    s = res.stragglers[0]
    assert (s.kind, s.rank, s.node, s.ranks) == ("deterministic", 3, "node00", [3])
    assert s.slowdown == pytest.approx(planted, abs=0.02)
    assert s.slowdown_ci is not None
    assert s.slowdown_ci[0] <= planted <= s.slowdown_ci[1]
    assert s.slowdown_ci[1] - s.slowdown_ci[0] < 0.02
    assert s.slow_phase == "compute_s"
    assert s.p_value < 0.05 / 8
    assert s.n_steps == res.n_steps == 200
    assert s.slowdown_vs_best >= s.slowdown
    assert res.work_source == "step_time-comm"
    assert codes(findings) == ["XP101"]
    msg = findings[0].message
    assert "rank 3 (node00)" in msg
    assert "the other 7 ranks wait for it" in msg
    assert "nvidia-smi" in msg


def test_without_node_column_the_straggler_has_no_node():
    res, _ = find_stragglers(run(ranks=8, slow_ranks={3: 0.20}).drop(columns=["node"]))
    assert [(s.rank, s.node) for s in res.stragglers] == [(3, None)]


def test_per_rank_table_contract_and_values():
    df = run(ranks=8, slow_ranks={3: 0.20})
    res, _ = find_stragglers(df)
    pr = res.per_rank
    assert list(pr.columns) == PER_RANK_COLUMNS
    assert pr["rank"].tolist() == list(range(8))
    work = pivot(df, df["step_time_s"] - df["comm_s"])
    med = work.median(axis=1)
    np.testing.assert_allclose(pr["median_work_s"], med.to_numpy())
    np.testing.assert_allclose(pr["score"], med.median() / med.to_numpy())
    np.testing.assert_allclose(pr["score_vs_best"], med.min() / med.to_numpy())
    assert pr.loc[3, "score"] == pytest.approx(WORK / (DATA + 1.2 * COMPUTE + OTHER), abs=0.02)
    assert pr.loc[3, "slowdown"] == pytest.approx(res.stragglers[0].slowdown)
    assert (pr.drop(index=3)["slowdown"].abs() < 0.02).all()
    # culprit vs victim: the culprit waits least, the others wait for it
    comm = pivot(df, df["comm_s"]).median(axis=1)
    np.testing.assert_allclose(pr["median_comm_s"], comm.to_numpy())
    assert pr.loc[3, "median_comm_s"] < pr.drop(index=3)["median_comm_s"].min()
    # slowest share: among the healthy ranks, sums to 1; NaN for the deterministic straggler
    assert np.isnan(pr.loc[3, "slowest_share"])
    assert pr["slowest_share"].sum() == pytest.approx(1.0)


def test_cost_matches_independent_what_if():
    df = run(ranks=8, slow_ranks={3: 0.20})
    res, _ = find_stragglers(df)
    work = pivot(df, df["step_time_s"] - df["comm_s"]).to_numpy()
    step = pivot(df, df["step_time_s"]).median(axis=0).to_numpy()
    healthy = np.delete(work, 3, axis=0)
    what_if = work.copy()
    what_if[3] = np.median(healthy, axis=0)
    expected = (work.max(axis=0) - what_if.max(axis=0)).sum() / step.sum()
    assert res.stragglers[0].cost_fraction == pytest.approx(expected, rel=1e-9)
    # and from the model: the step shrinks by ≈ straggler excess over the max of the others
    assert expected == pytest.approx(0.04 / (WORK * 1.186 + 0.03), abs=0.02)


def test_data_straggler_is_blamed_on_data():
    res, findings = find_stragglers(run(ranks=8, slow_data_ranks={5: 3.0}))
    assert [(s.rank, s.slow_phase) for s in res.stragglers] == [(5, "data_s")]
    planted = (4 * DATA + COMPUTE + OTHER) / WORK - 1.0  # data 0.010 → 0.040 s
    assert res.stragglers[0].slowdown == pytest.approx(planted, abs=0.02)
    assert "data loader" in findings[0].message


def test_whole_slow_node_gives_one_node_entry():
    slow = dict.fromkeys(range(8, 16), 0.2)
    res, findings = find_stragglers(run(ranks=32, cards_per_node=8, slow_ranks=slow))
    assert len(res.stragglers) == 1
    s = res.stragglers[0]
    assert (s.kind, s.rank, s.node) == ("deterministic", None, "node01")
    assert s.ranks == list(range(8, 16))
    assert s.slowdown == pytest.approx((DATA + 1.2 * COMPUTE + OTHER) / WORK - 1, abs=0.02)
    assert codes(findings) == ["XP102"]
    assert "node node01 (ranks 8–15)" in findings[0].message


def test_partly_slow_node_below_75_percent_gives_rank_entries():
    slow = dict.fromkeys(range(8, 13), 0.2)  # 5 of 8 = 62.5 % < 75 %
    res, findings = find_stragglers(run(ranks=32, cards_per_node=8, slow_ranks=slow))
    assert sorted(s.rank for s in res.stragglers) == list(range(8, 13))
    assert codes(findings) == ["XP101"] * 5
    # each alone gains little while the others stay slow; all together gain a lot
    assert all(s.cost_fraction < 0.02 for s in res.stragglers)
    assert findings[0].data["cost_fraction_all_deterministic"] > 0.10


@pytest.mark.parametrize("seed", range(6))
def test_no_false_straggler_on_healthy_runs(seed):
    res, findings = find_stragglers(run(ranks=64, steps=100, noise_cv=0.02, seed=seed))
    assert res.stragglers == []
    assert codes(findings) == ["XP104"]
    assert "no straggler" in findings[0].message
    assert "64 ranks × 100 steps" in findings[0].message
    assert (res.per_rank["slowdown"] < 0.05).all()


def test_threshold_decides_a_small_planted_straggler():
    df = run(ranks=16, slow_ranks={7: 0.04})  # work +3.7 %
    res, _ = find_stragglers(df)
    assert res.stragglers == []
    res, _ = find_stragglers(df, threshold=0.02)
    assert [s.rank for s in res.stragglers if s.kind == "deterministic"] == [7]


def test_large_but_not_significant_effect_names_no_rank():
    # 6 steps: the exact one-sided Wilcoxon p is at least 1/64 > 0.05 / 8 (Bonferroni)
    res, findings = find_stragglers(run(ranks=8, steps=6, slow_ranks={2: 0.20}))
    assert res.stragglers == []
    assert codes(findings) == ["XP104"]
    assert "not significant" in findings[0].message


def test_random_stragglers():
    df = run(ranks=64, random_straggler_prob=0.02, random_straggler_s=0.1)
    res, findings = find_stragglers(df)
    assert [s.kind for s in res.stragglers] == ["random"]
    s = res.stragglers[0]
    assert (s.rank, s.node, s.ranks) == (None, None, [])
    work = pivot(df, df["step_time_s"] - df["comm_s"])
    gap = work.max(axis=0) - work.median(axis=0)
    step = pivot(df, df["step_time_s"]).median(axis=0)
    assert res.sync_cost_s == pytest.approx(gap.mean(), rel=1e-9)
    assert res.sync_cost_fraction == pytest.approx(gap.mean() / step.mean(), rel=1e-9)
    assert s.cost_fraction == pytest.approx(gap.sum() / step.sum(), rel=1e-9)
    # model: a step waits ≈ 0.1 s whenever any of the 64 ranks is hit (p = 1 − 0.98^64)
    assert res.sync_cost_s == pytest.approx(0.1 * (1 - 0.98**64), abs=0.01)
    assert codes(findings) == ["XP103"]
    assert "isolate CPUs" in findings[0].message


def test_step_time_only_is_a_weak_signal():
    df = run(ranks=8, slow_ranks={3: 0.20})[["rank", "step", "step_time_s", "node"]]
    res, findings = find_stragglers(df)
    assert res.work_source == "step_time"
    assert "XP105" in codes(findings)
    # synchronous collectives equalise step time: the culprit cannot be seen
    assert res.stragglers == []


def test_too_few_steps_gives_no_verdict():
    res, findings = find_stragglers(run(ranks=8, steps=4, slow_ranks={0: 0.5}))
    assert res.stragglers == []
    assert codes(findings) == ["XP405"]
    assert np.isnan(res.sync_cost_s)


def test_single_rank_has_nobody_to_wait_for():
    # a single-card baseline: no straggler finding of any kind, not even "no verdict"
    res, findings = find_stragglers(run(ranks=1, steps=50, slow_ranks={0: 0.5}))
    assert res.stragglers == []
    assert codes(findings) == []
    assert np.isnan(res.sync_cost_s)


def test_only_steps_present_on_every_rank_are_used():
    df = run(ranks=8, slow_ranks={3: 0.20})
    df = df[~((df["rank"] == 5) & (df["step"] % 2 == 0))]
    res, _ = find_stragglers(df)
    assert res.n_steps == 100
    assert [s.rank for s in res.stragglers] == [3]


def test_seeded_bootstrap_is_reproducible():
    df = run(ranks=8, slow_ranks={3: 0.20})
    a, _ = find_stragglers(df, seed=7)
    b, _ = find_stragglers(df, seed=7)
    assert a.stragglers[0].slowdown_ci == b.stragglers[0].slowdown_ci


def test_finds_one_straggler_among_1024_ranks():
    df = run(ranks=1024, steps=2000, slow_ranks={3: 0.20})
    res, _ = find_stragglers(df)
    assert [s.rank for s in res.stragglers if s.kind == "deterministic"] == [3]


@pytest.mark.parametrize("n", [2, 3, 8, 9])
def test_leave_one_out_median_matches_brute_force(n):
    from xpuperf.analysis.stragglers import _loo_median

    rng = np.random.default_rng(n)
    w = rng.integers(0, 4, size=(n, 50)).astype(float)  # many ties
    brute = np.array([[np.median(np.delete(w[:, s], r)) for s in range(50)] for r in range(n)])
    np.testing.assert_array_equal(_loo_median(w), brute)
