"""Hostile input: crashes, silent overflow, implausible values, oversized messages.

Each test pins one bug found by feeding the readers hostile files; fixtures are built in tmp_path.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xpuperf.errors import InputError
from xpuperf.readers import lines as ln
from xpuperf.readers import read_logs
from xpuperf.readers.base import Source


def _read(paths, **kw):
    """read_logs with every warning (numpy RuntimeWarning included) turned into an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return read_logs(paths, **kw)


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _good_rows(n: int = 10, rank: int = 0) -> list[dict]:
    return [{"rank": rank, "step": i, "step_time_s": 0.3} for i in range(1, n + 1)]


# --- 1. pyarrow JSON segfault on deep nesting ----------------------------------------------


def test_deep_line_does_not_crash(tmp_path: Path) -> None:
    rows = _good_rows(10)
    deep = '{"rank": 0, "step": 99, "step_time_s": ' + "[" * 100_000 + "]" * 100_000 + "}"
    text = _jsonl(rows[:5]) + deep + "\n" + _jsonl(rows[5:])
    p = tmp_path / "deep_line.jsonl"
    p.write_text(text)
    # in a child process: a regression is a segfault, which must not kill the test run
    code = (
        "import sys; from xpuperf.readers import read_logs; "
        f"r = read_logs([{str(p)!r}]); print(len(r.table)); print(*r.warnings, sep='\\n')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    got = out.stdout.splitlines()
    assert got[0] == "10"
    assert any(":6: skipped 1 row" in w and "nested more than 64" in w for w in got[1:]), got


def test_depth_bound_spans_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ln, "CHUNK", 7)
    flat = tmp_path / "flat.jsonl"
    flat.write_text(_jsonl(_good_rows(50)) + '{"a": [[[1]]]}\n')
    deep = tmp_path / "deep.jsonl"
    deep.write_text(_jsonl(_good_rows(3)) + '{"a": ' + "[" * 70 + "]" * 70 + "}\n")
    assert not ln.json_too_deep(Source(flat, "flat", False, flat.read_bytes()[:100]))
    assert ln.json_too_deep(Source(deep, "deep", False, deep.read_bytes()[:100]))
    # 30 levels on each of many lines: depth is counted per line, not over the file
    many = tmp_path / "many.jsonl"
    many.write_text(("[" * 30 + "]" * 30 + "\n") * 10)
    assert not ln.json_too_deep(Source(many, "many", False, b"["))


def test_moderately_deep_line_dropped_with_reason(tmp_path: Path) -> None:
    p = tmp_path / "rank0.jsonl"
    deep = '{"step": 4, "step_time_s": 0.3, "x": ' + "[" * 100 + "]" * 100 + "}"
    p.write_text(_jsonl(_good_rows(3)) + deep + "\n")
    res = _read([p])
    assert len(res.table) == 3
    assert any(f"{p}:4: skipped 1 row" in w and "nested more than" in w for w in res.warnings)


# --- 2. integer overflow of rank and step --------------------------------------------------


def test_huge_rank_csv_dropped_no_runtime_warning(tmp_path: Path) -> None:
    p = tmp_path / "r.csv"
    body = "".join(f"{s},0,0.3\n" for s in range(1, 6))
    body += "".join(f"{s},99999999999999999999,0.3\n" for s in range(1, 6))
    p.write_text("step,rank,step_time_s\n" + body)
    res = _read([p])
    assert sorted(res.table["rank"].unique()) == [0]
    hits = [w for w in res.warnings if "rank out of range" in w]
    assert len(hits) == 1, res.warnings
    assert f"{p}:7: skipped 5 rows" in hits[0], hits
    assert res.skipped_rows == 5


def test_huge_rank_jsonl_dropped(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    rows = _good_rows(5) + [{"rank": 10**30, "step": i, "step_time_s": 0.3} for i in range(5)]
    p.write_text(_jsonl(rows))
    res = _read([p])
    assert (res.table["rank"] == 0).all()
    assert any("rank out of range" in w for w in res.warnings)


def test_rank_at_int32_limit_dropped(tmp_path: Path) -> None:
    p = tmp_path / "r.csv"
    p.write_text("step,rank,step_time_s\n1,0,0.3\n1,2147483647,0.3\n1,2147483646,0.3\n")
    res = _read([p])
    assert sorted(res.table["rank"].tolist()) == [0, 2147483646]
    assert any("rank out of range" in w for w in res.warnings)


@pytest.mark.parametrize(
    "steps",
    [
        [s * 10**30 for s in range(1, 6)],
        [2**64 + s for s in range(1, 6)],
    ],
)
def test_huge_steps_dropped_not_duplicates(tmp_path: Path, steps: list[int]) -> None:
    p = tmp_path / "s.csv"
    body = "".join(f"{s},0,0.3\n" for s in range(1, 4)) + "".join(f"{s},0,0.3\n" for s in steps)
    p.write_text("step,rank,step_time_s\n" + body)
    res = _read([p])
    assert res.table["step"].tolist() == [1, 2, 3]
    assert not any("same (rank, step)" in w for w in res.warnings), res.warnings
    hits = [w for w in res.warnings if "step number out of range" in w]
    assert len(hits) == 1, res.warnings
    assert f"{p}:5: skipped 5 rows" in hits[0], hits


def test_only_huge_steps_names_the_reason(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_text(_jsonl([{"step": 10**30 + i, "step_time_s": 0.3} for i in range(5)]))
    with pytest.raises(InputError, match="step number out of range"):
        _read([p])


def test_uint64_parquet_steps_dropped(tmp_path: Path) -> None:
    p = tmp_path / "u.parquet"
    steps = pa.array([1, 2, 2**64 - 5, 2**64 - 4], pa.uint64())
    pq.write_table(pa.table({"step": steps, "step_time_s": [0.3] * 4}), p)
    res = _read([p])
    assert res.table["step"].tolist() == [1, 2]
    assert any("step number out of range" in w for w in res.warnings)


def test_json_integer_beyond_float_range(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    # malformed last line forces the line-by-line path, where Python ints are unbounded
    p.write_text(
        _jsonl(_good_rows(3)) + '{"rank": 1' + "0" * 400 + ', "step": 4, "step_time_s": 1}\n{'
    )
    res = _read([p])
    assert len(res.table) == 3
    assert any("rank out of range" in w for w in res.warnings), res.warnings


def test_huge_numeric_node_label_no_runtime_warning(tmp_path: Path) -> None:
    p = tmp_path / "n.csv"
    p.write_text("step,node,local_rank,step_time_s\n1,1e30,0,0.3\n1,5,0,0.3\n")
    res = _read([p])
    assert len(res.table) == 2


# --- 3. implausible values -----------------------------------------------------------------


def test_huge_step_time_dropped(tmp_path: Path) -> None:
    p = tmp_path / "h.csv"
    body = "".join(f"{s},0.3\n" for s in range(1, 30)) + "30,1e308\n31,2e300\n32,1.1e7\n"
    p.write_text("step,step_time_s\n" + body)
    res = _read([p])
    assert len(res.table) == 29
    assert res.table["step_time_s"].max() == 0.3
    hits = [w for w in res.warnings if "implausible time above 1e+07 s" in w]
    assert len(hits) == 1, res.warnings
    assert f"{p}:31: skipped 3 rows" in hits[0], hits


def test_huge_derived_step_time_dropped(tmp_path: Path) -> None:
    p = tmp_path / "rate.csv"
    p.write_text("step,it/s\n1,3.0\n2,1e-300\n3,3.0\n")
    res = _read([p])
    assert res.table["step"].tolist() == [1, 3]
    assert any("implausible" in w and "step rate" in w for w in res.warnings)


def test_huge_phase_dropped(tmp_path: Path) -> None:
    p = tmp_path / "ph.csv"
    p.write_text("step,step_time_s,comm_s\n1,0.3,0.1\n2,0.3,1e300\n3,0.3,0.1\n")
    res = _read([p])
    assert res.table["step"].tolist() == [1, 3]
    assert any(f"{p}:3: skipped 1 row" in w and "implausible" in w for w in res.warnings)


def test_infinite_phase_is_unknown(tmp_path: Path) -> None:
    p = tmp_path / "ph.csv"
    p.write_text(
        "step,step_time_s,compute_s,comm_s\n1,0.3,0.1,inf\n2,0.3,0.1,-inf\n3,0.3,0.1,0.1\n"
    )
    res = _read([p])
    assert res.table["step"].tolist() == [1, 2, 3]
    comm = res.table["comm_s"].to_numpy()
    assert np.isnan(comm[:2]).all()
    assert comm[2] == 0.1
    assert not np.isinf(res.table.select_dtypes("number").to_numpy(dtype=float)).any()


def test_phases_exceeding_step_time_warned_once(tmp_path: Path) -> None:
    p = tmp_path / "ph.csv"
    body = "1,0.3,0.1,0.1,0.1\n2,0.3,0.5,0.4,0.2\n3,0.3,0.15,0.1,0.052\n4,0.3,0.5,0.4,0.2\n"
    p.write_text("step,step_time_s,compute_s,comm_s,data_time_s\n" + body)
    res = _read([p])
    assert len(res.table) == 4  # kept
    assert res.skipped_rows == 0
    hits = [w for w in res.warnings if "exceed the step time" in w]
    assert len(hits) == 1, res.warnings
    assert hits[0].startswith(f"{p}:3: 2 rows, the first at this line:"), hits[0]


def test_phases_within_step_time_not_warned(tmp_path: Path) -> None:
    p = tmp_path / "ph.csv"
    p.write_text(
        "step,step_time_s,forward_s,backward_s,comm_s\n1,0.3,0.1,0.1,0.1\n2,0.3,0.1,,0.1\n"
    )
    assert _read([p]).warnings == []


# --- 4. Parquet duration columns -----------------------------------------------------------


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_parquet_duration_is_seconds(tmp_path: Path, unit: str) -> None:
    p = tmp_path / "d.parquet"
    td = pd.to_timedelta([3.0, 2.0, None], unit="s")  # whole seconds: duration[s] holds them
    arr = pa.array(td, pa.duration("ns")).cast(pa.duration(unit), safe=False)
    pq.write_table(pa.table({"step": [1, 2, 3], "step_time_ms": arr, "comm_s": arr}), p)
    res = _read([p])
    assert res.table["step_time_s"].tolist() == pytest.approx([3.0, 2.0])
    assert res.table["comm_s"].tolist() == pytest.approx([3.0, 2.0])


def test_parquet_duration_timestamp_column(tmp_path: Path) -> None:
    p = tmp_path / "d.parquet"
    since = pa.array(pd.to_timedelta([0.0, 0.3, 0.6, 0.9], unit="s"), pa.duration("us"))
    pq.write_table(pa.table({"step": [1, 2, 3, 4], "timestamp": since}), p)
    res = _read([p])
    assert res.table["step_time_s"].tolist() == pytest.approx([0.3, 0.3, 0.3])


# --- 5. oversized messages -----------------------------------------------------------------


def test_huge_header_message_is_short(tmp_path: Path) -> None:
    p = tmp_path / "h.csv"
    p.write_text(",".join(f"{i:03d}" + "a" * 1000 for i in range(31)) + "\n1,2\n")
    with pytest.raises(InputError, match="no step time column") as e:
        _read([p])
    msg = str(e.value)
    assert len(msg) < 1200
    assert "\n" not in msg
    assert "(21 more)" in msg
    assert "a" * 40 not in msg


def test_unknown_format_quote_is_short(tmp_path: Path) -> None:
    p = tmp_path / "x.weird"
    p.write_text("hello " * 10_000 + "\n")
    with pytest.raises(InputError, match="cannot tell the format") as e:
        _read([p])
    quoted = str(e.value).split("reads ", 1)[1].split("; rename")[0]
    assert len(quoted) <= 84, quoted


def test_long_column_names_cut_in_skip_warnings(tmp_path: Path) -> None:
    name = "step" + " " * 5000 + "time_ms"  # normalises to step_time_ms
    p = tmp_path / "l.csv"
    p.write_text(f"step,{name}\n1,0.3\n2,abc\n3,-1\n")
    res = _read([p])
    assert len(res.warnings) == 2
    assert all(len(w) < 300 for w in res.warnings), res.warnings


# --- 6. JSON in a .csv file ----------------------------------------------------------------


@pytest.mark.parametrize("jsonl", [True, False])
def test_json_in_csv_file_hint(tmp_path: Path, jsonl: bool) -> None:
    p = tmp_path / "rank3.csv"
    rows = _good_rows(5, rank=3)
    p.write_text(_jsonl(rows) if jsonl else json.dumps(rows))
    with pytest.raises(InputError, match="no step time column") as e:
        _read([p])
    assert "looks like JSON; try --format jsonl" in str(e.value).replace(":", ";")
    assert len(_read([p], fmt="jsonl").table) == 5


def test_real_csv_has_no_json_hint(tmp_path: Path) -> None:
    p = tmp_path / "rank3.csv"
    p.write_text("step,foo\n1,2\n")
    with pytest.raises(InputError) as e:
        _read([p])
    assert "JSON" not in str(e.value)


# --- 7. timestamps going backwards ---------------------------------------------------------


@pytest.mark.parametrize("stamps", [[999.7, 999.4, 999.1, 998.8], [1000.0] * 4])
def test_timestamps_not_increasing_reason(tmp_path: Path, stamps: list[float]) -> None:
    p = tmp_path / "t.csv"
    p.write_text("step,timestamp\n" + "".join(f"{i},{t}\n" for i, t in enumerate(stamps, 1)))
    with pytest.raises(InputError, match="timestamps do not increase") as e:
        _read([p])
    assert "first row of each rank" not in str(e.value)


def test_timestamps_some_backwards_warned(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("step,timestamp\n1,10.0\n2,10.3\n3,10.2\n4,10.5\n")
    res = _read([p])
    assert res.table["step"].tolist() == [2, 4]
    assert any(
        f"{p}:4: skipped 1 row" in w and "timestamps do not increase" in w for w in res.warnings
    )
