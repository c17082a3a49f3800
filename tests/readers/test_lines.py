"""The vectorised line locator agrees with a line-by-line reference, across chunk boundaries."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xpuperf.errors import InputError
from xpuperf.readers import lines, read_logs
from xpuperf.readers.base import Source


def _source(path: Path) -> Source:
    return Source(path, str(path), False, path.read_bytes()[:65536])


def _reference(text: str, fields: int) -> tuple[list[int], list[int]]:
    """(line of each good record, lines of ragged records) — quotes may hold , and newlines."""
    good, ragged = [], []
    line = 1
    header_seen = False
    i = 0
    n = len(text)
    while i < n:
        start_line = line
        nfields, inside, empty = 1, False, True
        while i < n:
            c = text[i]
            if c == '"':
                inside = not inside
            elif c == "\n":
                line += 1
                if not inside:
                    i += 1
                    break
            elif c == "," and not inside:
                nfields += 1
            if c not in "\r\n":
                empty = False
            i += 1
        if empty:
            continue
        if not header_seen:
            header_seen = True
            continue
        (good if nfields == fields else ragged).append(start_line)
    return good, ragged


def _random_csv(rng: random.Random) -> str:
    out = ["step,step_time,node"]
    for i in range(rng.randint(0, 60)):
        kind = rng.random()
        if kind < 0.1:
            out.append("")
        elif kind < 0.2:
            out.append(f'{i},0.1,"a,\nb"')
        elif kind < 0.3:
            out.append(f"{i},0.1")
        elif kind < 0.35:
            out.append("   ")
        else:
            out.append(f'{i},0.{i},"n{i}"')
    eol = rng.choice(["\n", "\r\n"])
    text = eol.join(out)
    return text + (eol if rng.random() < 0.5 else "")


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_scan_matches_reference(tmp_path: Path, monkeypatch, seed: int, chunk: int) -> None:
    monkeypatch.setattr(lines, "CHUNK", chunk)
    text = _random_csv(random.Random(seed))
    p = tmp_path / "a.csv"
    p.write_bytes(text.encode())
    good, ragged = _reference(text, 3)
    sc = lines.scan(_source(p), range(len(good) + 2), header_line=1, delimiter=",", fields=3)
    assert [sc.lines[i] for i in range(len(good))] == good
    assert sc.lines[len(good)] is None
    assert sc.ragged == len(ragged)
    assert sc.first_ragged == (ragged[0] if ragged else None)


@pytest.mark.parametrize("chunk", [1, 5, 1 << 20])
def test_scan_json_lines_skips_blank_lines(tmp_path: Path, monkeypatch, chunk: int) -> None:
    monkeypatch.setattr(lines, "CHUNK", chunk)
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a":1}\n\n  \t\n{"a":2}\r\n{"a":3}')
    assert lines.scan(_source(p), [0, 1, 2, 3]).lines == {0: 1, 1: 4, 2: 5, 3: None}


def test_fast_path_line_numbers_match_the_reference(tmp_path: Path) -> None:
    rng = random.Random(3)
    rows = ["step,step_time,node"]
    bad_lines = []
    for i in range(1, 3000):
        if rng.random() < 0.01:
            rows.append(f"{i},-1,x")
            bad_lines.append(len(rows))
        elif rng.random() < 0.01:
            rows.append("")
        else:
            rows.append(f"{i},0.1,x")
    p = tmp_path / "rank0.csv"
    p.write_text("\n".join(rows) + "\n")
    res = read_logs([p])
    assert res.warnings[0].startswith(f"{p}:{bad_lines[0]}: skipped {len(bad_lines)} rows")


_CELLS = st.sampled_from(
    [
        *("1", "2", "0.5", "-1", "0", "nan", "inf", "", "x", '"q,"', "1e3", "\xe9", "\x00", " "),
        *("12:00:01", "2024-01-01", "2024-01-01T00:00:01Z", "worker-3", "1700000000", "#", "\r"),
    ]
)
_HEADERS = st.lists(
    st.sampled_from(
        [
            *("step", "rank", "time", "step_time_ms", "fps", "ts", "node", "data", "x"),
            *("local_rank", "bs", "it/s", "fwd_us"),
        ]
    ),
    min_size=1,
    max_size=4,
)


_FIXTURE_OK = [HealthCheck.function_scoped_fixture]


@settings(max_examples=150, deadline=None, suppress_health_check=_FIXTURE_OK)
@given(
    header=_HEADERS,
    rows=st.lists(st.lists(_CELLS, min_size=0, max_size=5), max_size=8),
    ext=st.sampled_from([".csv", ".tsv", ".jsonl", ".log"]),
)
def test_arbitrary_input_never_leaks_another_exception(tmp_path_factory, header, rows, ext) -> None:
    sep = "\t" if ext == ".tsv" else ","
    if ext == ".jsonl":
        body = "\n".join(
            "{" + ", ".join(f'"{h}": "{c}"' for h, c in zip(header, r, strict=False)) + "}"
            for r in rows
        )
    else:
        body = "\n".join([sep.join(header), *(sep.join(r) for r in rows)])
    p = tmp_path_factory.mktemp("fuzz") / f"rank0{ext}"
    p.write_bytes(body.encode("utf-8", errors="surrogateescape"))
    try:
        res = read_logs([p])
    except InputError:
        return
    assert len(res.table) > 0
    assert (res.table["step_time_s"] > 0).all()


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes_never_leak_another_exception(tmp_path_factory, data: bytes) -> None:
    p = tmp_path_factory.mktemp("bytes") / "rank0.csv"
    p.write_bytes(data)
    with contextlib.suppress(InputError):
        read_logs([p])
