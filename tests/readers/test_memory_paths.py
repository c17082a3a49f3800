"""The reader's memory-saving paths (docs/performance.md, "10^8 rows under 8 GiB").

The column mapping moves numeric columns into the part instead of copying them; the final frame
takes the part's rows; the element-wise row checks run in chunks. The chunked checks must give
the same rows and warnings as one chunk: compared here with a chunk of 3 rows, so that every
chunk boundary falls inside the cases (a rank change, a repeated step, a backwards step, a row
whose phases exceed the step time).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from xpuperf.readers import build, open_source, read_logs
from xpuperf.readers import finish as finish_mod
from xpuperf.readers.generic import read_csv
from xpuperf.readers.paths import Found

ROWS = """rank,step,step_time_s,compute_s,comm_s,data_s
0,1,0.30,0.20,0.05,0.01
0,2,0.31,0.20,0.06,0.01
0,3,0.32,0.40,0.06,0.01
0,2,0.33,0.20,0.06,0.01
0,4,0.34,0.20,0.06,
1,1,0.30,0.20,0.05,0.01
1,2,0.30,0.20,0.05,0.01
1,1.5,0.30,0.20,0.05,0.01
1,3,0.30,0.20,0.05,0.01
2,5,0.30,0.20,0.05,0.01
2,3,0.29,0.20,0.05,0.01
2,6,0.35,0.20,0.05,0.01
"""


def _part(path: Path) -> tuple[build.Part, np.ndarray]:
    found = Found(path, True, (path.name,))
    src = open_source(found)
    raw = read_csv(src)
    parsed = raw.frame["step_time_s"].to_numpy()
    return build.prepare(src, raw, None), parsed


def test_column_mapping_moves_numeric_columns_without_a_copy(tmp_path: Path) -> None:
    f = tmp_path / "run.csv"
    f.write_text("rank,step,step_time_s\n0,1,0.5\n0,2,0.25\n1,1,0.5\n")
    part, parsed = _part(f)
    got = part.df["step_time_s"].to_numpy()
    assert np.shares_memory(got, parsed)  # the parsed buffer itself, not a copy
    np.testing.assert_array_equal(got, [0.5, 0.25, 0.5])


def test_final_frame_has_canonical_dtypes_and_the_part_keeps_no_rows(tmp_path: Path) -> None:
    f = tmp_path / "run.csv"
    f.write_text("rank,step,step_time_s,comm_s\n1,7,0.5,0.1\n1,8,0.25,0.05\n0,1,0.5,\n")
    part, _ = _part(f)
    build.assign_ranks([part])
    df, warnings = build.finish(part)
    assert warnings == []
    assert str(df["rank"].dtype) == "int32"
    assert str(df["step"].dtype) == "int64"
    assert df["rank"].tolist() == [1, 1, 0]
    assert df["step"].tolist() == [7, 8, 1]
    np.testing.assert_array_equal(df["comm_s"].to_numpy(), [0.1, 0.05, np.nan])
    assert list(df.index) == [0, 1, 2]
    assert len(part.df) == 0


def test_chunked_row_checks_equal_one_chunk(tmp_path: Path, monkeypatch) -> None:
    f = tmp_path / "run.csv"
    f.write_text(ROWS)
    whole = read_logs([f])
    monkeypatch.setattr(build, "CHUNK", 3)
    monkeypatch.setattr(finish_mod, "CHUNK", 3)
    chunked = read_logs([f])
    pd.testing.assert_frame_equal(chunked.table, whole.table)
    assert chunked.warnings == whole.warnings
    # worked out by hand from ROWS: line 5 repeats (0, 2); line 9 has step 1.5; line 12 goes
    # back from step 5 to 3; line 4's compute + comm + data = 0.47 > 0.32 × 1.01
    assert whole.table[["rank", "step"]].values.tolist() == [
        [0, 1], [0, 2], [0, 3], [0, 4], [1, 1], [1, 2], [1, 3], [2, 5], [2, 6]
    ]  # fmt: skip
    assert [w.split(": ", 1)[0] for w in whole.warnings] == [
        f"{f}:9",
        f"{f}:5",
        f"{f}:12",
        f"{f}:4",
    ]
    assert "not an integer" in whole.warnings[0]
    assert "same (rank, step)" in whole.warnings[1]
    assert "lower than an earlier step" in whole.warnings[2]
    assert "exceed the step time" in whole.warnings[3]


def test_in_order_rows_skip_the_order_sort() -> None:
    rank = np.array([0.0, 0, 0, 1, 1, 2])
    step = np.array([1.0, 2, 5, 1, 3, 0])
    assert finish_mod._increasing(rank, step)
    assert finish_mod._ascending(rank, step).all()
    back = step.copy()
    back[4] = 1.0  # rank 1 repeats step 1
    assert not finish_mod._increasing(rank, back)
    assert finish_mod._ascending(rank, back).tolist() == [True, True, True, True, False, True]
