"""Markdown summary and GitHub annotations: every sample, size cap, escaping."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from xpuperf.analysis import analyze
from xpuperf.findings import Finding, Severity
from xpuperf.pipeline import analyze_logs
from xpuperf.report.markdown import (
    MAX_BYTES,
    github_annotations,
    md_escape,
    render_markdown,
)
from xpuperf.synth import Scenario, generate

SCENARIOS = ["healthy_8rank", "slow_rank_16rank", "periodic_spikes_8rank", "single_card"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_sample(samples: Path, scenario: str) -> None:
    result = analyze_logs([samples / scenario])
    text = render_markdown(result)
    assert text.startswith("## xpuperf analyze\n")
    assert f"| ranks | {result.summary.ranks}" in text
    assert len(text.encode()) < MAX_BYTES
    for f in result.findings:
        assert f"| {f.code} |" in text


def test_slow_rank_straggler_row(samples: Path) -> None:
    text = render_markdown(analyze_logs([samples / "slow_rank_16rank"]))
    assert "| deterministic | 5 | node00 |" in text


def test_minimal_run() -> None:
    result = analyze(pd.DataFrame({"rank": [0, 0], "step": [1, 2], "step_time_s": [0.5, 0.7]}))
    assert "unknown" in render_markdown(result)


def test_escaping_of_log_strings() -> None:
    assert md_escape("<script>|x\ny") == "&lt;script&gt;\\|x y"
    assert md_escape("[a](javascript:x)") == "\\[a\\](javascript:x)"
    table = generate(Scenario(ranks=4, cards_per_node=2, steps=40, slow_ranks={1: 0.2}, seed=5))
    table["node"] = table["node"].str.replace("node", "</script><b>|").astype("string")
    text = render_markdown(analyze(table))
    assert "<script" not in text
    assert "<b>" not in text
    assert "</script" not in text
    assert "&lt;/script&gt;&lt;b&gt;\\|00" in text


def test_size_cap_with_huge_findings() -> None:
    result = analyze_logs([Path(__file__).resolve().parents[2] / "sample_logs" / "healthy_8rank"])
    big = Finding("XP401", Severity.WARNING, "x" * 200_000)
    result.findings = [big] * 20
    text = render_markdown(result)
    assert len(text.encode()) <= MAX_BYTES
    assert "more in the JSON" in text or "cut to keep the summary small" in text


def test_github_annotations_escape_and_skip_info(samples: Path) -> None:
    result = analyze_logs([samples / "slow_rank_16rank"])
    lines = github_annotations(result)
    title = "::warning title=XP101 straggler rank (deterministic or intermittent)::rank 5"
    assert lines[0].startswith(title)
    assert all(not ln.startswith("::notice") for ln in lines)  # info findings are not annotated
    assert all("\n" not in ln for ln in lines)
    result.findings = [
        Finding("XP401", Severity.ERROR, "100% bad\n::error::injected"),
        *[Finding("XP404", Severity.INFO, "i")] * 3,
    ]
    assert github_annotations(result) == [
        "::error title=XP401 rows skipped while reading::100%25 bad%0A::error::injected"
    ]
