"""maskrcnn-benchmark (Facebook, 2018–2020; NVIDIA MLPerf fork) and Detectron2 metric lines.

Step line (``MetricLogger``: current value and global average per metric, seconds)::

    INFO:maskrcnn_benchmark.trainer:eta: 2:46:48  iter: 50  loss: 1.2892 (2.3523)  …
    time: 0.1858 (0.2505)  data: 0.0002 (0.0336)  lr: 0.009600  max mem: 8472
    [05/01 12:00:00 d2.utils.events]:  eta: 0:10:00  iter: 19  total_loss: 1.2  time: 0.3901
    data_time: 0.0123  lr: 0.0002  max_mem: 2103M

Columns: ``step`` = iter; ``step_time_s`` = time (current value); ``data_s`` = data/data_time
plus ``cpu2cuda`` (host-to-device copy) when present; ``forward_s``/``backward_s`` from timers of
those names. Several ranks may print into one stream without rank ids (MLPerf runs): lines of
one iteration that repeat another line's metrics exactly (rank 0 logged twice, by two loggers)
are dropped, and the rest are linked to ranks across iterations by their running averages, which
change slowly (:func:`~xpuperf.readers.formats.table.link_ranks`); a note says so. Launcher rank
prefixes, when present, are used instead.
"""

from __future__ import annotations

import re

from xpuperf.readers.base import Source
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import NAN, Rows, TextTable, as_float, link_ranks

NAME = "maskrcnn"
EXAMPLE = (
    "INFO:maskrcnn_benchmark.trainer:eta: 2:46:48  iter: 50  loss: 1.2892 (2.3523)  "
    "time: 0.1858 (0.2505)  data: 0.0002 (0.0336)  lr: 0.009600  max mem: 8472"
)
LINE = re.compile(r"eta: (?:\d+ days?, )?[\d:]+\s+iter: (\d+)\s+(.*)$")
_METRIC = re.compile(
    r"([a-z_0-9]++)(?:: ([\d.]+(?:[eE][-+]?\d+)?)(?: \(([\d.]+(?:[eE][-+]?\d+)?)\))?)?"
)  # a name run is consumed whole, value or not (group 2 empty): retried from each of its
# characters, a long run was quadratic (88 000 'x' after 'loss_box_reg:' took minutes)


def sniff(lines: list[str]) -> bool:
    """An ``eta: …  iter: N  …  time: …`` line."""
    return any("iter:" in x and "time:" in x and LINE.search(x) for x in lines)


def read(src: Source) -> TextTable:
    """Parse maskrcnn-benchmark / Detectron2 metric lines (see the module docstring)."""
    rows = Rows()
    bad: list[int] = []
    groups: dict[int, list[tuple[int, int | None, str, dict[str, tuple[float, float]]]]] = {}
    dups = 0
    for n, tag, text in console.iter_lines(src, bad):
        if "iter:" not in text:
            continue
        m = LINE.search(text)
        if m is None:
            continue
        body = m.group(2)
        met = {
            k: (as_float(c), as_float(a) if a else NAN) for k, c, a in _METRIC.findall(body) if c
        }
        if "time" not in met:
            rows.drop("'iter:' line without 'time:' (cut line?)", n)
            continue
        g = groups.setdefault(int(m.group(1)), [])
        if any(body == other for _, _, other, _ in g):
            dups += 1
            continue
        g.append((n, tag, body, met))
    tagged = any(t is not None for g in groups.values() for _, t, _, _ in g)
    steps = list(groups)
    if tagged:
        ranks = [[t or 0 for _, t, _, _ in groups[s]] for s in steps]
    else:
        keys = [[_key(met) for *_, met in groups[s]] for s in steps]
        ranks = link_ranks(keys)
    for s, rs in zip(steps, ranks, strict=True):
        for (n, _, _, met), r in zip(groups[s], rs, strict=True):
            data = met.get("data", met.get("data_time", (NAN, NAN)))[0]
            if "cpu2cuda" in met:
                data = (0.0 if data != data else data) + met["cpu2cuda"][0]
            rows.add(n, rank=float(r), step=as_float(s), step_time_s=met["time"][0], data_s=data,
                     forward_s=met.get("forward", (NAN,))[0],
                     backward_s=met.get("backward", (NAN,))[0])  # fmt: skip
    rows.undecodable(bad)
    out = rows.table(src, "'eta: …  iter: N  …  time: …' metric line", EXAMPLE)
    width = max((len(g) for g in groups.values()), default=0)
    if width > 1 and not tagged:
        out.notes.append(
            f"{width} ranks print into this log without rank ids: ranks were numbered by "
            "matching each line's running averages to the previous iteration's lines"
            + (
                f"; dropped {dups} lines repeating another line of the same iteration"
                if dups
                else ""
            )
        )
    return out


def _key(met: dict[str, tuple[float, float]]) -> tuple[float, ...]:
    return tuple(a for _, a in met.values() if a == a) or (met["time"][0],)
