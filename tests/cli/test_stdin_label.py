"""A log piped in (``analyze -``) is named ``<stdin>`` in warnings, errors, JSON, HTML and
Markdown — never by the path of its temporary copy."""

from __future__ import annotations

import dataclasses
import enum
import json
from pathlib import Path

from tests.cli.conftest import Run, pipe
from xpuperf.cli import stdin as stdin_mod

# 2 ranks × 30 steps, then one row with a field too many: line 1 header + 60 rows → line 62
CSV = "step,rank,step_time_ms,samples\n" + "".join(
    f"{s},{r},{100 + 10 * r},32\n" for r in (0, 1) for s in range(1, 31)
)
BAD_ROW = "31,0,100,32,extra\n"


def test_outputs_and_warnings_name_stdin(xp: Run, monkeypatch, tmp_path: Path) -> None:
    pipe(monkeypatch, CSV + BAD_ROW)
    out = {k: tmp_path / f"r.{k}" for k in ("json", "html", "md")}
    code, stdout, err = xp("analyze", "-", "--warmup", "0", "--json", out["json"], "--html",
                           out["html"], "--markdown", out["md"])  # fmt: skip
    assert code == 0, err
    assert err.startswith("warning: <stdin>:62: skipped 1 row: ")
    doc = json.loads(out["json"].read_text())
    assert doc["sources"] == ["<stdin>"]
    assert [w.split(": ")[0] for w in doc["warnings"]] == ["<stdin>:62"]
    page = out["html"].read_text()
    assert "sources: &lt;stdin&gt;" in page
    assert "sources: <stdin>" in stdout  # the terminal summary
    for text in (stdout, err, out["json"].read_text(), page, out["md"].read_text()):
        assert "xpuperf-stdin-" not in text  # the temporary folder is never shown


def test_errors_name_stdin(xp: Run, monkeypatch) -> None:
    pipe(monkeypatch, "not a log\n")
    code, _, err = xp("analyze", "-")
    assert code == 2
    assert err.startswith("xpuperf: error: <stdin>:1: cannot tell the format")
    assert err.count("\n") == 1


def test_explain_suggests_the_pipe_again(xp: Run, monkeypatch) -> None:
    pipe(monkeypatch, "iter 1 time 5ms\niter 2 time 6ms\niter 3 time 5ms\n")
    code, out, _ = xp("formats", "--explain", "-")
    assert code == 0
    assert out.startswith("<stdin>: no format recognises it\n")
    # the drafted command reads standard input again, not a temporary file that is gone
    assert "xpuperf formats --explain - --pattern 'iter {step} time {step_time_ms}ms'" in out
    assert "xpuperf-stdin-" not in out


class Level(str, enum.Enum):
    WARN = "warning"


@dataclasses.dataclass(frozen=True)
class Item:
    where: str
    level: Level
    paths: tuple[Path, ...]
    extra: dict[str, list[str]]


def test_relabel_rewrites_nested_values_and_keeps_enums(monkeypatch) -> None:
    copy = "/tmp/xpuperf-stdin-abc/<stdin>"
    monkeypatch.setattr(stdin_mod, "_COPIES", [copy])
    item = Item(f"{copy}:3", Level.WARN, (Path(copy), Path("/x/a.log")), {copy: [f"in {copy}"]})
    got = stdin_mod.relabel([item])[0]
    assert got is item  # dataclasses are rewritten in place
    assert got.where == "<stdin>:3"
    assert got.level is Level.WARN
    assert got.paths == (Path("<stdin>"), Path("/x/a.log"))
    assert got.extra == {"<stdin>": ["in <stdin>"]}


def test_nothing_piped_in_nothing_relabelled(monkeypatch) -> None:
    monkeypatch.setattr(stdin_mod, "_COPIES", [])
    data = {"a": ["/tmp/xpuperf-stdin-abc/<stdin>"]}
    assert stdin_mod.relabel(data) is data
