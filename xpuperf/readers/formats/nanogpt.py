"""nanoGPT ``train.py`` (karpathy/nanoGPT, 2022–) and build-nanogpt ``train_gpt2.py`` (2024).

Step lines (printed by the master process only: one line per logged step for the whole job)::

    iter 2920: loss 3.9883, time 1099.34ms, mfu 15.34%
    iter 10: loss 4.2214, time 812.50ms                 (before the MFU estimate, Jan 2023)
    step   120 | loss: 5.812345 | lr 1.0080e-04 | norm: 0.8123 | dt: 331.72ms | tok/sec: 1580472.31

Columns (one row per logged step, read as one rank):

- ``step`` = ``iter N`` / ``step N``;
- ``step_time_s`` = ``time`` / ``dt`` (ms → s). nanoGPT's ``time`` is the one iteration that ends
  at the logged one (``dt`` between consecutive loop ends), not a mean over the log interval; the
  iteration right after an evaluation (``step N: train loss …, val loss …``) includes the
  evaluation and the checkpoint save, and ``iter 0`` the compilation;
- ``mfu`` = ``mfu`` / 100: nanoGPT's running average (0.9 × previous + 0.1 × this iteration) of
  one GPU's model FLOPs against an A100's bf16 peak (312 TFLOPS); ``mfu -100.00%`` (printed until
  the fifth iteration of a process) is no estimate → NaN;
- ``tokens`` = ``tokens per iteration will be: 491,520`` (start-up line; the WHOLE job's tokens per
  step); build-nanogpt: ``tok/sec`` × step time (the whole job's).

Both scripts print the step line on the master process only, so the rows are job-level
(:func:`~xpuperf.readers.formats.table.job_level_note`). nanoGPT prints ``tokens per iteration``
in EVERY process: when the start-up shows it k > 1 times (a torchrun console holds all its
processes' output), ``world_size`` = k (on a multi-node job that is this node's processes only:
pass ``--world-size``).
"""

from __future__ import annotations

import re

from xpuperf.readers.base import Source
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import (
    NAN,
    Rows,
    TextTable,
    as_float,
    finite,
    job_level_note,
    num,
)

NAME = "nanogpt"
EXAMPLE = "iter 2920: loss 3.9883, time 1099.34ms, mfu 15.34%"
ITER = re.compile(r"\biter (\d+): loss [^,]*, time (\S+?)\s*ms(?:, mfu (-?[\d.]+)%)?")
STEP = re.compile(r"^step\s+(\d+)\s*[|,]\s*loss: .*?\bdt: (\S+?)\s*ms(?:\s*[|,]\s*tok/sec: (\S+))?")
TOKENS = re.compile(r"^tokens per iteration will be: ([\d,]+)\s*$")
EVAL = re.compile(r"^step (\d+): train loss \S+, val loss")


def sniff(lines: list[str]) -> bool:
    """An ``iter N: loss X, time Y ms`` or build-nanogpt ``step N | loss: … | dt: Y ms`` line."""
    return any(
        ("iter " in x and ITER.search(x)) or (x.startswith("step") and STEP.match(x)) for x in lines
    )


def read(src: Source) -> TextTable:
    """Parse nanoGPT / build-nanogpt step lines (see the module docstring)."""
    rows = Rows()
    bad: list[int] = []
    tokens = NAN
    starts: list[int | None] = []  # rank tags of the 'tokens per iteration' lines before step 1
    evals = 0
    after_eval = False
    for n, tag, text in console.iter_lines(src, bad):
        if "iter " in text and (m := ITER.search(text)):
            extra = {"tokens": tokens} if finite(tokens) else {}
            if m.group(3) is not None:
                mfu = as_float(m.group(3))
                extra["mfu"] = mfu / 100.0 if mfu >= 0 else NAN  # -100.00%: no estimate yet
        elif text.startswith("step") and (m := STEP.match(text)):
            extra = {}
            if m.group(3) is not None:
                extra["tokens"] = as_float(m.group(3)) * as_float(m.group(2)) / 1000.0
        else:
            if text.startswith("tokens per iteration") and (t := TOKENS.match(text)):
                tokens = num(t.group(1))
                if not len(rows):
                    starts.append(tag)
            elif text.startswith("step ") and EVAL.match(text):
                after_eval = True
            continue
        evals += after_eval
        after_eval = False
        rows.add(n, step=as_float(m.group(1)), step_time_s=as_float(m.group(2)) / 1000.0, **extra)
    rows.undecodable(bad)
    out = rows.table(src, "nanoGPT 'iter N: loss X, time Y ms' line", EXAMPLE)
    out.sampled = True  # 'time' is the logged iteration's own dt, not the interval's mean
    if "mfu" in out.frame and out.frame["mfu"].isna().all():  # only 'mfu -100.00%' lines
        out.frame = out.frame.drop(columns="mfu")
    what = "tokens = the job's tokens per step" if "tokens" in out.frame else "no tokens"
    out.notes.append(job_level_note(f"{what}; no samples (pass --batch-size for samples/s)"))
    if evals:
        out.notes.append(
            f"nanoGPT: {evals} logged step(s) right after an evaluation ('step N: train loss …, "
            "val loss …') include the evaluation and checkpoint time (spikes at those steps)"
        )
    procs = len(set(starts)) if any(t is not None for t in starts) else len(starts)
    if procs > 1:
        out.world_size = procs
        out.world_source = (
            f"'tokens per iteration will be' line, printed once by each of {procs} processes "
            "(this log's processes only: on several nodes pass --world-size)"
        )
    return out
