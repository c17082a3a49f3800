"""Hostile-input limits (docs/reliability.md): compressed bombs, one huge line, huge files, and
nothing from an input ever executed.

Deep JSON/YAML and YAML alias bombs are pinned in tests/readers/test_hostile.py and
tests/topology/test_hostile.py.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from tests.fuzz.harness import ROOT, hard_deadline
from xpuperf.errors import InputError
from xpuperf.readers import base, read_logs
from xpuperf.topology import loader
from xpuperf.topology.importers import import_files


def test_gzip_bomb_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "GZIP_MIN_LIMIT", 4 << 20)  # the real floor is 256 MiB
    body = b"step,step_time_s\n" + b"1,0.3\n" * (8 << 20 >> 3)  # 8 MiB, compresses ~500x
    p = tmp_path / "rank0.csv.gz"
    p.write_bytes(gzip.compress(body, 9))
    assert len(body) / p.stat().st_size > base.GZIP_MAX_RATIO
    with pytest.raises(InputError) as e:
        read_logs([p])
    msg = str(e.value)
    assert msg.startswith(f"{p}: gzip data expands more than 200x ({p.stat().st_size} compressed")
    assert msg.endswith("decompress it and pass the plain file")


def test_gzip_under_the_limit_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "GZIP_MIN_LIMIT", 4 << 20)
    rows = "".join(f"{i},{0.3 + (i % 7) / 100}\n" for i in range(1, 20001))
    p = tmp_path / "rank0.csv.gz"
    p.write_bytes(gzip.compress(("step,step_time_s\n" + rows).encode()))
    assert len(read_logs([p]).table) == 20000


@pytest.mark.parametrize("kind", ["csv", "jsonl", "log"])
def test_one_50_mb_line(tmp_path: Path, kind: str) -> None:
    """One case per reader family (not per example): the line is skipped with a warning."""
    huge = b"9" * (50 << 20)
    good = [b"%d,0.3" % i for i in range(1, 11)]
    if kind == "csv":
        text = b"step,step_time_s\n" + b"\n".join([*good[:5], b"6," + huge, *good[5:]]) + b"\n"
    elif kind == "jsonl":
        rows = [b'{"step": %d, "step_time_s": 0.3}' % i for i in range(1, 11)]
        text = b"\n".join([*rows[:5], b'{"step": 99, "note": "' + huge + b'"}', *rows[5:]])
    else:
        sample = (
            ROOT / "tests/data/formats_megatron/36_trainlog_megatron-llm-127s-per-iteration.txt"
        )
        text = sample.read_bytes() + b" " * (50 << 20) + b"x\n"
    p = tmp_path / f"rank0.{kind}"
    p.write_bytes(text)
    with hard_deadline(120):
        res = read_logs([p])
    assert len(res.table) >= 4


def test_topology_file_size_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "MAX_FILE_BYTES", 1 << 20)
    p = tmp_path / "topo.txt"
    p.write_bytes(b"GPU0\tX\n" * (200_000))
    for fn in (loader.load, lambda x: import_files([x])):
        with pytest.raises(InputError, match=r"file is larger than 1 MiB: not a topology"):
            fn(p)


FORBIDDEN = re.compile(
    r"\beval\(|\bexec\(|\bpickle\b|\bmarshal\b|\bshelve\b|yaml\.load\(|yaml\.unsafe_load|"
    r"yaml\.(Unsafe|Full)?Loader\b|__import__\(|os\.system\(|shell=True|importlib\.import_module"
)


def test_nothing_from_an_input_is_executed() -> None:
    """No eval/exec/pickle/marshal/unsafe YAML anywhere in the package; the one literal parser
    is ``ast.literal_eval`` (HF Trainer dict lines: literals only, never code)."""
    hits = []
    for p in sorted((ROOT / "xpuperf").rglob("*.py")):
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if FORBIDDEN.search(code):
                hits.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()}")
    assert hits == []
    yaml_loads = [
        f"{p.relative_to(ROOT)}"
        for p in (ROOT / "xpuperf").rglob("*.py")
        if "yaml." in p.read_text(encoding="utf-8")
        and re.search(r"yaml\.\w*load\w*\(", p.read_text(encoding="utf-8"))
        and not all(
            m.group(0) == "yaml.safe_load("
            for m in re.finditer(r"yaml\.\w*load\w*\(", p.read_text(encoding="utf-8"))
        )
    ]
    assert yaml_loads == []
