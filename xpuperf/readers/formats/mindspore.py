"""MindSpore (Huawei, 1.x–2.x) model-zoo training logs: ``TimeMonitor`` and benchmark lines.

Step lines::

    2023-02-20 10:01:18,405:INFO:epoch: [1/90] loss: 5.282135, epoch time: 183.647 s,
    per step time: 588.613 ms
    epoch time: 183647.123 ms, per step time: 588.613 ms          (TimeMonitor)
    epoch: [0/1] step: [40/5004], loss is 7.078993Epoch time: 3438.972 ms, fps: 1488 img/sec.

Units are read from the line (``s`` or ``ms``). Columns: ``per step time`` lines give one row per
epoch, ``step_time_s`` = per step time — the mean over the epoch's steps, including graph
compilation in the first. The row stands for the epoch's steps, ``round(epoch time / per step
time)`` (183.647 s / 588.613 ms = 312), so ``step`` counts iterations: the first row's step is
epoch × its steps, each next one adds (epoch − previous epoch) × its own steps (1 → 312, 2 →
624, …). The wall clock then counts each row's steps (epoch time = steps × per step time,
:func:`xpuperf.analysis.series.row_iterations`). A line without ``epoch time`` takes the
previous line's step count (one step per epoch when none is known, with a note). Benchmark
lines give ``step`` = epoch × steps per epoch + step, ``step_time_s`` = Epoch time / steps since
the previous line, ``samples`` = fps × step time (images of the whole job per step). A log that
starts at epoch 1 (or at epoch 0's first benchmark line) marks its first row as start-up
(``warmup_rows`` = 1: the graph compilation). The line comes from one device and is read as one
rank. A file holding several runs (step numbers restart) keeps the first run; a note counts the
rest.
"""

from __future__ import annotations

import re

from xpuperf.readers.base import Source
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import NAN, Rows, TextTable, as_float, near_int

NAME = "mindspore"
EXAMPLE = "epoch: [1/90] loss: 5.282135, epoch time: 183.647 s, per step time: 588.613 ms"
PER_STEP = re.compile(r"per step time: ([\d.]+) ?(ms|s)\b")
EPOCH_TIME = re.compile(r"epoch time: ([\d.]+) ?(ms|s)\b")
EPOCH = re.compile(r"epoch:\s*\[?(\d+)")
BENCH = re.compile(
    r"epoch: \[(\d+)/\d+\] step: \[(\d+)/(\d+)\].*?Epoch time: ([\d.]+) ?(ms|s), fps: ([\d.]+)"
)
_UNIT = {"ms": 1e-3, "s": 1.0}


def sniff(lines: list[str]) -> bool:
    """A ``per step time: X ms`` or ``Epoch time: X ms, fps: Y`` line."""
    return any("per step time:" in x or ("Epoch time:" in x and "fps:" in x) for x in lines)


def read(src: Source) -> TextTable:
    """Parse MindSpore TimeMonitor / benchmark lines (see the module docstring)."""
    rows = Rows()
    bad: list[int] = []
    runs = 1
    last = -1.0
    style = ""

    epochs = 0
    prev_bench = 0
    count = epoch_end = None  # steps in the last epoch; (its epoch number, its end step)
    unknown = 0
    starts = None  # the first row covers the run's first steps (epoch 1 / epoch 0's first line)
    for n, _tag, text in console.iter_lines(src, bad):
        row: dict[str, float] | None = None
        if "per step time:" in text:
            m = PER_STEP.search(text)
            if m is None:
                rows.drop("'per step time:' without a number", n)
                continue
            e = EPOCH.search(text)
            epochs += 1
            epoch = int(e.group(1)) if e else epochs
            per_step = as_float(m.group(1)) * _UNIT[m.group(2)]
            count = _steps_in(text, per_step) or count
            unknown += count is None
            k = count or 1
            if epoch_end is not None and epoch > epoch_end[0]:
                step = epoch_end[1] + (epoch - epoch_end[0]) * k
            else:  # the first row, or the epochs restart (another run: told below)
                step = epoch * k
            if step >= 2**53:  # no float holds the step number
                rows.drop("epoch or step number out of range", n)
                continue
            epoch_end = (epoch, step)
            row = {"step": float(step), "step_time_s": per_step}
            kind = "per_step"
            starts = epoch == 1 if starts is None else starts
        elif "Epoch time:" in text and "fps:" in text:
            m = BENCH.search(text)
            if m is None:
                rows.drop("'Epoch time: … fps:' line that does not parse", n)
                continue
            step = int(m.group(1)) * int(m.group(3)) + int(m.group(2))
            span = step - prev_bench if step > prev_bench else step
            prev_bench = step
            st = as_float(m.group(4)) * _UNIT[m.group(5)] / as_float(span) if span else NAN
            row = {
                "step": as_float(step),
                "step_time_s": st,
                "samples": near_int(as_float(m.group(6)) * st),
            }
            kind = "bench"
            starts = int(m.group(1)) == 0 if starts is None else starts
        if row is None:
            continue
        if row["step"] <= last or (style and kind != style):
            runs += 1
        style = kind
        last = row["step"]
        if runs == 1:
            ts = console.timestamp(text)
            rows.add(n, t_end_s=ts if ts is not None else NAN, **row)
    rows.undecodable(bad)
    out = rows.table(src, "MindSpore 'per step time: X ms' line", EXAMPLE)
    out.warmup_rows = 1 if starts and len(rows) > 1 else 0  # graph compilation
    if unknown:
        out.notes.append(
            f"{unknown} 'per step time' line(s) without 'epoch time' and no earlier epoch's "
            "step count: each such epoch counts as one step in the wall clock"
        )
    if runs > 1:
        out.notes.append(
            f"the step numbers restart {runs - 1} time(s): the file holds {runs} runs; read the "
            "first only (split the file to read the others)"
        )
    return out


def _steps_in(text: str, per_step_s: float) -> int | None:
    """Steps of the epoch: ``round(epoch time / per step time)``, None without an epoch time."""
    m = EPOCH_TIME.search(text)
    if m is None or not per_step_s > 0:
        return None
    ratio = as_float(m.group(1)) * _UNIT[m.group(2)] / per_step_s
    if not 1 <= ratio < 2**53:  # nan, inf or a count no float step number holds
        return None
    return round(ratio)
