"""MindSpore (Huawei, 1.x–2.x) model-zoo training logs: ``TimeMonitor`` and benchmark lines.

Step lines::

    2023-02-20 10:01:18,405:INFO:epoch: [1/90] loss: 5.282135, epoch time: 183.647 s,
    per step time: 588.613 ms
    epoch time: 183647.123 ms, per step time: 588.613 ms          (TimeMonitor)
    epoch: [0/1] step: [40/5004], loss is 7.078993Epoch time: 3438.972 ms, fps: 1488 img/sec.

Units are read from the line (``s`` or ``ms``). Columns: ``per step time`` lines give one row per
epoch (``step`` = epoch number, ``step_time_s`` = per step time — a mean over the epoch,
including graph compilation in the first); benchmark lines give ``step`` = epoch × steps per
epoch + step, ``step_time_s`` = Epoch time / steps since the previous line, ``samples`` = fps ×
step time (images of the whole job per step). The line comes from one device and is read as one
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
    for n, _tag, text in console.iter_lines(src, bad):
        row: dict[str, float] | None = None
        if "per step time:" in text:
            m = PER_STEP.search(text)
            if m is None:
                rows.drop("'per step time:' without a number", n)
                continue
            e = EPOCH.search(text)
            epochs += 1
            step = float(e.group(1)) if e else float(epochs)
            row = {"step": step, "step_time_s": as_float(m.group(1)) * _UNIT[m.group(2)]}
            kind = "per_step"
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
    if runs > 1:
        out.notes.append(
            f"the step numbers restart {runs - 1} time(s): the file holds {runs} runs; read the "
            "first only (split the file to read the others)"
        )
    return out
