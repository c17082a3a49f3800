"""Host/other time is only judged when the step time measures more than the logged phases.

DeepSpeed's timer lines (corpus 26) give forward, backward and the optimizer step, and the reader
sets step time = their sum: "other" (step − compute − comm − data) is then 0 by construction and
"clean 0.0 %" would be a verdict without evidence. The rule: when the rest is at most 0.1 % of the
step time on every row, ``other`` is not measured (None) and the check is "not checked".
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from xpuperf.analysis import analyze
from xpuperf.analysis.breakdown import decompose
from xpuperf.findings import CheckStatus


def _table(step_s: float, ranks: int = 2, steps: int = 30) -> pd.DataFrame:
    """compute 0.50 s + comm 0.02 s per step; step time ``step_s``."""
    return pd.DataFrame(
        {
            "rank": np.repeat(np.arange(ranks), steps),
            "step": np.tile(np.arange(steps), ranks),
            "step_time_s": step_s,
            "compute_s": 0.50,
            "comm_s": 0.02,
        }
    )


def _host_check(table: pd.DataFrame):
    r = analyze(table, warmup=0)
    return next(c for c in r.checks if c.name == "steps.host_overhead"), r


@pytest.mark.parametrize("ragged", [False, True], ids=["grid", "frame"])
def test_step_time_equal_to_the_phases_gives_no_host_verdict(ragged: bool) -> None:
    t = _table(0.52)  # 0.50 + 0.02: nothing outside the timers
    if ragged:  # a rank missing a step: the per-row (frame) path instead of the grid
        t = t.drop(index=t.index[-1]).reset_index(drop=True)
    res, _ = decompose(t)
    assert res.other_fraction is None
    assert res.other_unseen == pytest.approx(0.0, abs=1e-12)
    assert res.compute_fraction == pytest.approx(0.50 / 0.52)
    check, r = _host_check(t)
    assert check.status is CheckStatus.NOT_CHECKED
    assert check.evidence.startswith("no evidence: the step time is the sum of the logged phases")
    assert "XP303" not in {f.code for f in r.findings}


def test_a_rest_of_0_08_percent_is_still_the_sum_and_0_12_percent_is_measured() -> None:
    # 0.5204 s: rest 0.0004 / 0.5204 = 0.077 % ≤ 0.1 % (timer rounding, as DeepSpeed's
    # backward total − inner − allreduce); 0.5206 s: 0.0006 / 0.5206 = 0.115 % > 0.1 %
    res, _ = decompose(_table(0.5204))
    assert res.other_fraction is None
    assert res.other_unseen == pytest.approx(0.0004 / 0.5204)
    res, _ = decompose(_table(0.5206))
    assert res.other_fraction == pytest.approx(0.0006 / 0.5206)
    assert res.other_unseen is None


def test_one_row_with_host_time_is_evidence() -> None:
    # one step of rank 1 takes 0.62 s (0.10 s outside the timers): the step time measures more
    # than the phases, so the share is judged: 0.10 / (59 × 0.52 + 0.62) = 0.32 % → clean
    t = _table(0.52)
    t.loc[(t["rank"] == 1) & (t["step"] == 7), "step_time_s"] = 0.62
    res, _ = decompose(t)
    assert res.other_fraction == pytest.approx(0.10 / (59 * 0.52 + 0.62))
    check, _ = _host_check(t)
    assert check.status is CheckStatus.CLEAN
    assert "0.3% of step time" in check.evidence


def test_deepspeed_timer_lines_end_to_end(tmp_path) -> None:
    # the old DeepSpeed micro-step form: step time = forward + backward + step = 190.00 +
    # 330.00 + 0.10 = 520.10 ms; compute = 190.00 + 329.95 + 0.10, comm 0.05: nothing is left
    # outside the timers, so host/other time is not checked
    from xpuperf.pipeline import analyze_logs

    line = (
        "time (ms) | forward_microstep: 190.00 | backward_microstep: 330.00 | "
        "backward_inner_microstep: 329.95 | backward_allreduce_microstep: 0.05 | "
        "step_microstep: 0.10\n"
    )
    log = tmp_path / "ds.log"
    log.write_text(line * 5, encoding="utf-8")
    r = analyze_logs([log])
    assert r.summary.step_time_s["median"] == pytest.approx(0.5201)
    assert r.breakdown.other_fraction is None
    check = next(c for c in r.checks if c.name == "steps.host_overhead")
    assert check.status is CheckStatus.NOT_CHECKED
