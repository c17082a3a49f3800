"""Step time derived from throughput, step rate or timestamps; step numbering."""

from __future__ import annotations

import numpy as np
import pytest

from xpuperf.errors import InputError
from xpuperf.readers import read_logs


def test_throughput_with_samples_column(write) -> None:
    # 32 samples at 160 samples/s = 0.2 s; 32 / 128 = 0.25 s; 64 / 200 = 0.32 s
    p = write("rank0.csv", "iter,samples/s,batch_size\n1,160,32\n2,128,32\n3,200,64\n")
    t = read_logs([p]).table
    np.testing.assert_allclose(t["step_time_s"], [0.2, 0.25, 0.32])
    assert t["samples"].tolist() == [32.0, 32.0, 64.0]


def test_throughput_with_batch_size_argument(write) -> None:
    p = write("rank0.jsonl", '{"step": 5, "fps": 400}\n{"step": 6, "fps": 320}\n')
    t = read_logs([p], batch_size=64).table
    np.testing.assert_allclose(t["step_time_s"], [0.16, 0.2])
    assert t["samples"].tolist() == [64.0, 64.0]


def test_throughput_without_samples_asks_for_batch_size(write) -> None:
    p = write("rank0.csv", "step,ips\n1,100\n")
    with pytest.raises(InputError, match="--batch-size N") as exc:
        read_logs([p])
    assert exc.value.path == str(p)


def test_zero_throughput_row_is_dropped(write) -> None:
    p = write("rank0.csv", "step,fps\n1,100\n2,0\n3,50\n")
    res = read_logs([p], batch_size=10)
    np.testing.assert_allclose(res.table["step_time_s"], [0.1, 0.2])
    assert res.warnings == [
        f"{p}:3: skipped 1 row: step time missing, NaN, infinite, zero or negative "
        "(step time = samples / throughput)"
    ]


def test_step_rate(write) -> None:
    p = write("rank0.csv", "step,it/s\n1,4\n2,5\n")
    np.testing.assert_allclose(read_logs([p]).table["step_time_s"], [0.25, 0.2])


def test_timestamps_give_differences_and_drop_first_row(write) -> None:
    p = write("rank0.csv", "step,timestamp\n1,1000.0\n2,1000.5\n3,1001.25\n4,1001.5\n")
    res = read_logs([p])
    assert res.table["step"].tolist() == [2, 3, 4]
    np.testing.assert_allclose(res.table["step_time_s"], [0.5, 0.75, 0.25])
    np.testing.assert_allclose(res.table["t_end_s"], [1000.5, 1001.25, 1001.5])
    assert len(res.warnings) == 1
    assert res.warnings[0].startswith(f"{p}:2: skipped 1 row: first row of each rank")
    assert res.skipped_rows == 1


def test_timestamps_every_n_steps_give_the_mean_step_time(write) -> None:
    p = write("rank0.csv", "step,wall_time\n10,100\n20,103\n30,105\n")
    np.testing.assert_allclose(read_logs([p]).table["step_time_s"], [0.3, 0.2])


def test_timestamps_per_rank_in_one_file(write) -> None:
    text = "rank,ts\n0,10.0\n1,10.1\n0,10.4\n1,10.6\n0,10.9\n1,11.0\n"
    res = read_logs([write("all.csv", text)])
    t = res.table
    assert t["rank"].tolist() == [0, 0, 1, 1]
    assert t["step"].tolist() == [1, 2, 1, 2]
    np.testing.assert_allclose(t["step_time_s"], [0.4, 0.5, 0.5, 0.4])
    assert res.warnings == [
        f"{res.sources[0]}:2: skipped 2 rows, the first at this line: first row of each rank "
        "has no step time (step time = difference of consecutive timestamps)"
    ]


def test_iso_timestamps_with_time_zones(write) -> None:
    text = (
        '{"step": 1, "datetime": "2024-05-01T10:00:00+02:00"}\n'
        '{"step": 2, "datetime": "2024-05-01T08:00:02Z"}\n'
        '{"step": 3, "datetime": "2024-05-01T08:00:02,5Z"}\n'
    )
    t = read_logs([write("r.jsonl", text)]).table
    np.testing.assert_allclose(t["step_time_s"], [2.0, 0.5], atol=1e-6)
    assert t["t_end_s"].iloc[0] == pytest.approx(1714550402.0)


@pytest.mark.parametrize("per_second", [1, 1_000, 1_000_000, 1_000_000_000])
def test_epoch_seconds_ms_us_ns_are_recognised(write, per_second: int) -> None:
    # epoch 1.7e9 s written in s, ms, µs or ns without a unit in the header
    rows = "".join(f"{i},{(1_700_000_000 + t) * per_second}\n" for i, t in [(1, 0), (2, 1), (3, 3)])
    t = read_logs([write("r.csv", "step,timestamp\n" + rows)]).table
    np.testing.assert_allclose(t["t_end_s"], [1_700_000_001.0, 1_700_000_003.0])
    np.testing.assert_allclose(t["step_time_s"], [1.0, 2.0])


def test_step_column_missing_numbers_rows_per_rank(write) -> None:
    # (every rank has its last row: a file ending inside a step drops that step, test_cut_tail)
    text = "rank,step_time\n0,0.1\n1,0.2\n0,0.3\n1,0.4\n0,0.5\n1,0.6\n"
    t = read_logs([write("all.csv", text)]).table
    assert t["rank"].tolist() == [0, 0, 0, 1, 1, 1]
    assert t["step"].tolist() == [0, 1, 2, 0, 1, 2]
    np.testing.assert_allclose(t["step_time_s"], [0.1, 0.3, 0.5, 0.2, 0.4, 0.6])


def test_no_step_time_source_lists_accepted_names(write) -> None:
    p = write("r.csv", "step,loss\n1,2.0\n")
    with pytest.raises(InputError, match="no step time column: expected one of step_time") as e:
        read_logs([p])
    assert "found: step, loss" in str(e.value)
    assert e.value.path == str(p)


def test_time_of_day_timestamps(write) -> None:
    p = write("r.csv", "step,time\n1,23:59:58.5\n2,23:59:59\n3,23:59:59.75\n")
    np.testing.assert_allclose(read_logs([p]).table["step_time_s"], [0.5, 0.75])
