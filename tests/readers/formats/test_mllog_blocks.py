"""MLPerf logs with blocks only (no per-step lines): a block carries its real samples
(epoch_count × train_samples) and its own duration (block_start → eval_start), and the first
block is warm-up (QA: the Habana ResNet log read each block as ONE 2048-sample step,
"samples / 5.9 s steady" for blocks spanning 3,500 s, and no warm-up).

The sample is written here; expected values are worked out by hand in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpuperf.pipeline import analyze_logs
from xpuperf.readers import read_logs

T0 = 1_600_000_000_000  # ms


def _event(t_ms: int, key: str, value: object = None, **md: object) -> str:
    """An old-style MLLOG line: no event_type, namespace worker0 (as Habana's 2021 logs)."""
    doc = {"namespace": "worker0", "time_ms": t_ms, "key": key, "value": value, "metadata": md}
    return ":::MLLOG " + json.dumps(doc)


def _log(tmp_path: Path) -> Path:
    """train_samples 1000 per epoch; three blocks: epochs 1-2 in 10 s, 3-6 in 16 s, 7-10 in
    16.4 s, each followed by a 2 s evaluation (eval_start → next block_start)."""
    lines = [_event(T0, "global_batch_size", 100), _event(T0, "train_samples", 1000)]
    t = T0 + 1000
    for first, count, dur_ms in ((1, 2, 10_000), (3, 4, 16_000), (7, 4, 16_400)):
        lines.append(_event(t, "block_start", first_epoch_num=first, epoch_count=count))
        t += dur_ms
        lines.append(_event(t, "eval_start", epoch_num=first + count - 1))
        t += 2000
        lines.append(_event(t, "eval_stop", epoch_num=first + count - 1))
        lines.append(_event(t, "block_stop", first_epoch_num=first, epoch_count=count))
    p = tmp_path / "result_0.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_blocks_are_windows_of_epochs(tmp_path: Path) -> None:
    r = read_logs([_log(tmp_path)])
    t = r.table
    # step = the block's last epoch; step time = block seconds / epochs; samples = one epoch
    assert t["step"].tolist() == [2, 6, 10]
    assert t["step_time_s"].tolist() == pytest.approx([5.0, 4.0, 4.1])
    assert (t["samples"] == 1000).all()
    assert r.warmup_rows == 1


def test_throughput_is_samples_over_block_time_after_the_first_block(tmp_path: Path) -> None:
    s = analyze_logs([_log(tmp_path)]).summary
    # steady = blocks 2 and 3: 8 epochs × 1000 samples over 16 + 16.4 s (evaluation excluded)
    assert s.warmup_steps == 1
    assert s.wall_time_s == pytest.approx(32.4)
    assert s.iterations == 8  # epochs
    assert s.throughput_wallclock_samples_per_s == pytest.approx(8000 / 32.4)


def test_warmup_option_wins(tmp_path: Path) -> None:
    res = analyze_logs([_log(tmp_path)], warmup=2)
    # the user's --warmup 2 leaves block 3 alone: 4000 samples / 16.4 s
    assert res.warmup.method == "user"
    assert res.summary.throughput_wallclock_samples_per_s == pytest.approx(4000 / 16.4)


def test_one_block_is_not_all_warm_up(tmp_path: Path) -> None:
    p = tmp_path / "one.txt"
    p.write_text(
        "\n".join(
            [
                _event(T0, "train_samples", 1000),
                _event(T0 + 1, "block_start", first_epoch_num=1, epoch_count=4),
                _event(T0 + 20_001, "eval_start", epoch_num=4),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    r = read_logs([p])
    assert r.warmup_rows == 0
    # 4 epochs in 20 s: 5 s per epoch
    assert r.table["step_time_s"].tolist() == pytest.approx([5.0])


def _bert(tmp_path: Path, *, with_eval_events: bool) -> Path:
    """NVIDIA-BERT-style log: block_start at 0 s, eval points every 10 steps at 5, 9, 13 s (each
    followed by its global_steps line), no global_batch_size event, train_samples 960 = 30 steps
    × 32 at the end, then the run's own summary, whose rate counts max_steps=50 rather than the
    30 steps run: 50 × 32 / raw_train_time 20 s = 80.0)."""
    lines = [_event(T0, "block_start", first_epoch_num=1, epoch_count=1)]
    lines.append("Namespace(max_steps=50.0, train_batch_size=32)")
    for step, t_s in ((10, 5), (20, 9), (30, 13)):
        if with_eval_events:  # a 1 s evaluation just before each point
            lines.append(_event(T0 + (t_s - 1) * 1000, "eval_start"))
            lines.append(_event(T0 + t_s * 1000, "eval_stop"))
        lines.append(_event(T0 + t_s * 1000, "eval_accuracy", 0.5))
        lines.append(f"{{'global_steps': {step}, 'eval_loss': 1.0}}")
    lines.append(_event(T0 + 13_000, "train_samples", 960))
    lines.append(
        "{'e2e_time': 21.0, 'training_sequences_per_second': 80.0, 'raw_train_time': 20.0}"
    )
    p = tmp_path / "bert.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_eval_points_step_time_and_batch_from_train_samples(tmp_path: Path) -> None:
    r = read_logs([_bert(tmp_path, with_eval_events=False)])
    t = r.table
    # windows 0→5 s, 5→9 s, 9→13 s of 10 steps each; batch 960 / 30 steps = 32
    assert t["step"].tolist() == [10, 20, 30]
    assert t["step_time_s"].tolist() == pytest.approx([0.5, 0.4, 0.4])
    assert (t["samples"] == 32).all()
    assert any("evaluation time included" in w for w in r.warnings)


def test_eval_time_is_taken_out_when_the_log_times_it(tmp_path: Path) -> None:
    t = read_logs([_bert(tmp_path, with_eval_events=True)]).table
    # each window loses its 1 s evaluation: 4 s, 3 s, 3 s over 10 steps
    assert t["step_time_s"].tolist() == pytest.approx([0.4, 0.3, 0.3])


def test_the_logs_own_rate_is_shown_and_checked(tmp_path: Path) -> None:
    s = analyze_logs([_bert(tmp_path, with_eval_events=False)], warmup=0).summary
    assert s.log_throughput_samples_per_s == pytest.approx(80.0)
    src = s.log_throughput_source
    # 80.0 × 20.0 s = 1,600 sequences = 50 steps of 32 (max_steps), but 960 were trained
    assert "it counts 1,600 sequences = 50 steps of 32 (max_steps 50 in the arguments)" in src
    assert "the log ran 30; train_samples 960 / 20.0 s = 48.0/s" in src
    # measured here: 30 steps × 32 over 13 s of windows
    assert s.throughput_wallclock_samples_per_s == pytest.approx(960 / 13.0)


@pytest.mark.parametrize("last", ["0", "9" * 400])
def test_eval_points_with_a_step_of_zero_or_beyond_a_float_are_dropped(
    tmp_path: Path, last: str
) -> None:
    # found by the fuzz target: the batch was train_samples / last step (ZeroDivisionError at
    # step 0) and a 400-digit step overflowed float(); both are bad rows, never a traceback
    p = _bert(tmp_path, with_eval_events=False)
    text = p.read_text().replace("{'global_steps': 30,", "{'global_steps': " + last + ",")
    p.write_text(text)
    r = read_logs([p])
    assert r.table["step"].tolist() == [10, 20]  # the last window is dropped, said on stderr
    assert r.warnings
