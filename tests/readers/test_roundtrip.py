"""A synthetic run written in every generic format reads back to the same step table."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xpuperf import steps
from xpuperf.readers import read_logs


def _per_rank(truth: pd.DataFrame, folder: Path, fmt: str) -> None:
    folder.mkdir()
    for rank, g in truth.groupby("rank"):
        g = g.drop(columns=["rank"]).reset_index(drop=True)
        g["node"] = g["node"].astype(str)
        name = folder / f"rank{rank}"
        if fmt == "csv":
            g.to_csv(f"{name}.csv", index=False)
        elif fmt == "tsv":
            g.to_csv(f"{name}.tsv", index=False, sep="\t")
        elif fmt == "jsonl":
            g.to_json(f"{name}.jsonl", orient="records", lines=True, double_precision=15)
        elif fmt == "json":
            g.to_json(f"{name}.json", orient="records", double_precision=15)
        elif fmt == "parquet":
            g.to_parquet(f"{name}.parquet", index=False)
        elif fmt == "csv.gz":
            with gzip.open(f"{name}.csv.gz", "wt", encoding="utf-8") as f:
                g.to_csv(f, index=False)
        elif fmt == "ndjson.gz":
            text = g.to_json(orient="records", lines=True, double_precision=15)
            with gzip.open(f"{name}.ndjson.gz", "wt", encoding="utf-8") as f:
                f.write(text)


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "json", "parquet", "csv.gz", "ndjson.gz"])
def test_per_rank_folder_round_trips(truth: pd.DataFrame, tmp_path: Path, fmt: str) -> None:
    _per_rank(truth, tmp_path / "logs", fmt)
    res = read_logs([tmp_path / "logs"])
    assert res.warnings == []
    assert res.skipped_rows == 0
    assert [Path(s).name.split(".")[0] for s in res.sources] == ["rank0", "rank1", "rank2", "rank3"]
    pd.testing.assert_frame_equal(res.table, truth, check_exact=False, rtol=1e-12)


def test_single_file_with_rank_column(truth: pd.DataFrame, tmp_path: Path) -> None:
    # rows interleaved by step, as one logger writing all ranks would
    shuffled = truth.sort_values(["step", "rank"], kind="stable")
    shuffled.to_csv(tmp_path / "all.csv", index=False)
    res = read_logs([tmp_path / "all.csv"])
    pd.testing.assert_frame_equal(res.table, truth, check_exact=False, rtol=1e-12)


def test_dtypes_follow_the_contract(truth: pd.DataFrame, tmp_path: Path) -> None:
    truth.to_parquet(tmp_path / "run.parquet", index=False)
    table = read_logs([tmp_path / "run.parquet"]).table
    for col in table.columns:
        assert str(table[col].dtype) == steps.DTYPES[col], col
    assert list(table.columns) == [c for c in steps.COLUMNS if c in table.columns]


def test_milliseconds_in_header_units_become_seconds(write) -> None:
    p = write(
        "rank0.csv",
        "Iteration,Step Time (ms),data_time_ms,fwd_us,bwd [ms],allreduce_ns,optimizer_s\n"
        "1,250,12.5,80000,120,30000000,0.008\n"
        "2,260.5,10,81000,121,29000000,0.009\n",
    )
    t = read_logs([p]).table
    assert t["step"].tolist() == [1, 2]
    np.testing.assert_allclose(t["step_time_s"], [0.250, 0.2605])
    np.testing.assert_allclose(t["data_s"], [0.0125, 0.010])
    np.testing.assert_allclose(t["forward_s"], [0.080, 0.081])
    np.testing.assert_allclose(t["backward_s"], [0.120, 0.121])
    np.testing.assert_allclose(t["comm_s"], [0.030, 0.029])
    np.testing.assert_allclose(t["optimizer_s"], [0.008, 0.009])
    # compute_s is derived by steps.coerce: forward + backward + optimizer
    np.testing.assert_allclose(t["compute_s"], [0.208, 0.211])


def test_json_list_and_jsonl_give_the_same_table(write) -> None:
    rows = [{"step": i, "step_time_ms": 100 + i, "host": "n1"} for i in range(1, 4)]
    a = write("a.json", json.dumps(rows))
    b = write("b.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    ta, tb = read_logs([a]).table, read_logs([b]).table
    pd.testing.assert_frame_equal(ta, tb)
    np.testing.assert_allclose(ta["step_time_s"], [0.101, 0.102, 0.103])
    assert ta["node"].tolist() == ["n1", "n1", "n1"]


def test_json_object_holding_the_records(write) -> None:
    doc = {"run": "x", "steps": [{"iter": 1, "time_ms": 5}, {"iter": 2, "time_ms": 6}]}
    t = read_logs([write("run.json", json.dumps(doc, indent=2))]).table
    np.testing.assert_allclose(t["step_time_s"], [0.005, 0.006])


def test_optional_columns_absent_not_all_nan(write) -> None:
    a = write("rank0.csv", "step,step_time\n1,0.2\n")
    b = write("rank1.csv", "step,step_time,data_time\n1,0.2,\n")
    t = read_logs([a, b]).table
    assert list(t.columns) == ["rank", "step", "step_time_s"]


def test_batch_size_fills_missing_samples(write) -> None:
    a = write("rank0.csv", "step,step_time,samples\n1,0.2,\n2,0.2,16\n")
    t = read_logs([a], batch_size=32).table
    assert t["samples"].tolist() == [32.0, 16.0]
    b = write("rank1.csv", "step,step_time\n1,0.2\n")
    assert read_logs([b], batch_size=8).table["samples"].tolist() == [8.0]


def test_inputs_are_not_modified(truth: pd.DataFrame, tmp_path: Path) -> None:
    _per_rank(truth, tmp_path / "logs", "csv")
    (tmp_path / "logs" / "rank1.csv").write_text("step,step_time\n1,0.2\n1,-3\nx,y,z\n")
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in (tmp_path / "logs").iterdir()}
    read_logs([tmp_path / "logs"])
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in (tmp_path / "logs").iterdir()}
    assert before == after
