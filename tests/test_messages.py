"""The exact wording of the most common bad-input messages, as the CLI prints them (exit 2).

Each is one line on stderr: ``xpuperf: error: <file>[:line]: what is wrong; what was expected /
what to do``. A change of wording is a change of the user interface: update docs/reliability.md
with it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.cli.app import main
from xpuperf.readers import FORMATS


def _err(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2, err
    assert err.endswith("\n")
    assert err.count("\n") == 1, err  # one line
    return err.removesuffix("\n")


def test_unknown_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "a.csv"
    p.write_text("step,step_time_s\n1,0.3\n")
    known = ", ".join(f.name for f in FORMATS)
    assert _err(["analyze", str(p), "--format", "xlsx"], capsys) == (
        f"xpuperf: error: unknown format 'xlsx': known formats are {known}"
    )


def test_file_not_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "rank0.csv"
    assert _err(["analyze", str(p)], capsys) == (
        f"xpuperf: error: {p}: no such file or folder; check the path (or quote a glob pattern)"
    )
    assert _err(["calibrate", str(p)], capsys) == (
        f"xpuperf: error: {p}: file not found; check the path to the nccl-tests output"
    )


def test_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "rank0.csv"
    p.write_bytes(b"")
    assert _err(["analyze", str(p)], capsys) == (
        f"xpuperf: error: {p}: file is empty: expected a header line and one row per step"
    )


def test_no_step_time_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "rank0.csv"
    p.write_text("a,b\n1,2\n")
    err = _err(["analyze", str(p)], capsys)
    assert err.startswith(
        f"xpuperf: error: {p}: no step time column: expected one of step_time, steptime, "
        "batch_time, iter_time, "
    ), err
    assert err.endswith(
        "or a timestamp (timestamp, time_stamp, t_end, ts, …). "
        "The first line must name the columns; found: a, b"
    ), err


def test_bad_topology_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "cluster.yaml"
    p.write_text("schema: xpuperf.topology/1\nnodes:\n  - devcies: 8\n")
    err = _err(["topo", "show", str(p)], capsys)
    assert err.startswith(
        f"xpuperf: error: {p}:3: nodes[0].devcies: unknown key; did you mean 'devices'? "
        "(allowed: assumed, count, devices, links, name, nics, numa_nodes, "
    ), err


GRAMMAR = (
    "Accepted: FIELD OP VALUE, e.g. speedup<0.9, jitter.cv>0.05, stragglers>0, severity>=warning, "
    "summary.step_time_s.p99>1.2, code=XP101; OP is one of < <= > >= == = !=; VALUE is a number "
    "(5% = 0.05), a severity (info, warning, error) for 'severity', or a code (XPnnn) for 'code'; "
    "separate several gates with commas"
)


@pytest.mark.parametrize(
    ("expr", "why"),
    [
        ("speedup<<0.9", "not a gate expression"),
        ("severity>bad", "severity must be compared with info, warning or error, not 'bad'"),
        ("jitter.cv>fast", "'fast' is not a number"),
    ],
)
def test_bad_fail_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], expr: str, why: str
) -> None:
    p = tmp_path / "rank0.csv"
    p.write_text("step,step_time_s\n1,0.3\n2,0.3\n")
    assert _err(["analyze", str(p), "-q", "--fail-on", expr], capsys) == (
        f"xpuperf: error: --fail-on {expr!r}: {why}. {GRAMMAR}"
    )
