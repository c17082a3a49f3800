"""tf_cnn_benchmarks (TensorFlow 1.x benchmarks, 2017–2020), alone or under Horovod.

Step line, tab-separated: step, ``images/sec: MEAN +/- ERR (jitter = J)``, loss::

    10	images/sec: 1120.9 +/- 10.1 (jitter = 34.0)	9.141

MEAN is the running mean since the first timed step: batch / mean(step times so far). So the
time of the steps between two lines n > m is ``(n/MEAN_n − m/MEAN_m) · batch / (n − m)`` and the
window's throughput ``(n − m) / (n/MEAN_n − m/MEAN_m)``.

Columns: ``step``; ``throughput`` = the window's images/s; ``samples`` = the batch of one
process: from the header ``Batch size: 512 global`` (single process, all devices — read as one
rank) or ``--batch-size``. Under Horovod every rank prints its own line without a rank id (16
lines per step for 16 ranks): the world size is inferred from the repeats and lines are linked to
ranks by their running means (:func:`~xpuperf.readers.formats.table.link_ranks`); the header's
``per device`` batch is then the per-rank batch, else ``--batch-size`` is required: the
images/sec give no step time without it (the error says the Σ images/sec the log shows).
"""

from __future__ import annotations

import re

from xpuperf.readers.base import Source
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import Rows, TextTable, as_float, job_level_note, link_ranks

NAME = "tf_cnn_benchmarks"
EXAMPLE = "10\timages/sec: 1120.9 +/- 10.1 (jitter = 34.0)\t9.141"
LINE = re.compile(r"^\s*(\d+)\s+images/sec: ([\d.]+) \+/- ([\d.]+) \(jitter = ([\d.]+)\)")
_GLOBAL = re.compile(r"^Batch size:\s+(\d+) global")
_PER_DEV = re.compile(r"^\s+([\d.]+) per device")
_TOTAL = re.compile(r"^total images/sec: ([\d.]+)")
_DEVICES = re.compile(r"^Devices:\s+\[(.*)\]")


def sniff(lines: list[str]) -> bool:
    """A ``N<TAB>images/sec: X +/- Y (jitter = Z)`` line."""
    return any("images/sec:" in x and LINE.match(console.clean(x)[1]) for x in lines)


def read(src: Source) -> TextTable:
    """Parse tf_cnn_benchmarks step lines (see the module docstring)."""
    rows = Rows()
    bad: list[int] = []
    glob = per_dev = total = devices = None
    groups: dict[int, list[tuple[int, int | None, float, float]]] = {}
    for n, tag, text in console.iter_lines(src, bad):
        if "images/sec" not in text:
            if glob is None and text.startswith("Batch size:"):
                m = _GLOBAL.match(text)
                glob = float(m.group(1)) if m else None
            elif glob is not None and per_dev is None and "per device" in text:
                m = _PER_DEV.match(text)
                per_dev = as_float(m.group(1)) if m else None
            elif devices is None and (m := _DEVICES.match(text)):
                devices = len([d for d in m.group(1).split(",") if d.strip()])
            continue
        m = LINE.match(text)
        if m is None:
            t = _TOTAL.match(text)
            if t:
                total = as_float(t.group(1))
            else:
                rows.drop("'images/sec' line that does not parse (cut line?)", n)
            continue
        groups.setdefault(int(m.group(1)), []).append(
            (n, tag, as_float(m.group(2)), as_float(m.group(4)))
        )
    steps = sorted(groups)
    width = max((len(g) for g in groups.values()), default=0)
    tagged = any(t is not None for g in groups.values() for _, t, _, _ in g)
    if tagged:
        ranks = [[t or 0 for _, t, _, _ in groups[s]] for s in steps]
    else:
        ranks = link_ranks([[(mean, jit) for _, _, mean, jit in groups[s]] for s in steps])
    prev: dict[int, tuple[int, float]] = {}
    batch = per_dev if width > 1 else glob
    for s, rs in zip(steps, ranks, strict=True):
        for (n, _, mean, _), r in zip(groups[s], rs, strict=True):
            m0, mean0 = prev.get(r, (0.0, 0.0))
            prev[r] = (as_float(s), mean)  # a step number past float range → inf → dropped
            sf = as_float(s)
            denom = sf / mean - (m0 / mean0 if m0 and mean0 else 0.0) if mean else 0.0
            thr = (sf - m0) / denom if denom > 0 else float("nan")
            rows.add(n, rank=float(r), step=as_float(s), throughput=thr,
                     **({"samples": batch} if batch else {}))  # fmt: skip
    rows.undecodable(bad)
    out = rows.table(src, "tf_cnn_benchmarks 'N\\timages/sec: X +/- Y (jitter = Z)' line", EXAMPLE)
    if width > 1 and not batch:
        out.batch_hint = _hint(groups, width)
    if width > 1 and not tagged:
        out.notes.append(
            f"{width} lines per step without rank ids (Horovod): read as {width} ranks, linked "
            "across steps by their running mean images/sec"
        )
    elif width == 1:
        out.world_size, out.world_source = _world(glob, per_dev, devices)
        out.notes.append(
            job_level_note(
                f"samples = the global batch ({glob:g})"
                if glob
                else "pass --batch-size with the global batch"
            )
        )
    if total is not None:
        out.notes.append(f"the log's own summary: total images/sec {total:g}")
    return out


def _world(
    glob: float | None, per_dev: float | None, devices: int | None
) -> tuple[int | None, str]:
    """Cards of a single-process run from its header: ``Batch size: G global`` / ``P per
    device`` when that is a whole number, else the length of the ``Devices: [...]`` list."""
    if glob and per_dev and per_dev > 0 and (glob / per_dev).is_integer():
        return int(glob / per_dev), "header (global batch / per-device batch)"
    if devices:
        return devices, "header 'Devices:' list"
    return None, ""


def _hint(groups: dict[int, list[tuple[int, int | None, float, float]]], width: int) -> str:
    """What the log shows without a batch size: Σ of the ranks' images/sec at the last step
    every rank printed (each is the rank's running mean since the first timed step)."""
    full = [s for s, g in groups.items() if len(g) == width]
    if not full:
        return ""
    rates = [mean for _, _, mean, _ in groups[max(full)]]
    return (
        f"tf_cnn_benchmarks under Horovod: {width} ranks print images/sec (at step {max(full)}, "
        f"the last step all {width} printed: Σ {sum(rates):,.1f} images/s, "
        f"{min(rates):g}–{max(rates):g} per rank) but no batch size (the 'per device' header "
        "line), so no step time"
    )
