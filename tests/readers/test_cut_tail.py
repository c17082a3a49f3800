"""A log that ends inside a step: the step only some ranks printed is dropped with a counted
warning, not read as a slow step (QA: Horovod tf_cnn_benchmarks excerpt, 16 ranks, the last step
printed by 7: 547 samples/s and "FPS cv 0.562, not flat" instead of ≈ 766).

Samples are written here; expected values are worked out by hand in the comments."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from xpuperf.errors import InputError
from xpuperf.pipeline import analyze_logs
from xpuperf.readers import read_logs
from xpuperf.readers.tail import drop_cut_tail


def _horovod(tmp_path: Path) -> Path:
    """4 ranks without ids print steps 1, 10 and 20, each at a running mean of 100 images/s;
    the log stops after 2 ranks printed step 30."""
    lines = ["Step\tImg/sec\ttotal_loss"]
    for step, ranks in ((1, 4), (10, 4), (20, 4), (30, 2)):
        for r in range(ranks):
            lines.append(f"{step}\timages/sec: 100.0 +/- 0.0 (jitter = 0.{r})\t9.0")
    p = tmp_path / "horovod.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_the_cut_step_is_dropped_and_counted(tmp_path: Path) -> None:
    r = read_logs([_horovod(tmp_path)], batch_size=32)
    assert sorted(r.table["step"].unique().tolist()) == [1, 10, 20]
    assert r.table["rank"].nunique() == 4
    assert r.skipped_rows == 2
    cut = [w for w in r.problems() if "ends inside step 30" in w]
    assert cut
    assert "2 of 4 ranks printed it; dropped its 2 row(s)" in cut[0]


def test_throughput_is_every_rank_at_a_flat_line(tmp_path: Path) -> None:
    res = analyze_logs([_horovod(tmp_path)], batch_size=32, warmup=0)
    s = res.summary
    # 4 ranks × 100 images/s; each step takes 32 / 100 = 0.32 s
    assert s.throughput_wallclock_samples_per_s == pytest.approx(400.0)
    assert s.throughput_per_card_wallclock_samples_per_s == pytest.approx(100.0)
    assert s.step_time_s["median"] == pytest.approx(0.32)
    assert not [f for f in res.findings if f.code == "XP201"]  # the FPS line is flat


def test_without_a_batch_the_error_says_what_the_log_shows(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        read_logs([_horovod(tmp_path)])
    msg = str(exc.value)
    # step 20 is the last step all 4 printed: 4 × 100.0 images/s
    assert "4 ranks print images/sec (at step 20, the last step all 4 printed: Σ 400.0" in msg
    assert "pass --batch-size N" in msg


def test_a_rank_that_stopped_long_before_is_kept_for_xp403() -> None:
    # rank 1 stopped after step 2 of 40: 38 steps (95 %) are not a cut line
    rows = [(0, s) for s in range(1, 41)] + [(1, 1), (1, 2)]
    t = pd.DataFrame(rows, columns=["rank", "step"])
    kept, warning = drop_cut_tail(t)
    assert warning is None
    assert len(kept) == 42


def test_two_trailing_steps_of_forty_are_a_cut() -> None:
    # 2 of 40 steps = 5 %: rank 1 lacks steps 39 and 40
    rows = [(0, s) for s in range(1, 41)] + [(1, s) for s in range(1, 39)]
    kept, warning = drop_cut_tail(pd.DataFrame(rows, columns=["rank", "step"]))
    assert warning is not None
    assert "steps 39, 40: 1 of 2 ranks" in warning
    assert kept["step"].max() == 38
