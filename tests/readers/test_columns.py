"""Column-name normalisation, aliases and units."""

from __future__ import annotations

import numpy as np
import pytest

from xpuperf.readers import columns, read_logs


@pytest.mark.parametrize(
    ("name", "norm"),
    [
        ("Step Time (ms)", "step_time_ms"),
        ("step_time(ms)", "step_time_ms"),
        ("time [ms]", "time_ms"),
        ("stepTimeMs", "step_time_ms"),
        ("  Data-Time  ", "data_time"),
        ("samples/s", "samples_s"),
        ("latency_µs", "latency_us"),
        ("\ufeffstep", "step"),
        ("__rank__", "rank"),
    ],
)
def test_normalise(name: str, norm: str) -> None:
    assert columns.normalise(name) == norm


@pytest.mark.parametrize(
    ("name", "role", "factor"),
    [
        ("step_time", "step_time_s", 1.0),
        ("step_time_s", "step_time_s", 1.0),
        ("step_time_sec", "step_time_s", 1.0),
        ("step_time_secs", "step_time_s", 1.0),
        ("step_time_seconds", "step_time_s", 1.0),
        ("step_time_ms", "step_time_s", 1e-3),
        ("step_time_msec", "step_time_s", 1e-3),
        ("step_time_us", "step_time_s", 1e-6),
        ("step_time_usec", "step_time_s", 1e-6),
        ("step_time_ns", "step_time_s", 1e-9),
        ("step_time(ms)", "step_time_s", 1e-3),
        ("Batch Time [us]", "step_time_s", 1e-6),
        ("elapsed time per iteration (ms)", "step_time_s", 1e-3),
        ("batch_cost", "step_time_s", 1.0),
        ("reader_cost", "data_s", 1.0),
        ("data_time_in_ms", "data_s", 1e-3),
        ("fwd", "forward_s", 1.0),
        ("bwd_ms", "backward_s", 1e-3),
        ("allreduce_time", "comm_s", 1.0),
        ("opt_step", "optimizer_s", 1.0),
        ("fwd_bwd", "compute_s", 1.0),
        ("samples/s", "throughput", 1.0),
        ("FPS", "throughput", 1.0),
        ("ips", "throughput", 1.0),
        ("it/s", "step_rate", 1.0),
        ("global_step", "step", 1.0),
        ("Iteration", "step", 1.0),
        ("worker_id", "rank", 1.0),
        ("LOCAL_RANK", "local_rank", 1.0),
        ("hostname", "node", 1.0),
        ("bs", "samples", 1.0),
        ("wall_time", "t_end_s", 1.0),
        ("timestamp_ms", "t_end_s", 1e-3),
    ],
)
def test_match(name: str, role: str, factor: float) -> None:
    ms = columns.match(name)
    assert len(ms) == 1
    assert ms[0].role == role
    assert ms[0].factor == pytest.approx(factor)


@pytest.mark.parametrize("name", ["loss", "lr", "step_time_min", "samples_ms", "rank_ms", "it_s_x"])
def test_no_match(name: str) -> None:
    assert columns.match(name) == []


def test_time_is_ambiguous() -> None:
    roles = {m.role for m in columns.match("time")}
    assert roles == {"step_time_s", "t_end_s"}
    assert all(m.ambiguous for m in columns.match("time_ms"))


def test_priority_prefers_specific_names() -> None:
    found = columns.resolve(["time", "duration", "step_time_ms"])
    assert found["step_time_s"][0].column == "step_time_ms"


def test_docstring_table_matches_aliases() -> None:
    doc = columns.__doc__ or ""
    start = doc.index(".. alias-table-start") + len(".. alias-table-start")
    end = doc.index(".. alias-table-end")
    assert doc[start:end].strip() == columns.alias_table(96).strip()


def test_every_alias_round_trips_through_normalise() -> None:
    for names in columns.ALIASES.values():
        for alias in names:
            assert columns.normalise(alias) == alias


def test_time_column_with_small_values_is_a_step_time(write) -> None:
    t = read_logs([write("r.csv", "step,time\n1,0.5\n2,0.25\n")]).table
    np.testing.assert_allclose(t["step_time_s"], [0.5, 0.25])
    assert "t_end_s" not in t.columns


def test_time_column_with_epoch_values_is_a_timestamp(write) -> None:
    t = read_logs([write("r.csv", "step,time\n1,1700000000.0\n2,1700000000.5\n3,1700000001.5\n")])
    np.testing.assert_allclose(t.table["step_time_s"], [0.5, 1.0])
    np.testing.assert_allclose(t.table["t_end_s"], [1700000000.5, 1700000001.5])


def test_time_column_with_iso_strings_is_a_timestamp(write) -> None:
    text = "step,time\n1,2024-05-01 10:00:00\n2,2024-05-01 10:00:00.750\n3,2024-05-01 10:00:01\n"
    t = read_logs([write("r.csv", text)]).table
    # float64 epoch seconds resolve ~0.24 µs
    np.testing.assert_allclose(t["step_time_s"], [0.75, 0.25], atol=1e-6)


def test_time_next_to_a_step_time_column_is_the_timestamp(write) -> None:
    text = "step,step_time_ms,time\n1,500,1700000000.0\n2,510,1700000000.51\n"
    t = read_logs([write("r.csv", text)]).table
    np.testing.assert_allclose(t["step_time_s"], [0.5, 0.51])
    np.testing.assert_allclose(t["t_end_s"], [1700000000.0, 1700000000.51])


def test_unknown_columns_are_ignored(write) -> None:
    text = "step,loss,lr,step_time,comment\n1,2.3,0.1,0.2,warm up, still\n2,2.2,0.1,0.3,ok\n"
    res = read_logs([write("r.csv", text)])
    # the first data row has an extra field (unquoted comma): skipped with a warning
    assert res.table["step"].tolist() == [2]
    assert list(res.table.columns) == ["rank", "step", "step_time_s"]
