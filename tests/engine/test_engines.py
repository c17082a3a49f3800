"""The dataset (xpuperf ingest), the pandas and dask engines, and their equality."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from xpuperf import synth
from xpuperf.analysis import analyze
from xpuperf.analysis.series import job_steps
from xpuperf.cli.app import main
from xpuperf.engine import analyze_dataset, dataset_input
from xpuperf.engine import dataset as dsmod
from xpuperf.engine.base import job_frame
from xpuperf.errors import UsageError
from xpuperf.report.json_report import to_dict

REL = 1e-12
"""Float tolerance between engines: Σ samples per step (→ FPS, jitter of FPS) is summed in
another order on the cluster (a tree of partial sums), which changes the last bits only."""


def _run() -> pd.DataFrame:
    sc = synth.Scenario(
        ranks=10, cards_per_node=4, steps=80, slow_ranks={6: 0.2}, batch_per_rank=32, seed=3
    )
    df = synth.generate(sc)
    # non-integral samples so that the order of the per-step sums matters
    df["samples"] = 32.0 + (df["rank"].to_numpy() % 3) * 0.1
    return df


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ds") / "run"
    dsmod.write_dataset(
        _run(), out, sources=["a.csv"], warnings=["a.csv:3: skipped 1 row"], per_partition=4
    )
    return out


def _compare(a: object, b: object, path: str = "") -> list[str]:
    """Differences between two JSON documents, key by key; floats within REL."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(a)} != {sorted(b)}"]
        return [d for k in a for d in _compare(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _compare(x, y, f"{path}[{i}]")
        ]
    if isinstance(a, float) and isinstance(b, float):
        same = (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=REL, abs_tol=0)
        return [] if same else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} != {b!r}"]


def test_partitions_hold_rank_ranges(dataset: Path) -> None:
    # 10 ranks, 4 per partition: ranks 0-3, 4-7, 8-11 (the last range only partly used)
    dirs = sorted(p.name for p in dataset.iterdir() if p.is_dir())
    assert dirs == ["ranks=000000-000003", "ranks=000004-000007", "ranks=000008-000011"]
    ranks = [sorted(set(pq.read_table(dataset / d).column("rank").to_pylist())) for d in dirs]
    assert ranks == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    info = dsmod.read_info(dataset)
    assert (info.rows, info.ranks, info.ranks_per_partition) == (800, 10, 4)
    assert info.sources == ["a.csv"]


def test_pandas_engine_equals_in_memory_analysis(dataset: Path) -> None:
    direct = to_dict(analyze(_run(), sources=["a.csv"], read_warnings=["a.csv:3: skipped 1 row"]))
    via = to_dict(analyze_dataset(dataset, engine="pandas"))
    # a dataset holds step records only: it adds "not checked" lines for the other evidence
    extra = {"framework", "nccl", "topology"}
    assert {c["name"] for c in via["checks"] if c["status"] == "not_checked"} >= extra
    via["checks"] = [c for c in via["checks"] if c["name"] not in extra]
    assert _compare(direct, via) == []
    assert [s["rank"] for s in via["stragglers"]] == [6]  # the planted 20 % straggler


def test_dask_engine_equals_pandas_engine_on_local_cluster(dataset: Path) -> None:
    pytest.importorskip("dask.distributed")
    from xpuperf.engine.dask_engine import DaskEngine

    pandas_doc = to_dict(analyze_dataset(dataset, engine="pandas"))
    eng = DaskEngine(workers=2)  # a LocalCluster of 2 worker processes
    dask_doc = to_dict(analyze_dataset(dataset, engine=eng))
    assert _compare(pandas_doc, dask_doc) == []
    assert json.dumps(pandas_doc["findings"], sort_keys=True).count('"XP101"') == 1


def test_job_frame_matches_job_steps_and_hand_medians() -> None:
    df = pd.DataFrame(
        {
            "rank": np.array([0, 0, 1, 1, 2, 2], dtype="int32"),
            "step": [1, 2, 1, 2, 1, 2],
            "step_time_s": [1.0, 2.0, 3.0, 5.0, 2.0, 4.0],
            "samples": [1.0, 1.0, 2.0, 2.0, 3.0, 3.0],
        }
    )
    g = df.groupby("step")
    got = job_frame(g["step_time_s"].median(), g["rank"].nunique(), g["samples"].sum())
    # by hand: step 1 median(1, 3, 2) = 2, step 2 median(2, 5, 4) = 4; Σ samples 6
    assert got["step_time_s"].tolist() == [2.0, 4.0]
    assert got["fps"].tolist() == [3.0, 1.5]
    pd.testing.assert_frame_equal(got, job_steps(df))


def test_engine_flags_need_a_dataset(tmp_path: Path) -> None:
    log = tmp_path / "rank0.csv"
    log.write_text("step,step_time_s\n1,0.2\n")
    assert dataset_input([str(log)], None) is None
    with pytest.raises(UsageError, match="xpuperf ingest"):
        dataset_input([str(log)], "dask")


def test_dask_missing_exits_2_naming_the_extra(
    dataset: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for mod in [m for m in sys.modules if m == "dask" or m.startswith(("dask.", "distributed"))]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "dask", None)  # `import dask` raises ImportError
    with pytest.raises(SystemExit) as exc:
        main(["analyze", str(dataset), "--engine", "dask", "--quiet"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "xpuperf[dask]" in err


def test_ctrl_c_exits_130_with_one_line(
    dataset: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*_a: object, **_k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("xpuperf.engine.analyze_dataset", interrupted)
    with pytest.raises(SystemExit) as exc:
        main(["analyze", str(dataset), "--quiet"])
    assert exc.value.code == 130
    assert capsys.readouterr().err.strip() == "xpuperf: interrupted"
