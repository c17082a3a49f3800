"""Detectron2 events, trainer_state.json and --world-size, on the samples in tests/data.

Expected values are the facts in each folder's README, read off the files by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from xpuperf.cli.app import app
from xpuperf.errors import InputError
from xpuperf.pipeline import analyze_logs
from xpuperf.readers import read_logs

DATA = Path(__file__).resolve().parents[2] / "data"
D2 = DATA / "formats_detectron2"
STATE = DATA / "formats_hf_trainer_state" / "01_trainer_state.json"
MEGATRON = next((DATA / "formats_megatron").glob("36_*"))


def test_detectron2_running_average_log() -> None:
    res = read_logs([D2 / "01_trainlog_detectron2-d2go-events.txt"])
    t = res.table
    assert t["step"].tolist() == [19, 39, 59, 79, 99]
    assert t["step_time_s"].tolist() == [0.3636, 0.3633, 0.3147, 0.2872, 0.2854]
    assert float(t["step_time_s"].median()) == 0.3147
    assert float(t["data_s"].median()) == 0.0555
    assert any("average since the start" in w for w in res.warnings)


def test_detectron2_last_time_and_a_line_without_time() -> None:
    res = read_logs([D2 / "02_trainlog_detectron2-last-time.txt"])
    t = res.table
    assert t["step"].tolist() == [19, 39, 59, 79]
    assert t["step_time_s"].tolist() == [0.3812, 0.4025, 0.3790, 0.3855]
    assert float(t["step_time_s"].median()) == pytest.approx(0.38335)
    assert float(t["data_s"].median()) == pytest.approx(0.02005)
    assert any(":6: skipped 1 row" in w and "without 'time:'" in w for w in res.warnings)
    assert not any("average since the start" in w for w in res.warnings)


def test_trainer_state_summary_row() -> None:
    res = read_logs([STATE])
    t = res.table
    assert len(t) == 1
    assert t["step"].tolist() == [100]
    assert t["step_time_s"].tolist() == [2.5]  # 250 s / 100 steps
    assert t["samples"].tolist() == pytest.approx([512.0])  # 204.8 samples/s × 2.5 s
    assert any("no per-step timing" in w for w in res.warnings)
    assert any("--world-size" in w for w in res.warnings)


def test_trainer_state_with_world_size() -> None:
    res = read_logs([STATE], world_size=64)
    t = res.table
    assert t["rank"].nunique() == 64
    assert len(t) == 64
    assert t["samples"].unique().tolist() == pytest.approx([8.0])  # 512 / 64
    assert any("read as 64 cards" in w for w in res.warnings)


def test_trainer_state_timed_entries(tmp_path: Path) -> None:
    # ms-swift style per-step timing keys: step time from elapsed_time differences
    hist = [
        {"loss": 1.0, "step": 10, "elapsed_time": "1m 40s"},
        {"loss": 0.9, "step": 20, "elapsed_time": "3m 0s"},
        {"loss": 0.8, "step": 30, "elapsed_time": "4m 30s"},
    ]
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps({"global_step": 30, "log_history": hist}), encoding="utf-8")
    t = read_logs([p]).table
    assert t["step"].tolist() == [20, 30]
    assert t["step_time_s"].tolist() == pytest.approx([8.0, 9.0])  # 80 s / 10, 90 s / 10


def test_plain_json_list_still_reads_as_jsonl(tmp_path: Path) -> None:
    p = tmp_path / "rank0.json"
    p.write_text('[{"step": 1, "step_time_s": 0.5}, {"step": 2, "step_time_s": 0.25}]\n')
    assert read_logs([p]).table["step_time_s"].tolist() == [0.5, 0.25]


def test_world_size_on_a_megatron_log() -> None:
    one = analyze_logs([MEGATRON])
    many = analyze_logs([MEGATRON], world_size=64)
    assert one.summary.ranks == 1
    assert many.summary.ranks == 64
    # the job throughput does not change; per card it is the job's / 64
    assert many.summary.throughput_samples_per_s == pytest.approx(
        one.summary.throughput_samples_per_s
    )
    assert many.summary.throughput_per_card_samples_per_s == pytest.approx(
        one.summary.throughput_samples_per_s / 64
    )
    # 1024 global samples per step over a median step of 127.4 s (the 4 step times of the file)
    med = float(np.median([126.9953, 125.5537, 127.8045, 130.5549]))
    assert one.summary.throughput_samples_per_s == pytest.approx(1024 / med, rel=1e-3)


def test_world_size_on_per_rank_logs_warns(write) -> None:
    p0 = write("rank0.csv", "step,step_time_s\n1,0.5\n2,0.5\n")
    p1 = write("rank1.csv", "step,step_time_s\n1,0.5\n2,0.6\n")
    res = read_logs([p0, p1], world_size=8)
    assert res.table["rank"].nunique() == 2
    assert any("--world-size 8 given, but the logs hold 2 ranks" in w for w in res.warnings)


def test_one_rank_of_many_stands_for_all(write) -> None:
    # one rank's file of an 8-card job (torchrun --local-ranks-filter 0): the rank stands for
    # all 8, its samples per card kept, so the job throughput is 8 × this rank's
    p = write("rank0.csv", "step,step_time_s,samples\n1,0.5,32\n2,0.5,32\n")
    res = read_logs([p], world_size=8)
    assert res.job_level_cards == 8
    assert res.table["rank"].nunique() == 8
    assert (res.table["samples"] == 32).all()
    assert any("one rank's lines of a 8-card job (--world-size 8" in w for w in res.notes)


@pytest.mark.parametrize("bad", [0, -3, 2.5, "x"])
def test_bad_world_size(bad: object) -> None:
    with pytest.raises(InputError, match="world size must be a whole number"):
        read_logs([MEGATRON], world_size=bad)  # type: ignore[arg-type]


def test_cli_world_size() -> None:
    r = CliRunner().invoke(app, ["analyze", str(MEGATRON), "--world-size", "64", "--json", "-"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["summary"]["ranks"] == 64
    r = CliRunner().invoke(app, ["analyze", str(MEGATRON), "--world-size", "0"])
    assert r.exit_code == 2
