"""The Megatron block fast path gives exactly what the line path gives (rows, drops, lines)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xpuperf.readers.base import Source
from xpuperf.readers.formats import megatron


def src_of(path: Path) -> Source:
    return Source(path, str(path), False, path.read_bytes()[:65536])


def step(it: int, ms: float, prefix: str = "[rank7]: ") -> str:
    return (
        f"{prefix} iteration {it:8d}/ 1000000 | consumed samples: {it * 512:10d} | "
        f"elapsed time per iteration (ms): {ms:.1f} | learning rate: 1.0E-04 | "
        f"global batch size:   512 | lm loss: 2.1E+00 | number of skipped iterations:   0 |"
    )


NOISE = [
    "[rank3]: [W ProcessGroupNCCL.cpp:1234] Warning: something",
    "[rank1]: saving checkpoint at iteration     100 to /ckpt",
    "[rank2]: (min, max) time across ranks (ms): batch-generator ....: (1.0, 2.0)",
    "[rank0]: [after training is done] datetime: 2024-05-01 10:00:00",
    "plain text line",
    "",
]
SPECIAL = [
    # Megatron <= 2022 timers: set on the last row
    "[rank7]: time (ms) | forward-compute: 300.5 | backward-compute: 600.25 | optimizer: 50.0",
    # (min, max) head with its timer lines: max set on the last row
    "[rank7]: (min, max) time across ranks (ms):\n"
    "[rank7]:     forward-compute ................................: (290.0, 310.0)\n"
    "[rank7]:     backward-compute ...............................: (580.0, 640.0)",
    # DeepSpeed timers behind a logging prefix: pending for the next step line
    "[2023-07-25 21:01:41,924] [INFO] [logging.py:96:log_dist] [Rank 0] rank=0 time (ms) | "
    "forward: 648.91 | backward: 2154.28 | backward_inner: 1991.87 | backward_allreduce: 162.37 "
    "| step: 1706.23",
    # NeoX step line: samples from samples/sec
    " samples/sec: 6.922 | iteration       11/   10000 | elapsed time per iteration (ms): 4622.9 "
    "| learning rate: 6.830E-07 |",
    # a cut step line: dropped with a warning
    "[rank7]:  iteration     55/ 1000000 | consumed samples: 1 | learning rate",
    # a timestamped step line
    "[2024-05-01 10:00:00] iteration 9/ 10 | elapsed time per iteration (ms): 10.0 | "
    "global batch size: 8 |",
]


def make_log(seed: int, n: int, special: float) -> str:
    rng = random.Random(seed)
    lines = []
    for it in range(1, n + 1):
        lines.append(step(it, 1000 + rng.random() * 100, rng.choice(["[rank7]: ", "", " 3: "])))
        for _ in range(rng.randrange(3)):
            lines.append(rng.choice(NOISE))
        if rng.random() < special:
            lines.append(rng.choice(SPECIAL))
    return "\n".join(lines) + "\n"


def both(path: Path, block: int) -> tuple:
    fast = megatron.read(src_of(path), block_bytes=block)
    slow = megatron.read(src_of(path), fast=False)
    return fast, slow


@pytest.mark.parametrize(
    ("seed", "special", "block"),
    [(0, 0.0, 4096), (1, 0.05, 2048), (2, 0.3, 1000), (3, 0.3, 1 << 22)],
)
def test_fast_equals_line_path(tmp_path: Path, seed: int, special: float, block: int) -> None:
    p = tmp_path / "train.log"
    p.write_text(make_log(seed, 400, special), encoding="utf-8")
    fast, slow = both(p, block)
    pd.testing.assert_frame_equal(fast.frame, slow.frame)
    assert [(d.reason, d.count, d.first) for d in fast.drops] == [
        (d.reason, d.count, d.first) for d in slow.drops
    ]
    idx = [*range(0, len(slow.frame), 7), len(slow.frame) - 1]
    assert fast.locate(idx) == slow.locate(idx)
    assert fast.notes == slow.notes


def test_fast_path_values_and_lines(tmp_path: Path) -> None:
    # 3 step lines, noise between: values and line numbers read off the text by hand
    text = "\n".join(
        [step(10, 1250.0), NOISE[0], NOISE[2], step(11, 1260.5), NOISE[1], step(12, 1240.0)]
    )
    p = tmp_path / "t.log"
    p.write_text(text + "\n", encoding="utf-8")
    t = megatron.read(src_of(p), block_bytes=256)
    assert t.frame["step"].tolist() == [10.0, 11.0, 12.0]
    assert t.frame["step_time_s"].tolist() == [1.25, 1.2605, 1.24]
    assert t.frame["samples"].tolist() == [512.0] * 3
    assert np.frombuffer(megatron_lines(p), dtype=np.int64).min() < 0  # the fast path ran
    assert t.locate([0, 1, 2]) == {0: 1, 1: 4, 2: 6}


def megatron_lines(p: Path) -> bytes:
    parser = megatron._Parser()
    parser.fast(p.read_bytes(), -1)
    return parser.rows.lines.tobytes()


def test_blocks_ineligible_take_the_line_path(tmp_path: Path) -> None:
    # CRLF and ANSI codes: the line path handles them; values as read by hand
    text = step(1, 100.0).replace("iteration", "\x1b[32miteration\x1b[0m") + "\r\n" + step(2, 200.0)
    p = tmp_path / "c.log"
    p.write_text(text + "\r\n", encoding="utf-8", newline="")
    t = megatron.read(src_of(p))
    assert t.frame["step_time_s"].tolist() == [0.1, 0.2]
    assert t.locate([0, 1]) == {0: 1, 1: 2}


@pytest.mark.parametrize("workers", [2, 3])
def test_ranges_in_worker_processes_equal_one_pass(tmp_path: Path, workers: int) -> None:
    # byte ranges parsed in forked workers, merged: the same rows, drops and lines as one pass
    p = tmp_path / "big.log"
    p.write_text(make_log(5, 600, 0.3), encoding="utf-8")
    par = megatron.read(src_of(p), block_bytes=2048, workers=workers)
    seq = megatron.read(src_of(p), block_bytes=2048, workers=1)
    pd.testing.assert_frame_equal(par.frame, seq.frame)
    assert [(d.reason, d.count, d.first) for d in par.drops] == [
        (d.reason, d.count, d.first) for d in seq.drops
    ]
    idx = [*range(0, len(seq.frame), 11), len(seq.frame) - 1]
    assert par.locate(idx) == seq.locate(idx)
    assert par.notes == seq.notes


def test_split_cuts_after_newlines(tmp_path: Path) -> None:
    from xpuperf.readers.formats.ranges import split

    p = tmp_path / "x.log"
    p.write_bytes(b"aaaa\nbbbb\ncccc\ndddd\n")  # 20 bytes; cuts at 5·i rounded up to a line end
    assert split(src_of(p), 4) == [(0, 10), (10, 15), (15, 20)]


def test_range_after_a_pending_timer_line_is_reparsed(tmp_path: Path) -> None:
    # the cut between the two ranges falls right after a DeepSpeed timer line, whose phases
    # belong to the step line that opens range 2: range 2 must be parsed again with that state
    timer = SPECIAL[2]
    head = "\n".join(step(i, 1000.0) for i in range(1, 40))
    tail = "\n".join(step(i, 1000.0) for i in range(40, 79))  # as long as head: the middle
    text = head + "\n" + timer + "\n" + tail + "\n"  # of the file is inside the timer line
    p = tmp_path / "cut.log"
    p.write_text(text, encoding="utf-8")
    from xpuperf.readers.formats.ranges import split

    cuts = split(src_of(p), 2)
    assert cuts[0][1] == len(head) + 1 + len(timer) + 1  # the cut is right after the timer line
    par = megatron.read(src_of(p), workers=2)
    seq = megatron.read(src_of(p), workers=1)
    pd.testing.assert_frame_equal(par.frame, seq.frame)
    row = par.frame[par.frame["step"] == 40.0]
    assert row["forward_s"].tolist() == [0.64891]  # 648.91 ms from the timer line


def test_lines_longer_than_a_block(tmp_path: Path) -> None:
    p = tmp_path / "long.log"
    p.write_text(make_log(9, 60, 0.2), encoding="utf-8")
    fast = megatron.read(src_of(p), block_bytes=64)
    slow = megatron.read(src_of(p), fast=False)
    pd.testing.assert_frame_equal(fast.frame, slow.frame)
