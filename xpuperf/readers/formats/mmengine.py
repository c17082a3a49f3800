"""MMEngine (OpenMMLab 2.x, 2022–) and MMCV 1.x runner logs: MMDetection, MMYOLO, MMSeg, ….

Step lines::

    2023/05/24 20:20:37 - mmengine - INFO - Epoch(train)  [1][  24/1051]  lr: 5.2146e-06  eta: …
    time: 8.9139  data_time: 7.4351  memory: 13646  loss: 8.1403
    2021-01-01 12:00:00,000 - mmdet - INFO - Epoch [1][50/7330]	lr: 1.0e-02, eta: …, time: 0.513,
    data_time: 0.051, memory: 3574, loss: 1.2

``Iter(train) [  50/90000]`` / ``Iter [50/90000]`` (iteration-based runners) too.

Columns: ``step`` = (epoch − 1) × iterations per epoch + iteration (or the iteration);
``step_time_s`` = ``time`` (seconds per iteration, averaged over the log interval);
``data_s`` = ``data_time`` (seconds); ``t_end_s`` = the line's timestamp. The line comes from
rank 0; ``time`` is that rank's, so rows are rank 0 and carry no samples (pass ``--batch-size``
for throughput).
"""

from __future__ import annotations

import re

from xpuperf.readers.base import Source
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import NAN, Rows, TextTable, as_float

NAME = "mmengine"
EXAMPLE = (
    "2023/05/24 20:20:37 - mmengine - INFO - Epoch(train)  [1][  24/1051]  lr: 5.2146e-06  "
    "time: 8.9139  data_time: 7.4351  memory: 13646  loss: 8.1403"
)
LINE = re.compile(
    r"^(.*?) - [\w.]+ - INFO - (?:Epoch(?:\(train\))?\s*\[(\d+)\]\s*\[\s*(\d+)/\s*(\d+)\]"
    r"|Iter(?:\(train\))?\s*\[\s*(\d+)/\s*(\d+)\])"
)
_FIELD = re.compile(r"(?:^|[\s,])(time|data_time):\s*([\d.]+(?:[eE][-+]?\d+)?)")


def sniff(lines: list[str]) -> bool:
    """An ``Epoch(train) [e][i/n]`` / ``Epoch [e][i/n]`` / ``Iter [i/n]`` runner line."""
    return any(" - INFO - " in x and LINE.match(console.clean(x)[1]) for x in lines)


def read(src: Source) -> TextTable:
    """Parse MMEngine / MMCV runner lines (see the module docstring)."""
    rows = Rows()
    bad: list[int] = []
    for n, _tag, text in console.iter_lines(src, bad):
        if " - INFO - " not in text:
            continue
        m = LINE.match(text)
        if m is None:
            continue
        if m.group(2) is not None:
            step = (int(m.group(2)) - 1) * int(m.group(4)) + int(m.group(3))
        else:
            step = int(m.group(5))
        f = dict(_FIELD.findall(text[m.end() :]))
        if "time" not in f:
            rows.drop("runner line without 'time:'", n)
            continue
        ts = console.timestamp(m.group(1))
        rows.add(n, step=as_float(step), step_time_s=as_float(f["time"]),
                 data_s=as_float(f["data_time"]) if "data_time" in f else NAN,
                 t_end_s=ts if ts is not None else NAN)  # fmt: skip
    rows.undecodable(bad)
    return rows.table(src, "MMEngine 'Epoch(train) [e][i/n] … time: … data_time: …' line", EXAMPLE)
