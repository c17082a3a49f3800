"""Synchronous stalls (XP207) and the step-log checks on a hand-built run whose numbers are exact.

The run: 8 ranks × 60 steps, every step 1.0 s = compute 0.8 + data 0.05 + comm 0.15 (other 0),
so the median job step is 1.0 s and, with MAD 0, the spike threshold is 1.05 s (5 % floor).
Planted:
- steps 20, 21: data wait +2.0 s on EVERY rank → step 3.0 s: an input stall, 2 × 2.0 = 4.0 s lost;
- step 40: rank 3's compute +2.0 s, the others wait in the allreduce (comm +2.0 s) → step 3.0 s:
  one rank, not a stall (share of ranks whose own work rose: 1/8);
- step 50: comm +1.0 s on every rank, nobody's work rose → a network stall, 1.0 s lost.
Wall time = 56 × 1.0 + 3 × 3.0 + 2.0 = 67.0 s.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xpuperf.analysis import analyze
from xpuperf.findings import CheckStatus

RANKS, STEPS = 8, 60


def _run() -> pd.DataFrame:
    rank = np.repeat(np.arange(RANKS), STEPS)
    step = np.tile(np.arange(STEPS), RANKS)
    df = pd.DataFrame(
        {
            "rank": rank,
            "step": step,
            "compute_s": 0.8,
            "data_s": 0.05,
            "comm_s": 0.15,
            "samples": 32,
        }
    )
    df.loc[df.step.isin([20, 21]), "data_s"] += 2.0
    df.loc[(df.step == 40) & (df["rank"] == 3), "compute_s"] += 2.0
    df.loc[(df.step == 40) & (df["rank"] != 3), "comm_s"] += 2.0
    df.loc[df.step == 50, "comm_s"] += 1.0
    df["step_time_s"] = df.compute_s + df.data_s + df.comm_s
    return df


def _status(result, name: str) -> CheckStatus:
    return next(c.status for c in result.checks if c.name == name)


def test_input_stall_and_network_stall_are_named_not_stragglers() -> None:
    r = analyze(_run(), warmup=0)
    assert r.jitter.spike_steps == [20, 21, 40, 50]
    ev = r.stalls.events
    assert [(e.first_step, e.last_step, e.phase) for e in ev] == [
        (20, 21, "data_s"),
        (50, 50, "comm_s"),
    ]
    assert ev[0].lost_s == pytest.approx(4.0)
    assert ev[1].lost_s == pytest.approx(1.0)
    assert r.stalls.lost_fraction == pytest.approx(5.0 / 67.0)
    (f,) = [f for f in r.findings if f.code == "XP207"]
    assert f.severity.value == "warning"
    assert f.message.startswith("input-pipeline / storage stall")
    assert "steps 20–21" in f.message
    assert "5.00 s lost = 7.5% of the logged step time" in f.message
    assert "step 50 (network, 1.00 s)" in f.message
    assert not any(f.code in ("XP101", "XP103") for f in r.findings)
    assert _status(r, "steps.sync_stalls") is CheckStatus.PROBLEM


def test_step_time_only_names_the_job_wide_stall_and_says_what_it_cannot_tell() -> None:
    df = _run()[["rank", "step", "step_time_s", "samples"]]
    r = analyze(df, warmup=0)
    # every rank's step time rose at all four spikes: 2 × 2.0 + 2.0 + 1.0 = 7.0 s of 67.0
    assert [(e.first_step, e.last_step) for e in r.stalls.events] == [(20, 21), (40, 40), (50, 50)]
    assert r.stalls.lost_fraction == pytest.approx(7.0 / 67.0)
    (f,) = [f for f in r.findings if f.code == "XP207"]
    assert "not a straggler" not in f.message  # step time alone cannot say so
    assert "or one rank's pause the others waited for" in f.message
    assert "cannot tell which" in f.message
    # no per-rank work: the straggler check is not run, and no "no straggler" is said
    assert _status(r, "steps.stragglers") is CheckStatus.NOT_CHECKED
    assert "XP104" not in {f.code for f in r.findings}


def test_one_rank_cannot_show_a_synchronous_stall() -> None:
    df = _run()
    r = analyze(df[df["rank"] == 0], warmup=0)
    assert r.stalls is not None
    assert not r.stalls.checked
    assert "XP207" not in {f.code for f in r.findings}
    assert _status(r, "steps.sync_stalls") is CheckStatus.NOT_CHECKED
    assert _status(r, "steps.stragglers") is CheckStatus.NOT_CHECKED


def test_healthy_run_is_clean_only_where_it_has_evidence() -> None:
    df = _run()
    df["data_s"], df["comm_s"], df["compute_s"] = 0.05, 0.15, 0.8
    df["step_time_s"] = 1.0
    r = analyze(df, warmup=0)
    status = {c.name: c.status for c in r.checks}
    assert status["steps.sync_stalls"] is CheckStatus.CLEAN
    assert status["steps.stragglers"] is CheckStatus.CLEAN
    assert status["steps.jitter"] is CheckStatus.CLEAN
    assert status["steps.data_wait"] is CheckStatus.CLEAN  # 5 % = threshold, not above
    assert status["steps.comm_exposed"] is CheckStatus.PROBLEM  # 15 % > 10 %
    assert status["steps.speedup"] is CheckStatus.NOT_CHECKED  # no baseline given
    assert {f.code for f in r.findings} >= {"XP104", "XP206"}


def test_few_steps_give_no_flat_line_verdict() -> None:
    df = _run()
    df["step_time_s"] = 1.0
    r = analyze(df[df.step < 10], warmup=0)
    assert "XP206" not in {f.code for f in r.findings}
    assert _status(r, "steps.jitter") is CheckStatus.NOT_CHECKED


def test_horovod_log_with_a_storage_stall_on_every_rank() -> None:
    # tests/data/stalls_tfcnn_horovod/make_log.py plants +4.0 s on every rank in the 10-step
    # windows ending at steps 150 and 250; rank r runs 0.5·(1 + 0.004 r) s per step. Each row is a
    # window's mean: 0.9 + 0.002 r s at the stalls vs ≈ 0.503 s, so ≈ 0.40 s excess per row and
    # 2 × 10 × 0.40 = 8.0 s of wall time.
    from xpuperf.pipeline import analyze_logs

    log = Path(__file__).resolve().parent.parent / "data" / "stalls_tfcnn_horovod"
    r = analyze_logs([log / "horovod_4rank_stall.log"])
    assert r.summary.ranks == 4
    assert [(e.first_step, e.last_step) for e in r.stalls.events] == [(150, 150), (250, 250)]
    assert r.stalls.lost_s == pytest.approx(0.80, abs=0.01)
    assert r.stalls.step_gap == 10
    (f,) = [f for f in r.findings if f.code == "XP207"]
    assert "all 4 ranks at steps 150, 250" in f.message
    assert "≈ 8.0 s of wall time" in f.message
    assert not any(f.code.startswith("XP10") and f.code != "XP105" for f in r.findings)


def test_a_host_pause_on_every_rank_is_named_by_the_rest_of_the_step() -> None:
    # synth plants its periodic spikes in the host/other time (step − compute − comm − data) of
    # every rank: +0.9 s every 20 steps; the stall must be named a host pause, not data wait.
    from xpuperf import synth

    t = synth.generate(
        synth.Scenario(ranks=4, steps=200, noise_cv=0.01, spike_period=20, spike_s=0.9)
    )
    r = analyze(t)
    assert r.stalls.events
    assert {e.phase for e in r.stalls.events} == {"other_s"}
    (f,) = [f for f in r.findings if f.code == "XP207"]
    assert f.message.startswith("job-wide host pause")


def _flat(ranks: int, steps: int, **cols: float) -> pd.DataFrame:
    return pd.DataFrame(
        {"rank": np.repeat(np.arange(ranks), steps), "step": np.tile(np.arange(steps), ranks)}
        | cols
    )


def test_a_stall_the_logged_data_wait_does_not_explain_is_not_blamed_on_storage() -> None:
    # The maskrcnn shape (corpus 07): step time and data_s only. 8 ranks × 40 steps of 0.200 s
    # with 0.3 ms data wait; at step 30 every rank takes 0.270 s while its data wait is 0.5 ms.
    # Excess 0.270 − 0.200 = 70 ms; data rose 0.2 ms = 0.2/70 = 0.29 % of it (< 50 %): the
    # stall is unexplained by the logged phases, not an input stall. Wall time 39 × 0.2 + 0.27
    # = 8.07 s, lost 0.07 s = 0.87 % (< 1 %: info).
    df = _flat(8, 40, step_time_s=0.2, data_s=0.0003)
    df.loc[df.step == 30, ["step_time_s", "data_s"]] = [0.27, 0.0005]
    r = analyze(df, warmup=0)
    (ev,) = r.stalls.events
    assert (ev.first_step, ev.phase) == (30, "unexplained")
    assert ev.lost_s == pytest.approx(0.07)
    assert ev.rise_s["data_s"] == pytest.approx(0.0002)
    (f,) = [f for f in r.findings if f.code == "XP207"]
    assert f.message.startswith("job-wide stall not explained by the logged phases")
    assert "storage" not in f.message.split("Remedy")[0]
    assert "(of the 70.0 ms excess: data wait +0.2 ms (0.3%))" in f.message
    assert "covers ≥ 50% of the rise" in f.message
    assert "or one rank's pause the others waited for" in f.message  # step time only
    assert f.data["phase_shares"]["data_s"] == pytest.approx(0.0002 / 0.07)
    assert f.severity.value == "info"
    assert r.stalls.lost_fraction == pytest.approx(0.07 / 8.07)


def test_a_stall_spread_over_phases_names_no_single_phase() -> None:
    # 4 ranks × 30 steps: compute 0.8 + data 0.1 + comm 0.1 = 1.0 s. At step 20 every rank's
    # compute +0.3, data +0.3 and 0.2 s outside every timer (host/other): step 1.8 s, excess
    # 0.8 s. Shares 0.3/0.8 = 37.5 %, 37.5 %, 0.2/0.8 = 25 %: none reaches 50 %.
    df = _flat(4, 30, compute_s=0.8, data_s=0.1, comm_s=0.1, step_time_s=1.0)
    at = df.step == 20
    df.loc[at, ["compute_s", "data_s", "step_time_s"]] = [1.1, 0.4, 1.8]
    r = analyze(df, warmup=0)
    (ev,) = r.stalls.events
    assert ev.phase == "unexplained"
    assert ev.rise_s == pytest.approx({"data_s": 0.3, "compute_s": 0.3, "other_s": 0.2})
    (f,) = [f for f in r.findings if f.code == "XP207"]
    assert "every rank's own work rose" in f.message
    assert "of the 800.0 ms excess: " in f.message
    assert "compute +300.0 ms (37.5%), host/other time +200.0 ms (25.0%)" in f.message
    # the same run with the data wait carrying the whole rise is an input stall: 0.8/0.8
    df.loc[at, ["compute_s", "data_s", "step_time_s"]] = [0.8, 0.9, 1.8]
    r = analyze(df, warmup=0)
    assert [e.phase for e in r.stalls.events] == ["data_s"]
    (f,) = [f for f in r.findings if f.code == "XP207"]
    named = "(of the 800.0 ms excess: data wait +800.0 ms (100.0%); a phase names a stall from 50%"
    assert named in f.message
