"""MLPerf Training logs: ``:::MLLOG {json}`` events (mlperf-logging 0.7–4.x, 2020–) and the
MXNet ``Speedometer`` lines the ResNet reference prints between them.

Lines::

    :::MLLOG {"namespace": "", "time_ms": 1621390073279, "event_type": "INTERVAL_START",
    "key": "block_start", "value": null, "metadata": {"first_epoch_num": 1, "epoch_count": 3}}
    2021-05-19 02:08:00,834 Node[0] Epoch[0] Batch [20-40]	Speed: 19879.79 samples/sec

Rows (read as one rank: MLPerf logs describe the whole job, printed by rank 0), first found of:

1. ``Speed: X samples/sec`` lines (aggregate of all ranks): ``step`` = batches since the start,
   ``throughput`` = X, ``samples`` = ``global_batch_size`` (GLOBAL; ``--batch-size`` otherwise).
2. ``eval_accuracy`` events each followed by a ``{'global_steps': N, …}`` line (NVIDIA BERT):
   ``step`` = N, ``t_end_s`` = the event time; step time = time between evaluations / steps
   (evaluation time included).
3. ``block_start`` … ``eval_start``/``block_stop`` (old MLLOG without ``event_type`` too):
   ``step`` = first epoch of the block, ``step_time_s`` = block time / (epoch_count ×
   train_samples / global_batch_size), ``samples`` = global_batch_size.

Launcher prefixes (``0: `` from ``srun -l``) give the number of ranks that printed, reported in a
note; events from ranks other than 0 are ignored.
"""

from __future__ import annotations

import json
import re

from xpuperf.errors import InputError
from xpuperf.readers.base import Source
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import NAN, Rows, TextTable, as_float, job_level_note

NAME = "mlperf"
EXAMPLE = ':::MLLOG {"namespace": "", "time_ms": 1621390073279, "key": "block_start", …}'
SPEED = re.compile(r"Epoch\[(\d+)\] Batch \[(\d+)-(\d+)\]\s+Speed: ([\d.]+) samples/sec")
STEPS = re.compile(r"\{'global_steps': (\d+)")
_FACTS = ("global_batch_size", "train_samples", "d_batch_size", "gradient_accumulation_steps")
"""MLLOG keys kept: the global batch, the training set size, and the per-card batch and
accumulation steps that give the world size."""


def sniff(lines: list[str]) -> bool:
    """A ``:::MLLOG {`` line."""
    return any(":::MLLOG {" in x for x in lines)


def read(src: Source) -> TextTable:
    """Parse an MLPerf log (see the module docstring)."""
    speed, evals = Rows(), Rows()
    bad: list[int] = []
    ev: dict[str, float] = {}
    blocks: list[tuple[int, float, int, int]] = []  # line, start s, first epoch, epoch count
    ends: dict[int, float] = {}
    tags: set[int] = set()
    offset = last_end = 0
    epoch = -1
    pending_eval: tuple[int, float] | None = None
    for n, tag, text in console.iter_lines(src, bad):
        if tag is not None:
            tags.add(tag)
            if tag != 0:
                continue
        if ":::MLLOG" in text:
            try:
                e = json.loads(text.split(":::MLLOG", 1)[1])
                key, t = e["key"], float(e["time_ms"]) / 1000.0
            except (ValueError, KeyError, TypeError, IndexError, RecursionError, OverflowError):
                speed.drop("':::MLLOG' line that is not valid JSON", n)
                continue
            md = e.get("metadata") or {}
            md = md if isinstance(md, dict) else {}
            if key in _FACTS and e.get("value") is not None:
                ev[key] = as_float(e["value"])  # NaN when not a number
            elif key == "block_start":
                try:
                    first, count = (
                        int(md.get("first_epoch_num", len(blocks))),
                        int(md.get("epoch_count", 1)),
                    )
                except (ValueError, TypeError, OverflowError):  # NaN, "x", [1], 1e999
                    speed.drop("'block_start' event whose epoch numbers are not integers", n)
                    continue
                blocks.append((n, t, first, count))
            elif key in ("eval_start", "block_stop") and blocks and blocks[-1][0] not in ends:
                ends[blocks[-1][0]] = t
            elif key == "eval_accuracy":
                pending_eval = (n, t)
            continue
        if "Speed:" in text:
            m = SPEED.search(text)
            if m is None:
                speed.drop("'Speed:' line that does not parse (interleaved output?)", n)
                continue
            ep, end = int(m.group(1)), int(m.group(3))
            if ep != epoch:
                offset, epoch = offset + (last_end if epoch >= 0 else 0), ep
            last_end = end
            speed.add(n, step=as_float(offset + end), throughput=as_float(m.group(4)))
        elif pending_eval is not None and "'global_steps'" in text:
            m = STEPS.search(text)
            if m:
                evals.add(pending_eval[0], step=float(m.group(1)), t_end_s=pending_eval[1])
            pending_eval = None
    gbs = ev.get("global_batch_size")
    if len(speed):
        rows = speed
        if gbs:
            rows.cols["samples"] = [gbs] * len(rows)
    elif len(evals) > 1:
        rows = evals
        rows.drops.update(speed.drops)
        if gbs:
            rows.cols["samples"] = [gbs] * len(rows)
    else:
        rows = Rows()
        rows.drops.update(speed.drops)
        per_epoch = ev.get("train_samples", NAN) / gbs if gbs else NAN
        for line, t0, first, count in blocks:
            if line in ends and per_epoch == per_epoch and count * per_epoch:
                rows.add(line, step=float(first), samples=gbs,
                         step_time_s=(ends[line] - t0) / (count * per_epoch))  # fmt: skip
        if not len(rows) and blocks:
            raise InputError(
                "MLPerf log without per-step lines: the block times need the global_batch_size "
                "and train_samples events, which are missing",
                src.name,
            )
    rows.undecodable(bad)
    out = rows.table(src, "MLPerf step source (Speed lines, eval points or blocks)", EXAMPLE)
    out.notes.append(job_level_note(
        f"samples = global_batch_size {gbs:g}" if gbs else "pass --batch-size with the global batch"
    ))  # fmt: skip
    if len(tags) > 1:
        out.notes.append(f"{max(tags) + 1} ranks print into this log (launcher prefixes)")
    out.world_size, out.world_source = _world(ev, tags)
    return out


def _world(ev: dict[str, float], tags: set[int]) -> tuple[int | None, str]:
    """Cards of the run: ``global_batch_size`` / (``d_batch_size`` × ``gradient_accumulation
    _steps``) when that is a whole number (NVIDIA/Dell MXNet ResNet logs), else the ranks of the
    launcher prefixes (``srun -l``: every rank prints), else None."""
    gbs, local = ev.get("global_batch_size"), ev.get("d_batch_size")
    acc = ev.get("gradient_accumulation_steps") or 1.0
    if gbs and local and acc and gbs == gbs and local == local and acc == acc:
        n = gbs / (local * acc)
        if n >= 1 and float(n).is_integer():
            return int(n), "MLLOG global_batch_size / (d_batch_size × gradient_accumulation_steps)"
    if len(tags) > 1:
        return max(tags) + 1, "launcher rank prefixes (srun -l)"
    return None, ""
