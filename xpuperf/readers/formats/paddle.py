"""PaddlePaddle model suites (PaddleOCR, PaddleClas, PaddleDetection, PaddleNLP; 2020–).

Step line (each rank prints its own numbers; usually only rank 0 writes the log)::

    [2021/02/23 22:52:57] root INFO: epoch: [5/500], iter: 11550, lr: 0.001000, loss: 4.880471,
    reader_cost: 5.33854 s, batch_cost: 5.97875 s, samples: 960, ips: 16.05686

``batch_cost`` and ``reader_cost`` are seconds per iteration averaged over the log interval (unit
``s``/``sec`` optional); ``ips`` is samples/s of this rank; ``samples`` counts the whole interval.

Columns: ``step`` = ``iter``/``step``/``Iter:`` number (else counted); ``step_time_s`` =
batch_cost; ``data_s`` = reader_cost; ``samples`` (per rank per step) = ips × batch_cost rounded
to an integer when within 2 %; ``t_end_s`` = the timestamp. ``rank`` from a launcher prefix,
else 0.
"""

from __future__ import annotations

import re

from xpuperf.readers.base import Source
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import NAN, Rows, TextTable, as_float, near_int

NAME = "paddle"
EXAMPLE = (
    "[2021/02/23 22:52:57] root INFO: epoch: [5/500], iter: 11550, loss: 4.880471, "
    "reader_cost: 5.33854 s, batch_cost: 5.97875 s, samples: 960, ips: 16.05686"
)
_FIELD = re.compile(
    r"(batch_cost|reader_cost|ips|\biter|\bstep|\[Iter)\s*:?\s*\[?\s*([\d.]+(?:[eE][-+]?\d+)?)"
)


def sniff(lines: list[str]) -> bool:
    """A line with ``batch_cost`` and ``ips``."""
    return any("batch_cost" in x and "ips" in x for x in lines)


def read(src: Source) -> TextTable:
    """Parse PaddlePaddle ``batch_cost``/``reader_cost``/``ips`` lines."""
    rows = Rows()
    bad: list[int] = []
    count: dict[int, float] = {}
    for n, tag, text in console.iter_lines(src, bad):
        if "batch_cost" not in text:
            continue
        f: dict[str, float] = {}
        for k, v in _FIELD.findall(text):
            f.setdefault(k.lstrip("[").lower(), as_float(v))
        if "batch_cost" not in f:
            rows.drop("'batch_cost' without a number", n)
            continue
        r = tag or 0
        step = f.get("iter", f.get("step"))
        step = step if step is not None else count.get(r, 0.0) + 1.0
        count[r] = step
        ips, bc = f.get("ips"), f["batch_cost"]
        ts = console.timestamp(text)
        rows.add(n, rank=float(r), step=step, step_time_s=bc, data_s=f.get("reader_cost", NAN),
                 samples=near_int(ips * bc) if ips else NAN,
                 t_end_s=ts if ts is not None else NAN)  # fmt: skip
    rows.undecodable(bad)
    return rows.table(src, "PaddlePaddle 'batch_cost: … ips: …' line", EXAMPLE)
