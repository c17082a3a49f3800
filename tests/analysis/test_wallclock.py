"""Wall-clock throughput (the headline) vs the median-step figure, with hand-worked values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from xpuperf.analysis import analyze
from xpuperf.analysis.series import row_iterations
from xpuperf.report.figures import summary_rows
from xpuperf.report.json_report import to_dict


def _table(step_time: list[float] | np.ndarray, steps=None, samples=32.0, t_end=None):
    n = len(step_time)
    frame = pd.DataFrame(
        {
            "rank": np.zeros(n, dtype="int32"),
            "step": np.arange(1, n + 1) if steps is None else np.asarray(steps),
            "step_time_s": np.asarray(step_time, dtype=float),
            "samples": samples,
        }
    )
    if t_end is not None:
        frame["t_end_s"] = t_end
    return frame


def _stalled() -> list[float]:
    """110 steps: 100 of 1.0 s and a 4.5 s stall every 10th step (10 stalls)."""
    return [4.5 if i % 11 == 10 else 1.0 for i in range(110)]


def test_stalls_lower_the_headline_by_their_cost() -> None:
    s = analyze(_table(_stalled()), warmup=0).summary
    # by hand: wall = 100 × 1.0 + 10 × 4.5 = 145 s; samples = 110 × 32 = 3520
    assert s.wall_time_s == pytest.approx(145.0)
    assert s.wallclock_source == "step_times"
    assert s.iterations == 110
    assert s.throughput_wallclock_samples_per_s == pytest.approx(3520 / 145)  # not / 110 s
    assert s.throughput_per_card_wallclock_samples_per_s == pytest.approx(3520 / 145)
    # the median step is 1.0 s: 32 samples/s, the old headline, unchanged by the stalls
    assert s.throughput_median_step_samples_per_s == pytest.approx(32.0)
    assert s.throughput_samples_per_s == pytest.approx(32.0)  # the old key keeps its meaning
    # cost: 145 s − 110 iterations × 1.0 s = 35 s = 35/145 = 24.1 % of the wall time
    assert s.jitter_cost_s == pytest.approx(35.0)
    assert s.jitter_cost_fraction == pytest.approx(35 / 145)
    assert 1 - s.throughput_wallclock_samples_per_s / 32.0 == pytest.approx(35 / 145)


def test_healthy_run_has_no_jitter_cost() -> None:
    s = analyze(_table([1.0] * 110), warmup=0).summary
    assert s.wall_time_s == pytest.approx(110.0)
    assert s.throughput_wallclock_samples_per_s == pytest.approx(32.0)
    assert s.jitter_cost_s == pytest.approx(0.0)
    assert s.jitter_cost_fraction == pytest.approx(0.0)


def test_rows_that_are_window_means_count_their_iterations() -> None:
    # a log line every 10 iterations (Megatron --log-interval 10): 11 rows, per-iteration mean
    # step time, global batch 1024 per iteration; one window holds the stalls (4.5 s mean)
    per_iter = [1.0] * 10 + [4.5]
    s = analyze(_table(per_iter, steps=range(10, 111, 10), samples=1024.0), warmup=0).summary
    # by hand: each row covers 10 iterations: wall = 10 × (10 × 1.0 + 4.5) = 145 s,
    # samples = 110 × 1024, so wall-clock = 112640 / 145 (the ratio, not the seconds, is the
    # same without the weights — the seconds are not)
    assert s.iterations == 110
    assert s.wall_time_s == pytest.approx(145.0)
    assert s.throughput_wallclock_samples_per_s == pytest.approx(110 * 1024 / 145)
    assert s.jitter_cost_s == pytest.approx(145.0 - 110 * 1.0)


def test_timestamps_count_time_between_steps() -> None:
    t = np.asarray(_stalled())
    end = 1000.25 + np.cumsum(t)
    end[60:] += 30.0  # a 30 s checkpoint between steps 60 and 61 that no step time holds
    s = analyze(_table(t, t_end=end), warmup=0).summary
    # by hand: last end − first end + first step = (145 + 30 − 1.0) + 1.0 = 175 s
    assert s.wallclock_source == "timestamps"
    assert s.wall_time_s == pytest.approx(175.0)
    assert s.throughput_wallclock_samples_per_s == pytest.approx(3520 / 175)
    # split: the steps' own loss 145 − 110 = 35 s, and 175 − 145 = 30 s outside the steps
    assert s.jitter_cost_s == pytest.approx(35.0)
    assert s.outside_steps_s == pytest.approx(30.0)
    assert s.outside_steps_fraction == pytest.approx(30.0 / 175.0)
    assert s.jitter_cost_s + s.outside_steps_s == pytest.approx(175.0 - 110.0)


def test_whole_second_stamps_on_a_short_run_fall_back_to_step_times() -> None:
    t = [1.0] * 20
    end = 1000.0 + np.cumsum(t)  # 1 s stamps over 19 s: ±1 s is 5 % — not used
    s = analyze(_table(t, t_end=end), warmup=0).summary
    assert s.wallclock_source == "step_times"
    assert s.wall_time_s == pytest.approx(20.0)


def test_inconsistent_timestamps_are_not_used() -> None:
    t = np.asarray(_stalled())
    end = 1000.25 + np.cumsum(t) * 0.5  # stamps say half the time the steps took
    s = analyze(_table(t, t_end=end), warmup=0).summary
    assert s.wallclock_source == "step_times"
    assert s.wall_time_s == pytest.approx(145.0)


def test_no_samples_keeps_the_time_figures() -> None:
    frame = _table(_stalled()).drop(columns="samples")
    s = analyze(frame, warmup=0).summary
    assert s.throughput_wallclock_samples_per_s is None
    assert s.throughput_median_step_samples_per_s is None
    assert s.jitter_cost_s == pytest.approx(35.0)  # cost is a matter of time alone


@pytest.mark.parametrize(
    ("steps", "prev", "expected"),
    [
        ([10, 20, 30], None, [10, 10, 10]),  # first row: the median gap
        ([10, 20, 30], 5, [5, 10, 10]),  # first row: the gap to the last warm-up row
        ([1, 2, 3, 1000], None, [1, 1, 1, 1]),  # a cut: the row covers one interval only
        ([1, 2, 3, 13], None, [1, 1, 1, 10]),  # 10 intervals: not a cut, filled
        ([7], None, [1]),
    ],
)
def test_row_iterations(steps: list[int], prev: int | None, expected: list[int]) -> None:
    assert row_iterations(np.array(steps), prev).tolist() == expected


def test_renderers_lead_with_wall_clock() -> None:
    result = analyze(_table(_stalled()), warmup=0)
    rows = dict(summary_rows(result))
    assert rows["throughput"].startswith("24.3 samples/s wall-clock")  # 3520 / 145 = 24.28
    assert rows["median-step throughput"].startswith("32.0 samples/s")
    assert rows["jitter & spikes"].startswith("cost 24.1% of wall time (35.0 s of 145.0 s)")
    doc = to_dict(result)["summary"]
    assert doc["throughput_wallclock_samples_per_s"] == pytest.approx(3520 / 145)
    assert doc["throughput_median_step_samples_per_s"] == pytest.approx(32.0)
    assert doc["jitter_cost_fraction"] == pytest.approx(35 / 145)
    assert doc["wallclock_source"] == "step_times"
