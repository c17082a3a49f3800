"""The first row of a log printed every k > 1 steps holds the start-up (Keras TimeHistory's
first window, Megatron's first interval, nanoGPT's iter 0): warm-up, not a spike, also in runs
shorter than the detector's 10 steps."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from xpuperf.analysis.warmup import detect_warmup
from xpuperf.pipeline import analyze_logs

KERAS = Path(__file__).resolve().parents[1] / "data" / "formats_keras"


def _job(steps: list[int], times: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"step": steps, "step_time_s": times})


def test_keras_first_window_is_warmup_not_a_spike() -> None:
    (path,) = KERAS.glob("10_*")
    result = analyze_logs([path])
    # 'TimeHistory: 116.24 seconds … between steps 0 and 100' → 1.1624 s per step; the other
    # windows: 39.13, 39.40, 39.10, 40.18, 39.81 s / 100 → median 0.394 s, MAD 0.003 s:
    # threshold 0.394 + max(5 × 1.4826 × 0.003, 5 % × 0.394) = 0.394 + 0.022239
    assert result.warmup.steps == 1
    assert result.warmup.first_steady_step == 200
    assert result.warmup.threshold_s == pytest.approx(0.416239)
    codes = {f.code for f in result.findings}
    assert "XP404" in codes
    assert not codes & {"XP201", "XP202", "XP203"}  # the five steady windows are flat


def test_short_windowed_run_first_row_rules() -> None:
    steps = [100, 200, 300, 400, 500]
    # a window from step 0 that is slow: warm-up
    assert detect_warmup(_job(steps, [0.9, 0.40, 0.41, 0.40, 0.40])).steps == 1
    # the same window within 5 % of the level (0.40 + 0.02): not warm-up
    assert detect_warmup(_job(steps, [0.415, 0.40, 0.41, 0.40, 0.40])).steps == 0
    # an excerpt from the middle of a run (first row at step 5100, windows of 100): not warm-up
    mid = [5100, 5200, 5300, 5400, 5500]
    assert detect_warmup(_job(mid, [0.9, 0.40, 0.41, 0.40, 0.40])).steps == 0
    # nanoGPT-style rows every 10 iterations from iter 0
    assert detect_warmup(_job([0, 10, 20, 30], [52.3, 0.90, 0.91, 0.90])).steps == 1
    # one row per step (no window): short runs keep getting no warm-up
    assert detect_warmup(_job([0, 1, 2, 3, 4], [9.0, 1.0, 1.0, 1.0, 1.0])).steps == 0
    # two rows cannot set a level
    assert detect_warmup(_job([100, 200], [0.9, 0.4])).steps == 0
