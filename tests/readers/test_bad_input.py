"""Bad input: every problem is an InputError or a counted warning at the right file:line."""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import pytest

from xpuperf.errors import InputError
from xpuperf.readers import read_logs

HEAD = "step,step_time_ms,data_ms\n"


def _one_warning(res, path, line: int, count: int, reason: str) -> None:
    hits = [w for w in res.warnings if reason in w]
    assert len(hits) == 1, res.warnings
    rows = "row" if count == 1 else "rows"
    assert hits[0].startswith(f"{path}:{line}: skipped {count} {rows}"), hits[0]


# --- whole-file problems -------------------------------------------------------------------


def test_empty_file(write) -> None:
    p = write("rank0.csv", "")
    with pytest.raises(InputError, match="file is empty") as e:
        read_logs([p])
    assert e.value.path == str(p)
    assert str(p) in str(e.value)


def test_blank_file(write) -> None:
    with pytest.raises(InputError, match="only blank lines"):
        read_logs([write("rank0.csv", "\n  \n\n")])


def test_header_only(write) -> None:
    with pytest.raises(InputError, match="no data rows"):
        read_logs([write("rank0.csv", HEAD)])


@pytest.mark.parametrize("name", ["rank0.csv", "rank0.log", "rank0.jsonl", "rank0.bin"])
def test_binary_file(write, name: str) -> None:
    p = write(name, b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)) * 4)
    with pytest.raises(InputError, match="binary file") as e:
        read_logs([p])
    assert e.value.path == str(p)
    # text formats have no extension: named bare, never with empty parentheses "megatron ()"
    assert "()" not in str(e.value)
    assert "megatron, " in str(e.value)
    assert "csv (.csv)" in str(e.value)


def test_binary_file_inside_a_folder_is_skipped_with_a_warning(tmp_path, write) -> None:
    write("logs/rank0.csv", HEAD + "1,200,1\n")
    write("logs/core.log", b"\x00\x01\x02" * 100)
    res = read_logs([tmp_path / "logs"])
    assert len(res.table) == 1
    assert any("core.log: skipped the file" in w for w in res.warnings)


def test_utf16_file(write) -> None:
    p = write("rank0.csv", (HEAD + "1,200,1\n").encode("utf-16"))
    with pytest.raises(InputError, match="UTF-16"):
        read_logs([p])


def test_garbage_parquet(write) -> None:
    p = write("rank0.parquet", b"PAR1 this is not really parquet")
    with pytest.raises(InputError, match="not a readable Parquet file") as e:
        read_logs([p])
    assert e.value.path == str(p)


def test_corrupt_gzip(write) -> None:
    p = write("rank0.csv.gz", b"\x1f\x8b\x08\x00garbage-garbage-garbage")
    with pytest.raises(InputError) as e:
        read_logs([p])
    assert e.value.path == str(p)


def test_truncated_gzip_keeps_the_good_part(write) -> None:
    body = HEAD + "".join(f"{i},200,1\n" for i in range(1, 2001))
    data = gzip.compress(body.encode())
    p = write("rank0.csv.gz", data[: len(data) * 2 // 3])
    res = read_logs([p])
    assert 0 < len(res.table) < 2000
    assert any("truncated or corrupt" in w for w in res.warnings)


def test_missing_path(tmp_path) -> None:
    with pytest.raises(InputError, match="no such file or folder") as e:
        read_logs([tmp_path / "nope.csv"])
    assert e.value.path == str(tmp_path / "nope.csv")


def test_glob_matching_nothing(tmp_path) -> None:
    pattern = str(tmp_path / "rank*.csv")
    with pytest.raises(InputError, match=re.escape(pattern)):
        read_logs([pattern])


def test_folder_without_logs(tmp_path, write) -> None:
    write("logs/README.md", "# notes\n")
    with pytest.raises(InputError, match="contains no log files"):
        read_logs([tmp_path / "logs"])


def test_no_paths() -> None:
    with pytest.raises(InputError, match="no input"):
        read_logs([])


def test_unknown_format_name(write) -> None:
    with pytest.raises(InputError, match=r"known formats are .*jsonl, tsv, csv, parquet"):
        read_logs([write("a.csv", HEAD)], fmt="xlsx")


def test_unrecognised_text_named_explicitly(write) -> None:
    p = write("notes.txt", "hello world\nnothing tabular here\n")
    with pytest.raises(InputError, match="cannot tell the format") as e:
        read_logs([p])
    assert e.value.path == str(p)


@pytest.mark.parametrize("bs", [0, -4, float("nan"), "x"])
def test_bad_batch_size(write, bs) -> None:
    with pytest.raises(InputError, match="batch size"):
        read_logs([write("a.csv", HEAD + "1,2,3\n")], batch_size=bs)


# --- row problems: one warning per file and reason, count, first file:line ---------------------


def test_ragged_rows(write) -> None:
    p = write("rank0.csv", HEAD + "1,200,1\n2,200\n3,200,1\n4,200,1,9\n5,200,1\n6,2")
    res = read_logs([p])
    assert res.table["step"].tolist() == [1, 3, 5]
    _one_warning(res, p, 3, 3, "wrong number of fields (header has 3)")
    assert res.skipped_rows == 3


def test_line_numbers_count_blank_lines_crlf_and_quoted_newlines(write) -> None:
    text = (
        "\r\n"  # 1 blank line before the header
        'step,step_time_ms,"node"\r\n'  # 2
        '1,200,"a,b"\r\n'  # 3
        "\r\n"  # 4
        '2,200,"multi\r\nline"\r\n'  # 5-6
        "3,abc,x\r\n"  # 7
        "4,x,y\r\n"  # 8
    )
    p = write("rank0.csv", text)
    res = read_logs([p])
    assert res.table["step"].tolist() == [1, 2]
    assert res.table["node"].tolist() == ["a,b", "multi\r\nline"]
    _one_warning(res, p, 7, 2, "non-numeric value in step_time_ms")


def test_non_numeric_values(write) -> None:
    p = write("rank0.csv", HEAD + "1,200,1\n2,fast,1\n3,200,n/a\n4,200,slow\nfive,200,1\n6,200,1\n")
    res = read_logs([p])
    # n/a is "unknown", not an error
    assert res.table["step"].tolist() == [1, 3, 6]
    assert np.isnan(res.table["data_s"].iloc[1])
    _one_warning(res, p, 3, 3, "non-numeric value in step, step_time_ms, data_ms")


def test_invalid_step_times(write) -> None:
    rows = ["1,200,1", "2,nan,1", "3,inf,1", "4,-5,1", "5,0,1", "6,,1", "7,210,1", "8,-inf,1"]
    p = write("rank0.csv", HEAD + "\n".join(rows) + "\n")
    res = read_logs([p])
    assert res.table["step"].tolist() == [1, 7]
    np.testing.assert_allclose(res.table["step_time_s"], [0.2, 0.21])
    _one_warning(res, p, 3, 6, "step time missing, NaN, infinite, zero or negative (step_time_ms)")


def test_negative_phase_times(write) -> None:
    p = write("rank0.csv", HEAD + "1,200,1\n2,200,-1\n3,200,-0.5\n4,200,0\n")
    res = read_logs([p])
    assert res.table["step"].tolist() == [1, 4]
    _one_warning(res, p, 3, 2, "negative phase time in data_ms")


def test_duplicate_rank_step_keeps_first(write) -> None:
    p = write("rank0.csv", HEAD + "1,200,1\n2,210,1\n2,999,1\n3,220,1\n3,998,1\n")
    res = read_logs([p])
    assert res.table["step"].tolist() == [1, 2, 3]
    np.testing.assert_allclose(res.table["step_time_s"], [0.2, 0.21, 0.22])
    _one_warning(res, p, 4, 2, "same (rank, step) as an earlier row; kept the first")


def test_steps_going_backwards(write) -> None:
    p = write("rank0.csv", HEAD + "1,200,1\n5,200,1\n3,200,1\n4,200,1\n6,200,1\n2,200,1\n")
    res = read_logs([p])
    assert res.table["step"].tolist() == [1, 5, 6]
    _one_warning(res, p, 4, 3, "step number lower than an earlier step")


def test_backwards_is_per_rank_in_a_shared_file(write) -> None:
    text = "rank,step,step_time\n0,5,0.1\n1,1,0.1\n0,6,0.1\n1,2,0.1\n1,1,0.1\n"
    res = read_logs([write("all.csv", text)])
    assert res.table[["rank", "step"]].values.tolist() == [[0, 5], [0, 6], [1, 1], [1, 2]]
    assert len(res.warnings) == 1
    assert ":6: skipped 1 row: same (rank, step)" in res.warnings[0]


def test_not_utf8_line(write) -> None:
    p = write("rank0.csv", (HEAD + "1,200,1\n2,2\xe90,1\n3,200,1\n").encode("latin-1"))
    res = read_logs([p])
    assert res.table["step"].tolist() == [1, 3]
    _one_warning(res, p, 3, 1, "not valid UTF-8")


def test_json_lines_none_of_them_utf8_say_so(write) -> None:
    # every line holds a byte that is not UTF-8: the reason is the encoding (2 lines, first at
    # line 1), not "no step time column ... found: (none)" as before
    p = write("r.jsonl", b'{"step": 1, "step_time": 0.5, "n": "\xff"}\n{"step": 2, "n": "\xfe"}\n')
    with pytest.raises(InputError, match=r"no line could be read as a record: 2 line\(s\) not val"):
        read_logs([p])
    with pytest.raises(InputError) as e:
        read_logs([p])
    assert e.value.line == 1


def test_malformed_json_lines(write) -> None:
    lines = [
        '{"step": 1, "step_time": 0.2}',
        '{"step": 2, "step_time": 0.2',
        "",
        "[1, 2]",
        '{"step": 3, "step_time": "slow"}',
        '{"step": 4, "step_time": NaN}',
        '{"step": 5, "step_time": 0.3}',
    ]
    p = write("rank0.jsonl", "\n".join(lines) + "\n")
    res = read_logs([p])
    assert res.table["step"].tolist() == [1, 5]
    _one_warning(res, p, 2, 1, "not valid JSON")
    _one_warning(res, p, 4, 1, "not a JSON object")
    _one_warning(res, p, 5, 1, "non-numeric value in step_time")
    _one_warning(res, p, 6, 1, "step time missing")
    assert res.skipped_rows == 4


def test_json_list_positions_are_records(write) -> None:
    p = write("rank0.json", json.dumps([{"step": 1, "step_time": 0.2}, {"step": 2}]))
    res = read_logs([p])
    assert res.warnings == [
        f"{p} (record 2): skipped 1 row: step time missing, NaN, infinite, zero or negative "
        "(step_time)"
    ]


def test_parquet_positions_are_rows(tmp_path) -> None:
    import pandas as pd

    p = tmp_path / "rank0.parquet"
    pd.DataFrame({"step": [1, 2, 3], "step_time": [0.2, -1.0, 0.3]}).to_parquet(p)
    res = read_logs([p])
    assert res.warnings[0].startswith(f"{p} (row 2): skipped 1 row")


def test_every_row_bad_is_an_error_at_the_first_line(write) -> None:
    p = write("rank0.csv", HEAD + "1,0,1\n2,-1,1\n")
    with pytest.raises(InputError, match="no usable rows") as e:
        read_logs([p])
    assert (e.value.path, e.value.line) == (str(p), 2)


def test_every_row_bad_in_every_file(write) -> None:
    a = write("rank0.csv", HEAD + "1,0,1\n")
    b = write("rank1.csv", HEAD + "1,x,1\n")
    with pytest.raises(InputError, match="no usable rows in any of the 2 files"):
        read_logs([a, b])


def test_one_file_with_nothing_left_is_a_warning(write) -> None:
    a = write("rank0.csv", HEAD + "1,200,1\n")
    b = write("rank1.csv", HEAD + "1,0,1\n")
    res = read_logs([a, b])
    assert res.table["rank"].tolist() == [0]
    assert f"{b}: no usable rows remain in this file" in res.warnings


def test_comment_lines_before_the_header(write) -> None:
    p = write("rank0.log", "# produced by train.py\n# units: ms\nstep,step_time_ms\n1,200\n2,x\n")
    res = read_logs([p])
    assert res.table["step_time_s"].tolist() == [0.2]
    _one_warning(res, p, 5, 1, "non-numeric value in step_time_ms")


def test_unreadable_file(write) -> None:
    import os

    p = write("rank0.csv", HEAD + "1,200,1\n")
    p.chmod(0)
    try:
        if os.access(p, os.R_OK):  # running as root: permissions do not apply
            pytest.skip("root can read any file")
        with pytest.raises(InputError, match="cannot read"):
            read_logs([p])
    finally:
        p.chmod(0o644)


def test_ragged_row_that_is_not_utf8_prints_no_traceback(tmp_path) -> None:
    # pyarrow decodes an invalid row as UTF-8 before calling the row handler; a row that is not
    # UTF-8 made Python print "Exception ignored in: <function …on_invalid>" and a traceback
    import subprocess
    import sys

    p = tmp_path / "run.csv"
    rows = b"".join(b"%d,0,0.5\n" % i for i in range(4, 12))
    p.write_bytes(b"step,rank,step_time_s\n1,0,0.5\n2,0,0.5,\xc3\n3,0,0.5\n" + rows)
    out = subprocess.run(
        [sys.executable, "-m", "xpuperf", "analyze", str(p), "--json", str(tmp_path / "o.json")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert "Exception ignored" not in out.stderr
    assert f"{p}:3: skipped 1 row: not valid UTF-8 text" in out.stderr
    doc = json.loads((tmp_path / "o.json").read_text())
    assert [r["step"] for r in doc["job_steps"]] == [1, 3, *range(4, 12)]  # only step 2 lost


def test_ragged_non_utf8_rows_in_files_read_on_threads(tmp_path, monkeypatch) -> None:
    # the guard swapped the process-wide sys.unraisablehook per file; files read on several
    # threads interleaved the swaps, so some reports reached the previous hook (a traceback on
    # stderr) and a stale hook stayed installed
    import sys

    from xpuperf.readers import progress

    for k in range(12):
        rows = "".join(f"{s},0.3\n" for s in range(60))
        (tmp_path / f"rank{k}.csv").write_bytes(
            b"step,step_time_s\n" + rows.encode() + b"500,0.4,\xe4\xb8\n"
        )
    reached: list[object] = []
    mine = reached.append
    monkeypatch.setattr(sys, "unraisablehook", mine)
    monkeypatch.setattr(progress, "workers", lambda: 4)
    res = read_logs([tmp_path])
    assert reached == []  # every report was counted by the guard, none printed
    assert sys.unraisablehook is mine  # and the hook before it is back
    assert len(res.table) == 12 * 60
    assert sum("not valid UTF-8" in w for w in res.warnings) == 12


def test_line_reader_keeps_rows_whose_bad_bytes_are_in_unread_columns(tmp_path) -> None:
    # a ragged non-UTF-8 row sends the file to the line reader, which dropped every line that
    # was not UTF-8 — also the good rows whose only bad bytes are in a column never read (the
    # pyarrow path keeps them): 24 of 120 rows were lost because of one unrelated row
    rows = [b"%d,0.5,%s\n" % (s, "注释".encode("gbk") if s % 5 == 0 else b"ok") for s in range(120)]
    rows.insert(10, b"500,0.4,\xe4\xb8,x\n")  # ragged and not UTF-8: the one row to drop
    p = tmp_path / "run.csv"
    p.write_bytes(b"step,step_time_s,comment\n" + b"".join(rows))
    res = read_logs([p])
    assert res.table["step"].tolist() == list(range(120))
    assert len(res.warnings) == 1
    assert "skipped 1 row: not valid UTF-8 text" in res.warnings[0]


def test_parquet_with_corrupt_pandas_metadata_is_read(tmp_path) -> None:
    # found by the fuzz target: pyarrow parses the schema's "pandas" metadata in to_pandas and
    # raised JSONDecodeError on a damaged one; the columns themselves are fine
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pa.table({"rank": [0, 0], "step": [1, 2], "step_time_s": [0.5, 0.25]})
    pq.write_table(t.replace_schema_metadata({b"pandas": b"{not json"}), tmp_path / "r.parquet")
    res = read_logs([tmp_path / "r.parquet"])
    assert res.table["step_time_s"].tolist() == [0.5, 0.25]
