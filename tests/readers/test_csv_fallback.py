"""CSV files where pyarrow's reader and the line-by-line reader must agree, found by a break-it
pass: an unclosed double quote, a repeated column name, a header name that is not UTF-8 in a
column not read. Each test fails on the code before its fix."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from xpuperf.readers import read_logs

BAD = b"500,0.4,\xe4\xb8,x\n"  # ragged and not UTF-8: sends the file to the line reader


def rows(n: int, note: bytes = b"ok") -> list[bytes]:
    return [b"%d,%d.%02d,%s\n" % (s, 1, s % 100, note) for s in range(n)]


@pytest.mark.parametrize("gz", [False, True])
def test_unclosed_quote_does_not_swallow_the_rest_of_the_file(tmp_path: Path, gz: bool) -> None:
    # pyarrow took every line after an unclosed quote as one field: 5 of 2000 rows kept, no
    # warning, exit 0
    body = rows(2000)
    body[5] = b'5,1.05,"loss spike\n'
    data = b"step,step_time_s,note\n" + b"".join(body)
    p = tmp_path / ("run.csv.gz" if gz else "run.csv")
    p.write_bytes(gzip.compress(data) if gz else data)
    res = read_logs([p])
    assert res.table["step"].tolist() == list(range(2000))  # the numbers of row 5 are intact
    assert res.table["step_time_s"].iloc[1999] == 1.99


def test_repeated_column_name_reads_the_first_on_both_paths(tmp_path: Path) -> None:
    # the line reader took the LAST column of a repeated name, pyarrow the first
    head = b"step,step_time,step_time\n"
    body = [b"%d,1.0%d,9.0\n" % (s, s % 10) for s in range(30)]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "rank0.csv").write_bytes(head + b"".join(body))
    (tmp_path / "b" / "rank0.csv").write_bytes(head + b"".join(body) + BAD)
    a, b = read_logs([tmp_path / "a"]), read_logs([tmp_path / "b"])
    assert a.table["step_time_s"].tolist()[:3] == [1.00, 1.01, 1.02]
    assert b.table["step_time_s"].tolist() == a.table["step_time_s"].tolist()


def test_header_name_not_utf8_in_a_column_not_read(tmp_path: Path) -> None:
    # the line reader refused the whole file ("header line is not valid UTF-8") although the
    # bad name is in a column it does not read, and pyarrow reads the file
    head = b"step,step_time_s," + "备注".encode("gbk") + b"\n"
    p = tmp_path / "run.csv"
    p.write_bytes(head + b"".join(rows(30)) + BAD)
    res = read_logs([p])
    assert res.table["step"].tolist() == list(range(30))
    assert [w.split(": ", 1)[1] for w in res.warnings] == [
        "skipped 1 row: not valid UTF-8 text (re-save the file as UTF-8)"
    ]


def test_unclosed_quote_hidden_by_a_literal_quote(tmp_path: Path) -> None:
    # an inch mark ('5"', a literal quote inside an unquoted field) made the number of quotes
    # even, so the unclosed quote on row 10 still swallowed the rest: 11 of 2000 rows kept
    body = rows(2000)
    body[3] = b'3,1.03,5" pipe\n'
    body[10] = b'10,1.10,"loss spike\n'
    p = tmp_path / "run.csv"
    p.write_bytes(b"step,step_time_s,note\n" + b"".join(body))
    res = read_logs([p])
    assert res.table["step"].tolist() == list(range(2000))
