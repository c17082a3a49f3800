"""Scaling report renderers: every renderer over every scaling fixture; JSON as a whole dict."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from xpuperf.analysis.scaling import analyze_scaling
from xpuperf.readers.scaling import read_scaling_table
from xpuperf.report.scaling_section import (
    SCHEMA,
    render_scaling,
    render_scaling_markdown,
    scaling_document,
)

DATA = Path(__file__).resolve().parent.parent / "data"
REFUSED = {
    "scaling_tsv_no_baseline",
    "scaling_one_card_disagree",
    "scaling_one_row",
    "scaling_two_models",
}  # refused as one ladder (tests/analysis); fmt: skip
FIXTURES = [p for p in sorted(DATA.glob("scaling_*/*")) if p.parent.name not in REFUSED]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.parent.name)
def test_every_renderer_over_every_fixture(path: Path) -> None:
    res = analyze_scaling(read_scaling_table(path))
    doc = scaling_document([res])
    text = json.dumps(doc, allow_nan=False)  # no NaN leaks into the JSON
    assert json.loads(text)["schema"] == SCHEMA
    buf = io.StringIO()
    render_scaling([res], Console(file=buf, width=200, color_system=None))
    out = buf.getvalue()
    assert "checks:" in out
    assert "scaling.efficiency" in out
    md = render_scaling_markdown([res])
    assert sum(line.startswith(("| problem |", "| clean |", "| not checked |"))
               for line in md.splitlines()) == len(res.checks)  # fmt: skip


def test_json_document_of_the_internode_table() -> None:
    res = analyze_scaling(read_scaling_table(DATA / "scaling_csv_internode/scaling.csv"))
    doc = scaling_document([res])
    t = doc["tables"][0]
    assert doc["efficiency"] == pytest.approx(0.70)  # 9184/32/410
    assert [f["code"] for f in doc["findings"]] == ["XP310", "XP312"]
    assert t["location"] == "across nodes"
    assert t["mode"] == "weak"
    assert t["rows"][1] == {
        "cards": 8, "nodes": 1, "batch_per_card": 32, "throughput_samples_per_s": 3148.8,
        "throughput_per_card_samples_per_s": 393.6, "step_time_s": None, "run_time_s": None,
        "throughput_ratio": pytest.approx(7.68), "speedup": pytest.approx(0.96),
        "efficiency": pytest.approx(0.96),
        "reported_efficiency": 0.96, "reported_throughput_ratio": None, "scope": "one node",
        "batch_note": "", "line": 4,
    }  # fmt: skip
    assert t["intra"]["to_cards"] == 8
    assert t["inter"][0]["to_nodes"] == 2
    assert {c["name"]: c["status"] for c in doc["checks"]}["scaling.inter_node"] == "problem"


def test_markdown_escapes_source_and_evidence(tmp_path: Path) -> None:
    p = tmp_path / "a|b_<x>.md"
    p.write_text("| GPUs | img/s |\n|---|---|\n| 1 | 100 |\n| 2 | 150 |\n")
    md = render_scaling_markdown([analyze_scaling(read_scaling_table(p))])
    assert "a\\|b\\_&lt;x&gt;.md" in md  # pipe, underscore and angle brackets escaped
    assert "<x>" not in md


def test_markdown_checks_use_the_analyze_columns() -> None:
    """Same columns and order as ``xpuperf analyze`` (checks_view.rows: status, check title,
    evidence, codes), problems first."""
    res = analyze_scaling(read_scaling_table(DATA / "scaling_csv_internode/scaling.csv"))
    md = render_scaling_markdown([res])
    lines = md.splitlines()
    head = lines.index("| status | check | evidence | codes |")
    assert lines[head + 1] == "|---|---|---|---|"
    # 9184/32/410 = 0.70 < 0.90: the efficiency check is a problem with XP310, listed first
    first = lines[head + 2].split(" | ")
    assert first[0] == "| problem"
    assert first[1] == "scaling efficiency of every run"
    assert first[-1] == "XP310 |"
    assert "Checks — 2 problem(s)" in md


def test_grouped_results_carry_their_configuration() -> None:
    from xpuperf.analysis.scaling import analyze_scaling_groups

    res = analyze_scaling_groups(read_scaling_table(DATA / "scaling_two_models/table.md"))
    doc = scaling_document(res)
    assert [t["group"] for t in doc["tables"]] == ["ResNet-50", "VGG-16"]
    assert doc["efficiency"] == pytest.approx(0.75)  # min(2960/8/400, 1200/8/200)
    assert "\\[Network VGG-16\\]" in render_scaling_markdown(res)
