"""Every renderer over every bundled sample and over a minimal run (style.md rule 7)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from xpuperf.analysis import analyze
from xpuperf.analysis.series import job_steps
from xpuperf.pipeline import analyze_logs
from xpuperf.report.json_report import SCHEMA, render_json, to_dict
from xpuperf.report.terminal import render_terminal
from xpuperf.synth import Scenario, generate

SCENARIOS = ["healthy_8rank", "slow_rank_16rank", "periodic_spikes_8rank", "single_card"]


def _terminal(result) -> str:
    buf = io.StringIO()
    render_terminal(result, Console(file=buf, width=120, color_system=None))
    return buf.getvalue()


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_renderer_every_sample(samples: Path, scenario: str) -> None:
    result = analyze_logs([samples / scenario])
    doc = json.loads(render_json(result))
    assert doc["schema"] == SCHEMA
    text = _terminal(result)
    assert f"{doc['summary']['ranks']} rank(s)" in text


def test_minimal_run_renders() -> None:
    # two steps of one rank, no phases, no samples: everything optional is null, nothing crashes
    table = pd.DataFrame({"rank": [0, 0], "step": [1, 2], "step_time_s": [0.5, 0.7]})
    result = analyze(table)
    doc = to_dict(result)
    assert doc["summary"]["throughput_samples_per_s"] is None
    assert doc["breakdown"]["source"] == "none"
    assert doc["breakdown"]["speedup"] is None
    assert "unknown" in _terminal(result)


def test_json_contract_values_match_independent_computation() -> None:
    sc = Scenario(ranks=8, steps=120, warmup_steps=5, batch_per_rank=32, seed=3)
    table = generate(sc)
    result = analyze(table)
    doc = to_dict(result)
    # independent: job step time per step = median over ranks; steady = after planted warm-up
    per_step = table.groupby("step")["step_time_s"].median().to_numpy()[sc.warmup_steps :]
    s = doc["summary"]
    assert s["ranks"] == 8
    assert s["warmup_steps"] == sc.warmup_steps
    assert s["steps"] == sc.steps - sc.warmup_steps
    assert s["step_time_s"]["median"] == pytest.approx(np.median(per_step))
    assert s["step_time_s"]["p99"] == pytest.approx(np.percentile(per_step, 99))
    assert s["throughput_samples_per_s"] == pytest.approx(np.median(8 * 32 / per_step))
    assert doc["jitter"]["cv"] == pytest.approx(np.std(per_step, ddof=1) / np.mean(per_step))
    assert doc["stragglers"] == []
    b = doc["breakdown"]
    assert b["source"] == "phases"
    total = sum(b[k] for k in ("compute_fraction", "comm_fraction", "data_fraction"))
    assert total + b["other_fraction"] == pytest.approx(1.0)
    assert {f["code"] for f in doc["findings"]} >= {"XP104", "XP404"}
    for f in doc["findings"]:
        assert set(f) >= {"code", "severity", "message"}


def test_job_series_matches_json_steps() -> None:
    table = generate(Scenario(ranks=4, steps=40, seed=1))
    assert len(job_steps(table)) == 40


def test_log_strings_are_escaped_in_terminal() -> None:
    table = generate(Scenario(ranks=2, steps=30, seed=2))
    table["node"] = table["node"].astype("string").str.replace("node", "[bold]x[/bold]<script>")
    text = _terminal(analyze(table))
    assert "Traceback" not in text


def test_json_job_steps_are_thinned_beyond_the_cap(monkeypatch) -> None:
    # 3e7 steady steps grew past 17 GB while the JSON was built (issue 21 QA): the series is
    # thinned to every k-th step past MAX_JSON_STEPS, and the document says so
    import pandas as pd

    from xpuperf.analysis import analyze
    from xpuperf.report import json_report

    t = pd.DataFrame({"rank": 0, "step": range(1, 1001), "step_time_s": 0.1})
    res = analyze(t, warmup=0)
    monkeypatch.setattr(json_report, "MAX_JSON_STEPS", 300)
    doc = json_report.to_dict(res)
    assert doc["job_steps_thinned"] == {"every": 4, "steady_steps": 1000}  # ⌈1000 / 300⌉
    assert [r["step"] for r in doc["job_steps"]][:3] == [1, 5, 9]
    assert len(doc["job_steps"]) == 250
