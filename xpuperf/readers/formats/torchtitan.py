"""torchtitan (PyTorch, 2024–2026) metric lines.

Step line (printed by every rank, usually without a rank tag)::

    [titan] 2026-02-24 19:46:17,508 - root - INFO - step:  4  loss:  7.62585  grad_norm: 26.6250
    memory: 66.91GiB(37.51%)  tps: 10,050  tflops: 314.71  mfu: 13.99%

torchtitan prints no step time: it is derived from the timestamps of consecutive lines of a rank
(``t_end_s``; the first line has no predecessor and is skipped with a warning). ``tps`` (tokens/s
per device over the log interval, formerly ``wps``; torchtitan divides the rank's tokens by the
interval and by the tensor/pipeline/context-parallel degree) gives ``tokens`` = tps × the step
time of that line (seconds since the previous line / steps since it): the device's share of the
tokens, so Σ over devices is the job's. ``mfu: 13.99%`` gives ``mfu`` = 0.1399. Lines with a
launcher rank prefix (``[rank3]:``) are read per rank; without prefixes, repeated lines of one
step (one per rank) are deduplicated — the first is kept — and a note says how many ranks
printed the step (``one_of_many``: the rows are one card's view, so without a world size the
job's figures are unknown).
"""

from __future__ import annotations

import re

from xpuperf.readers.base import Source
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import NAN, Rows, TextTable, as_float

NAME = "torchtitan"
EXAMPLE = (
    "[titan] 2026-02-24 19:46:17,508 - root - INFO - step:  4  loss:  7.62585  "
    "memory: 66.91GiB(37.51%)  tps: 10,050  tflops: 314.71  mfu: 13.99%"
)
LINE = re.compile(r"^(?:\[titan\]\s*)?(.*?) - root - INFO - step:\s*(\d+)\s+loss:")
TPS = re.compile(r"\b(?:tps|wps):\s*([\d,]+(?:\.\d+)?)")
MFU = re.compile(r"\bmfu:\s*([\d.]+)%")


def sniff(lines: list[str]) -> bool:
    """A ``- root - INFO - step: N  loss:`` line."""
    return any(" - root - INFO - step:" in x and LINE.match(console.clean(x)[1]) for x in lines)


def read(src: Source) -> TextTable:
    """Parse torchtitan metric lines (see the module docstring)."""
    rows = Rows()
    bad: list[int] = []
    seen: dict[tuple[int | None, int], int] = {}
    last: dict[int | None, tuple[float, int]] = {}  # per tag: time and step of the line before
    for n, tag, text in console.iter_lines(src, bad):
        if "step:" not in text:
            continue
        m = LINE.match(text)
        if m is None:
            continue
        step = int(m.group(2))
        key = (tag, step)
        if key in seen:
            seen[key] += 1
            continue
        seen[key] = 1
        ts = console.timestamp(m.group(1))
        if ts is None:
            rows.drop("torchtitan step line without a timestamp", n)
            continue
        extra = {"rank": float(tag)} if tag is not None else {}
        extra.update(_rates(text, ts, step, last.get(tag)))
        last[tag] = (ts, step)
        rows.add(n, step=as_float(step), t_end_s=ts, **extra)
    rows.undecodable(bad)
    out = rows.table(src, "torchtitan '- root - INFO - step: N  loss:' line", EXAMPLE)
    repeats = [c for (tag, _), c in seen.items() if tag is None]
    if repeats and max(repeats) > 1:
        out.one_of_many = max(repeats)
        out.notes.append(
            f"torchtitan: each step was printed up to {max(repeats)} times without a rank tag "
            "(once per rank); kept the first line of each step and read the log as one rank; "
            "step time = difference of consecutive timestamps; tps is per device, so the "
            "figures are one card's (job = world size × card: pass --world-size N)"
        )
    return out


def _rates(text: str, ts: float, step: int, prev: tuple[float, int] | None) -> dict[str, float]:
    """``tokens`` (tps × seconds per step since the previous line of the rank) and ``mfu``
    (percent / 100) of one line; NaN tokens on a rank's first line or when time runs back."""
    out = {}
    m = MFU.search(text)
    if m:
        out["mfu"] = as_float(m.group(1)) / 100.0
    m = TPS.search(text)
    if m:
        per_step = (ts - prev[0]) / (step - prev[1]) if prev and step > prev[1] else NAN
        out["tokens"] = as_float(m.group(1).replace(",", "")) * per_step if per_step > 0 else NAN
    return out
