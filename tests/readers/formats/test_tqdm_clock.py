"""tqdm's [mm:ss] clock truncates to whole seconds: a row over a 20 s window is within ±5 %, so
row-to-row jitter below that is rounding, not a cost (the jitter checks say "not checked").

Tables are written here by hand: a steady 0.185 s step read through a 1 s clock alternates
between 0.18 s and 0.19 s rows (±2.7 %)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from xpuperf.analysis.analyze import analyze
from xpuperf.readers import read_logs

DATA = Path(__file__).resolve().parents[2] / "data" / "formats_tqdm"
CLOCK = (0.05, "the bar's clock has 1 s resolution")


def _table(times: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"rank": 0, "step": range(1, len(times) + 1), "step_time_s": times})


def test_the_reader_states_its_clock() -> None:
    # every row of this sample is a window of >= 20 clock ticks (test_tqdm.py)
    assert read_logs([DATA / "lightning_2x_1gpu.log"]).clock_resolution == CLOCK


def test_rounding_is_not_judged() -> None:
    times = [0.18, 0.19] * 20  # 40 rows, median = mean = 0.185: no cost either way
    plain = analyze(_table(times), warmup=0)
    assert [f.code for f in plain.findings if f.code.startswith("XP20")] == ["XP206"]
    coarse = analyze(_table(times), warmup=0, clock_resolution=CLOCK)
    assert not [f for f in coarse.findings if f.code.startswith("XP20")]  # no all-clear either
    checks = {c.name: c for c in coarse.checks}
    for name in ("steps.jitter", "steps.spikes"):
        assert checks[name].status.value == "not_checked"
        assert checks[name].evidence.startswith("the bar's clock has 1 s resolution (±5% per row)")


def test_a_spike_beyond_the_clock_is_a_hint() -> None:
    # one row at 0.37 s (2 × 0.185) among 39 at 0.185 s: median 0.185, threshold 0.185 × 1.05;
    # cost = 0.185 / (40 × 0.185 + 0.185) = 1/41 = 2.4 % of the time, above the 1 % warning line
    times = [0.185] * 20 + [0.37] + [0.185] * 19
    res = analyze(_table(times), warmup=0, clock_resolution=CLOCK)
    (spike,) = [f for f in res.findings if f.code == "XP203"]
    assert spike.severity.value == "info"
    assert spike.data["weak"] is True
    assert spike.message.endswith("(±5% per row): a hint, not a verdict.")
    assert res.summary.jitter_cost_fraction is None  # 2.4 % < the clock's 5 %
