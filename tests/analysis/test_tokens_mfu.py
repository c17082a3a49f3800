"""Tokens/s and MFU beside samples/s: summary, JSON, reports, gates, compare (issue 18).

Every expected number is worked out by hand in the comment next to it.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from xpuperf import gates as gt
from xpuperf.analysis import analyze
from xpuperf.compare import compare_runs, run_from_result
from xpuperf.errors import UsageError
from xpuperf.report.html import render_html
from xpuperf.report.json_report import to_dict
from xpuperf.report.markdown import render_markdown
from xpuperf.report.terminal import render_terminal


def _two_ranks(tokens: bool = True, mfu: bool = False) -> pd.DataFrame:
    """2 ranks × steps 1…40 of 1.0 s, step 30 a 3.0 s spike; 8 samples and 1000 tokens per rank."""
    rows = []
    for r in range(2):
        for s in range(1, 41):
            row = {"rank": r, "step": s, "step_time_s": 3.0 if s == 30 else 1.0, "samples": 8.0}
            if tokens:
                row["tokens"] = 1000.0
            if mfu:  # rank 0: 0.40 then 0.30 from step 21; rank 1: 0.44 throughout
                row["mfu"] = 0.44 if r else (0.40 if s <= 20 else 0.30)
            rows.append(row)
    return pd.DataFrame(rows)


def test_tokens_per_s_wallclock_and_median_step() -> None:
    s = analyze(_two_ranks(), warmup=0).summary
    # wall = 39 × 1.0 + 3.0 = 42 s; tokens = 40 steps × 2 ranks × 1000 = 80 000
    assert s.throughput_wallclock_tokens_per_s == pytest.approx(80_000 / 42)  # 1904.76
    assert s.throughput_per_card_wallclock_tokens_per_s == pytest.approx(40_000 / 42)  # 952.38
    # a typical step: 2000 tokens in 1.0 s
    assert s.throughput_tokens_per_s == pytest.approx(2000.0)
    assert s.throughput_per_card_tokens_per_s == pytest.approx(1000.0)
    # samples beside it: 40 × 16 / 42
    assert s.throughput_wallclock_samples_per_s == pytest.approx(640 / 42)
    assert s.mfu is None


def test_rows_every_k_steps_count_k_steps_of_tokens() -> None:
    # one row per 10 iterations (steps 10…100), each the window's mean step 0.5 s, 100 tokens
    # per iteration: 100 iterations × 0.5 s = 50 s; 100 × 100 tokens = 10 000 → 200 tokens/s
    t = pd.DataFrame(
        {"rank": 0, "step": np.arange(10, 101, 10), "step_time_s": 0.5, "tokens": 100.0}
    )
    s = analyze(t, warmup=0).summary
    assert s.iterations == 100
    assert s.throughput_wallclock_tokens_per_s == pytest.approx(200.0)
    assert s.throughput_wallclock_samples_per_s is None  # no samples: tokens only


def test_mfu_median_per_rank_and_drift() -> None:
    s = analyze(_two_ranks(mfu=True), warmup=0).summary
    m = s.mfu
    # values: 10 × 0.30, 10 × 0.40, 20 × 0.44 → the 20th and 21st of 40 are 0.40 and 0.44
    assert m["median"] == pytest.approx(0.42)
    assert m["rank_min"] == pytest.approx(0.35)  # rank 0: ten 0.40 and ten 0.30
    assert m["rank_min_rank"] == 0
    assert m["rank_max"] == pytest.approx(0.44)
    assert m["rank_max_rank"] == 1
    # first tenth = steps 1–4: 0.40, 0.44 → 0.42; last tenth = steps 37–40: 0.30, 0.44 → 0.37
    assert m["first_tenth"] == pytest.approx(0.42)
    assert m["last_tenth"] == pytest.approx(0.37)
    assert m["values"] == 80


def test_json_fields_carry_the_unit_and_keep_the_samples_contract() -> None:
    doc = to_dict(analyze(_two_ranks(mfu=True), warmup=0))
    s = doc["summary"]
    assert s["throughput_wallclock_tokens_per_s"] == pytest.approx(80_000 / 42)
    assert s["throughput_per_card_wallclock_tokens_per_s"] == pytest.approx(40_000 / 42)
    assert s["throughput_wallclock_samples_per_s"] == pytest.approx(640 / 42)  # unchanged key
    assert s["mfu"]["median"] == pytest.approx(0.42)
    plain = to_dict(analyze(_two_ranks(tokens=False), warmup=0))["summary"]
    assert plain["throughput_wallclock_tokens_per_s"] is None
    assert plain["mfu"] is None


def test_reports_show_the_units() -> None:
    res = analyze(_two_ranks(mfu=True), warmup=0)
    buf = io.StringIO()
    render_terminal(res, Console(file=buf, width=200, soft_wrap=True))
    term = buf.getvalue()
    # 80 000 / 42 = 1,905 tokens/s; per card 952
    assert "1,905 tokens/s wall-clock (952 per card" in term
    assert "15.2 samples/s wall-clock" in term  # 640 / 42 = 15.24
    assert "MFU" in term
    assert "median 42.0%" in term
    md = render_markdown(res)
    assert "1,905 tokens/s" in md
    assert "samples/s" in md
    assert "1,905 tokens/s" in render_html(res)
    plain = io.StringIO()
    render_terminal(analyze(_two_ranks(tokens=False), warmup=0), Console(file=plain, width=200))
    assert "tokens/s" not in plain.getvalue()
    assert "MFU" not in plain.getvalue()


def test_gates_on_tokens_and_mfu() -> None:
    doc = to_dict(analyze(_two_ranks(mfu=True), warmup=0))
    (g,) = gt.parse_gates(["tokens_per_s<2000"])
    r = gt.evaluate_gate(g, doc)
    assert r.failed
    assert r.actual == pytest.approx(80_000 / 42)
    (g,) = gt.parse_gates(["mfu<0.4"])
    assert not gt.evaluate_gate(g, doc).failed  # 0.42
    bare = to_dict(analyze(_two_ranks(tokens=False), warmup=0))
    for expr in ("throughput_tokens<1", "mfu<0.4"):
        (g,) = gt.parse_gates([expr])
        with pytest.raises(UsageError, match="null"):
            gt.evaluate_gate(g, bare)


def test_compare_tokens_only_when_both_runs_have_them() -> None:
    base = run_from_result(analyze(_two_ranks(mfu=True), warmup=0), "base")
    slow = _two_ranks(mfu=True)
    slow["step_time_s"] *= 1.25
    cur = run_from_result(analyze(slow, warmup=0), "current")
    m = compare_runs(base, cur).metric("throughput_tokens")
    # every step 25 % longer: tokens/s × 1 / 1.25 → change −20 %
    assert m.change == pytest.approx(-0.20)
    assert m.unit == "tokens/s"
    bare = run_from_result(analyze(_two_ranks(tokens=False), warmup=0), "current")
    names = [x.name for x in compare_runs(base, bare).metrics]
    assert "throughput_tokens" not in names
    assert "mfu" not in names
