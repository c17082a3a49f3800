"""Wall clock of logs whose rows are single iterations shown every k (nanoGPT, timm): a slow
logged iteration (one that ran an evaluation) counts once, not k times."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xpuperf.analysis.series import wallclock
from xpuperf.pipeline import analyze_logs
from xpuperf.readers import read_logs

DATA = Path(__file__).resolve().parents[1] / "data" / "formats_nanogpt"


def _job(times: list[float]) -> pd.DataFrame:
    steps = np.arange(10, 10 * len(times) + 1, 10)
    return pd.DataFrame({"step": steps, "step_time_s": times, "samples": 1.0})


def test_sampled_rows_count_a_spike_once() -> None:
    job = _job([1.0, 1.0, 5.0, 1.0])  # one row every 10 iterations; the third ran an eval
    table = pd.DataFrame({"rank": [0], "step": [10]})
    # window means: every row stands for 10 iterations at its time: 10 × (1 + 1 + 5 + 1) = 80 s
    assert wallclock(job, table, prev_step=0).wall_time_s == pytest.approx(80.0)
    # single iterations: each row once + 9 unseen iterations at the median 1 s: 8 + 4 × 9 = 44 s
    wc = wallclock(job, table, prev_step=0, sampled=True)
    assert wc.wall_time_s == pytest.approx(44.0)
    assert wc.iterations == 40


def test_nanogpt_wallclock_tokens_by_hand() -> None:
    path = DATA / "train_gpt2_8gpu_torchrun.log"
    assert read_logs([path]).sampled_rows
    text = path.read_text(encoding="utf-8")
    rows = sorted({(int(a), float(b)) for a, b in re.findall(r"iter (\d+): loss [\d.]+, time "
                                                             r"([\d.]+)ms", text)})  # fmt: skip
    steady = rows[1:]  # iter 0 (compile) is warm-up
    t = np.array([x for _, x in steady]) / 1e3
    k = np.diff([rows[0][0]] + [s for s, _ in steady])
    wall = float(np.sum(t + (k - 1) * np.median(t)))  # 333.95 s for 300 iterations
    s = analyze_logs([path]).summary
    assert s.wall_time_s == pytest.approx(wall)
    # 491,520 tokens per iteration (the log's own line) × 300 / 333.95 s = 441,547 tokens/s
    assert s.throughput_wallclock_tokens_per_s == pytest.approx(491_520 * 300 / wall)
    assert s.throughput_wallclock_tokens_per_s == pytest.approx(441_547, rel=1e-5)
