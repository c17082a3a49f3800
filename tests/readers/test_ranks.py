"""Where the rank comes from: column, local_rank + node, file name, single file."""

from __future__ import annotations

import pytest

from xpuperf.errors import InputError
from xpuperf.readers import read_logs
from xpuperf.readers.paths import rank_from_name

BODY = "step,step_time\n1,0.2\n2,0.3\n"


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("rank3.csv", 3),
        ("rank_3.log", 3),
        ("rank-03.jsonl", 3),
        ("RANK7.csv", 7),
        ("worker-3.jsonl", 3),
        ("worker3.csv", 3),
        ("proc2.csv", 2),
        ("process_2.csv", 2),
        ("gpu5.csv", 5),
        ("device5.tsv", 5),
        ("npu_12.csv", 12),
        ("train_rank11_of_16.csv", 11),
        ("worker1_rank3.csv", 3),
        ("log.rank12.csv.gz", 12),
    ],
)
def test_rank_from_name(name: str, rank: int) -> None:
    assert rank_from_name([name]) == rank


@pytest.mark.parametrize("name", ["steps.csv", "ranks.csv", "prank3.csv", "gpus.csv", "run12.csv"])
def test_no_rank_in_name(name: str) -> None:
    assert rank_from_name([name]) is None


@pytest.mark.parametrize("name", ["rank3.csv", "rank_3.log", "Worker-3.jsonl", "proc3.tsv"])
def test_rank_from_file_name_when_reading(write, name: str) -> None:
    if name.endswith(".jsonl"):
        p = write(name, '{"step": 1, "step_time": 0.2}\n')
    elif name.endswith(".tsv"):
        p = write(name, "step\tstep_time\n1\t0.2\n")
    else:
        p = write(name, BODY)
    assert set(read_logs([p]).table["rank"]) == {3}


def test_rank_from_folder_name(tmp_path, write) -> None:
    write("logs/rank_0/stdout.log", BODY)
    write("logs/rank_1/stdout.log", BODY)
    t = read_logs([tmp_path / "logs"]).table
    assert t["rank"].tolist() == [0, 0, 1, 1]


def test_single_file_without_rank_is_rank_0(write) -> None:
    assert set(read_logs([write("steps.csv", BODY)]).table["rank"]) == {0}


def test_rank_column_wins_over_file_name(write) -> None:
    p = write("rank5.csv", "rank,step,step_time\n2,1,0.2\n")
    assert read_logs([p]).table["rank"].tolist() == [2]


def test_local_rank_and_node(write) -> None:
    # nodes in natural order: node2 (index 0), node10 (index 1); local world = max local_rank+1 = 3
    text = (
        "host,local_rank,step,step_time\n"
        "node10,0,1,0.1\n"
        "node10,2,1,0.2\n"
        "node2,1,1,0.3\n"
        "node2,0,1,0.4\n"
        "node10,1,1,0.5\n"
        "node2,2,1,0.6\n"
    )
    t = read_logs([write("all.csv", text)]).table
    assert t["rank"].tolist() == [0, 1, 2, 3, 4, 5]
    assert t["node"].tolist() == ["node2"] * 3 + ["node10"] * 3
    assert t["step_time_s"].tolist() == [0.4, 0.3, 0.6, 0.1, 0.5, 0.2]


def test_local_rank_and_node_across_files(write) -> None:
    a = write("a.jsonl", '{"node": "b", "local_rank": 1, "step": 1, "step_time": 0.1}\n')
    b = write("b.jsonl", '{"node": "a", "local_rank": 1, "step": 1, "step_time": 0.2}\n')
    c = write("c.jsonl", '{"node": "a", "local_rank": 0, "step": 1, "step_time": 0.3}\n')
    t = read_logs([a, b, c]).table
    # a → index 0, b → index 1; world 2
    assert dict(zip(t["rank"], t["step_time_s"], strict=True)) == {0: 0.3, 1: 0.2, 3: 0.1}


def test_several_files_without_rank(write) -> None:
    a, b = write("a.csv", BODY), write("b.csv", BODY)
    with pytest.raises(InputError, match=r"cannot tell which rank wrote .*rank0\.csv"):
        read_logs([a, b])


def test_two_files_claim_the_same_rank(write) -> None:
    a = write("x/rank1.csv", BODY)
    b = write("y/worker-1.csv", BODY)
    with pytest.raises(InputError, match=r"rank 1 appears in both .*rank1\.csv .*worker-1\.csv"):
        read_logs([a, b])


def test_rank_column_overlap_between_files(write) -> None:
    a = write("a.csv", "rank,step,step_time\n0,1,0.2\n1,1,0.2\n")
    b = write("b.csv", "rank,step,step_time\n1,2,0.2\n2,1,0.2\n")
    with pytest.raises(InputError, match="rank 1 appears in both"):
        read_logs([a, b])


def test_bad_rank_values_are_dropped(write) -> None:
    p = write("all.csv", "rank,step,step_time\n0,1,0.2\n-1,1,0.2\n1.5,1,0.2\n,1,0.2\n1,1,0.2\n")
    res = read_logs([p])
    assert res.table["rank"].tolist() == [0, 1]
    assert res.warnings == [
        f"{p}:3: skipped 3 rows, the first at this line: rank missing or not a non-negative integer"
    ]


def test_rank_text_with_a_trailing_number(write) -> None:
    text = "worker,step,step_time\nworker-3,1,0.2\ncuda:1,1,0.3\nrank_0,1,0.4\nnone-here,1,0.5\n"
    res = read_logs([write("all.csv", text)])
    assert res.table["rank"].tolist() == [0, 1, 3]
    assert len(res.warnings) == 1
    assert ":5: skipped 1 row: non-numeric value in worker" in res.warnings[0]


def test_local_rank_in_file_name_is_not_a_rank() -> None:
    assert rank_from_name(["local_rank3.csv"]) is None
    assert rank_from_name(["node1_local_rank3_rank11.csv"]) == 11


def test_local_rank_only_files_that_collide_ask_for_a_node_column(write) -> None:
    a = write("a.csv", "local_rank,step,step_time\n0,1,0.2\n")
    b = write("b.csv", "local_rank,step,step_time\n0,1,0.2\n")
    with pytest.raises(InputError, match="add a node or host column"):
        read_logs([a, b])


def test_node_column_alone_gives_one_rank_per_node(write) -> None:
    text = "host,step,step_time\nb,1,0.1\na,1,0.2\nb,2,0.3\na,2,0.4\n"
    t = read_logs([write("all.csv", text)]).table
    assert t[["rank", "step"]].values.tolist() == [[0, 1], [0, 2], [1, 1], [1, 2]]
    assert t["node"].tolist() == ["a", "a", "b", "b"]
    assert t["step_time_s"].tolist() == [0.2, 0.4, 0.1, 0.3]


def test_file_name_rank_wins_over_a_node_column(write) -> None:
    a = write("rank3.csv", "host,step,step_time\nn1,1,0.1\n")
    b = write("rank4.csv", "host,step,step_time\nn1,1,0.1\n")
    assert read_logs([a, b]).table["rank"].tolist() == [3, 4]
