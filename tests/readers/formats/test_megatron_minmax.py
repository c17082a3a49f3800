"""Megatron-LM ``(min, max) time across ranks (ms):`` timer blocks on the block fast path: the
same rows as the line path where the fast path once differed (a break-it pass found each case):
a head behind a ``[date time]`` prefix, a block still open (or just closed) at a block border,
and a timer value that is digits and dots but no number."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from xpuperf.readers.base import Source
from xpuperf.readers.formats import megatron

HEAD = "(min, max) time across ranks (ms):"
FWD = "    forward-compute ................................: (290.0, 310.0)"
BWD = "    backward-compute ...............................: (580.0, 640.0)"


def step(i: int) -> str:
    return (
        f" iteration {i:8d}/ 1000000 | consumed samples: {i * 512:10d} | elapsed time per "
        "iteration (ms): 1000.0 | learning rate: 1.0E-04 | global batch size:   512 | lm loss: "
        "2.1E+00 |"
    )


def read_both(tmp_path: Path, lines: list[str], block: int | None = None):
    p = tmp_path / "mm.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def src() -> Source:
        return Source(p, str(p), False, p.read_bytes()[:65536])

    kw = {} if block is None else {"block_bytes": block}
    fast, slow = megatron.read(src(), **kw), megatron.read(src(), fast=False, **kw)
    pd.testing.assert_frame_equal(fast.frame, slow.frame)
    return fast.frame.set_index("step")


def test_head_after_a_logging_prefix(tmp_path: Path) -> None:
    lines = []
    for i in range(1, 11):
        lines += [step(i), "[2024-05-01 10:00:00] " + HEAD, FWD, BWD]
    f = read_both(tmp_path, lines)
    # the max over ranks, ms -> s: forward 310 ms, backward 640 ms, on every step
    assert f["forward_s"].tolist() == [0.31] * 10
    assert f["backward_s"].tolist() == [0.64] * 10


def timer(k: int, pad: int) -> str:
    return f"    t{k}-x {'.' * pad}: (1.0, 2.0)"


def test_open_block_longer_than_40_lines_at_a_border(tmp_path: Path) -> None:
    # the first block ends 45 timer lines after the head: the fast path used to look back at
    # most 40 lines for it, missed it, and left forward-compute (after the border) unapplied
    head = [step(1), HEAD] + [timer(k, 20) for k in range(45)]
    block = len("\n".join(head)) + 1 + 10  # the border falls inside the next timer line
    lines = [*head, *[timer(k, 20) for k in range(45, 60)], FWD, step(2), HEAD, FWD]
    f = read_both(tmp_path, lines, block)
    assert f["forward_s"].tolist() == [0.31, 0.31]


def test_open_block_longer_than_8_kib_at_a_border(tmp_path: Path) -> None:
    # 30 timer lines of ~340 bytes after the head before the border: more than the 8 KiB the
    # fast path used to look back
    head = [step(1), HEAD] + [timer(k, 330) for k in range(30)]
    block = len("\n".join(head)) + 1 + 10
    lines = [*head, timer(30, 330), FWD, step(2), HEAD, FWD]
    f = read_both(tmp_path, lines, block)
    assert f["forward_s"].tolist() == [0.31, 0.31]


@pytest.mark.parametrize("gap", ["", "free text"])
def test_block_closed_right_before_a_border(tmp_path: Path, gap: str) -> None:
    # a head, then a line that closes the block, then the border, then a timer line: the timer
    # belongs to no block (the line path); the fast path used to strip the empty line and
    # reopen the block
    head = [step(1), HEAD, gap]
    block = len("\n".join(head)) + 1 + 10
    f = read_both(tmp_path, [*head, FWD, step(2), HEAD, FWD], block)
    assert math.isnan(f.loc[1, "forward_s"])
    assert f.loc[2, "forward_s"] == 0.31


def test_timer_value_that_is_not_a_number(tmp_path: Path) -> None:
    lines = []
    for i in range(1, 13):
        bad = "    forward-compute ................: (1.2.3, 14.5)"
        lines += [step(i), HEAD, bad if i == 7 else FWD]
    f = read_both(tmp_path, lines)  # read, not an internal error (exit 3 before)
    assert math.isnan(f.loc[7, "forward_s"])  # not a timer line: nothing for step 7
    assert f.drop(index=7)["forward_s"].tolist() == [0.31] * 11


def test_max_only_block(tmp_path: Path) -> None:
    # `--timing-log-option max` prints 'max time across ranks (ms):' and one value per timer
    # (megatron/core/timers.py: name.ljust(48, '.') + ': {:.2f}'); neither path read it before
    lines = []
    for i in range(1, 11):
        lines += [
            step(i),
            "max time across ranks (ms):",
            "    " + "forward-compute ".ljust(48, ".") + ": 310.00",
            "    " + "backward-compute ".ljust(48, ".") + ": 640.00",
        ]
    f = read_both(tmp_path, lines)
    assert f["forward_s"].tolist() == [0.31] * 10
    assert f["backward_s"].tolist() == [0.64] * 10


@pytest.mark.parametrize(
    "head",
    [
        "(min, max)  time across ranks (ms):",  # two blanks
        "time (ms) | (min, max) time across ranks (ms):",  # inside a timer line
        "iteration x (min, max) time across ranks (ms):",  # an iteration line that is no step
    ],
)
def test_other_lines_that_open_a_timer_block(tmp_path: Path, head: str) -> None:
    # the line path opens a timer block on any line holding 'time across ranks (ms)' that is
    # not a step line; the fast path lost the timer lines after these (found by a break-it pass)
    lines = []
    for i in range(1, 11):
        lines += [step(i), head, FWD, BWD]
    f = read_both(tmp_path, lines)
    assert f["forward_s"].tolist() == [0.31] * 10


def test_timer_block_after_a_neox_samples_line(tmp_path: Path) -> None:
    # a 'samples/sec …' line that also opens a block: the only 'other' line whose timer lines
    # the fast path did not take along (found by a break-it pass)
    lines = [step(1), "samples/sec: 1.0 | max time across ranks (ms):", FWD, BWD, step(2)]
    f = read_both(tmp_path, lines)
    assert f.loc[1, "forward_s"] == 0.31
    assert f.loc[1, "backward_s"] == 0.64
