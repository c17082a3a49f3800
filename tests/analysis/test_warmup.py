"""Warm-up detection against planted truth (xpuperf.synth) and hand-made series."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from xpuperf.analysis.results import WarmupResult
from xpuperf.analysis.series import job_steps
from xpuperf.analysis.warmup import detect_warmup, split_warmup, warmup_finding
from xpuperf.errors import InputError, UsageError
from xpuperf.synth import Scenario, generate


def _job(**kw: object) -> pd.DataFrame:
    return job_steps(generate(Scenario(**kw)))  # type: ignore[arg-type]


def _series(values: list[float] | np.ndarray, first_step: int = 0) -> pd.DataFrame:
    x = np.asarray(values, dtype="float64")
    return pd.DataFrame({"step": np.arange(first_step, first_step + len(x)), "step_time_s": x})


# Exact, no tolerance: with warmup_factor 3 the last planted warm-up step has compute ×
# (1 + 2/w) ≥ 1.167 (w = 12), i.e. its step time is ≥ 13 % above steady, well clear of the 5 %
# threshold and of the noise (noise_cv 0.02 → 5 robust σ ≈ 2 % of step time); the first steady
# step is at the steady level. So the boundary is unambiguous and must be hit exactly.
@pytest.mark.parametrize("planted", [0, 3, 5, 12])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ranks", [8, 64])
def test_planted_warmup_detected_exactly(planted: int, seed: int, ranks: int) -> None:
    job = _job(ranks=ranks, steps=200, warmup_steps=planted, seed=seed, first_step=1)
    res = detect_warmup(job)
    assert res.method == "auto"
    assert res.steps == planted
    assert res.first_steady_step == 1 + planted
    assert res.threshold_s is not None
    # The threshold sits above the steady level and below the last warm-up step.
    x = job["step_time_s"].to_numpy()
    assert np.median(x[planted:]) < res.threshold_s
    if planted:
        assert x[planted - 1] > res.threshold_s


def test_user_override() -> None:
    job = _job(ranks=8, steps=50, warmup_steps=5, first_step=100)
    res = detect_warmup(job, warmup=7)
    assert res == WarmupResult(steps=7, first_steady_step=107, method="user", threshold_s=None)
    assert detect_warmup(job, warmup=0).steps == 0
    too_many = detect_warmup(job, warmup=80)
    assert (too_many.steps, too_many.first_steady_step) == (50, None)
    with pytest.raises(UsageError):
        detect_warmup(job, warmup=-1)


def test_split_warmup_keeps_steady_rows_of_canonical_table() -> None:
    table = generate(Scenario(ranks=4, steps=30, warmup_steps=5, first_step=1))
    res = detect_warmup(job_steps(table))
    steady = split_warmup(table, res)
    assert len(steady) == 4 * (30 - 5)
    assert steady["step"].min() == 6
    assert list(steady.columns) == list(table.columns)
    assert steady.index.equals(pd.RangeIndex(len(steady)))
    none = split_warmup(table, WarmupResult(30, None, "user"))
    assert none.empty
    assert list(none.columns) == list(table.columns)


def test_short_series_gets_no_warmup() -> None:
    res = detect_warmup(_series([9.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]))
    assert (res.steps, res.first_steady_step, res.threshold_s) == (0, 0, None)
    # The same shape with 10 steps is long enough.
    assert detect_warmup(_series([9.0] + [1.0] * 9)).steps == 1
    empty = detect_warmup(_series([]))
    assert (empty.steps, empty.first_steady_step) == (0, None)


def test_spike_just_after_warmup_does_not_stretch_it() -> None:
    # Spikes every 50 steps from index 6: the second steady step after a 5-step warm-up.
    job = _job(ranks=8, steps=200, warmup_steps=5, spike_period=50, spike_phase=6, spike_s=0.5)
    assert detect_warmup(job).steps == 5


def test_slower_first_level_is_not_swallowed_as_warmup() -> None:
    # Compute drops 20 % at step index 150 of 300: the first 150 steps are a slower level, not
    # warm-up; a second-half reference would call all 150 warm-up (the cap).
    job = _job(ranks=8, steps=300, warmup_steps=5, change_step=150, change_factor=0.8)
    assert detect_warmup(job).steps == 5


def test_constant_series_has_no_warmup() -> None:
    res = detect_warmup(_series([0.25] * 40))
    assert res.steps == 0
    assert res.threshold_s == pytest.approx(0.25 * 1.05)  # MAD 0 → the 5 % floor


def test_ramp_over_whole_run_is_capped_at_half() -> None:
    job = _series(np.linspace(2.0, 1.0, 40))
    res = detect_warmup(job)
    assert res.steps == 20
    f = warmup_finding(job, res)
    assert f is not None
    assert f.data["capped"] is True
    assert "cap of half the run" in f.message


def test_unsorted_job_is_sorted() -> None:
    job = _job(ranks=8, steps=60, warmup_steps=5, first_step=1)
    res = detect_warmup(job.iloc[::-1])
    assert (res.steps, res.first_steady_step) == (5, 6)


def test_missing_column_raises_input_error() -> None:
    with pytest.raises(InputError):
        detect_warmup(pd.DataFrame({"step": [1, 2, 3]}))


def test_xp404_message_states_values_threshold_and_override() -> None:
    job = _series([3.0, 2.0] + [1.0] * 18, first_step=1)
    res = detect_warmup(job)
    assert res.steps == 2
    f = warmup_finding(job, res)
    assert f is not None
    assert f.code == "XP404"
    assert f.severity.value == "info"
    assert f.message == (
        "2 warm-up step(s) excluded (step time 2.500 s vs steady 1.000 s; threshold 1.050 s); "
        "override with --warmup N."
    )
    assert f.data["first_steady_step"] == 3
    assert f.data["capped"] is False
    user = warmup_finding(job, detect_warmup(job, warmup=4))
    assert user is not None
    assert "set by --warmup" in user.message
    assert "step time 1.750 s" in user.message
    assert warmup_finding(job, detect_warmup(job, warmup=0)) is None
