"""The streaming scanner: chunk borders, line numbers, gzip, bad input, speed of the prefilter."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest

from xpuperf.events import scan, scan_events
from xpuperf.events.scan import distinct_iters, scan_files

DATA = Path(__file__).resolve().parent.parent / "data"
WARN = (
    "[rank{r}]:[W612 10:02:31.1 reducer.cpp:1400] Warning: find_unused_parameters=True was "
    "specified in DDP constructor, but did not find any unused parameters in the forward pass."
)


def _log(tmp_path: Path, n: int, at: list[int], gz: bool = False) -> Path:
    """n lines; the warning (rank = index in ``at``) on the 1-based lines in ``at``."""
    lines = [f"step {i} loss 1.0 time 0.25" for i in range(1, n + 1)]
    for k, no in enumerate(at):
        lines[no - 1] = WARN.format(r=k)
    p = tmp_path / ("t.log.gz" if gz else "t.log")
    data = ("\n".join(lines) + "\n").encode()
    p.write_bytes(gzip.compress(data) if gz else data)
    return p


@pytest.mark.parametrize("chunk", [64, 97, 1 << 20])
def test_line_numbers_across_chunk_borders(tmp_path, monkeypatch, chunk):
    # lines are ~25-170 bytes: chunks of 64 and 97 bytes cut lines and hold no newline at times
    monkeypatch.setattr(scan, "CHUNK", chunk)
    p = _log(tmp_path, 500, [3, 250, 500])
    f = scan_files([p])
    ev = f.events["ddp_no_unused"]
    assert (ev.line, ev.count) == (3, 3)
    assert f.ranks["ddp_no_unused"] == {0, 1, 2}
    assert f.lines == 500


def test_last_line_without_newline_and_crlf(tmp_path):
    p = tmp_path / "w.log"
    p.write_bytes(b"a\r\nb\r\n" + WARN.format(r=5).encode())
    f = scan_files([p])
    assert (f.events["ddp_no_unused"].line, f.lines) == (3, 3)
    assert f.ranks["ddp_no_unused"] == {5}


def test_gzip_truncated_is_read_as_far_as_good(tmp_path):
    p = _log(tmp_path, 2000, [10], gz=True)
    raw = p.read_bytes()
    p.write_bytes(raw[: len(raw) // 2])
    r = scan_events([p])
    assert [f.code for f in r.findings] == ["XP701"]
    assert len(r.warnings) == 1
    assert "read stopped" in r.warnings[0]


def test_missing_and_binary_files_never_raise(tmp_path):
    b = tmp_path / "core.bin"
    b.write_bytes(b"\x00\x01" * 100)
    r = scan_events([tmp_path / "nope.log", b])
    assert r.files_skipped == [str(b)]
    assert "not a file" in r.warnings[0]
    assert all(c.status.value == "not_checked" for c in r.checks)


def test_interleaved_iteration_numbers():
    # 8 ranks printing " 3" at once give "33"; "8192.0" is not an integer, never matched
    assert distinct_iters({"3", "4", "5", "33", "55", "444"}) == {3, 4, 5}
    assert distinct_iters({"12", "1212", "7"}) == {7, 12}


def test_prefilter_is_fast(tmp_path):
    # 400k step lines (~12 MB) with 2 warnings: the byte prefilter decodes only marker lines.
    # Budget 3 s on the 2-core CI machine (a plain per-line regex loop takes ~1 s here).
    p = _log(tmp_path, 400_000, [7, 399_999])
    t0 = time.perf_counter()
    f = scan_files([p])
    assert time.perf_counter() - t0 < 3.0
    assert f.events["ddp_no_unused"].count == 2
    assert f.lines == 400_000
