"""``xpuperf ingest``: writes the dataset, refuses existing folders and inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpuperf.cli.app import main
from xpuperf.engine import dataset as dsmod


def _logs(tmp_path: Path) -> Path:
    d = tmp_path / "logs"
    d.mkdir()
    for r in range(3):
        rows = "\n".join(f"{s},{0.2 + 0.01 * r:.3f}" for s in range(1, 31))
        (d / f"rank{r}.csv").write_text("step,step_time_s\n" + rows + "\n")
    return d


def _main(args: list[str]) -> int:
    with pytest.raises(SystemExit) as exc:
        main(args)
    return int(exc.value.code)


def test_ingest_then_analyze_same_json_as_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = _logs(tmp_path)
    out = tmp_path / "ds"
    assert _main(["ingest", str(logs), "-o", str(out), "--ranks-per-partition", "2"]) == 0
    assert "wrote 90 rows of 3 ranks from 3 file(s)" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == [
        "_xpuperf_dataset.json",
        "ranks=000000-000001",
        "ranks=000002-000003",
    ]
    assert json.loads((out / dsmod.MARKER).read_text())["rows"] == 90
    assert _main(["analyze", str(logs), "--json", str(tmp_path / "a.json"), "--quiet"]) == 0
    assert _main(["analyze", str(out), "--json", str(tmp_path / "b.json"), "--quiet"]) == 0
    a = json.loads((tmp_path / "a.json").read_text())
    b = json.loads((tmp_path / "b.json").read_text())
    assert a == b
    assert b["summary"]["ranks"] == 3
    # by hand: every step's median over ranks 0.20, 0.21, 0.22 s is 0.21 s
    assert b["summary"]["step_time_s"]["median"] == pytest.approx(0.21)


@pytest.mark.parametrize("where", ["nonempty", "input", "inside_input"])
def test_ingest_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str) -> None:
    logs = _logs(tmp_path)
    target = {
        "nonempty": tmp_path,
        "input": logs / "rank0.csv",
        "inside_input": logs / "ds",
    }[where]
    before = sorted(p.name for p in logs.iterdir())
    assert _main(["ingest", str(logs), "-o", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("xpuperf: error:")
    assert sorted(p.name for p in logs.iterdir()) == before  # nothing written


def test_analyze_not_a_dataset_marker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "ds"
    d.mkdir()
    (d / dsmod.MARKER).write_text('{"schema": "other/1"}')
    assert _main(["analyze", str(d), "--quiet"]) == 2
    assert "re-run xpuperf ingest" in capsys.readouterr().err


def test_analyze_dataset_refuses_world_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A break-it pass found --world-size silently ignored on a dataset (exit 0)."""
    logs = _logs(tmp_path)
    out = tmp_path / "ds"
    assert _main(["ingest", str(logs), "-o", str(out)]) == 0
    capsys.readouterr()
    assert _main(["analyze", str(out), "--world-size", "4", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--world-size applies to job-level logs, not to the dataset" in err


def test_ingest_world_size_spreads_a_job_level_log_like_analyze(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ingest had no --world-size: a job-level log went into the dataset as one rank."""
    data = Path(__file__).parent.parent / "data/formats_megatron"
    log = data / "36_trainlog_megatron-llm-127s-per-iteration.txt"
    out = tmp_path / "ds"
    assert _main(["ingest", str(log), "-o", str(out), "--world-size", "8", "--quiet"]) == 0
    assert _main(["analyze", str(log), "--world-size", "8", "--json", str(tmp_path / "a.json"),
                  "--quiet"]) == 0  # fmt: skip
    assert _main(["analyze", str(out), "--json", str(tmp_path / "b.json"), "--quiet"]) == 0
    a = json.loads((tmp_path / "a.json").read_text())
    b = json.loads((tmp_path / "b.json").read_text())
    assert b["summary"]["ranks"] == 8
    assert a["summary"] == b["summary"]


def test_empty_scheduler_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--scheduler ''`` started a local cluster as if it had not been given."""
    logs = _logs(tmp_path)
    out = tmp_path / "ds"
    assert _main(["ingest", str(logs), "-o", str(out), "--quiet"]) == 0
    assert _main(["analyze", str(out), "--engine", "dask", "--scheduler", " ", "--quiet"]) == 2
    assert "--scheduler is empty" in capsys.readouterr().err


def test_job_level_copies_stay_unjudged_through_a_dataset(tmp_path: Path) -> None:
    # tf_cnn_benchmarks single process: 512 global / 64 per device = 8 cards, spread as copies;
    # the dataset records it, so analysing the dataset gives no straggler verdict either
    from xpuperf.engine import analyze_dataset
    from xpuperf.engine.dataset import read_info, write_dataset
    from xpuperf.readers import read_logs

    log = Path(__file__).resolve().parents[1] / "data" / "formats_tfcnn"
    run = read_logs(sorted(log.glob("33_*")))
    assert run.job_level_cards == 8
    out = tmp_path / "ds"
    write_dataset(run.table, out, sources=run.sources, warnings=run.warnings,
                  job_level_cards=run.job_level_cards, sampled_rows=run.sampled_rows)  # fmt: skip
    assert read_info(out).job_level_cards == 8
    res = analyze_dataset(out, engine="pandas")
    checks = {c.name: c.status.value for c in res.checks}
    assert checks["steps.stragglers"] == "not_checked"
    assert checks["steps.sync_stalls"] == "not_checked"
