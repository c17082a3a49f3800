"""compare catches periodic stalls and a new straggler; limits and p-values read right."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xpuperf.analysis import analyze
from xpuperf.analysis.pvalue import format_p
from xpuperf.cli.compare import fraction_note, parse_fraction
from xpuperf.compare import check_max_regression, compare_runs, run_from_result, to_dict
from xpuperf.compare_stats import quantile_draws
from xpuperf.errors import GateFailedError, UsageError
from xpuperf.report.html import build_compare_view
from xpuperf.synth import Scenario, generate


def _run(stall: bool, n: int = 200) -> pd.DataFrame:
    """One rank, 32 samples per step, steps alternating 0.99 / 1.01 s; with ``stall`` every
    10th step (steps 10, 20, …: the 1.01 s ones) takes 4.5 × as long."""
    t = np.where(np.arange(n) % 2 == 0, 0.99, 1.01)
    if stall:
        t[9::10] *= 4.5
    return pd.DataFrame({"rank": 0, "step": np.arange(1, n + 1), "step_time_s": t, "samples": 32.0})


def _compare(base: pd.DataFrame, cur: pd.DataFrame):
    b = run_from_result(analyze(base, warmup=0), "base", "base")
    c = run_from_result(analyze(cur, warmup=0), "current", "current")
    return compare_runs(b, c)


def test_periodic_stalls_are_a_regression_at_5_percent() -> None:
    res = _compare(_run(False), _run(True))
    # by hand: base mean 1.0 s; current Σ = 200 + 20 × 3.5 × 1.01 = 270.7 s → mean 1.3535 s
    assert res.metric("step_time_mean").change == pytest.approx(0.3535)
    assert res.metric("throughput").change == pytest.approx(1 / 1.3535 - 1)  # −26.1 %
    # the median is (0.99 + 1.01) / 2 = 1.0 on both sides: the old gate saw nothing
    assert res.metric("step_time_median").change == pytest.approx(0.0)
    assert res.metric("step_time_median").verdict == "no significant change"
    names = {m.name for m in res.regressions()}
    assert {"throughput", "step_time_mean", "step_time_p99"} <= names
    with pytest.raises(GateFailedError, match=r"throughput \(wall-clock\) \+26\.12% worse"):
        check_max_regression(res, parse_fraction("5", "--max-regression"))
    # the jitter cost appears: 70.7 s of 270.7 s
    assert res.metric("jitter_cost").current == pytest.approx(70.7 / 270.7)


def test_healthy_against_itself_passes() -> None:
    res = _compare(_run(False), _run(False))
    assert res.regressions() == []
    check_max_regression(res, 0.0)


def test_a_new_straggler_shows() -> None:
    base = analyze(generate(Scenario(ranks=8, steps=200, seed=1)))
    cur = analyze(generate(Scenario(ranks=8, steps=200, seed=2, slow_ranks={5: 0.25})))
    res = compare_runs(run_from_result(base, "base"), run_from_result(cur, "current"))
    new = [f for f in res.findings if f.change == "new" and f.code == "XP101"]
    assert [f.subject for f in new] == ["rank 5"]
    xp101 = next(f for f in cur.findings if f.code == "XP101")
    assert new[0].cost_fraction == pytest.approx(xp101.data["cost_fraction"])
    det = res.metric("straggler_cost_deterministic")
    assert det.base == 0.0
    assert det.current == pytest.approx(xp101.data["cost_fraction"])
    verdict = build_compare_view(res)["verdict"]
    assert "XP101 rank 5 — straggler rank (deterministic or intermittent)" in verdict
    doc = to_dict(res)
    assert doc["findings"]["new"][0]["code"] in {"XP101", "XP301"}
    ranks = {r["rank"]: r for r in doc["ranks"]}
    assert doc["ranks"][0]["rank"] == 5  # the largest change first
    assert ranks[5]["change"] > 0.15
    assert [r["phase"] for r in doc["breakdown"]] == [
        "compute", "communication", "data wait", "host/other"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "value"),
    [("5", 0.05), ("5%", 0.05), ("0.05", 0.05), ("0.5", 0.5), ("1", 0.01), ("150%", 1.5)],
)
def test_limits_never_read_500_percent(text: str, value: float) -> None:
    assert parse_fraction(text, "--max-regression") == pytest.approx(value)


def test_a_bare_number_is_said_how_it_was_read() -> None:
    assert fraction_note("5", "--max-regression") == (
        "--max-regression 5 read as 0.05 = 5% (write 5% to say so)"
    )
    assert fraction_note("5%", "--max-regression") is None
    with pytest.raises(UsageError):
        parse_fraction("-1", "--max-regression")
    with pytest.raises(UsageError):
        parse_fraction("five", "--max-regression")


@pytest.mark.parametrize(
    ("p", "floor", "text"),
    [
        (0.0, 1e-16, "p<1e-16"),
        (1e-300, 1e-16, "p<1e-16"),
        (3.2e-5, 1e-16, "p=3.2e-05"),
        (0.034, 1e-16, "p=0.034"),
        (1.0, 1e-16, "p>0.99"),
        (5e-5, 5e-5, "p<5e-05"),
    ],
)
def test_p_values_print_without_0_or_1(p: float, floor: float, text: str) -> None:
    assert format_p(p, floor) == text


def test_compare_table_never_prints_p_0_or_1() -> None:
    rows = build_compare_view(_compare(_run(False), _run(True)))["table"]["rows"]
    shown = [r[5] for r in rows if r[5]]
    assert shown
    assert all(s.startswith(("p<", "p=", "p>")) for s in shown)
    assert not any(s in ("p=0", "p=1", "p=0.000", "p=1.000") for s in shown)


def test_quantile_draws_match_a_brute_force_bootstrap() -> None:
    # the exact bootstrap distribution of the 90th percentile of 40 values vs 20 000 resamples
    rng = np.random.default_rng(3)
    x = rng.exponential(size=40)
    exact = np.percentile(quantile_draws(x, 0.9), [5, 50, 95])
    brute = np.percentile(
        np.percentile(rng.choice(x, (20_000, 40)), 90, axis=1, method="inverted_cdf"), [5, 50, 95]
    )
    assert exact == pytest.approx(brute)


def _main(*args: str) -> int:
    from xpuperf.cli import app as cli_app

    with pytest.raises(SystemExit) as e:
        cli_app.main(list(args))
    return int(e.value.code)


def test_cli_exits_1_on_stalls_at_5_percent(tmp_path: Path, capsys) -> None:
    _run(False).to_csv(tmp_path / "healthy.csv", index=False)
    _run(True).to_csv(tmp_path / "spiky.csv", index=False)
    args = ["compare", str(tmp_path / "healthy.csv"), str(tmp_path / "spiky.csv"), "-q"]
    assert _main(*args, "--warmup", "0", "--max-regression", "5") == 1
    err = capsys.readouterr().err
    assert "--max-regression 5 read as 0.05 = 5%" in err
    assert "throughput (wall-clock) +26.12% worse (limit 5.00%" in err
    assert _main(*args, "--warmup", "0", "--max-regression", "400%") == 0  # p99 rose +350 %
    assert _main(*[a for a in args if a != "-q"], "--warmup", "0") == 0  # no limit: no gate
    out = capsys.readouterr().out
    assert "regression: mean step time, p99 step time, throughput (wall-clock)" in out
