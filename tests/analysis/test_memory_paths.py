"""The analyses' memory-saving paths (docs/performance.md, "10^8 rows under 8 GiB").

``Grid.other()`` is computed block by block when indexed instead of stored; ``work_series``
runs in chunks. Both must give exactly the values of the whole-column formulas
(:func:`xpuperf.steps.phase_frame`, ``(step_time_s − comm_s.fillna(0)).clip(lower=0)``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from xpuperf import steps
from xpuperf.analysis.grid import by_columns, by_rows, grid_of, median_rows


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    r, s = 6, 40
    t = 0.3 + 0.01 * rng.random(r * s)
    df = pd.DataFrame(
        {
            "rank": np.repeat(np.arange(r, dtype=np.int32), s),
            "step": np.tile(np.arange(1, s + 1, dtype=np.int64), r),
            "step_time_s": t,
            "compute_s": 0.2 + 0.01 * rng.random(r * s),
            "comm_s": 0.05 + 0.1 * rng.random(r * s),  # sometimes more than the rest: other < 0
            "data_s": 0.01 * rng.random(r * s),
        }
    )
    df.loc[[3, 50, 121], "data_s"] = np.nan  # unknown cells count as 0
    df.loc[[7, 200], "comm_s"] = np.nan
    return steps.validate(df)


def test_derived_other_equals_phase_frame_for_every_index() -> None:
    table = _table()
    g = grid_of(table)
    ref = steps.phase_frame(table)["other_s"].to_numpy().reshape(g.shape)
    assert (ref == 0).any()
    assert (ref > 0).any()
    other = g.other()
    assert other.shape == ref.shape
    np.testing.assert_array_equal(np.asarray(other), ref)
    np.testing.assert_array_equal(other[np.array([4, 1])], ref[[4, 1]])
    np.testing.assert_array_equal(other[2:5], ref[2:5])
    np.testing.assert_array_equal(other[:, 10:13], ref[:, 10:13])
    keep = np.arange(40) % 3 == 0
    np.testing.assert_array_equal(other[:, keep], ref[:, keep])
    # blocked reductions take it like a matrix (one block, or several)
    np.testing.assert_array_equal(median_rows(other), np.median(ref, axis=1))
    sums = by_rows(other, lambda x: x.sum(axis=1))
    np.testing.assert_array_equal(sums, ref.sum(axis=1))
    later = g.after(30)
    np.testing.assert_array_equal(np.asarray(later.other()), ref[:, 29:])


def test_blocked_paths_of_a_derived_matrix(monkeypatch) -> None:
    import xpuperf.analysis.grid as grid_mod

    table = _table()
    g = grid_of(table)
    ref = steps.phase_frame(table)["other_s"].to_numpy().reshape(g.shape)
    monkeypatch.setattr(grid_mod, "BLOCK", 12)  # 2 ranks or 2 columns per block
    np.testing.assert_array_equal(median_rows(g.other()), np.median(ref, axis=1))
    rows = np.array([0, 2, 5])
    got = by_columns(g.other(), lambda x: x.max(axis=0), rows)
    np.testing.assert_array_equal(got, ref[rows].max(axis=0))


def test_chunked_work_series_equals_the_column_formula(monkeypatch) -> None:
    table = _table()
    table.loc[5, "comm_s"] = 1.0  # comm above the step time: work clipped to 0
    expected = (table["step_time_s"] - table["comm_s"].fillna(0.0)).clip(lower=0.0)
    monkeypatch.setattr(steps, "CHUNK", 7)
    work, source = steps.work_series(table)
    assert source == "step_time-comm"
    assert work.iloc[5] == 0.0
    np.testing.assert_array_equal(work.to_numpy(), expected.to_numpy())
    assert work.index.equals(table.index)
