"""MindSpore ``per step time`` lines: one row per epoch that stands for the epoch's steps.

tests/data/formats_mindspore_epochs/epochs_100_steps.log (hand-written): five epochs of
100 steps (epoch time / per step time = 100 s / 1000 ms = 50 s / 500 ms = 55 s / 550 ms = 100),
so the step numbers count iterations: 100, 200, 300, 400, 500.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.readers import read_logs

DATA = Path(__file__).resolve().parents[2] / "data"
LOG = DATA / "formats_mindspore_epochs" / "epochs_100_steps.log"


def test_epoch_rows_are_numbered_in_steps() -> None:
    r = read_logs([LOG])
    t = r.table
    assert t["step"].tolist() == [100, 200, 300, 400, 500]
    assert t["step_time_s"].tolist() == pytest.approx([1.0, 0.5, 0.5, 0.55, 0.5])
    # timestamps: the end of each epoch, 100 / 50 / 50 / 55 / 50 s apart
    assert (t["t_end_s"].diff().iloc[1:]).tolist() == pytest.approx([50.0, 50.0, 55.0, 50.0])
    assert r.warnings == []


def test_skipped_epochs_and_a_line_without_epoch_time(tmp_path: Path) -> None:
    # epochs 1 and 3 logged (2 not): epoch 3 ends 2 × 200 steps after epoch 1; the TimeMonitor
    # line without 'epoch time' (epoch 4) takes the previous count, 200
    log = tmp_path / "ms.log"
    log.write_text(
        "epoch: [1/9] loss: 5.0, epoch time: 200.000 s, per step time: 1000.000 ms\n"
        "epoch: [3/9] loss: 4.0, epoch time: 100.000 s, per step time: 500.000 ms\n"
        "epoch: [4/9] loss: 3.9, per step time: 500.000 ms\n",
        encoding="utf-8",
    )
    t = read_logs([log]).table
    assert t["step"].tolist() == [200, 600, 800]


def test_no_epoch_time_at_all_counts_one_step_per_epoch_and_says_so(tmp_path: Path) -> None:
    log = tmp_path / "ms.log"
    log.write_text(
        "".join(f"epoch: [{e}/9] loss: 5.0, per step time: 500.000 ms\n" for e in (1, 2, 3)),
        encoding="utf-8",
    )
    r = read_logs([log])
    assert r.table["step"].tolist() == [1, 2, 3]
    (note,) = r.notes
    assert "3 'per step time' line(s) without 'epoch time'" in note


def test_corpus_44_epochs() -> None:
    # 183.647 s / 588.613 ms = 312.0; 103.711 / 0.332408 = 312.0; 99.554 / 0.319804 = 311.3
    # → 311; 94.192 / 0.301897 = 312.0; 87.943 / 0.281867 = 312.0
    path = next((DATA / "formats_mindspore").glob("44_*"))
    t = read_logs([path]).table
    assert t["step"].tolist() == [312, 624, 935, 1247, 1559]


def test_the_first_epoch_is_marked_as_start_up_only_at_the_run_start(tmp_path: Path) -> None:
    assert read_logs([LOG]).warmup_rows == 1  # epoch 1: graph compilation
    resumed = tmp_path / "resumed.log"
    resumed.write_text(
        "".join(
            f"epoch: [{e}/9] loss: 3.0, epoch time: 50.000 s, per step time: 500.000 ms\n"
            for e in (3, 4, 5)
        ),
        encoding="utf-8",
    )
    r = read_logs([resumed])
    assert r.table["step"].tolist() == [300, 400, 500]
    assert r.warmup_rows == 0
    bench = tmp_path / "bench.log"  # benchmark lines: epoch 0's first line holds the compile
    bench.write_text(
        "epoch: [0/1] step: [20/5004], loss is 6.9 Epoch time: 12000.000 ms, fps: 400 img/sec.\n"
        "epoch: [0/1] step: [40/5004], loss is 7.0Epoch time: 3000.000 ms, fps: 1600 img/sec.\n",
        encoding="utf-8",
    )
    r = read_logs([bench])
    assert r.table["step_time_s"].tolist() == pytest.approx([0.6, 0.15])  # 12 s / 20, 3 s / 20
    assert r.warmup_rows == 1


def test_an_epoch_time_beyond_a_float_is_no_step_count(tmp_path: Path) -> None:
    # found by the fuzz target: a 400-digit epoch time is inf seconds, and round(inf / 10 ms)
    # raised OverflowError; that epoch has no step count (one step), the others keep theirs
    big = "9" * 400
    p = tmp_path / "ms.log"
    p.write_text(
        "epoch: 1 step: 100, loss is 5.0\n"
        "epoch: [1/90] loss: 5.2, epoch time: 1000.0 ms, per step time: 10.0 ms\n"
        f"epoch: [2/90] loss: 5.1, epoch time: {big} ms, per step time: 10.0 ms\n"
    )
    t = read_logs([p], fmt="mindspore").table
    # epoch 1: 1000 / 10 = 100 steps; epoch 2 keeps the last known count (100): step 200
    assert t["step"].tolist() == [100, 200]
