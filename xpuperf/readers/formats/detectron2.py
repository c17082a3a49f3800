"""Detectron2 (Meta AI, 2019–) and projects built on it (D2Go, …): ``d2.utils.events`` lines.

Step line, printed by ``CommonMetricPrinter`` on the main process every 20 iterations::

    [04/05 01:30:24 d2.utils.events]:  eta: 0:03:35  iter: 19  total_loss: 1.36  loss_cls: 0.65
    time: 0.3636  last_time: 0.3512  data_time: 0.1102  last_data_time: 0.0954  lr: 3.8e-06
    max_mem: 433M

(``[04/14 09:05:02] d2.utils.events INFO:`` is the other logger layout; ``last_time`` and
``last_data_time`` appear in newer Detectron2 releases only.)

==============  ==========================================================================
column          from
==============  ==========================================================================
step            ``iter`` (0-based iteration number)
step_time_s     ``last_time`` (seconds of the last iteration) when printed, else ``time`` — a
                running average since the start of training, so jitter is smoothed (a note
                says so)
data_s          ``last_data_time`` when printed, else ``data_time`` (a 20-iteration average)
==============  ==========================================================================

Rows are rank 0 (the main process prints) and carry no samples: Detectron2's
``SOLVER.IMS_PER_BATCH`` is the global batch, so pass ``--batch-size`` (images per card per
step) for throughput. A line with ``eta: N/A`` and no ``time`` (plain training loops) is skipped
with a warning. Errors: :class:`~xpuperf.errors.InputError` when no line parses.
"""

from __future__ import annotations

import re

from xpuperf.readers.base import Source
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import NAN, Rows, TextTable

NAME = "detectron2"
EXAMPLE = (
    "[04/05 01:30:24 d2.utils.events]:  eta: 0:03:35  iter: 19  total_loss: 1.36  time: 0.3636  "
    "last_time: 0.3512  data_time: 0.1102  last_data_time: 0.0954  lr: 3.8077e-06  max_mem: 433M"
)
TAG = "d2.utils.events"
LINE = re.compile(r"\biter:\s*(\d+)\b")
_FIELD = re.compile(r"(?<![\w.])(time|last_time|data_time|last_data_time):\s*(\d+(?:\.\d*)?)")
NO_TIME = "d2.utils.events line without 'time:' (e.g. eta: N/A from a plain training loop)"


def sniff(lines: list[str]) -> bool:
    """A ``d2.utils.events`` line with ``iter: N``."""
    return any(TAG in x and LINE.search(x) for x in lines)


def read(src: Source) -> TextTable:
    """Parse Detectron2 event lines (see the module docstring)."""
    rows = Rows()
    bad: list[int] = []
    running = False
    for n, _tag, text in console.iter_lines(src, bad):
        if TAG not in text:
            continue
        m = LINE.search(text)
        if m is None:
            continue
        f = dict(_FIELD.findall(text[m.end() :]))
        st = f.get("last_time", f.get("time"))
        if st is None:
            rows.drop(NO_TIME, n)
            continue
        running |= "last_time" not in f
        data = f.get("last_data_time", f.get("data_time"))
        rows.add(n, step=float(m.group(1)), step_time_s=float(st),
                 data_s=float(data) if data is not None else NAN)  # fmt: skip
    rows.undecodable(bad)
    out = rows.table(src, "Detectron2 'd2.utils.events … iter: N … time: X' line", EXAMPLE)
    if running:
        out.notes.append(
            "Detectron2 'time:' is the average since the start of training (no 'last_time:' "
            "in this log), so step-to-step jitter is smoothed out; Detectron2 releases that print "
            "last_time give per-step values"
        )
    out.notes.append(
        "Detectron2 prints on the main process only: read as rank 0 without samples; pass "
        "--batch-size (images per card per step; SOLVER.IMS_PER_BATCH is the global batch)"
    )
    return out
