"""Speed paths of the analyses give the numbers of the plain ones; XP105 needs ≥ 2 ranks.

- threaded blocked medians (grid.threads(2)) against one thread, on the whole JSON document;
- the column median taken from the leave-one-out partial sort against ``np.median``, bit for bit;
- a single-rank log (the bundled single-card sample) gets no XP105: with one rank there is no
  straggler analysis to be weak.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from xpuperf import steps, synth
from xpuperf.analysis import analyze, grid
from xpuperf.analysis.loo import loo_and_median
from xpuperf.analysis.stragglers import find_stragglers
from xpuperf.cli.app import app
from xpuperf.report.json_report import to_dict

SINGLE_CARD = Path(__file__).resolve().parents[2] / "sample_logs" / "single_card" / "baseline.csv"


@pytest.mark.parametrize("n", [2, 3, 8, 9])
def test_column_median_from_the_loo_sort_is_np_median(n):
    rng = np.random.default_rng(n)
    w = rng.integers(0, 4, size=(n, 50)).astype(float)  # many ties
    w[:, :25] += rng.random((n, 25))  # and distinct values: means of two middle ones
    loo, med = loo_and_median(w)
    np.testing.assert_array_equal(med, np.median(w, axis=0))  # exact, not close
    brute = np.array([[np.median(np.delete(w[:, s], r)) for s in range(50)] for r in range(n)])
    np.testing.assert_array_equal(loo, brute)


def test_threads_give_the_same_document(monkeypatch):
    table = steps.validate(
        synth.generate(synth.Scenario(ranks=12, steps=300, seed=5, slow_ranks={5: 0.2}))
    )
    monkeypatch.setattr(grid, "BLOCK", 64)  # many blocks of a few values each
    monkeypatch.setattr(grid, "_threads", 1)  # restored after the test

    def run(k: int) -> str:  # analyze() plans its threads: make it plan k
        monkeypatch.setattr(grid, "threads", lambda n=None: setattr(grid, "_threads", k) or k)
        return json.dumps(to_dict(analyze(table)), sort_keys=True, default=str)

    one, three = run(1), run(3)
    assert grid._threads == 3
    assert three == one  # bit for bit: floats are written with repr
    assert '"rank": 5' in one  # the planted straggler is in both


def test_single_rank_has_no_weak_signal_finding():
    df = synth.generate(synth.Scenario(ranks=1, steps=50, seed=1, warmup_steps=0))
    res, findings = find_stragglers(df[["rank", "step", "step_time_s"]])
    assert res.work_source == "step_time"
    assert findings == []
    two = synth.generate(synth.Scenario(ranks=2, steps=50, seed=1, warmup_steps=0))
    _, findings = find_stragglers(two[["rank", "step", "step_time_s"]])
    assert "XP105" in [f.code for f in findings]


def test_cli_single_card_log_has_no_xp105():
    r = CliRunner().invoke(app, ["analyze", str(SINGLE_CARD), "--json", "-"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["summary"]["ranks"] == 1
    codes = [f["code"] for f in doc["findings"]]
    assert "XP105" not in codes
    assert not any(c.startswith("XP1") for c in codes)
