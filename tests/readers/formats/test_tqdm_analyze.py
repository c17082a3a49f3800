"""``xpuperf analyze`` on a log whose only timing is a tqdm bar, end to end (in-process CLI, JSON
report); the expected figures are worked out by hand from the schedule that wrote
tests/data/formats_tqdm/hf_trainer_2gpu_torchrun.log (make_samples.py) and the rows of
test_tqdm.py::test_hf_trainer_banner_gives_samples_and_world_size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpuperf.cli import app as cli_app

LOG = Path(__file__).resolve().parents[2] / "data" / "formats_tqdm" / "hf_trainer_2gpu_torchrun.log"


def test_analyze_hf_trainer_bar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    with pytest.raises(SystemExit) as exc:
        cli_app.main(["analyze", str(LOG), "--warmup", "0", "--json", str(report)])
    assert int(exc.value.code or 0) == 0
    err = capsys.readouterr().err
    assert "one rank's lines of a 2-card job" in err  # the echoed 'torchrun --nproc_per_node=2'
    assert "per-device batch 8 × gradient accumulation 4 = 32" in err
    s = json.loads(report.read_text(encoding="utf-8"))["summary"]
    assert s["ranks"] == 2
    assert s["steps"] == 13  # 13 windows
    # rows (step: s per step): 12: 20/12; 28, 44, 60, 76, 100, 117, 133, 149: 1.25; 158: 21/9;
    # 166: 2.5; 178: 20/12; 200: 28/22 — the median of 13 is 1.25
    assert s["step_time_s"]["median"] == pytest.approx(1.25)
    assert s["throughput_samples_per_s"] == pytest.approx(2 * 32 / 1.25)  # 51.2, 2 cards × 32
    # each row stands for the steps since the row before (the first: the median gap, 16):
    # 16+16+16+16+16+24+17+16+16+9+8+12+22 = 204 steps (step 101, after the evaluation, is
    # counted in the row at 117 at that row's pace)
    assert s["iterations"] == 204
    wall = 16 * 20 / 12 + 4 * 16 * 1.25 + 24 * 1.25 + 17 * 1.25 + 2 * 16 * 1.25 + 21 + 20 + 20 + 28
    assert s["wall_time_s"] == pytest.approx(wall)  # 286.917 s
    assert s["wallclock_source"] == "step_times"
    assert s["throughput_wallclock_samples_per_s"] == pytest.approx(204 * 64 / wall)  # 45.5
    assert s["throughput_per_card_wallclock_samples_per_s"] == pytest.approx(204 * 32 / wall)


def test_a_lightning_console_beside_step_logs_is_job_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the step logs are the CSVs; the Lightning console (a bar and framework warnings) is the
    # job's output, read for its warnings only — as before there was a tqdm reader
    root = Path(__file__).resolve().parents[3]
    csvs = root / "sample_logs" / "periodic_spikes_8rank"
    console = root / "tests" / "data" / "events_lightning_spawn" / "spawn.log"
    with pytest.raises(SystemExit) as exc:
        cli_app.main(["analyze", str(csvs), str(console), "-q"])
    assert int(exc.value.code or 0) == 0
    err = capsys.readouterr().err
    assert f"{console}: job output without step records" in err
