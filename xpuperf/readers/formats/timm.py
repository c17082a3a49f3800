"""timm (pytorch-image-models) ``train.py`` (2019–): the ``Train:`` lines of the primary process.

Step line (one per ``--log-interval`` updates and at the last batch of an epoch)::

    Train: 3 [ 100/1251 (  8%)]  Loss: 3.456 (3.50)  Time: 0.412s, 2485.44/s  (0.420s, 2438.10/s)
    LR: 1.000e-03  Data: 0.012 (0.015)

Layouts: 2019 ``print`` with ``{:.3f}/s`` rates and ``LR: 0.1000``; 2019-02 without ``LR:`` (the
index counts samples); 2021– ``_logger.info`` with ``{:>7.2f}/s`` (2024–: index = optimizer
update, ``update_idx/updates_per_epoch``). With ``--log-path`` a file handler adds
``2023-06-11 10:15:00,123 - train: [    INFO] - `` in front.

Columns (one row per line, read as one rank):

- ``step`` = epoch × iterations per epoch + index (the number after ``[``);
- ``step_time_s`` = ``Time: cur`` (the last update's time, not the interval mean in brackets);
- ``data_s`` = ``Data: cur`` (rank 0's wait for its last batch);
- ``samples`` = rate × step time: the GLOBAL batch (timm multiplies the per-process batch by the
  world size since 2019-06), rounded when within 2 % of an integer. Some 2025 releases printed
  ``1 / time`` (updates per second) instead: a rate × time of 1 gives no samples and a note.

``world_size`` (the TextTable attribute) = ``total N`` of ``Training in distributed mode with
multiple processes, 1 device per process. Process R, total N`` (printed by every process), N of
``Training with a single process on N GPUs`` (one process, DataParallel), else None. The step
lines come from the primary process only; on several nodes older releases (``local_rank == 0``)
printed one line per node: repeated steps are kept once, with a note.
"""

from __future__ import annotations

import re

from xpuperf.readers.base import Source
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import NAN, Rows, TextTable, as_float, job_level_note, near_int

NAME = "timm"
EXAMPLE = (
    "Train: 3 [ 100/1251 (  8%)]  Loss: 3.456 (3.50)  Time: 0.412s, 2485.44/s  "
    "(0.420s, 2438.10/s)  LR: 1.000e-03  Data: 0.012 (0.015)"
)
LINE = re.compile(
    r"\bTrain: (\d+) \[\s*(\d+)/(\d+) \(\s*\d+%\)\]\s+Loss:.*?\bTime: ([\d.]+)s, +([\d.]+)/s"
)
DATA = re.compile(r"\bData: ([\d.]+) \(")
WORLD = re.compile(r"Process (\d+), total (\d+)")
SINGLE = re.compile(r"Training with a single process on (\d+) (?:GPUs|GPU|device)")


def sniff(lines: list[str]) -> bool:
    """A ``Train: E [i/n (p%)]  Loss: … Time: …s, …/s`` line."""
    return any("Train: " in x and LINE.search(x) for x in lines)


def read(src: Source) -> TextTable:
    """Parse timm ``Train:`` lines (see the module docstring)."""
    rows = Rows()
    bad: list[int] = []
    seen: set[tuple[int, int]] = set()
    repeats = per_update = 0
    world: tuple[int, str] | None = None
    for n, _tag, text in console.iter_lines(src, bad):
        if "Train: " not in text:
            if world is None and "Training " in text:
                world = _world(text)
            continue
        m = LINE.search(text)
        if m is None:
            rows.drop("timm 'Train:' line that does not parse (cut line?)", n)
            continue
        epoch, idx, per_epoch = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if (epoch, idx) in seen:  # one line per node (older releases: local rank 0 prints)
            repeats += 1
            continue
        seen.add((epoch, idx))
        st, rate = as_float(m.group(4)), as_float(m.group(5))
        samples = near_int(rate * st)
        if samples == 1.0:  # 'N/s' = 1 / time: updates per second, no batch in the line
            samples, per_update = NAN, per_update + 1
        d = DATA.search(text, m.end())
        rows.add(n, step=as_float(epoch * per_epoch + idx), step_time_s=st,
                 data_s=as_float(d.group(1)) if d else NAN, samples=samples)  # fmt: skip
    rows.undecodable(bad)
    out = rows.table(src, "timm 'Train: E [i/n (p%)] … Time: …s, …/s' line", EXAMPLE)
    out.sampled = True  # 'Time: cur' is the logged batch's own time (avg in brackets)
    if out.frame["samples"].isna().all():  # updates per second only: no samples at all
        out.frame = out.frame.drop(columns="samples")
    out.notes.append(job_level_note("samples = the printed rate × Time, the GLOBAL batch"))
    if per_update:
        out.notes.append(
            f"timm: {per_update} line(s) print updates per second (rate × Time = 1), not "
            "samples per second: no samples for them; pass --batch-size (per card) for throughput"
        )
    if repeats:
        out.notes.append(
            f"timm: {repeats} repeated step line(s) (one per node) skipped; the first is kept"
        )
    if world is not None:
        out.world_size, out.world_source = world
    return out


def _world(text: str) -> tuple[int, str] | None:
    """World size and its source from a start-up line, or None."""
    m = WORLD.search(text)
    if m and "distributed mode" in text:
        return int(m.group(2)), "'Training in distributed mode … total N' line"
    m = SINGLE.search(text)
    if m:
        return int(m.group(1)), "'Training with a single process on N GPUs' line"
    return None
