"""Crashes the fuzz suite found, one plain test each, pinned at the cause (docs/reliability.md)."""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path

import pytest

from tests.fuzz.harness import DATA, hard_deadline
from xpuperf.calibrate.nccltests import read_nccl_tests
from xpuperf.errors import InputError
from xpuperf.readers import read_logs
from xpuperf.readers.base import Source
from xpuperf.readers.formats import megatron
from xpuperf.topology.importers import import_files
from xpuperf.topology.loader import load


def _mask_line(it: int, time: float, extra: bool) -> str:
    more = "  forward: 0.2449 (0.2222)  backward: 0.0855 (0.0864)" if extra else ""
    return (
        f"INFO:maskrcnn_benchmark.trainer:eta: 1:00:00  iter: {it}  loss: 1.3 (1.4)  "
        f"time: {time} ({time})  data: 0.01 (0.02){more}  lr: 0.02  max mem: 3273\n"
    )


def test_maskrcnn_lines_with_different_metric_sets(tmp_path: Path) -> None:
    # two untagged ranks per iteration; one iteration's lines carry more metrics than the other:
    # the running-average keys had different lengths and numpy refused to stack them
    text = (
        _mask_line(20, 0.5, False) + _mask_line(20, 0.6, False)
        + _mask_line(40, 0.5, True) + _mask_line(40, 0.6, True)
    )  # fmt: skip
    p = tmp_path / "rank0.log"
    p.write_text(text)
    res = read_logs([p], fmt="maskrcnn")
    assert sorted(res.table["step"].tolist()) == [20, 20, 40, 40]
    assert sorted(res.table["rank"].unique().tolist()) == [0, 1]


# --- numbers the framework parsers could not convert (ValueError, OverflowError, ÷0) ------------


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        # timers: the pattern [\d.]+ matched a lone "."
        ("deepspeed", "[Rank 0] time (ms) | forward: . | backward: 7.4 | step: 7.2\n"),
        ("megatron", " iteration 1/ 10 | elapsed time per iteration (ms): 127.0 | "
         "global batch size: 馃 |\n time (ms) | forward-compute: . | backward-compute: 1.0\n"),
        # mindspore: "." as the step time, a zero step span, inf samples
        ("mindspore", "epoch: [1/90] loss: 5.2, epoch time: 183.6 s, per step time: . ms\n"),
        ("mindspore", "Epoch time: 0.0 ms, per step time: 0 ms, fps: 1e308 0 0 0\n"),
        # tf_cnn_benchmarks: a zero mean throughput, a step number past float range
        ("tf_cnn_benchmarks", "10\timages/sec: 0.0 +/- 0.0 (jitter = 0.0)\t1\n"
         "20\timages/sec: 0.0 +/- 0.0 (jitter = 0.0)\t1\n"),
        ("tf_cnn_benchmarks", "9" * 400 + "\timages/sec: 10.0 +/- 0.1 (jitter = 0.0)\t1\n"),
        # deepspeed: a rank id past float range
        ("deepspeed", "[Rank " + "9" * 400 + "] time (ms) | forward: 2.0 | backward: 7.4 | "
         "step: 7.2\n"),
        # HF Trainer: values of the wrong type or size in the dict
        ("hf_trainer", "{'loss': 0.4, 'global_step/max_steps': '2;5/4491', "
         "'train_speed(iter/s)': [1]}\n{'loss': 0.4, 'step': " + "9" * 400 + "}\n"),
        # "." matched by [\d.]+ in maskrcnn, mmengine, paddle, keras; a step past float range
        ("maskrcnn", "INFO: eta: 1:00:00  iter: 20  loss: . (1.4)  time: 0.5 (0.5)  data: 0.1\n"),
        ("mmengine", "2023/05/24 20:20:37 - mmengine - INFO - Epoch(train)  [1][  24/1051]  "
         "time: 8.9  data_time: .\n"),
        ("paddle", "epoch: [5/500], iter: ., loss: 4.8, reader_cost: 0.1 s, batch_cost: 1.0 s\n"),
        ("keras", "TimeHistory: . seconds, 3.0 examples/second between steps 100 and "
         + "9" * 400 + "\n"),
        ("torchtitan", "[titan] 2025-01-01 00:00:00,000 - root - INFO - step: " + "9" * 400
         + "  loss: 1.0\n"),
        # tf_cnn_benchmarks: inf running means (inf - inf in the rank matching warned)
        ("tf_cnn_benchmarks", "10\timages/sec: 1e999 +/- 0.1 (jitter = 0.0)\t1\n"
         "10\timages/sec: 1e999 +/- 0.1 (jitter = 0.0)\t1\n"
         "20\timages/sec: 1e999 +/- 0.1 (jitter = 0.0)\t1\n"
         "20\timages/sec: 1e999 +/- 0.1 (jitter = 0.0)\t1\n"),
        # paddle: ips × batch_cost = inf (round() raised)
        ("paddle", "epoch: [5/500], iter: 1, loss: 4.8, reader_cost: 0.1 s, batch_cost: 1e308 s, "
         "samples: 960, ips: 1e308\n"),
    ],
)  # fmt: skip
def test_unconvertible_numbers_are_dropped_rows(tmp_path: Path, fmt: str, text: str) -> None:
    p = tmp_path / "rank0.log"
    p.write_text(text, encoding="utf-8")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = read_logs([p], fmt=fmt)
    except InputError as e:  # nothing usable left: a one-line message, not a traceback
        msg = str(e)
    else:
        msg = ""
        assert (res.table["step_time_s"] > 0).all()
    assert "\n" not in msg


def test_mlperf_zero_train_samples_and_bad_values(tmp_path: Path) -> None:
    # train_samples 0 divided the block time by zero; a non-numeric value raised in float()
    ev = ':::MLLOG {"namespace": "", "time_ms": %s, "event_type": "%s", "key": "%s", "value": %s, '
    md = '"metadata": {"file": "t.py", "lineno": 1, "first_epoch_num": 1, "epoch_count": 1}}\n'
    text = "".join(
        ev % args + md
        for args in [
            ("1000", "POINT_IN_TIME", "global_batch_size", '"abc"'),
            ("1000", "POINT_IN_TIME", "train_samples", "0"),
            ("1" + "0" * 400, "POINT_IN_TIME", "seed", "1"),
            ("2000", "INTERVAL_START", "block_start", "null"),
            ("3000", "INTERVAL_END", "block_stop", "null"),
        ]
    )
    p = tmp_path / "rank0.log"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        read_logs([p], fmt="mlperf")
    assert "\n" not in str(e.value)


def test_throughput_below_float_range_is_a_dropped_row(tmp_path: Path) -> None:
    # samples / 2e-320 overflowed with a numpy RuntimeWarning on stderr
    p = tmp_path / "w.csv"
    p.write_text("step,samples,samples_per_sec\n1,256,2e-320\n2,256,230.4\n3,256,268.6\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = read_logs([p])
    assert res.table["step"].tolist() == [2, 3]
    assert "step time missing, NaN, infinite, zero or negative" in res.warnings[0]


def test_jsonl_key_that_is_not_utf8(tmp_path: Path) -> None:
    # pyarrow parsed the file but could not name the column (UnicodeDecodeError)
    p = tmp_path / "rank0.jsonl"
    p.write_bytes(b'{"step": 1, "step_time_s": 0.3, "n\xff": 1}\n{"step": 2, "step_time_s": 0.3}\n')
    res = read_logs([p])
    assert res.table["step"].tolist() == [2]
    assert "not valid UTF-8" in res.warnings[0]


def test_jsonl_string_value_that_is_not_utf8(tmp_path: Path) -> None:
    # pyarrow's JSON reader kept the bytes; the node column then failed in to_numpy()
    p = tmp_path / "rank0.jsonl"
    rows = [b'{"step": %d, "step_time_s": 0.3, "node": "node00"}' % i for i in range(1, 4)]
    rows[1] = rows[1].replace(b"node00", b"!\xffnode00")
    p.write_bytes(b"\n".join(rows) + b"\n")
    res = read_logs([p])
    assert res.table["step"].tolist() == [1, 3]
    assert res.table["node"].tolist() == ["node00", "node00"]
    assert "not valid UTF-8" in res.warnings[0]


def test_json_document_with_a_4301_digit_integer(tmp_path: Path) -> None:
    # json.loads raises a plain ValueError (not JSONDecodeError) past 4300 digits
    p = tmp_path / "rank0.json"
    p.write_text('[{"step": 1, "step_time_s": ' + "9" * 4301 + "}]")
    with pytest.raises(InputError, match="not valid JSON: Exceeds the limit"):
        read_logs([p])


def test_corrupt_parquet_message_is_one_line(tmp_path: Path) -> None:
    import io

    import pandas as pd

    buf = io.BytesIO()
    pd.DataFrame({"step": range(1, 101), "step_time_s": 0.3}).to_parquet(buf)
    data = bytearray(buf.getvalue())
    data[8:40] = b"\x08\x00" * 16  # break the first page header
    p = tmp_path / "rank0.parquet"
    p.write_bytes(bytes(data))
    with pytest.raises(InputError) as e:
        read_logs([p])
    assert "\n" not in str(e.value)


def test_megatron_iteration_pattern_on_bar_bracket_runs(tmp_path: Path) -> None:
    # megatron.LINE retried an unbounded '[…]' group from every '|': 160 KB of '|[' took 7.7 s,
    # 2 MB ran past 30 s; the group is now at most 256 characters. The alarm is a hang guard.
    p = tmp_path / "train.log"
    step = (
        " iteration        1/ 1000 | consumed samples: 512 | elapsed time per iteration (ms): "
        "1000.0 | learning rate: 1.0E-04 | global batch size: 512 |"
    )
    p.write_text(step + "\n" + "|[" * 400_000 + "iteration\n")
    from xpuperf.readers.base import Source
    from xpuperf.readers.formats import megatron

    with hard_deadline(60):  # the line path: the fast path reaches it after a timer head
        t = megatron.read(Source(p, str(p), False, p.read_bytes()[:65536]), fast=False)
    assert len(t.frame) == 1


# --- topology -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("lscpu.txt", "    CPU min MHz:        8" + "\t" * 200_000 + " 81.0000"),  # lscpu _KV
        ("rocm.txt", "=" * 200_000 + "x"),  # rocm-smi banner
    ],
)
def test_long_blank_runs_parse_in_linear_time(tmp_path: Path, name: str, line: str) -> None:
    # `(.*?)\s*$` backtracked quadratically: ~15 min for this line; the alarm is a hang guard
    seed = DATA / (
        "topology_import_lscpu/21_numa_gh200-grace-lscpu-cpuless-gpu-numa-nodes.txt"
        if name.startswith("lscpu")
        else "topology_import_rocmsmi/20_topo_archer2-4xmi210-rocm-smi-showtopo-xgmi.txt"
    )
    p = tmp_path / name
    p.write_text(seed.read_text() + line + "\n")
    with hard_deadline(60), contextlib.suppress(InputError):
        import_files([p])


def test_nccl_tests_rank_line_with_long_blanks(tmp_path: Path) -> None:
    line = (
        "#  Rank  0 Group  0 Pid   1 on host-a device  0 [0x0a] NVIDIA" + " " * 200_000 + "H100\n"
    )
    seed = DATA / "calibrate_k8s_h100/17_nccltests_k8s-mpijob-2node-16xh100-orted-launch.txt"
    p = tmp_path / "nccl.txt"
    p.write_text(line + seed.read_text())
    with hard_deadline(60):
        res = read_nccl_tests(p)
    assert len(res.frame) > 0


def test_yaml_error_message_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_bytes(b"\x00schema: xpuperf.topology/1\n")
    with pytest.raises(InputError) as e:
        load(p)
    assert "not valid YAML" in str(e.value)
    assert "\n" not in str(e.value)


def test_topology_key_with_a_line_break_gives_a_one_line_message() -> None:
    from xpuperf.topology.loader import loads

    with pytest.raises(InputError) as e:
        loads('{"schema": "xpuperf.topology/1", "\\n": 1}', "json", "f.json")
    assert str(e.value) == (
        "f.json: \\n: unknown key (allowed: evidence, name, network, nodes, placement, ranks, "
        "schema)"
    )


def test_nccl_tests_header_with_reordered_columns(tmp_path: Path) -> None:
    # the header named 'size' where rows hold the type: int('float') raised
    p = tmp_path / "nccl.txt"
    p.write_text(
        "#  count  type  size  redop  root  time  algbw  busbw  #wrong"
        "  time  algbw  busbw  #wrong\n"
        "   8  2  float  sum  -1  10.0  0.00  0.00  0  10.0  0.00  0.00  0\n"
    )
    with pytest.raises(InputError, match="no result rows"):
        read_nccl_tests(p)


# --- long runs: the second long run (quadratic and cubic regular expressions, huge integers) ------


def test_megatron_field_with_a_long_blank_run(tmp_path: Path) -> None:
    # the key/value pattern `\s*([^:|]+?)\s*:\s*([^|]*?)\s*` was cubic in a blank run: 400
    # blanks took 7 s, the fuzzer's 1 000 hit the 30 s alarm; this line would never finish
    blanks = " " * 200_000
    p = tmp_path / "megatron.log"
    p.write_text(
        f" iteration        3/      10 | consumed samples: 96 | note:{blanks}x |{blanks}|"
        f" elapsed time per iteration (ms): 250.0 | global batch size:{blanks}32{blanks}|\n"
    )
    with hard_deadline(60):
        res = read_logs([p], fmt="megatron")
    row = res.table.iloc[0]
    assert (row["step"], row["step_time_s"], row["samples"]) == (3, 0.25, 32)


@pytest.mark.parametrize("fast", [True, False])
def test_megatron_timer_lines_with_long_runs(tmp_path: Path, fast: bool) -> None:
    # timers.PAIR retried a name from every letter of a long run (300 000 'x': ~20 min), and the
    # (min, max) timer name `[\w\- ]*?` before `\s*` was quadratic on a blank run (fast path too)
    step = (
        " iteration        {}/      10 | consumed samples: 96 | elapsed time per iteration (ms):"
        " 250.0 | global batch size: 32 |\n"
    )
    p = tmp_path / "megatron.log"
    p.write_text(
        step.format(1)
        + " time (ms) | forward-compute: 100.0 | " + "x" * 200_000 + " | backward-compute: 120.0\n"
        + step.format(2)
        + "(min, max) time across ranks (ms):\n"
        + "    forward-compute ................................: (90.00, 180.00)\n"
        + "    a" + " " * 200_000 + "b\n"
    )  # fmt: skip
    with hard_deadline(60):
        frame = megatron.read(Source(p, str(p), False, p.read_bytes()[:65536]), fast=fast).frame
    assert frame["step"].tolist() == [1, 2]
    assert frame["forward_s"].tolist() == [0.1, 0.18]  # 100 ms; the (min, max) line's max 180 ms
    assert frame["backward_s"].tolist()[0] == 0.12


def test_nccl_debug_lines_with_long_runs() -> None:
    from xpuperf.calibrate.nccllog import parse_lines

    blanks = "\t " * 100_000
    lines = [
        "9" * 200_000 + " NCCL INFO Bootstrap : Using eth0",  # host pattern searched a long run
        f"gpu-a:11:12 [0] NCCL INFO Using network IB{blanks}  ",
        f"gpu-a:11:12 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0.{blanks}",
        f"gpu-a:11:12 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0{blanks}x.",
    ]
    with hard_deadline(60):
        log = parse_lines(lines)
    assert log.hosts == ["gpu-a"]
    assert log.network == ["IB"]
    assert log.env["NCCL_SOCKET_IFNAME"] == ("eth0", 3)  # trailing blanks and one final dot dropped
    assert log.env["NCCL_IB_HCA"] == ("mlx5_0" + blanks + "x", 4)


def test_nccl_debug_comm_line_with_huge_numbers() -> None:
    # a 4301-digit rank: int() raised ValueError; 10**30 ranks made _infer_hosts loop over them
    from xpuperf.calibrate.nccllog import parse_lines

    line = "node01:1:{} [{}] NCCL INFO comm 0x8ec0ac{} rank {} nRanks {} nNodes {} localRanks {}"
    with hard_deadline(60):
        log = parse_lines(
            [
                line.format(2, 6, 0, "9" * 4301, 16, 2, 8),
                line.format(2, 6, 0, 6, 16, 2, 8),
                line.format(3, 7, 1, 7, 10**30, 10**29, 10),
            ]
        )
    assert sorted((c.nranks, tuple(sorted(c.ranks))) for c in log.comms) == [
        (16, tuple(range(16))),  # 16 ranks inferred node-major from rank 6 on node01
    ]  # nRanks 10**30 > MAX_CARDS (1,000,000): the line is skipped and counted
    assert log.warnings[0].startswith("skipped 1 NCCL INFO line(s)")


def test_nccl_tests_size_past_int64_is_a_skipped_row(tmp_path: Path) -> None:
    # a 401-digit size made an object column whose arithmetic raised OverflowError
    seed = DATA / (
        "calibrate_crossnic0_partial/"
        "42_nccltests_crossnic0-4gpu-per-node-no-preamble-partial-row.txt"
    )
    text = seed.read_text()
    assert "     2097152 " in text
    p = tmp_path / "nccl.txt"
    p.write_text(text.replace("     2097152 ", " 1" + "0" * 400 + " ", 1))
    res = read_nccl_tests(p)
    assert sorted(res.frame["size_bytes"]) == [2**k for k in range(22, 29)]  # 2 MiB row gone
    assert any("skipped 1 malformed result row(s) (first at line 6)" in w for w in res.warnings)


def test_binding_lines_with_long_blank_runs(tmp_path: Path) -> None:
    from xpuperf.topology.binding import read_binding

    blanks = " " * 200_000
    numactl = tmp_path / "numactl.txt"
    numactl.write_text(
        f"rank{blanks}x\nrank 3\npolicy: bind{blanks}\nphyscpubind:{blanks}0 1 2{blanks}\n"
        "rank   :  4\nphyscpubind: 5\n"
    )
    taskset = tmp_path / "taskset.txt"
    taskset.write_text(f"pid 7's current affinity list:{blanks}4-7{blanks}\n")
    with hard_deadline(60):
        got = read_binding(numactl, "numactl").entries
        got_taskset = read_binding(taskset, "taskset").entries
    assert [(e.rank, e.cpus, e.line) for e in got] == [(3, (0, 1, 2), 3), (4, (5,), 6)]
    assert [(e.rank, e.cpus) for e in got_taskset] == [(0, (4, 5, 6, 7))]


def test_binding_yaml_reader_error_is_one_line(tmp_path: Path) -> None:
    # yaml's ReaderError (a NUL byte) has no `problem`: its two-line str() was the message
    from xpuperf.topology.binding import read_binding

    p = tmp_path / "launcher.yaml"
    p.write_bytes(b"\x00launcher: numactl\nlocal_ranks:\n  - numactl --cpunodebind=0\n")
    with pytest.raises(InputError) as e:
        read_binding(p, "launcher")
    assert str(e.value) == (
        f"{p}: not valid YAML: unacceptable character #x0000: special characters are not "
        'allowed in "<unicode string>", position 0'
    )


def test_mindspore_bench_epoch_past_float_range(tmp_path: Path) -> None:
    # a 401-digit epoch: the step span (an int) divided a float -> OverflowError
    big = "1" + "0" * 400
    line = "epoch: [{}/1] step: [{}/5004], loss is 7.07 Epoch time: {} ms, fps: 1490 img/sec.\n"
    p = tmp_path / "ms.log"
    p.write_text(line.format(big, 40, 3431.5) + line.format(0, 80, 3437.1))
    res = read_logs([p], fmt="mindspore")
    assert res.table["step"].tolist() == [80]
    assert res.table["step_time_s"].tolist() == [3.4371 / 80]  # span = the step (no valid prior)
    assert res.warnings == [f"{p}:1: skipped 1 row: step number missing or not an integer"]


def test_mlperf_speed_that_is_not_a_number(tmp_path: Path) -> None:
    # 'Speed: . samples/sec' matched [\d.]+ and float('.') raised ValueError
    seed = DATA / "formats_mlperf/04_trainlog_mlperf1.0-resnet-mxnet-1node-8xA100pcie.txt"
    text = seed.read_text()
    assert "Speed: 18477.98 samples/sec" in text
    p = tmp_path / "mlperf.txt"
    p.write_text(text.replace("Speed: 18477.98 samples/sec", "Speed: . samples/sec", 1))
    res = read_logs([p], fmt="mlperf")
    whole = read_logs([seed], fmt="mlperf")
    assert res.job_level_cards == whole.job_level_cards == 8  # one row less on each of 8 cards
    assert len(res.table) == len(whole.table) - 8
    assert res.warnings[0].startswith(f"{p}:142: skipped 1 row: step time missing, NaN")


_BIG = "9" * 4301  # one digit past int()'s limit: ValueError in every text reader's int()


@pytest.mark.parametrize(
    ("fmt", "line"),
    [
        ("torchtitan", f"[titan] 2025-01-01 00:00:00,000 - root - INFO - step: {_BIG}  loss: 1.0"),
        ("keras", f"TimeHistory: 3.0 seconds, 3.0 examples/second between steps 100 and {_BIG}"),
        ("mindspore", f"epoch: [{_BIG}/1] step: [4/50], loss is 7 Epoch time: 3.5 ms, fps: 14"),
        (
            "mmengine",
            f"05/24 20:20:37 - mmengine - INFO - Epoch(train)  [{_BIG}][  24/1051]  time: 8",
        ),
        ("maskrcnn", f"INFO: eta: 1:00:00  iter: {_BIG}  loss: 1.3 (1.4)  time: 0.5 (0.5)"),
        ("tf_cnn_benchmarks", f"{_BIG}\timages/sec: 10.0 +/- 0.1 (jitter = 0.0)\t1"),
        ("deepspeed", f"[Rank {_BIG}] time (ms) | forward: 2.0 | backward: 7.4 | step: 7.2"),
        (
            "mlperf",
            f"2021-05-19 02:42:12,466 Node[0] Epoch[{_BIG}] Batch [0-20]\tSpeed: 100.0 samples/sec",
        ),
    ],
)
def test_number_past_the_int_digit_limit(tmp_path: Path, fmt: str, line: str) -> None:
    p = tmp_path / "rank0.log"
    p.write_text(line + "\n")
    with pytest.raises(InputError) as e:
        read_logs([p], fmt=fmt)
    assert str(e.value) == (
        f"{p}: holds a number of more than 4300 digits: not a value a training log prints; "
        "check the file is not corrupt or concatenated with binary data"
    )


def test_maskrcnn_long_name_run_parses_in_linear_time(tmp_path: Path) -> None:
    # _METRIC retried `[a-z_0-9]+: ` from every character of a long run: 88 000 'x' hung
    p = tmp_path / "rank0.log"
    p.write_text(
        _mask_line(20, 0.5, False)
        + "INFO: eta: 1:00:00  iter: 40  loss: 1.3 (1.4)  loss_box_reg:" + "x" * 200_000
        + "  time: 0.25 (0.3)  data: 0.01 (0.02)\n"
    )  # fmt: skip
    with hard_deadline(60):
        res = read_logs([p], fmt="maskrcnn")
    assert res.table["step"].tolist() == [20, 40]
    assert res.table["step_time_s"].tolist() == [0.5, 0.25]


def test_jsonl_epoch_times_near_float_max(tmp_path: Path) -> None:
    # two times near 1e308: np.median averaged them to inf with an overflow RuntimeWarning
    p = tmp_path / "rank0.jsonl"
    p.write_text(
        '{"step": 1, "step_time_s": 0.3, "time": 1.7e308}\n'
        '{"step": 2, "step_time_s": 0.3, "time": 1.7e308}\n'
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with contextlib.suppress(InputError):
            read_logs([p])


def test_maskrcnn_iteration_past_float_range(tmp_path: Path) -> None:
    # a 401-digit iter number: float(step) raised OverflowError; now a dropped row
    p = tmp_path / "rank0.log"
    p.write_text(_mask_line(20, 0.5, False) + _mask_line(int("1" + "0" * 400), 0.6, False))
    res = read_logs([p], fmt="maskrcnn")
    assert res.table["step"].tolist() == [20]
    assert any("skipped 1 row" in w for w in res.warnings)
