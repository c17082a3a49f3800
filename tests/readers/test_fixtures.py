"""The committed fixture folders under tests/data/readers_*."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from xpuperf.readers import read_logs

DATA = Path(__file__).resolve().parent.parent / "data"


def test_mixed_formats_folder() -> None:
    folder = DATA / "readers_mixed"
    res = read_logs([folder])
    assert [Path(s).name for s in res.sources] == ["gpu2.tsv", "rank0.log", "worker-1.jsonl"]
    t = res.table
    assert list(t.columns) == [
        "rank",
        "step",
        "step_time_s",
        "t_end_s",
        "samples",
        "node",
        "data_s",
    ]
    assert t[["rank", "step"]].values.tolist() == [
        [0, 1], [0, 2], [0, 3], [0, 4],
        [1, 1], [1, 2], [1, 3],
        [2, 1], [2, 3], [2, 4],
    ]  # fmt: skip
    # rank 0: ms → s; rank 1: batch_time_ms (the timestamp is kept as t_end_s);
    # rank 2: bs / samples-per-second = 32/128, 32/160, 32/100
    expected = [0.25, 0.24, 0.245, 0.238, 0.25, 0.25, 0.26, 0.25, 0.2, 0.32]
    np.testing.assert_allclose(t["step_time_s"], expected)
    np.testing.assert_allclose(t["data_s"].iloc[:4], [0.010, 0.0125, 0.011, 0.009])
    assert t["data_s"].iloc[4:].isna().all()
    assert t["samples"].isna().tolist() == [False] * 4 + [True] * 3 + [False] * 3
    assert (t["samples"].dropna() == 32).all()
    # 2024-05-01T10:00:00Z is 1714557600 s after the epoch
    np.testing.assert_allclose(t["t_end_s"].iloc[4:7], 1714557600 + np.array([0.25, 0.5, 0.76]))
    assert t["node"].iloc[4:7].tolist() == ["node01"] * 3
    assert res.skipped_rows == 3
    assert res.warnings == [
        f"{folder / 'gpu2.tsv'}:3: skipped 1 row: step time missing, NaN, infinite, zero or "
        "negative (step time = samples / throughput)",
        f"{folder / 'rank0.log'}:5: skipped 1 row: same (rank, step) as an earlier row; kept the "
        "first",
        f"{folder / 'worker-1.jsonl'}:4: skipped 1 row: not valid JSON",
    ]
