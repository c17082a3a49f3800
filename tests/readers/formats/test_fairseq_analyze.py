"""``xpuperf analyze`` on a fairseq ``train_inner`` log, end to end (in-process CLI, JSON report);
the expected figures are worked out by hand from tests/data/formats_fairseq/
train_inner_16gpu_srun_2021.log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpuperf.cli import app as cli_app

DATA = Path(__file__).resolve().parents[2] / "data" / "formats_fairseq"
LOG = DATA / "train_inner_16gpu_srun_2021.log"


def test_analyze_fairseq_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    with pytest.raises(SystemExit) as exc:
        cli_app.main(["analyze", str(LOG), "--json", str(report)])
    assert int(exc.value.code or 0) == 0
    err = capsys.readouterr().err
    assert "read as 16 cards" in err
    assert "'training on 16 devices' line" in err
    d = json.loads(report.read_text(encoding="utf-8"))
    s = d["summary"]
    assert s["ranks"] == 16  # 'training on 16 devices (GPUs/TPUs)'
    assert s["warmup_steps"] == 1  # update 100 (ups=1.73, start-up) vs ~2.94 after
    # steady ups 2.94, 2.95, 2.91, 1.72, 2.94, 2.96, 2.94: median 2.94
    assert s["step_time_s"]["median"] == pytest.approx(1 / 2.94)
    # the median step is update 200: wps=155301.5 for the job, / 16 per card
    assert s["throughput_tokens_per_s"] == pytest.approx(155301.5, rel=1e-5)
    assert s["throughput_per_card_tokens_per_s"] == pytest.approx(155301.5 / 16, rel=1e-5)
    assert s["throughput_samples_per_s"] == pytest.approx(1751.2 * 2.94)  # bsz × ups
    # wall clock from the timestamps: 12:00:56 → 12:04:45 = 229 s, + update 200's own 100 / 2.94 s;
    # tokens = 100 × Σ wpb of updates 200…800 = 100 × 369 653.9
    wall = 229 + 100 / 2.94
    assert s["wallclock_source"] == "timestamps"
    assert s["wall_time_s"] == pytest.approx(wall)
    assert s["throughput_wallclock_tokens_per_s"] == pytest.approx(36_965_390 / wall)
    assert s["throughput_per_card_wallclock_tokens_per_s"] == pytest.approx(36_965_390 / wall / 16)
    checks = {c["name"]: c["status"] for c in d["checks"]}
    assert checks["steps.stragglers"] == "not_checked"  # one line per update for all 16 cards
