"""The rank × step fast path (analysis/grid.py) against the general path, on synthetic runs.

The general path (groupby, scatter into NaN-filled matrices, whole-table phase frame) is forced
by making ``grid_of`` return None; both must give the same JSON document up to float rounding
(relative 1e-12: sums are accumulated in another order). Ragged runs (ranks with missing steps)
take the general path; their straggler verdict, which uses only the steps present on every rank,
must equal the fast path's on the table trimmed to those steps.
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pandas as pd
import pytest

import xpuperf.analysis.series as series_mod
import xpuperf.analysis.stragglers as stragglers_mod
from xpuperf import steps, synth
from xpuperf.analysis import analyze
from xpuperf.analysis.grid import grid_of, median_cols, median_rows
from xpuperf.analysis.series import job_steps
from xpuperf.analysis.stragglers import find_stragglers
from xpuperf.report.json_report import to_dict

REL = 1e-12
analyze_mod = importlib.import_module("xpuperf.analysis.analyze")  # the name is also a function


def _close(a, b, path=""):
    if isinstance(a, dict):
        assert set(a) == set(b), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=REL), (path, a, b)
    else:
        assert a == b, (path, a, b)


def _general(monkeypatch):
    for mod in (analyze_mod, series_mod, stragglers_mod):
        monkeypatch.setattr(mod, "grid_of", lambda _t: None)


def _table(**kw) -> pd.DataFrame:
    sc = synth.Scenario(ranks=12, cards_per_node=4, steps=160, seed=3, **kw)
    return steps.validate(synth.generate(sc))


@pytest.mark.parametrize(
    "kw",
    [
        {"slow_ranks": {5: 0.2}},  # one straggler: pass 2, bootstrap CI, slow phase
        {"slow_ranks": {4: 0.3, 5: 0.3, 6: 0.3, 7: 0.3}},  # a whole node
        {"random_straggler_prob": 0.05, "random_straggler_s": 0.05},
        {},
    ],
)
def test_fast_path_equals_general_path(monkeypatch, kw):
    table = _table(**kw)
    assert grid_of(table) is not None
    fast = to_dict(analyze(table))
    _general(monkeypatch)
    general = to_dict(analyze(table))
    _close(fast, general)


def test_unknown_phase_cells_are_zero_on_both_paths(monkeypatch):
    table = _table(slow_ranks={2: 0.2})
    table.loc[table.index[::7], "comm_s"] = np.nan  # NaN comm → 0 in work and phases
    table.loc[table.index[::11], "data_s"] = np.nan
    fast = to_dict(analyze(table))
    _general(monkeypatch)
    _close(fast, to_dict(analyze(table)))


def test_ragged_run_takes_the_general_path_and_agrees_on_common_steps():
    table = _table(slow_ranks={5: 0.2}, warmup_steps=0)
    short = (table["rank"] == 2) & (table["step"] > 140)  # rank 2's log ends early
    gap = (table["rank"] == 9) & (table["step"] == 50)  # one step lost on rank 9
    ragged = table[~(short | gap)].reset_index(drop=True)
    assert grid_of(ragged) is None
    common = table[(table["step"] <= 140) & (table["step"] != 50)].reset_index(drop=True)
    assert grid_of(common) is not None
    a, fa = find_stragglers(ragged)
    b, fb = find_stragglers(common)
    assert [s.rank for s in a.stragglers] == [s.rank for s in b.stragglers] == [5]
    assert a.n_steps == b.n_steps == 139
    assert a.stragglers[0].slowdown == b.stragglers[0].slowdown
    assert a.stragglers[0].slowdown_ci == b.stragglers[0].slowdown_ci
    assert a.stragglers[0].p_value == b.stragglers[0].p_value
    pd.testing.assert_frame_equal(a.per_rank, b.per_rank)
    assert [f.code for f in fa] == [f.code for f in fb]


def test_grid_views_and_medians_match_pandas():
    table = _table()
    g = grid_of(table)
    pivot = table.pivot(index="rank", columns="step", values="step_time_s")
    assert g.shape == pivot.shape
    np.testing.assert_array_equal(g.mat("step_time_s"), pivot.to_numpy())
    # medians over ranks per step / over steps per rank, as pandas computes them
    np.testing.assert_array_equal(median_cols(g.mat("step_time_s")), pivot.median().to_numpy())
    np.testing.assert_array_equal(
        median_rows(g.mat("step_time_s")), pivot.median(axis=1).to_numpy()
    )
    job = job_steps(table)
    np.testing.assert_array_equal(job["step"], pivot.columns.to_numpy())
    np.testing.assert_allclose(job["samples"], table.groupby("step")["samples"].sum(), rtol=REL)
    later = g.after(100)
    assert later.steps[0] == 100
    assert later.shape == (12, 160 - 99)


def test_grid_of_refuses_ragged_unsorted_and_repeated_step_lists():
    table = _table()
    assert grid_of(table.iloc[:-1]) is None  # last rank one step short
    assert grid_of(table.iloc[::-1].reset_index(drop=True)) is None  # not sorted
    odd = table.copy()
    odd.loc[odd["rank"] == 3, "step"] += 1000  # same count, other steps
    assert grid_of(steps.validate(odd)) is None
    assert grid_of(table.iloc[:0]) is None
