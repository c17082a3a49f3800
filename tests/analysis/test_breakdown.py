"""Decomposition and speedup against sums by hand and the generator's model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from xpuperf import synth
from xpuperf.analysis.breakdown import decompose
from xpuperf.errors import InputError

DATA, COMPUTE, OTHER, ALLREDUCE, CV = 0.010, 0.200, 0.005, 0.030, 0.02
E_MAX_OF_8 = 1.4236  # expected maximum of 8 standard normals


def run(**kw) -> pd.DataFrame:
    return synth.generate(synth.Scenario(warmup_steps=0, **kw))


def codes(findings) -> list[str]:
    return [f.code for f in findings]


def job_median_step(df: pd.DataFrame) -> float:
    return float(df.pivot(index="rank", columns="step", values="step_time_s").median().median())


def test_fractions_equal_sums_by_hand():
    df = run(ranks=8)
    res, findings = decompose(df)
    total = df["step_time_s"].sum()
    other = df["step_time_s"] - df["compute_s"] - df["comm_s"] - df["data_s"]
    assert res.source == "phases"
    assert res.compute_fraction == pytest.approx(df["compute_s"].sum() / total, rel=1e-12)
    assert res.comm_fraction == pytest.approx(df["comm_s"].sum() / total, rel=1e-12)
    assert res.data_fraction == pytest.approx(df["data_s"].sum() / total, rel=1e-12)
    assert res.other_fraction == pytest.approx(other.sum() / total, rel=1e-9)
    parts = [res.compute_fraction, res.comm_fraction, res.data_fraction, res.other_fraction]
    assert sum(parts) == pytest.approx(1.0, abs=1e-12)
    # model: compute 0.200 s of a ≈ 0.25 s step
    assert res.compute_fraction == pytest.approx(COMPUTE / 0.2507, abs=0.01)
    assert res.speedup is None
    # comm ≈ 14 % > 10 %, data ≈ 4 % < 5 %, other ≈ 2 % < 10 %
    assert codes(findings) == ["XP301"]
    assert "threshold 10%" in findings[0].message


def test_per_rank_medians():
    df = run(ranks=8)
    res, _ = decompose(df)
    pr = res.per_rank
    assert list(pr.columns) == [
        *("rank", "node", "step_time_s", "compute_s", "comm_s", "data_s", "other_s"),
    ]
    r2 = df[df["rank"] == 2]
    row = pr.set_index("rank").loc[2]
    assert row["node"] == "node00"
    assert row["compute_s"] == pytest.approx(r2["compute_s"].median())
    assert row["comm_s"] == pytest.approx(r2["comm_s"].median())


def test_absent_phase_columns_are_unknown_not_zero():
    df = run(ranks=8).drop(columns=["comm_s", "data_s"])
    res, findings = decompose(df)
    assert res.comm_fraction is None
    assert res.data_fraction is None
    assert res.per_rank["comm_s"].isna().all()
    assert "XP303" in codes(findings)  # other now holds comm and data wait
    assert "unlogged" in findings[codes(findings).index("XP303")].message


def test_speedup_against_one_card():
    df = run(ranks=8)
    base = run(ranks=1, seed=11)
    res, findings = decompose(df, base)
    t1 = base["step_time_s"].median()
    td = job_median_step(df)
    expected = (32 / td) / (32 / t1)  # per-card throughputs
    assert res.speedup == pytest.approx(expected, rel=1e-12)
    assert res.baseline_step_time_s == pytest.approx(t1)
    assert res.baseline_throughput_samples_per_s == pytest.approx(32 / t1)
    # model: compute / (compute + exposed), exposed = allreduce + wait for the max of 8 ranks
    work = DATA + COMPUTE + OTHER
    wait = E_MAX_OF_8 * CV * np.sqrt(COMPUTE**2 + DATA**2 + OTHER**2)
    assert res.speedup == pytest.approx(work / (work + ALLREDUCE + wait), abs=0.01)
    assert "XP304" in codes(findings)  # ≈ 0.86 < 0.90
    msg = findings[codes(findings).index("XP304")].message
    assert "target 0.90" in msg
    assert "communication" in msg  # the largest non-compute share comes first


def test_speedup_without_samples_assumes_equal_batch():
    df = run(ranks=8).drop(columns=["samples"])
    base = run(ranks=1, seed=11)
    res, findings = decompose(df, base)
    assert res.speedup == pytest.approx(base["step_time_s"].median() / job_median_step(df))
    xp304 = next(f for f in findings if f.code == "XP304")
    assert "equal per-card batch is assumed" in xp304.message
    assert xp304.data["equal_batch_assumed"] is True


def test_speedup_at_target_gives_no_xp304():
    df = run(ranks=8, allreduce_s=0.001, noise_cv=0.005)
    res, findings = decompose(df, run(ranks=1, allreduce_s=0.001, noise_cv=0.005, seed=3))
    assert res.speedup > 0.95
    assert "XP304" not in codes(findings)


def test_multi_rank_baseline_is_refused():
    with pytest.raises(InputError, match=r"baseline has 8 ranks.*never a node"):
        decompose(run(ranks=16), run(ranks=8))


def test_different_batch_is_flagged():
    df = run(ranks=8)
    base = run(ranks=1, batch_per_rank=64, compute_s=0.4)
    res, findings = decompose(df, base)
    assert "XP305" in codes(findings)
    expected = (32 / job_median_step(df)) / (64 / base["step_time_s"].median())
    assert res.speedup == pytest.approx(expected, rel=1e-12)


def test_baseline_without_phases():
    df = run(ranks=8)[["rank", "step", "step_time_s", "samples"]]
    base = run(ranks=1, seed=5)[["rank", "step", "step_time_s", "samples"]]
    res, findings = decompose(df, base)
    ratio = base["step_time_s"].median() / job_median_step(df)
    assert res.source == "baseline"
    assert res.compute_fraction == pytest.approx(ratio)
    assert res.other_fraction == pytest.approx(1 - ratio)
    assert res.comm_fraction is None
    assert res.per_rank is None
    assert codes(findings) == ["XP303", "XP304"]


def test_no_phases_no_baseline():
    res, findings = decompose(run(ranks=4)[["rank", "step", "step_time_s"]])
    assert res.source == "none"
    assert res.compute_fraction is None
    assert res.other_fraction is None
    assert findings == []


@pytest.mark.parametrize(
    ("kw", "code", "words"),
    [
        ({"data_s": 0.030}, "XP302", "loader workers"),
        ({"other_s": 0.040}, "XP303", "CPU affinity"),
    ],
)
def test_share_thresholds(kw, code, words):
    _res, findings = decompose(run(ranks=8, **kw))
    assert code in codes(findings)
    msg = findings[codes(findings).index(code)].message
    assert words in msg
    assert "threshold" in msg


def test_thresholds_are_parameters():
    _, findings = decompose(run(ranks=8), comm_threshold=0.5)
    assert "XP301" not in codes(findings)
    _, findings = decompose(run(ranks=8), data_threshold=0.01)
    assert "XP302" in codes(findings)
