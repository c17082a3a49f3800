"""Console noise: rank prefixes, ANSI codes, tqdm, CRLF, GB18030 text, timestamps; unknown and
partly garbage files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from xpuperf.errors import InputError
from xpuperf.readers import read_logs
from xpuperf.readers.formats import console

MEGA = (
    " iteration {i:>8}/  500000 | consumed samples: {c} | elapsed time per iteration (ms): {ms} "
    "| global batch size:   256 | lm loss: 2.0E+00 |"
)


@pytest.mark.parametrize(
    ("line", "rank", "text"),
    [
        ("[rank3]: hello", 3, "hello"),
        ("[default12]:hello", 12, "hello"),
        ("[1,5]<stdout>:hello", 5, "hello"),
        ("[1,5]<stderr>: hello", 5, "hello"),
        (" 7: hello", 7, "hello"),
        ("63: :::MLLOG {}", 63, ":::MLLOG {}"),
        ("\x1b[32mstep:\x1b[0m  4", None, "step:  4"),
        ("  3%|███   | 12/345 [00:07<06:50,  1.23s/it][2023-06-21 07:39:09,625] x", None,
         "[2023-06-21 07:39:09,625] x"),
        ("INFO: eta: 1:00  iter: 5", None, "INFO: eta: 1:00  iter: 5"),
        ("10\timages/sec: 1.0", None, "10\timages/sec: 1.0"),
    ],
)  # fmt: skip
def test_clean(line: str, rank: int | None, text: str) -> None:
    assert console.clean(line) == (rank, text)


@pytest.mark.parametrize(
    ("text", "epoch"),
    [
        ("[2023-07-25 21:01:40,644] [INFO]", 1690318900.644),
        ("2023/05/24 20:20:37 - mmengine", 1684959637.0),
        ("2025-05-21T03:50:19.029644300Z {", 1747799419.0296443),
        ("2024-01-01T01:00:00+01:00", 1704067200.0),
        ("no time here", None),
    ],
)
def test_timestamp(text: str, epoch: float | None) -> None:
    got = console.timestamp(text)
    assert got == pytest.approx(epoch) if epoch is not None else got is None


def test_noisy_multirank_megatron(write: Callable[[str, str | bytes], Path]) -> None:
    """srun-prefixed, ANSI-coloured, CRLF, GB18030 comment and tqdm \\r updates in one file."""
    lines = [
        "0: 训练开始 (GB18030)".encode("gb18030"),
        b"0: \r 10%|#    | 1/10\r 20%|##   | 2/10",
    ]
    for i, ms in [(1, "1000.0"), (2, "500.0"), (3, "510.0")]:
        text = MEGA.format(i=i, c=i * 256, ms=ms)
        lines.append(f"0: \x1b[1m{text}\x1b[0m".encode())
    p = write("noisy.log", b"\r\n".join(lines) + b"\r\n")
    r = read_logs([p])
    assert r.table["step"].tolist() == [1, 2, 3]
    assert r.table["step_time_s"].tolist() == [1.0, 0.5, 0.51]
    assert not [w for w in r.warnings if "skipped" in w]


def test_unknown_format_names_formats_and_quotes_line(write: Callable) -> None:
    p = write("mystery.log", "\n\nthis is not a training log\nnor is this\n")
    with pytest.raises(InputError) as e:
        read_logs([p])
    msg = str(e.value)
    assert e.value.exit_code == 2
    assert e.value.line == 3
    for name in ("megatron", "mlperf", "csv"):
        assert name in msg
    assert "line 3 reads 'this is not a training log'" in msg


def test_partly_garbage_is_read_with_warning(write: Callable) -> None:
    good = [MEGA.format(i=i, c=i, ms=f"{400 + i}.0") for i in range(1, 6)]
    body = "\n".join(good[:2]).encode() + b"\n\xff\xfe\x80 garbage \x81\n"
    body += b" iteration        3/  500000 | consumed samples: 3 | elapsed ti\n"  # cut line
    body += "\n".join(good[3:]).encode() + b"\n"
    p = write("mega.log", body)
    r = read_logs([p])
    assert r.table["step"].tolist() == [1, 2, 4, 5]
    assert any(
        w.startswith(f"{p}:4: skipped 1 row: an 'iteration N/ M |' line") for w in r.warnings
    )
    assert any(w.startswith(f"{p}:3: skipped 1 row: line is neither UTF-8") for w in r.warnings)
    assert r.skipped_rows == 2


def test_sniffed_but_empty_names_the_line(write: Callable) -> None:
    p = write("cut.log", " iteration 3/ 10 | consumed samples: 3 | elapsed ti\n")
    with pytest.raises(InputError, match=r"cut\.log:1: no Megatron .* line 1"):
        read_logs([p])


def test_deepspeed_ranks_from_text(write: Callable) -> None:
    rows = []
    for step in (1, 2):
        for r in (0, 1):
            rows.append(
                f"[2024-01-01 00:00:0{step},000] [INFO] [Rank {r}] rank={r} time (ms) | "
                f"forward: 10.0 | backward: 20.0 | backward_inner: 15.0 | "
                f"backward_allreduce: 5.0 | step: {3 + r}.0"
            )
    t = read_logs([write("ds.log", "\n".join(rows) + "\n")]).table
    assert t[["rank", "step"]].values.tolist() == [[0, 1], [0, 2], [1, 1], [1, 2]]
    assert t["step_time_s"].tolist() == [0.033, 0.033, 0.034, 0.034]
    assert t["comm_s"].tolist() == [0.005] * 4


def test_megatron_minmax_timers(write: Callable) -> None:
    text = "\n".join(
        [
            MEGA.format(i=10, c=10, ms="1000.0"),
            "(min, max) time across ranks (ms):",
            "    forward-compute ................................: (300.00, 330.00)",
            "    backward-compute ...............................: (500.00, 560.00)",
            "    all-grads-sync .................................: (40.00, 45.00)",
            "    optimizer ......................................: (20.00, 21.00)",
            MEGA.format(i=20, c=20, ms="1000.0"),
        ]
    )
    r = read_logs([write("m.log", text + "\n")])
    row = r.table.iloc[0]
    assert (row["forward_s"], row["backward_s"], row["comm_s"], row["optimizer_s"]) == (
        0.33, 0.56, 0.045, 0.021,
    )  # fmt: skip
    assert any("1.11× the fastest" in w for w in r.warnings)
