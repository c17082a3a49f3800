"""TensorFlow 2 Keras ``TimeHistory`` callback (tf-models official ``keras_utils``, 2019–2022).

Step line (chief worker; examples/second of the WHOLE job)::

    I0826 15:13:29.256277 140405777909504 keras_utils.py:133] TimeHistory: 39.13 seconds,
    327.08 examples/second between steps 100 and 200

Columns (one row per window, read as one rank): ``step`` = the window's last step;
``step_time_s`` = seconds / (steps in the window); ``samples`` = examples/second × step time
(the GLOBAL batch, rounded when within 2 % of an integer).

The first window (``between steps 0 and N``) includes the first batch: graph tracing and
compilation, the input pipeline's start. It is warm-up, not a spike: the warm-up detector
(:mod:`xpuperf.analysis.warmup`) excludes a slow first row of a log printed every k > 1 steps
even when the run has fewer than 10 windows.

World size: tf-models prints its configuration (``Final model parameters: {…}``) before
training; the last ``'num_gpus': G`` (GPUs per worker) and ``'worker_hosts': 'h1:p,h2:p'`` (the
workers of ``multi_worker_mirrored``; ``None`` = one) seen before the first step line give
G × workers cards (``TextTable.world_size``); ``num_gpus`` 0 (CPU) gives none.
"""

from __future__ import annotations

import re

from xpuperf.readers.base import Source
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import Rows, TextTable, as_float, job_level_note, near_int

NAME = "keras"
EXAMPLE = "TimeHistory: 39.13 seconds, 327.08 examples/second between steps 100 and 200"
LINE = re.compile(
    r"TimeHistory: ([\d.]+) seconds, ([\d.]+) examples/second between steps (\d+) and (\d+)"
)
GPUS = re.compile(r"'num_gpus': (\d+)")
HOSTS = re.compile(r"'worker_hosts': (None|'([^']*)')")


def sniff(lines: list[str]) -> bool:
    """A ``TimeHistory: … examples/second between steps`` line."""
    return any("TimeHistory:" in x and LINE.search(x) for x in lines)


def read(src: Source) -> TextTable:
    """Parse Keras TimeHistory lines (see the module docstring)."""
    rows = Rows()
    bad: list[int] = []
    gpus = workers = None  # the configuration printed before training (module docstring)
    for n, _tag, text in console.iter_lines(src, bad):
        if "TimeHistory:" not in text:
            if not len(rows):
                if (g := GPUS.search(text)) is not None:
                    gpus = int(g.group(1))
                if (h := HOSTS.search(text)) is not None:
                    workers = len([x for x in (h.group(2) or "").split(",") if x.strip()]) or 1
            continue
        m = LINE.search(text)
        if m is None:
            rows.drop("'TimeHistory:' line that does not parse (cut line?)", n)
            continue
        secs, rate = as_float(m.group(1)), as_float(m.group(2))  # "." → NaN
        a, b = int(m.group(3)), int(m.group(4))
        if b <= a:
            rows.drop("TimeHistory window with no steps", n)
            continue
        st = secs / as_float(b - a)  # past float range → NaN
        rows.add(n, step=as_float(b), step_time_s=st, samples=near_int(rate * st))
    rows.undecodable(bad)
    out = rows.table(src, "Keras 'TimeHistory: … examples/second between steps' line", EXAMPLE)
    out.notes.append(job_level_note("samples = examples/second × step time, the global batch"))
    if gpus:
        out.world_size = gpus * (workers or 1)
        out.world_source = (
            f"configuration ('num_gpus': {gpus} × {workers or 1} worker(s) of 'worker_hosts')"
        )
    return out
