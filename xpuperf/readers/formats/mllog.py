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
3. ``block_start`` … ``eval_start``/``block_stop`` (old MLLOG without ``event_type`` too): one
   row per block of ``epoch_count`` epochs, read as a window of epochs: ``step`` = the block's
   last epoch (first_epoch_num + epoch_count − 1), ``step_time_s`` = block time / epoch_count
   (seconds per epoch), ``samples`` = ``train_samples`` (one epoch), so a block carries
   epoch_count × train_samples samples over its own duration; evaluation (``eval_start`` →
   the next block) is outside the blocks. The first block holds the start-up (graph
   compilation, first pass over the data): ``warmup_rows`` = 1 when there are more blocks.

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
_SEQ_RATE = re.compile(r"'training_sequences_per_second': ([\d.eE+-]+)")
_RAW_TIME = re.compile(r"'raw_train_time': ([\d.eE+-]+)")
_MAX_STEPS = re.compile(r"\bmax_steps=(\d+)(?:\.0)?\b")
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
    points: list[tuple[int, float, int, float]] = []  # line, time s, global step, eval s before
    evaluating = [NAN, 0.0]  # eval_start time of an open evaluation, eval seconds since a point
    said: dict[str, float] = {}  # the run's own summary: rate, raw train time, max_steps
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
            elif key == "run_start":
                ev.setdefault("run_start", t)
            if key == "eval_start":
                evaluating[0] = t
            elif key == "eval_stop" and evaluating[0] == evaluating[0]:
                evaluating[:] = [NAN, evaluating[1] + t - evaluating[0]]
            if key in ("eval_start", "block_stop") and blocks and blocks[-1][0] not in ends:
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
            if m and len(m.group(1)) > 15:  # beyond 2**53: no float step number
                evals.drop("global_steps out of range", n)
            elif m:
                points.append((pending_eval[0], pending_eval[1], int(m.group(1)), evaluating[1]))
                evaluating[1] = 0.0
            pending_eval = None
        elif "_per_second'" in text or "max_steps=" in text:
            _summary_facts(text, said)
    gbs = ev.get("global_batch_size")
    if not gbs and points and points[-1][2] > 0 and ev.get("train_samples", 0) > 0:
        # NVIDIA BERT logs no batch event
        per_step = ev["train_samples"] / points[-1][2]
        gbs = per_step if per_step.is_integer() else None
    start = blocks[0][1] if blocks else ev.get("run_start")
    if len(speed):
        rows = speed
        if gbs:
            rows.cols["samples"] = [gbs] * len(rows)
    elif len(points) > 1:
        rows = evals
        _eval_rows(evals, points, start, gbs)
        rows.drops.update(speed.drops)
    else:
        rows = _block_rows(blocks, ends, ev.get("train_samples", NAN), src.name)
        rows.drops.update(speed.drops)
    rows.undecodable(bad)
    out = rows.table(src, "MLPerf step source (Speed lines, eval points or blocks)", EXAMPLE)
    if rows is not speed and rows is not evals:
        out.warmup_rows = 1 if len(rows) > 1 else 0
        epoch_samples = ev.get("train_samples", NAN)
        what = (
            f"one row per MLLOG block (block_start → eval_start): step = the block's last epoch, "
            f"step time = seconds per epoch, samples = train_samples {epoch_samples:,.0f} per "
            "epoch (epoch_count × train_samples per block); evaluation is outside the blocks; "
            "the first block (start-up) is warm-up"
        )
    else:
        what = (
            f"samples = global_batch_size {gbs:g}" if gbs
            else "pass --batch-size with the global batch"
        )  # fmt: skip
    out.notes.append(job_level_note(what))
    if rows is evals:
        out.notes.append(_eval_note(gbs, ev, points))
    if "rate" in said:
        out.log_rate = (said["rate"], _rate_note(said, gbs, ev, points))
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
        den = local * acc
        n = gbs / den if den > 0 else 0.0
        if 1 <= n < 2**53 and float(n).is_integer():
            return int(n), "MLLOG global_batch_size / (d_batch_size × gradient_accumulation_steps)"
    if len(tags) > 1:
        return max(tags) + 1, "launcher rank prefixes (srun -l)"
    return None, ""


def _block_rows(
    blocks: list[tuple[int, float, int, int]], ends: dict[int, float], per_epoch: float, name: str
) -> Rows:
    """One row per closed block (see the module docstring, source 3): ``(line, start s, first
    epoch, epoch count)`` with its end time in ``ends``; ``per_epoch`` = train_samples."""
    rows = Rows()
    for line, t0, first, count in blocks:
        if line in ends and count > 0 and per_epoch == per_epoch and per_epoch > 0:
            rows.add(line, step=float(first + count - 1), samples=per_epoch,
                     step_time_s=(ends[line] - t0) / count)  # fmt: skip
    if not len(rows) and blocks:
        raise InputError(
            "MLPerf log without per-step lines: the block times need the train_samples event "
            "(samples per epoch), which is missing",
            name,
        )
    return rows


def _eval_rows(
    rows: Rows, points: list[tuple[int, float, int, float]], start: float | None, gbs: float | None
) -> None:
    """Eval points (line, time s, global step, evaluation s since the point before) → one row
    per window: step time = (time − previous point's time − evaluation s) / steps between; the
    first window runs from ``start`` (first block_start, else run_start) at step 0."""
    prev_t, prev_step = (start, 0) if start is not None else (None, None)
    for line, t, step, eval_s in points:
        if prev_t is None or prev_step is None or step <= prev_step:
            rows.drop("first evaluation point: no block_start or run_start before it", line)
        else:
            extra = {"samples": gbs} if gbs else {}
            rows.add(line, step=float(step),
                     step_time_s=(t - prev_t - eval_s) / (step - prev_step), **extra)  # fmt: skip
        prev_t, prev_step = t, step


def _eval_note(gbs: float | None, ev: dict[str, float], points: list) -> str:
    """How eval-point rows were read: the batch's source and whether evaluation is inside."""
    src = ""
    if gbs and "global_batch_size" not in ev:
        src = (
            f"; global batch {gbs:,.0f} = train_samples {ev['train_samples']:,.0f} / "
            f"{points[-1][2]:,} steps (no global_batch_size event)"
        )
    inside = (
        "evaluation time (eval_start → eval_stop) taken out"
        if any(p[3] > 0 for p in points)
        else "evaluation time included (the log has no eval_start/eval_stop events)"
    )
    return (
        "MLPerf eval points: one row per evaluation, step time = time since the previous one "
        f"(the first: since block_start) / steps, {inside}{src}"
    )


def _summary_facts(text: str, said: dict[str, float]) -> None:
    """The run's own end-of-run figures (NVIDIA BERT's dict line) and its max_steps argument."""
    for key, rx in (("rate", _SEQ_RATE), ("raw_time", _RAW_TIME), ("max_steps", _MAX_STEPS)):
        m = rx.search(text)
        if m and key not in said:
            said[key] = as_float(m.group(1))


def _rate_note(
    said: dict[str, float], gbs: float | None, ev: dict[str, float], points: list
) -> str:
    """Where ``training_sequences_per_second`` comes from and whether it matches the samples the
    run trained: rate × raw_train_time against train_samples (NVIDIA's script multiplies the
    batch by the run's max_steps, not by the steps it ran)."""
    rate, raw = said["rate"], said.get("raw_time", NAN)
    what = "the log's training_sequences_per_second (end of run)"
    trained = ev.get("train_samples", NAN)
    if not (raw > 0 and trained > 0) or abs(rate * raw / trained - 1.0) < 0.01:
        return what
    steps = f" = {rate * raw / gbs:,.0f} steps of {gbs:,.0f}" if gbs else ""
    ran = f", the log ran {points[-1][2]:,}" if points else ""
    cap = said.get("max_steps", NAN)
    why = f" (max_steps {cap:,.0f} in the arguments)" if cap == cap and steps else ""
    return (
        f"{what}: × raw_train_time {raw:,.1f} s it counts {rate * raw:,.0f} sequences{steps}"
        f"{why}{ran}; train_samples {trained:,.0f} / {raw:,.1f} s = {trained / raw:,.1f}/s"
    )
