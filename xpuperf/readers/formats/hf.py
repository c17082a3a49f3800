"""HuggingFace Trainer / accelerate / ms-swift dict-like log lines (transformers 4.x, 2020–).

Step line: a Python dict printed by ``Trainer.log``, optionally after a timestamp (``docker logs
-t`` adds a nanosecond ISO 8601 one)::

    2025-05-21T03:50:19.029644300Z {'loss': 0.42409496, 'grad_norm': 3.65, 'learning_rate':
    9.99e-06, 'train_speed(iter/s)': 0.193983, 'epoch': 0.2, 'global_step/max_steps':
    '295/4491', 'elapsed_time': '25m 15s'}

Columns: ``step`` = ``global_step/max_steps`` (ms-swift) or ``step``, else counted; ``t_end_s`` =
the line's timestamp, else ``elapsed_time`` (``'1h 25m 15s'``) — the step time is then the
difference of consecutive timestamps over the steps between the lines (the first line has none);
without any time, ``steps_per_sec`` = ``train_speed(iter/s)`` (a running average since the start);
without that either, the Trainer's tqdm bar (:mod:`~xpuperf.readers.formats.tqdm`) when the log
holds one. Evaluation dicts (``eval_*``) and the final ``train_runtime`` summary are not steps;
the summary becomes a note, or, when no line carries time and no bar ran 5 ticks of its clock
(stock transformers 5.x on a short run), the one row
(:func:`~xpuperf.readers.formats.hf_state.console_summary`). Read as rank 0: the Trainer logs on
the main process only.
"""

from __future__ import annotations

import ast
import re

from xpuperf.errors import InputError
from xpuperf.readers.base import Source, short
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import NAN, Rows, TextTable, as_float

NAME = "hf_trainer"
EXAMPLE = "{'loss': 0.4241, 'learning_rate': 9.99e-06, 'epoch': 0.2, 'step': 295}"
LINE = re.compile(r"^(.*?)(\{'[^{}]*\})\s*$")
_DUR = re.compile(r"(\d+(?:\.\d+)?)\s*([dhms])")
_SECS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


def sniff(lines: list[str]) -> bool:
    """A dict line holding ``'loss':`` and ``'epoch':`` or ``'learning_rate':``."""
    return any(
        "{'" in x and "'loss'" in x and ("'epoch'" in x or "'learning_rate'" in x) for x in lines
    )


def _duration(text: str) -> float:
    got = _DUR.findall(text)
    return sum(float(v) * _SECS[u] for v, u in got) if got else NAN


def read(src: Source) -> TextTable:
    """Parse Trainer dict lines (see the module docstring)."""
    rows = Rows()
    bad: list[int] = []
    summary = None
    summary_line = 0
    count = 0
    first: tuple[int, str] | None = None  # the first step line, quoted when nothing is timed
    for n, _tag, text in console.iter_lines(src, bad):
        if "{'" not in text:
            continue
        m = LINE.match(text)
        if m is None:
            continue
        try:
            d = ast.literal_eval(m.group(2))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            rows.drop("a Trainer dict line that is not a valid Python dict", n)
            continue
        if not isinstance(d, dict):
            continue
        if "train_runtime" in d:
            summary, summary_line = d, n
            continue
        if any(str(k).startswith("eval_") for k in d) or "loss" not in d:
            continue
        count += 1
        first = first or (n, m.group(2))
        gs = d.get("global_step/max_steps")
        step = as_float(str(gs).split("/")[0]) if gs is not None else as_float(d.get("step", count))
        ts = console.timestamp(m.group(1))
        if ts is None and "elapsed_time" in d:
            ts = _duration(str(d["elapsed_time"]))
        speed = d.get("train_speed(iter/s)")
        rows.add(n, step=step, t_end_s=ts if ts is not None else NAN,
                 steps_per_sec=as_float(speed) if speed is not None else NAN)  # fmt: skip
    rows.undecodable(bad)
    out = rows.table(src, "Trainer dict line {'loss': …, 'epoch': …}", EXAMPLE)
    frame = out.frame
    if frame["t_end_s"].notna().any():
        out.frame = frame.drop(columns="steps_per_sec")
    elif frame["steps_per_sec"].notna().any():
        out.frame = frame.drop(columns="t_end_s")
        out.notes.append("step time = 1 / train_speed(iter/s), a running average since the start")
    elif (bar := _bar(src, summary)) is not None:
        out = bar
    elif summary is not None and "train_steps_per_second" in summary:
        from xpuperf.readers.formats import hf_state  # imports this module

        return hf_state.console_summary(src, summary, summary_line)
    else:
        line, text = first or (None, "")
        raise InputError(
            "the Trainer log lines carry no time and the log holds no training progress bar: "
            "keep timestamps (e.g. docker logs -t, or logging with %(asctime)s), log "
            "train_speed or keep the tqdm bar (2>&1); the first step line reads: "
            + short(text, 120),
            src.name,
            line,
        )
    if summary is not None:
        out.notes.append(
            "Trainer summary: "
            + ", ".join(
                f"{k} {summary[k]}"
                for k in ("train_runtime", "train_samples_per_second", "train_steps_per_second")
                if k in summary
            )
        )
    return out


def _bar(src: Source, summary: dict | None) -> TextTable | None:
    """The Trainer's tqdm bar read as the steps (:mod:`~xpuperf.readers.formats.tqdm`) when
    the dict lines carry no time; None when the log holds no training bar, or when a bar too
    short for its 1 s clock (every row from tqdm's displayed rate) stands beside the summary's
    ``train_runtime``, which times such a run better."""
    from xpuperf.readers.formats import tqdm

    try:
        out, clocked = tqdm.read_bars(src)
    except InputError:
        return None
    if not clocked and summary is not None and "train_steps_per_second" in summary:
        return None
    out.notes.append(
        "the Trainer dict lines carry no time: the steps are the Trainer's tqdm bar (one bar "
        "step = one optimizer step)"
    )
    return out
