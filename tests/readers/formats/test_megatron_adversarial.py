"""The Megatron block fast path on adversarial lines: the same rows, drops and lines as the line
path, whatever the block size; plus the helpers that make it fast (newline count, CPU choice)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xpuperf.readers.base import Source
from xpuperf.readers.formats import blocks, megatron, ranges

STEP = (
    "iteration {i:6d}/ 1000 | consumed samples: {s} | elapsed time per iteration (ms): {ms} | "
    "learning rate: 1.0E-04 | global batch size: {g} | lm loss: 2.1E+00 |"
)


def step(i: int, ms: str = "1000.0", g: int = 512) -> str:
    return STEP.format(i=i, s=i * g, ms=ms, g=g)


# (line, what the line path makes of it: a row (step, step_time_s), "drop", or None)
CASES = [
    ("[rank3]:  " + step(1, "1250.5"), (1, 1.2505)),  # torchrun prefix
    ("[default3]:" + step(2), (2, 1.0)),  # torchrun log redirect, no blank
    ("[1,0]<stdout>: " + step(3, ".5"), (3, 0.0005)),  # Open MPI tag; '.5' is a float
    ("  3: " + step(4, "12."), (4, 0.012)),  # Slurm srun -l; '12.' is a float
    ("3: " + step(5), (5, 1.0)),
    ("\t \t" + step(6), (6, 1.0)),  # blanks other than spaces
    # 10 digits: not a launcher prefix, but a logger prefix ending with ':' (read since issue 18)
    ("[rank1234567890]: " + step(7), (7, 1.0)),
    ("\t3: " + step(8), (8, 1.0)),  # srun -l prefix after a tab: a logger prefix likewise
    ("saving checkpoint at " + step(9), None),  # mid-line after free text, no '|' before
    ("[rank3]: " + step(10, "1.2.3"), "drop"),  # not a number: the line path drops it
    ("[rank3]: " + step(11, "."), "drop"),
    ("[2024-05-01 10:00:00] " + step(12, "10.0"), (12, 0.01)),  # timestamp prefix
    (
        " samples/sec: 2.000 | " + step(13, "500.0").replace("global batch", "global_batch"),
        (13, 0.5),
    ),
    (
        "[rank3]: " + step(14).replace("global batch size: 512 |", "global batch size: 512"),
        (14, 1.0),
    ),
    ("[rank3]: " + step(15, "250.0", g=1024), (15, 0.25)),  # the batch size changes
    ("[rank3]:  iteration     16/ 1000 | consumed samples: 1", "drop"),  # cut line
    (
        "[rank3]: " + step(17).replace("consumed samples: 8704 |", "consumed samples: 87\n04 |"),
        "drop",
    ),  # a step line broken in two: first half cut, second half noise
    ("(min, max) time across ranks (ms): batch-generator ....: (1.0, 2.0)", None),
    ("[rank3]: [W ProcessGroupNCCL.cpp:1234] Warning: iteration 18/ 20 | x", None),
    ("plain text | more text", None),
    ("", None),
]


def src_of(path: Path) -> Source:
    return Source(path, str(path), False, path.read_bytes()[:65536])


def write(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "adv.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_each_case_as_worked_out(tmp_path: Path) -> None:
    # every adversarial line after one standard line, read both ways: the rows and drops are the
    # ones listed in CASES (worked out from the line path's rules by hand)
    lines = ["[rank3]:  " + step(100)]
    for text, _ in CASES:
        lines.append(text)
    p = write(tmp_path, lines)
    want_rows = [(100, 1.0)] + [r for _, r in CASES if isinstance(r, tuple)]
    want_drops = sum(r == "drop" for _, r in CASES)
    for fast in (True, False):
        t = megatron.read(src_of(p), fast=fast, block_bytes=256)
        got = list(zip(t.frame["step"].tolist(), t.frame["step_time_s"].tolist(), strict=True))
        assert got == [(float(s), pytest.approx(v, rel=1e-12)) for s, v in want_rows], fast
        assert sum(d.count for d in t.drops) == want_drops, fast
    samples = megatron.read(src_of(p)).frame.set_index("step")["samples"]
    assert samples[15.0] == 1024.0  # the changed batch size
    assert samples[13.0] == 1.0  # NeoX, no batch size: 2 samples/s × 0.5 s
    assert np.isnan(samples[14.0])  # 'global batch size: 512 lm loss: …' is not a number


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("block", [64, 300, 4096, blocks.BLOCK_BYTES])
def test_mixed_adversarial_fast_equals_line_path(tmp_path: Path, seed: int, block: int) -> None:
    rng = random.Random(seed)
    lines = []
    for i in range(1, 300):
        lines.append(rng.choice(["[rank3]:  ", "", " 3: "]) + step(1000 + i, f"{900 + i}.5"))
        if rng.random() < 0.5:
            lines.append(rng.choice(CASES)[0])
    p = write(tmp_path, lines)
    fast = megatron.read(src_of(p), block_bytes=block)
    slow = megatron.read(src_of(p), fast=False)
    pd.testing.assert_frame_equal(fast.frame, slow.frame)
    assert [(d.reason, d.count, d.first) for d in fast.drops] == [
        (d.reason, d.count, d.first) for d in slow.drops
    ]
    idx = list(range(len(slow.frame)))
    assert fast.locate(idx) == slow.locate(idx)


def test_not_a_number_block_takes_the_exact_scan(tmp_path: Path) -> None:
    # '1.2.3' passes the fast scan's [0-9.]++ but not float: that block is scanned again with the
    # exact number pattern; the rows around it keep their values
    p = write(tmp_path, [step(1, "100.0"), step(2, "1.2.3"), step(3, "300.0")])
    parser = megatron._Parser()
    parser.fast(p.read_bytes(), -1)
    t = megatron.read(src_of(p))
    assert t.frame["step"].tolist() == [1.0, 3.0]
    assert t.frame["step_time_s"].tolist() == [0.1, 0.3]
    assert [(d.count, d.first) for d in t.drops] == [(1, 2)]  # line 2, located exactly
    assert len(parser.rows) == 2


def test_minmax_timer_name_scan_equals_the_backtracking_form() -> None:
    """The scan's possessive timer-line name (megatron_scan._TIMERS) accepts exactly the lines the
    backtracking form of timers.MINMAX accepts: random lines over the characters that matter."""
    import re

    from xpuperf.readers.formats import megatron_scan

    tail = megatron_scan._TIMERS.removeprefix(b"(?:\\nPFX").removesuffix(b":[^\\n]*)")
    ws = megatron_scan._WS
    new = re.compile(tail.replace(b"W", ws) + b":")
    old = re.compile((rb"(?:W)+[A-Za-z](?:[\w\- ]*[\w\-])?W*\.{2,}:").replace(b"W", ws))
    rng = random.Random(11)
    accepted = 0
    for _ in range(20_000):
        parts = [
            rng.choice([b" ", b"  ", b"\t", b""]),
            rng.choice([b"a", b"Z", b"9", b"-", b" "]),
            bytes(rng.choice(b"  \tab-_9.") for _ in range(rng.randrange(0, 10))),
            rng.choice([b"", b" ", b"\t ", b"  "]),
            b"." * rng.randrange(0, 4),
            rng.choice([b":", b"", b" :"]),
        ]
        line = b"".join(parts)
        a, b = old.match(line), new.match(line)
        assert (a and a.end()) == (b and b.end()), line
        accepted += a is not None
    assert accepted > 200  # both kinds of line were tried


def test_newlines_counts_like_bytes_count() -> None:
    rng = random.Random(3)
    for n in (0, 1, 4095, 4096, 4097, 100_000):
        data = bytes(rng.choice(b"ab\n") for _ in range(n))
        assert blocks.newlines(data) == data.count(b"\n")


@pytest.mark.parametrize(
    ("running", "cpus", "want_others", "want_free"),
    [
        ("1/120", 2, 0.0, 2),  # only this process runs: both CPUs
        ("2/120", 2, 1.0, 1),  # one other busy process: one CPU left
        ("3/120", 2, 2.0, 1),  # two others: still at least one
        ("1/120", 8, 0.0, 8),
        ("4/120", 8, 3.0, 5),
    ],
)
def test_free_cpus_counts_other_runnable_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, running: str, cpus: int,
    want_others: float, want_free: int,
) -> None:  # fmt: skip
    fake = tmp_path / "loadavg"
    fake.write_text(f"1.50 1.20 0.90 {running} 4242\n")  # the load averages are not used
    monkeypatch.setattr(ranges, "LOADAVG", fake)
    monkeypatch.setattr(ranges, "cpus", lambda: cpus)
    assert ranges.busy_others(samples=3, gap_s=0.0) == want_others
    assert ranges.free_cpus() == want_free


def test_free_cpus_without_proc_uses_the_load_average(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ranges, "LOADAVG", tmp_path / "missing")
    monkeypatch.setattr(ranges, "cpus", lambda: 4)
    monkeypatch.setattr(ranges.os, "getloadavg", lambda: (2.2, 0.0, 0.0))
    assert ranges.busy_others() is None
    assert ranges.free_cpus() == 3  # 4 − (2.2 − 1 for this process) = 2.8 → 3


def test_values_survive_float_conversion_exactly(tmp_path: Path) -> None:
    # the bulk conversion gives the same doubles as float() per value, divided by 1000
    ms = ["1250.7", "0.1", "99999999.999", "3", "7."]
    p = write(tmp_path, [step(i, m) for i, m in enumerate(ms, 1)])
    t = megatron.read(src_of(p))
    assert t.frame["step_time_s"].tolist() == [float(m) / 1000.0 for m in ms]
    assert np.frombuffer(t_lines(p), dtype=np.int64).min() < 0  # the fast path ran


def t_lines(p: Path) -> bytes:
    parser = megatron._Parser()
    parser.fast(p.read_bytes(), -1)
    return parser.rows.lines.tobytes()


def test_timers_after_a_step_line_at_a_range_border_are_kept(tmp_path: Path) -> None:
    # a break-it pass: a byte-range cut right after an iteration line left the worker of the
    # next range with no row for the timer line that follows, so set_last() dropped it (NaN
    # forward/backward/optimizer for one step per border, exit 0, and the result depended on
    # how many CPUs were free). Every step here has a timer line and a (min, max) block.
    lines = []
    for i in range(1, 2001):
        lines.append(step(i, f"1000.{i % 10}"))
        lines.append(f"time (ms) | forward-compute: 300.{i % 7} | backward-compute: 600.5 | "
                     "optimizer: 50.0")  # fmt: skip
        if i % 3 == 0:
            lines.append("(min, max) time across ranks (ms):")
            lines.append(
                f"    forward-compute ................................: (290.0, 31{i % 10}.0)"
            )
    path = write(tmp_path, lines)
    seq = megatron.read(src_of(path), workers=1).frame
    assert seq["forward_s"].notna().all()
    for k in (2, 3, 4, 5):
        par = megatron.read(src_of(path), workers=k).frame
        pd.testing.assert_frame_equal(par, seq)


def test_neox_step_line_behind_a_logging_prefix(tmp_path: Path) -> None:
    # '[date] samples/sec: X | iteration …': the fast path found no step line (exit 2) and the
    # line path lost the samples (the prefix was read as part of the 'samples/sec' key)
    lines = [
        f"[2024-05-01 10:00:{i:02d}] samples/sec: 6.922 | iteration {i:8d}/ 10000 | elapsed "
        "time per iteration (ms): 4622.9 | learning rate: 6.830E-07 |"
        for i in range(1, 6)
    ]
    p = write(tmp_path, lines)
    fast, slow = megatron.read(src_of(p)), megatron.read(src_of(p), fast=False)
    pd.testing.assert_frame_equal(fast.frame, slow.frame)
    assert fast.frame["step"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert fast.frame["samples"].tolist() == [32.0] * 5  # 6.922 samples/s × 4.6229 s, rounded


def test_byte_ranges_keep_the_column_order(tmp_path: Path) -> None:
    # the merge of worker results iterated a set of column names: the order changed from run
    # to run (hash randomisation); now it is the sequential parse's order
    import subprocess
    import sys

    timer = "time (ms) | forward-compute: 300.0 | backward-compute: 600.0 | optimizer: 20.0"
    lines = [x for i in range(1, 400) for x in (step(i), timer if i > 200 else "noise")]
    p = write(tmp_path, lines)
    code = (
        "import sys; from xpuperf.readers.base import Source; "
        "from xpuperf.readers.formats import megatron; from pathlib import Path; "
        "p = Path(sys.argv[1]); s = Source(p, str(p), False, p.read_bytes()[:65536]); "
        "print(list(megatron.read(s, block_bytes=2048, workers=3).frame.columns))"
    )
    seq = list(megatron.read(src_of(p), block_bytes=2048, workers=1).frame.columns)
    for seed in ("1", "2", "3"):  # PYTHONHASHSEED changes the iteration order of a set of str
        out = subprocess.run(
            [sys.executable, "-c", code, str(p)],
            capture_output=True,
            text=True,
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(Path(__file__).parents[3])},
            check=True,
        )
        assert out.stdout.strip() == str(seq)
