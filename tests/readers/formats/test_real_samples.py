"""Real logs written by other people (tests/data/formats_*, copied from the shared corpus).

Every value asserted here was read off the file by hand (corpus README facts, re-checked against
the file); the reader must pick the format without ``--format``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xpuperf.pipeline import analyze_logs
from xpuperf.readers import choose_format, open_source, read_logs
from xpuperf.readers.paths import Found

DATA = Path(__file__).resolve().parents[2] / "data"


def one(folder: str, prefix: str) -> Path:
    (path,) = (DATA / folder).glob(f"{prefix}_*")
    return path


def sniffed(path: Path) -> str:
    found = Found(path, True, (path.name,))
    fmt = choose_format(open_source(found), found, None)
    assert fmt is not None
    return fmt.name


SAMPLES = [
    ("formats_megatron", "36", "megatron"),
    ("formats_megatron", "27", "megatron"),
    ("formats_deepspeed", "26", "deepspeed"),
    ("formats_deepspeed", "29", "deepspeed"),
    ("formats_hf_trainer", "40", "hf_trainer"),
    ("formats_torchtitan", "30", "torchtitan"),
    ("formats_mmengine", "37", "mmengine"),
    ("formats_maskrcnn", "07", "maskrcnn"),
    ("formats_maskrcnn", "39", "maskrcnn"),
    ("formats_tfcnn", "32", "tf_cnn_benchmarks"),
    ("formats_tfcnn", "33", "tf_cnn_benchmarks"),
    ("formats_keras", "10", "keras"),
    ("formats_keras", "11", "keras"),
    ("formats_mlperf", "04", "mlperf"),
    ("formats_mlperf", "05", "mlperf"),
    ("formats_mlperf", "08", "mlperf"),
    ("formats_mlperf", "09", "mlperf"),
    ("formats_mindspore", "44", "mindspore"),
    ("formats_paddle", "34", "paddle"),
]


@pytest.mark.parametrize(("folder", "prefix", "name"), SAMPLES)
def test_format_is_sniffed_and_analyze_runs(folder: str, prefix: str, name: str) -> None:
    path = one(folder, prefix)
    assert sniffed(path) == name
    batch = 64.0 if prefix == "32" else None  # the Horovod excerpt does not state its batch
    result = analyze_logs([path], batch_size=batch)
    assert result.summary.steps >= 1


def test_ascend_csv_is_claimed_by_content() -> None:
    assert sniffed(DATA / "formats_ascend" / "step_trace_time.csv") == "ascend_step_trace"
    assert sniffed(DATA / "readers_mixed" / "gpu2.tsv") == "tsv"


def test_megatron_llm_36() -> None:
    t = read_logs([one("formats_megatron", "36")]).table
    assert t["step"].tolist() == [182, 183, 184, 185]
    np.testing.assert_allclose(t["step_time_s"], [126.9953, 125.5537, 127.8045, 130.5549])
    assert t["step_time_s"].median() == pytest.approx(127.3999)
    assert (t["samples"] == 1024).all()  # global batch size
    s = analyze_logs([one("formats_megatron", "36")]).summary
    assert s.throughput_samples_per_s == pytest.approx(1024 / 127.3999, rel=1e-3)  # ≈ 8.0


def test_gptneox_27_mixed_timers() -> None:
    r = read_logs([one("formats_megatron", "27")])
    row = r.table.iloc[0]
    assert row["step"] == 11
    assert row["step_time_s"] == pytest.approx(4.6229)
    assert row["samples"] == 32  # 6.922 samples/s × 4.6229 s
    # DeepSpeed global timers win over the NeoX ones
    assert row["forward_s"] == pytest.approx(0.64891)
    assert row["backward_s"] == pytest.approx(1.99187)  # backward_inner
    assert row["comm_s"] == pytest.approx(0.16237)  # backward_allreduce
    assert row["optimizer_s"] == pytest.approx(1.70623)
    assert any("whole job" in w for w in r.warnings)


def test_deepspeed_26_microsteps() -> None:
    t = read_logs([one("formats_deepspeed", "26")]).table
    assert len(t) == 8
    assert t["rank"].nunique() == 1
    assert t["forward_s"].between(0.183, 0.204).all()
    assert t["backward_s"].between(0.323, 0.339).all()
    assert t["comm_s"].max() <= 0.00005  # 1 GPU: no communication
    assert t["optimizer_s"].max() < 0.001
    np.testing.assert_allclose(t["step_time_s"].iloc[0], (193.65 + 329.25 + 0.92) / 1000)


def test_deepspeed_29_tqdm_glued() -> None:
    t = read_logs([one("formats_deepspeed", "29")]).table
    assert t["step"].tolist() == [1, 2]
    np.testing.assert_allclose(t["forward_s"], [0.02741, 0.02746])
    np.testing.assert_allclose(t["comm_s"], [0.0224, 0.0225])
    np.testing.assert_allclose(t["optimizer_s"], [0.07282, 0.0726])
    np.testing.assert_allclose(t["backward_s"], [0.05099, 0.05105])


def test_ms_swift_40_timestamps() -> None:
    r = read_logs([one("formats_hf_trainer", "40")])
    t = r.table
    assert t["step"].tolist() == [300, 305, 310]
    # 03:50:19.0296 → 03:50:42.0157 → 03:51:06.1230 → 03:51:30.1854, 5 steps apart
    np.testing.assert_allclose(t["step_time_s"], [4.5972128, 4.8214519, 4.8124914], rtol=1e-6)
    assert "first row of each rank has no step time" in r.warnings[0]


def test_torchtitan_30_dedup() -> None:
    r = read_logs([one("formats_torchtitan", "30")])
    t = r.table
    assert t["rank"].unique().tolist() == [0]
    assert t["step"].tolist() == [5]
    assert t["step_time_s"].iloc[0] == pytest.approx(1.637)  # 19:46:19,145 − 19:46:17,508
    assert any("up to 7 times" in w for w in r.warnings)


def test_mmengine_37_data_bound() -> None:
    t = read_logs([one("formats_mmengine", "37")]).table
    assert t["step"].tolist() == [24, 25, 26, 27, 28, 29]
    assert t["step_time_s"].median() == pytest.approx(8.8806)
    assert t["data_s"].median() == pytest.approx(7.06585)
    assert t["data_s"].sum() / t["step_time_s"].sum() == pytest.approx(0.80, abs=0.01)


def test_maskrcnn_07_interleaved_ranks() -> None:
    r = read_logs([one("formats_maskrcnn", "07")])
    t = r.table
    assert t["rank"].nunique() == 8
    steps = sorted(t["step"].unique())
    assert len(steps) == 26
    assert steps[:2] == [50, 100]
    assert steps[-2:] == [1250, 17150]
    assert (t.groupby("step").size() == 8).all()
    assert t["step_time_s"].median() == pytest.approx(0.2061)
    assert t["data_s"].median() == pytest.approx(0.0003)
    assert any("8 ranks print into this log without rank ids" in w for w in r.warnings)


def test_maskrcnn_39_breakdown() -> None:
    t = read_logs([one("formats_maskrcnn", "39")]).table
    row = t.iloc[0]
    assert row["step"] == 1420
    assert row["step_time_s"] == pytest.approx(0.5229)
    assert row["data_s"] == pytest.approx(0.0149 + 0.1155)  # data + cpu2cuda (H2D copy)
    assert row["forward_s"] == pytest.approx(0.2449)
    assert row["backward_s"] == pytest.approx(0.0855)


def test_horovod_32_world_size_from_repeats() -> None:
    with pytest.raises(Exception, match="--batch-size"):
        read_logs([one("formats_tfcnn", "32")])
    r = read_logs([one("formats_tfcnn", "32")], batch_size=64)
    t = r.table
    assert t["rank"].nunique() == 16
    first = t[t["step"] == 1]
    assert len(first) == 16
    thr = 64 / first["step_time_s"]  # per-rank images/s
    assert thr.sum() == pytest.approx(47.9 * 15 + 48.0, rel=1e-9)  # ≈ 766 total
    assert any("16 lines per step" in w for w in r.warnings)


def test_tfcnn_33_running_mean() -> None:
    r = read_logs([one("formats_tfcnn", "33")])
    # the header states 512 global / 64.0 per device: 8 cards, so the job-level lines are
    # spread over 8 ranks with 512 / 8 = 64 samples each (per-card figures = job / 8)
    assert r.job_level_cards == 8
    assert any("world size read from the log's header" in w for w in r.warnings)
    t = r.table[r.table["rank"] == 0]
    assert r.table["rank"].nunique() == 8
    assert t["step"].tolist() == [1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    assert (r.table["samples"] == 64).all()
    # the windows add up to the log's running mean: 100 steps × 512 / 1088.9 img/s
    steps_per_row = np.diff([0, *t["step"].tolist()])
    total = float((t["step_time_s"] * steps_per_row).sum())
    assert 100 * 512 / total == pytest.approx(1088.76, rel=2e-4)
    # --world-size wins over the header, with a note naming both
    r1 = read_logs([one("formats_tfcnn", "33")], world_size=1)
    assert r1.job_level_cards == 1
    assert any("the log states 8" in w for w in r1.warnings)


@pytest.mark.parametrize(
    ("prefix", "warm", "median_rest"), [("10", 110.12, 324.9), ("11", 763.48, 2505.19)]
)
def test_keras_timehistory(prefix: str, warm: float, median_rest: float) -> None:
    r = read_logs([one("formats_keras", prefix)])
    # the configuration printed before training: 'num_gpus': 1 (file 10) / 8 (file 11), one
    # worker ('worker_hosts': None): the job-level lines are spread over that many cards
    cards = {"10": 1, "11": 8}[prefix]
    assert r.job_level_cards == cards
    t = r.table[r.table["rank"] == 0]
    assert t["step"].tolist() == [100, 200, 300, 400, 500, 600]
    fps = t["samples"] * cards / t["step_time_s"]
    assert fps.iloc[0] == pytest.approx(warm, rel=2e-3)
    assert fps.iloc[1:].median() == pytest.approx(median_rest, rel=2e-3)


def test_keras_speedup_without_world_size() -> None:
    # 8 GPUs: median 2505.2 examples/s (corpus README), one GPU 324.9: per-card 313.1, speedup
    # 2505.19 / 8 / 324.9 = 0.964 — the corpus' 96.4 %, with no --world-size given
    res = analyze_logs([one("formats_keras", "11")], baseline=str(one("formats_keras", "10")))
    assert res.summary.ranks == 8
    assert res.breakdown.speedup == pytest.approx(2505.19 / 8 / 324.9, rel=3e-3)


def test_mlperf_04_05_speed_and_scaling() -> None:
    r4 = read_logs([one("formats_mlperf", "04")])
    r5 = read_logs([one("formats_mlperf", "05")])
    # the cards from MLLOG: global_batch_size 3264 / (d_batch_size 408 × 1 accumulation) = 8,
    # and 3264 / 204 = 16 (the corpus: 8 and 16 A100s)
    assert (r4.job_level_cards, r5.job_level_cards) == (8, 16)
    t4 = r4.table[r4.table["rank"] == 0]
    t5 = r5.table[r5.table["rank"] == 0]
    assert len(t4) == 665
    assert len(t5) == 658
    fps4 = (t4["samples"] / t4["step_time_s"]).median()  # per card: job / 8
    fps5 = (t5["samples"] / t5["step_time_s"]).median()  # per card: job / 16
    assert fps4 * 8 == pytest.approx(20783.49, rel=1e-6)
    assert fps5 * 16 == pytest.approx(35878.065, rel=1e-6)
    assert fps5 / fps4 == pytest.approx(0.863, abs=0.001)  # 86 % scaling, 8 → 16 GPUs
    assert (t4["samples"] == 3264 / 8).all()


def test_mlperf_08_blocks() -> None:
    t = read_logs([one("formats_mlperf", "08")]).table
    assert len(t) == 10
    fps = t["samples"] / t["step_time_s"]
    assert fps.iloc[0] == pytest.approx(2 * 1281167 / 197.882, rel=1e-6)  # 12 949 img/s
    assert fps.iloc[1:].between(13100, 13200).all()


def test_mlperf_09_bert_eval_points() -> None:
    r = read_logs([one("formats_mlperf", "09")])
    assert r.table["step"].max() == 1026
    assert r.job_level_cards == 64  # 'NN: ' srun -l prefixes 0…63
    # 18 eval points; the first window runs from block_start (13.09 s for 57 steps: warm-up)
    t0 = r.table[r.table["rank"] == 0]
    assert len(t0) == 18
    assert t0["step_time_s"].iloc[0] == pytest.approx((1621400061.051 - 1621400047.961) / 57)
    # no global_batch_size event: 3,151,872 train_samples / 1,026 steps = 3,072, / 64 cards = 48
    assert (t0["samples"] == 48).all()
    assert any("64 ranks print into this log" in w for w in r.warnings)


def test_mindspore_44_two_runs() -> None:
    r = read_logs([one("formats_mindspore", "44")])
    t = r.table
    assert t["step"].tolist() == [312, 624, 935, 1247, 1559]  # epochs of ≈ 312 steps
    assert t["step_time_s"].iloc[0] == pytest.approx(0.588613)
    assert t["step_time_s"].iloc[-1] == pytest.approx(0.281867)
    assert any("holds 2 runs" in w for w in r.warnings)


def test_paddle_34_input_bound() -> None:
    t = read_logs([one("formats_paddle", "34")]).table
    assert t["step"].tolist() == [11550, 11560, 11570, 11580]
    assert (t["samples"] == 96).all()  # ips × batch_cost: 960 samples over 10 iterations
    np.testing.assert_allclose(
        (t["samples"] / t["step_time_s"]).round(2), [16.06, 25.44, 34.51, 21.84], atol=0.01
    )
    np.testing.assert_allclose((t["data_s"] / t["step_time_s"]).round(2), [0.89, 0.84, 0.80, 0.87])
    assert t["step_time_s"].median() == pytest.approx(4.08538)


def test_ascend_step_trace() -> None:
    t = read_logs([DATA / "formats_ascend" / "step_trace_time.csv"]).table
    assert t["step"].tolist() == [1, 2, 3, 4]
    np.testing.assert_allclose(t["step_time_s"], [0.25, 0.18, 0.18, 0.18])
    np.testing.assert_allclose(t["compute_s"], [0.18, 0.15, 0.151, 0.1495])
    np.testing.assert_allclose(t["comm_s"], [0.04, 0.022, 0.021, 0.0235])
    np.testing.assert_allclose(t["data_s"], [0.012, 0.003, 0.0025, 0.0028])
