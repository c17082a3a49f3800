"""Scale features of the readers: per-file parallel parsing keeps order, progress totals."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pyarrow.csv as pacsv

from xpuperf.readers import progress, read_logs


def _per_rank(tmp_path: Path, ranks: int, steps: int) -> Path:
    d = tmp_path / "logs"
    d.mkdir()
    for r in range(ranks):
        rows = "\n".join(f"{s},{0.1 + r / 1000 + s / 1e6:.6f}" for s in range(steps))
        (d / f"rank{r}.csv").write_text("step,step_time_s\n" + rows + "\n")
    return d


def test_map_files_keeps_input_order_under_uneven_work() -> None:
    def slow_first(i: int) -> int:
        time.sleep(0.02 if i % 3 == 0 else 0)
        return i * i

    assert list(progress.map_files(slow_first, list(range(20)))) == [i * i for i in range(20)]


def test_parallel_read_matches_an_independent_reader(tmp_path: Path) -> None:
    d = _per_rank(tmp_path, ranks=12, steps=50)
    table = read_logs([d]).table
    for r in (0, 7, 11):  # pyarrow reading the file alone, rank from the name
        ref = pacsv.read_csv(d / f"rank{r}.csv").to_pandas()
        got = table[table["rank"] == r]
        assert got["step"].tolist() == ref["step"].tolist()
        np.testing.assert_array_equal(got["step_time_s"].to_numpy(), ref["step_time_s"].to_numpy())


def test_progress_totals_are_files_and_bytes_on_disk(tmp_path: Path) -> None:
    d = _per_rank(tmp_path, ranks=5, steps=200)
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def sink(files: int, nbytes: int) -> None:
        with lock:
            seen.append((files, nbytes))

    with progress.reporting(sink):
        read_logs([d])
    total = sum(p.stat().st_size for p in d.iterdir())
    assert seen[-1] == (5, total)
    assert max(b for _, b in seen) == total  # never more than the files hold
    with progress.reporting(None):  # no sink: nothing is called
        read_logs([d])
    assert seen[-1] == (5, total)


def test_single_file_reports_bytes_within_the_file(tmp_path: Path) -> None:
    # 4 MB: several pyarrow blocks, so bytes are reported before the file is done
    n = 120_000
    p = tmp_path / "big.csv"
    body = "\n".join(f"{i % 4},{i // 4},0.25" for i in range(n))
    p.write_text("rank,step,step_time_s\n" + body + "\n")
    seen: list[tuple[int, int]] = []
    with progress.reporting(lambda f, b: seen.append((f, b))):
        t = read_logs([p]).table
    assert len(t) == n
    assert any(f == 0 and b > 0 for f, b in seen)
    assert seen[-1] == (1, p.stat().st_size)
