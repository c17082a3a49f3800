"""The chunked CSV path (csvchunks._read_chunks: chunks parsed on all cores) reads what pyarrow's
streaming reader reads: the same table and the same warnings, on files made to hit every edge of
the chunking — rows cut at a chunk end, a quoted header (as pyarrow writes it), CRLF, blank lines,
a last line without newline, ragged rows, a non-number late in the file, a quoted newline (the
streaming reader takes over there), a line longer than a chunk, comment lines before the header
and a header with no rows.

The streaming path is forced by making ``_data_start`` find no start; the chunks are made tiny.
"""

from __future__ import annotations

import pandas as pd
import pytest

from xpuperf.errors import InputError
from xpuperf.readers import csvchunks, read_logs


def _body(n: int = 60) -> list[str]:
    return [
        f"{r},{s},{0.2 + 0.001 * ((r * 7 + s) % 13):.3f},n{r},0.01"
        for r in (0, 1)
        for s in range(n)
    ]


CASES = {
    "plain": "rank,step,step_time_s,node,comm_s\n" + "\n".join(_body()) + "\n",
    "quoted_header": '"rank","step","step_time_s","node","comm_s"\n' + "\n".join(_body()) + "\n",
    "crlf_blank_no_final_newline": "rank,step,step_time_s,node,comm_s\r\n"
    + "\r\n".join(_body()[:50])
    + "\r\n\r\n\r\n"
    + "\r\n".join(_body()[50:]),
    "ragged_and_late_text": "# a comment\n\nrank,step,step_time_s,node,comm_s\n"
    + "\n".join(_body()[:70])
    + "\n1,70,0.2\n1,71,0.2,n1,0.01,extra\n1,72,0.2,n1,oops\n"
    + "\n".join(_body(100)[173:])
    + "\n",
    "quoted_newline_late": "rank,step,step_time_s,node,comm_s\n"
    + "\n".join(_body()[:80])
    + '\n1,90,0.25,"node\nB",0.01\n'
    + "\n".join(_body(100)[191:])
    + "\n",
    "line_longer_than_a_chunk": "rank,step,step_time_s,node,comm_s\n"
    + "\n".join(_body()[:40])
    + f"\n1,95,0.2,{'x' * 300},0.01\n"
    + "\n".join(_body(100)[196:])
    + "\n",
}


def _read(path):
    try:
        res = read_logs([path])
    except InputError as exc:
        return str(exc)
    return res.table, res.warnings


@pytest.mark.parametrize("chunk", [37, 64, 1 << 20])
@pytest.mark.parametrize("name", sorted(CASES))
def test_chunks_read_what_the_streaming_reader_reads(tmp_path, monkeypatch, name, chunk):
    path = tmp_path / f"{name}.csv"
    path.write_bytes(CASES[name].encode())
    stream_table, stream_warnings = _read_streaming(path, monkeypatch)
    monkeypatch.setattr(csvchunks, "CHUNK_BYTES", chunk)
    calls = []
    real = csvchunks.pacsv.read_csv
    count = lambda *a, **k: calls.append(1) or real(*a, **k)  # noqa: E731
    monkeypatch.setattr(csvchunks.pacsv, "read_csv", count)
    table, warnings = _read(path)
    pd.testing.assert_frame_equal(table, stream_table, check_exact=True)
    assert warnings == stream_warnings
    assert len(table) > 40
    if chunk == 37:  # 37-byte chunks hold one or two rows: the chunked path read most rows
        assert len(calls) >= 20


def _read_streaming(path, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(csvchunks, "_data_start", lambda _src, _skip: None)
        return _read(path)


def test_edge_cases_read_as_expected(tmp_path, monkeypatch):
    """What the files above hold, worked out by hand (the comparison alone would pass if both
    paths were wrong the same way)."""
    monkeypatch.setattr(csvchunks, "CHUNK_BYTES", 37)
    p = tmp_path / "r.csv"
    p.write_bytes(CASES["ragged_and_late_text"].encode())
    table, warnings = _read(p)
    # 70 good rows of rank 0/1, then steps 73..99 of rank 1; the three bad rows dropped
    assert len(table) == 70 + 27
    assert 72 not in set(table.loc[table["rank"] == 1, "step"])
    # line 1 a comment, 2 blank, 3 the header, 4-73 the 70 rows; 74 and 75 ragged, 76 text
    assert any(":74: skipped 2 rows" in w and "wrong number of fields" in w for w in warnings)
    assert any(":76: skipped 1 row: non-numeric value in comm_s" in w for w in warnings)
    p.write_bytes(CASES["quoted_newline_late"].encode())
    table, _ = _read(p)
    assert table.loc[(table["rank"] == 1) & (table["step"] == 90), "node"].tolist() == ["node\nB"]
    p.write_bytes(b"rank,step,step_time_s\n")
    assert "no data rows" in _read(p)
