"""Path expansion, format choice (extension, sniffing, forced) and the format registry."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import xpuperf.readers as readers
from xpuperf.readers import FORMATS, Format, RawTable, get_format, read_logs, register_format
from xpuperf.readers.paths import natural_key

BODY = "step,step_time\n1,0.2\n"


def _names(res) -> list[str]:
    return [Path(s).name for s in res.sources]


def test_folder_is_read_recursively_in_natural_order(tmp_path: Path, write) -> None:
    for r in (10, 2, 1):
        write(f"logs/rank{r}.csv", BODY)
    write("logs/sub/rank3.jsonl", '{"step": 1, "step_time": 0.2}\n')
    write("logs/.hidden/rank4.csv", BODY)
    write("logs/.rank5.csv", BODY)
    write("logs/README.txt", "read me\n")
    write("logs/notes.md", "# notes\n")
    write("logs/plot.png", b"\x89PNG\x00")
    res = read_logs([tmp_path / "logs"])
    assert _names(res) == ["rank1.csv", "rank2.csv", "rank10.csv", "rank3.jsonl"]
    assert sorted(set(res.table["rank"])) == [1, 2, 3, 10]
    assert res.warnings == []


def test_glob_pattern(tmp_path: Path, write) -> None:
    for r in range(3):
        write(f"logs/rank{r}.csv", BODY)
    write("logs/other.csv", BODY)
    res = read_logs([str(tmp_path / "logs" / "rank*.csv")])
    assert _names(res) == ["rank0.csv", "rank1.csv", "rank2.csv"]


def test_same_file_twice_is_read_once(write) -> None:
    p = write("rank0.csv", BODY)
    assert len(read_logs([p, str(p)]).sources) == 1


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("rank0.log", "step,step_time\n1,0.2\n"),
        ("rank0.txt", "step\tstep_time\n1\t0.2\n"),
        ("rank0.log", '{"step": 1, "step_time": 0.2}\n'),
        ("rank0.out", "iteration,elapsed_time_per_iteration_ms\n1,200\n"),
        ("rank0", "step,step_time\n1,0.2\n"),
    ],
)
def test_text_logs_are_sniffed(write, name: str, content: str) -> None:
    t = read_logs([write(name, content)]).table
    assert t["step_time_s"].tolist() == [0.2]


def test_gz_suffix_is_stripped_before_choosing(write) -> None:
    import gzip

    p = write("rank0.tsv.gz", gzip.compress(b"step\tstep_time\n1\t0.2\n"))
    assert read_logs([p]).table["step_time_s"].tolist() == [0.2]


def test_forced_format_overrides_extension(write) -> None:
    p = write("rank0.dat", "step\tstep_time\n1\t0.2\n")
    assert read_logs([p], fmt="TSV").table["step_time_s"].tolist() == [0.2]


def test_parquet_recognised_by_magic_bytes(tmp_path: Path) -> None:
    p = tmp_path / "rank0.bin"
    pd.DataFrame({"step": [1], "step_time": [0.2]}).to_parquet(p)
    assert read_logs([p]).table["step_time_s"].tolist() == [0.2]


def test_unrecognised_log_in_folder_is_skipped_with_warning(tmp_path: Path, write) -> None:
    write("logs/rank0.csv", BODY)
    write("logs/launcher.log", "starting job\nall good\n")
    res = read_logs([tmp_path / "logs"])
    assert _names(res) == ["rank0.csv"]
    assert len(res.warnings) == 1
    assert re.search(r"launcher\.log: skipped the file: its format is not recog", res.warnings[0])


def test_registry_lists_the_generic_formats() -> None:
    # framework formats are sniffed first; the generic ones close the list
    assert [f.name for f in FORMATS][-4:] == ["jsonl", "tsv", "csv", "parquet"]
    assert get_format("CSV").extensions == (".csv",)
    for f in FORMATS:
        assert f.example


def test_register_format_is_sniffed_before_generic_ones(write, monkeypatch) -> None:
    monkeypatch.setattr(readers, "FORMATS", list(readers.FORMATS))

    def sniff(lines: list[str]) -> bool:
        return bool(lines) and lines[0].startswith("[toy]")

    def read(src) -> RawTable:
        rows = [ln.split() for ln in src.read_all().decode().splitlines()[1:]]
        frame = pd.DataFrame(rows, columns=["iter", "time_ms"])
        return RawTable(frame, unit="line", locate=lambda idx: {i: i + 2 for i in idx})

    toy = Format("toy", (".toy",), sniff, read, "[toy] header, then: ITER TIME_MS")
    register_format(toy)
    names = [f.name for f in readers.FORMATS]
    assert names.index("toy") < names.index("jsonl")
    assert get_format("toy") is toy
    res = read_logs([write("rank0.log", "[toy]\n1 200\n2 x\n3 300\n")])
    assert res.table["step_time_s"].tolist() == [0.2, 0.3]
    assert res.warnings[0].startswith(f"{res.sources[0]}:3: skipped 1 row")
    assert read_logs([write("rank1.toy", "[toy]\n1 100\n")]).table["rank"].tolist() == [1]


def test_natural_key_orders_numbers_numerically() -> None:
    names = ["node10", "node2", "Node1", "node2a"]
    assert sorted(names, key=natural_key) == ["Node1", "node2", "node2a", "node10"]


@pytest.mark.parametrize(
    ("name", "fmt"), [("json", "jsonl"), ("ndjson", "jsonl"), ("pq", "parquet")]
)
def test_extension_names_a_format(name: str, fmt: str) -> None:
    assert get_format(name).name == fmt


def test_glob_skips_unrecognised_files_with_a_warning(tmp_path: Path, write) -> None:
    write("logs/rank0.log", BODY)
    write("logs/launcher.log", "starting\n")
    res = read_logs([str(tmp_path / "logs" / "*.log")])
    assert _names(res) == ["rank0.log"]
    assert len(res.warnings) == 1
