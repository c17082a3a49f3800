"""A job whose card count the log does not state: the side a world size is needed for is
unknown, never a copy of the other (QA: Megatron-LLM 8.0 samples/s printed as "8.0 per card";
torchtitan's per-device tps printed as the job's).

Samples are written here; the expected values are worked out by hand in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpuperf.cli import app as cli_app
from xpuperf.pipeline import analyze_logs
from xpuperf.readers import read_logs
from xpuperf.report.rates_view import throughput_rows


def _megatron(tmp_path: Path) -> Path:
    """Four job-level Megatron lines, 2.0 s each, global batch 64, no world size anywhere."""
    lines = [
        f" iteration {i:8d}/    1000 | consumed samples: {i * 64:12d} | elapsed time per "
        "iteration (ms): 2000.0 | global batch size:    64 | lm loss: 2.5E+00 |"
        for i in range(1, 5)
    ]
    p = tmp_path / "megatron.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def _titan(tmp_path: Path) -> Path:
    """torchtitan without rank tags: 3 ranks print each step (steps 1-3, 2 s apart); tps 500
    per device. Step 1 has no step time (first line); steps 2 and 3 take 2 s each."""
    lines = []
    for step, sec in ((1, 0), (2, 2), (3, 4)):
        for _ in range(3):
            lines.append(
                f"[titan] 2026-01-01 10:00:{sec:02d},000 - root - INFO - step: {step}  loss: "
                "7.0  memory: 10.00GiB(10.00%)  tps: 500  tflops: 100.0  mfu: 10.00%"
            )
    p = tmp_path / "titan.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def _figures(s: object, unit: str) -> tuple[object, ...]:
    """(job wall-clock, job median step, per-card wall-clock, per-card median step)."""
    keys = ("wallclock_", "", "per_card_wallclock_", "per_card_")
    return tuple(getattr(s, f"throughput_{k}{unit}_per_s") for k in keys)


def test_job_level_log_without_world_size_has_no_per_card_figure(tmp_path: Path) -> None:
    s = analyze_logs([_megatron(tmp_path)], warmup=0).summary
    # 64 samples / 2.0 s = 32 samples/s for the job; cards unknown → per card unknown
    assert _figures(s, "samples") == (pytest.approx(32.0), pytest.approx(32.0), None, None)
    assert s.cards_unknown == "job"
    rows = dict(throughput_rows(s))
    assert rows["throughput"].startswith("32.0 samples/s wall-clock (job; ")
    assert rows["per card"] == "unknown (world size not in the log: pass --world-size N)"


def test_world_size_given_restores_per_card(tmp_path: Path) -> None:
    res = analyze_logs([_megatron(tmp_path)], warmup=0, world_size=8)
    # 32 samples/s over 8 cards = 4 per card
    assert res.summary.throughput_per_card_wallclock_samples_per_s == pytest.approx(4.0)
    assert res.summary.cards_unknown is None


def test_json_per_card_is_null(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli_app.main(["analyze", str(_megatron(tmp_path)), "--json", "-", "-q"])
    assert exc.value.code == 0
    s = json.loads(capsys.readouterr().out)["summary"]
    assert s["throughput_wallclock_samples_per_s"] == pytest.approx(32.0)
    assert s["throughput_per_card_wallclock_samples_per_s"] is None
    assert s["throughput_per_card_samples_per_s"] is None
    assert s["cards_unknown"] == "job"


def test_one_card_view_has_no_job_figure(tmp_path: Path) -> None:
    r = read_logs([_titan(tmp_path)])
    assert r.cards_unknown == "card"
    s = analyze_logs([_titan(tmp_path)], warmup=0).summary
    # tps 500 is per device: 500 tokens/s per card; the job (N × 500) is unknown
    assert _figures(s, "tokens") == (None, None, pytest.approx(500.0), pytest.approx(500.0))
    rows = dict(throughput_rows(s))
    assert rows["token throughput"].startswith("500 tokens/s per card wall-clock")
    assert rows["job"].startswith("unknown (the figures are one card's")


def test_one_card_view_with_world_size_is_n_times(tmp_path: Path) -> None:
    res = analyze_logs([_titan(tmp_path)], warmup=0, world_size=8)
    s = res.summary
    # 8 devices × 500 tokens/s = 4000 tokens/s for the job, 500 per card
    assert s.throughput_wallclock_tokens_per_s == pytest.approx(4000.0)
    assert s.throughput_per_card_wallclock_tokens_per_s == pytest.approx(500.0)
    assert s.cards_unknown is None


def test_a_single_rank_csv_is_not_unknown(tmp_path: Path) -> None:
    p = tmp_path / "rank0.csv"
    p.write_text("step,step_time_s,samples\n1,0.5,32\n2,0.5,32\n3,0.5,32\n", encoding="utf-8")
    res = analyze_logs([p], warmup=0)
    # one rank that is the whole run: 32 / 0.5 = 64 samples/s, and 64 per card
    assert res.summary.cards_unknown is None
    assert res.summary.throughput_per_card_wallclock_samples_per_s == pytest.approx(64.0)
