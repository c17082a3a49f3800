"""Wall clock of logs with one row per epoch (MindSpore ``per step time``): each row counts the
epoch's steps, the first epoch (graph compilation) is warm-up, and jitter on a few rows is a hint.

tests/data/formats_mindspore_epochs/epochs_100_steps.log, by hand: epochs of 100 steps at
1.0 (compile), 0.5, 0.5, 0.55, 0.5 s per step, ending 100, 150, 200, 255, 305 s after the start.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from xpuperf.analysis.jitter import analyze_jitter
from xpuperf.findings import CheckStatus, Severity
from xpuperf.pipeline import analyze_logs

DATA = Path(__file__).resolve().parents[1] / "data"


def test_epoch_rows_count_their_steps() -> None:
    r = analyze_logs([DATA / "formats_mindspore_epochs" / "epochs_100_steps.log"])
    # warm-up: the first row (1.0 s) lies above 0.5 + max(5·1.4826·0, 5 % of 0.5) = 0.525 s
    assert r.warmup.steps == 1
    assert r.warmup.first_steady_step == 200
    s = r.summary
    # steady: 4 epochs × 100 steps; wall = 305 − 150 (timestamps) + the first steady epoch's
    # 100 × 0.5 = 205 s (= 50 + 50 + 55 + 50 epoch times)
    assert s.iterations == 400
    assert s.wallclock_source == "timestamps"
    assert s.wall_time_s == pytest.approx(205.0)
    # vs every step at the median 0.5 s: 205 − 400 × 0.5 = 5 s (the 55 s epoch)
    assert s.jitter_cost_s == pytest.approx(5.0)
    assert s.jitter_cost_fraction == pytest.approx(5.0 / 205.0)
    # 4 steady rows < 20: the 0.55 s spike is a hint (info), and the checks give no verdict
    (spike,) = [f for f in r.findings if f.code == "XP203"]
    assert spike.severity is Severity.INFO
    assert spike.message.endswith("Only 4 steady step(s) (< 20): a hint, not a verdict.")
    assert not [f for f in r.findings if f.code.startswith("XP2") and f.severity.rank > 0]
    status = {c.name: c.status for c in r.checks}
    assert status["steps.jitter"] is CheckStatus.NOT_CHECKED
    assert status["steps.spikes"] is CheckStatus.NOT_CHECKED


def test_corpus_44_jitter_cost_from_the_epochs() -> None:
    # QA: "jitter & spikes cost 99.6 % (384.2 s of 385.8 s)" = timestamps span − 5 rows × median.
    # Now: epoch 1 (588.6 ms, compile) is warm-up; epochs 2–5 are 312, 311, 312, 312 steps;
    # wall = 10:07:43.646 − 10:03:02.711 = 280.935 s + 312 × 0.332408 = 384.646 s; median of
    # 0.332408, 0.319804, 0.301897, 0.281867 = 0.3108505 s; 1247 × 0.3108505 = 387.631 s: the
    # steps got faster epoch by epoch, so the wall time is 2.98 s below "every step at the median"
    path = next((DATA / "formats_mindspore").glob("44_*"))
    s = analyze_logs([path]).summary
    assert s.warmup_steps == 1
    assert s.iterations == 1247
    assert s.wall_time_s == pytest.approx(280.935 + 312 * 0.332408)
    # split: the epochs' own times 312 × 0.332408 + 311 × 0.319804 + 312 × 0.301897 +
    # 312 × 0.281867 vs 1247 × the median; the rest of the wall span is outside the steps
    steps_s = 312 * 0.332408 + 311 * 0.319804 + 312 * 0.301897 + 312 * 0.281867
    assert s.jitter_cost_s == pytest.approx(steps_s - 1247 * 0.3108505)
    assert s.outside_steps_s == pytest.approx(280.935 + 312 * 0.332408 - steps_s)


def test_few_steps_turn_jitter_warnings_into_hints() -> None:
    # 10 steps of 1.0 s and one of 2.0 s: cv, p99/p50 and the spike all exceed their
    # thresholds, but 10 < 20 steps is no verdict: every finding is info
    job = pd.DataFrame({"step": range(10), "step_time_s": [1.0] * 9 + [2.0]})
    _, findings = analyze_jitter(job)
    assert {f.code for f in findings} == {"XP201", "XP202", "XP203", "XP405"}
    assert all(f.severity is Severity.INFO for f in findings)
    assert all(f.data.get("weak") for f in findings if f.code != "XP405")
    # 20 steps: the same shape is a verdict
    job = pd.DataFrame({"step": range(20), "step_time_s": [1.0] * 19 + [2.0]})
    _, findings = analyze_jitter(job)
    assert {f.code for f in findings if f.severity is Severity.WARNING} >= {"XP201", "XP203"}


def test_a_compile_epoch_the_detector_cannot_see_is_still_start_up(tmp_path: Path) -> None:
    # epoch 1 at 0.52 s per step lies below 0.5 + 5 % = 0.525 s, so the detector keeps it; the
    # log starts at epoch 1, whose row holds the graph compilation: excluded as marked (method
    # "log"), and the wall clock counts epochs 2-4 only: 3 × 100 × 0.5 = 150 s
    log = tmp_path / "ms.log"
    log.write_text(
        "".join(
            f"epoch: [{e}/9] loss: 3.0, epoch time: {50 * t:.3f} s, per step time: "
            f"{500 * t:.3f} ms\n"
            for e, t in ((1, 1.04), (2, 1.0), (3, 1.0), (4, 1.0))
        ),
        encoding="utf-8",
    )
    r = analyze_logs([log])
    assert (r.warmup.steps, r.warmup.method) == (1, "log")
    assert r.summary.iterations == 300
    assert r.summary.wall_time_s == pytest.approx(150.0)
