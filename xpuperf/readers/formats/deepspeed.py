"""DeepSpeed ``wall_clock_breakdown`` timer lines (DeepSpeed 0.1 … 0.14, 2020–2024).

Step lines, in milliseconds::

    [2023-06-21 07:39:09,443] [INFO] [logging.py:96:log_dist] [Rank 0] rank=0 time (ms) |
    forward: 27.41 | backward: 73.44 | backward_inner: 50.99 | backward_allreduce: 22.40 |
    step: 72.82
    time (ms) | forward_microstep: 193.65 | backward_microstep: 329.25 |
    backward_inner_microstep: 329.14 | backward_allreduce_microstep: 0.05 | step_microstep: 0.92

The first (global) form is summed over the micro-steps of one optimizer step; the second, older
``*_microstep`` form is one micro-step. When a file has global lines its micro-step lines are
ignored. ``epoch=…/global_step=N`` and ``[Rank 0] step=N`` lines give the step number; otherwise
steps are counted. The rank comes from ``rank=N``, ``[Rank N]`` or a launcher prefix.

Columns: ``step``; ``rank``; ``forward_s``; ``backward_s`` = backward_inner (compute only);
``comm_s`` = backward_allreduce; ``optimizer_s`` = step; ``step_time_s`` = forward + backward +
step — the time inside the timers: data loading and host work outside them are NOT included, and
a note says so.

DeepSpeed's throughput timer prints the job's samples/s (rank 0 only): ``0/450,
SamplesPerSec=7.46`` (epoch/step, 2020) or ``epoch=0/micro_step=8/global_step=8,
RunningAvgSamplesPerSec=…, CurrSamplesPerSec=…`` (later). The running mean (over the steps since
the timer's start step; samples = the GLOBAL batch) of the last such line is kept as the log's own
throughput (``log_rate``), shown beside what the timer rows give; it does not fill ``samples``
(the batch per step is not printed).
"""

from __future__ import annotations

import re

from xpuperf.readers.base import Source
from xpuperf.readers.formats import console, timers
from xpuperf.readers.formats.table import Rows, TextTable, as_float

NAME = "deepspeed"
EXAMPLE = (
    "[Rank 0] rank=0 time (ms) | forward: 27.41 | backward: 73.44 | backward_inner: 50.99 | "
    "backward_allreduce: 22.40 | step: 72.82"
)
_TIMER = re.compile(r"(?:^|\s|\|)time \(ms\) \|\s*(forward|backward|step)\w*:")
_RANK = re.compile(r"\brank=(\d+)|\[Rank (\d+)\]")
_STEP = re.compile(r"\bglobal_step=(\d+)|\[Rank \d+\] step=(\d+)")
_RATE = re.compile(
    r"(?:(\d+)/(\d+), |global_step=(\d+), Running(?:Avg)?)SamplesPerSec=([\d.eE+-]+)"
)
_GLOBAL = ("forward", "backward", "step")
_MICRO = ("forward_microstep", "backward_microstep", "step_microstep")
NOTE = (
    "DeepSpeed timers: step time = forward + backward + optimizer step as timed by DeepSpeed; "
    "data loading and host work outside the timers are not included, so the step time is a "
    "lower bound"
)


def sniff(lines: list[str]) -> bool:
    """A DeepSpeed ``time (ms) | forward…`` timer line or a ``SamplesPerSec=`` line."""
    return any(("time (ms)" in x and _TIMER.search(x)) or "SamplesPerSec=" in x for x in lines)


def read(src: Source) -> TextTable:
    """Parse DeepSpeed timer lines (see the module docstring)."""
    rows = {"global": Rows(), "micro": Rows()}
    last_step: dict[tuple[str, int], float] = {}
    announced: dict[int, float] = {}
    bad: list[int] = []
    rate: tuple[float, str] | None = None
    for n, tag, text in console.iter_lines(src, bad):
        if "SamplesPerSec=" in text and (m := _RATE.search(text)):
            at = f"global_step {m.group(3)}" if m.group(3) else f"{m.group(1)}/{m.group(2)}"
            rate = (as_float(m.group(4)), f"DeepSpeed SamplesPerSec at {at}, line {n}: the "
                    "job's running mean since the timer's start step")  # fmt: skip
        if "step" in text and ("global_step=" in text or "] step=" in text):
            m = _STEP.search(text)
            if m:
                r = _rank(text, tag)
                announced[r] = float(m.group(1) or m.group(2))
        if "time (ms)" not in text or not _TIMER.search(text):
            continue
        t = timers.pairs(text)
        names = _GLOBAL if all(k in t for k in _GLOBAL) else _MICRO
        if not all(k in t for k in names):
            rows["global"].drop("DeepSpeed timer line without forward, backward and step", n)
            continue
        kind = "global" if names is _GLOBAL else "micro"
        r = _rank(text, tag)
        prev = last_step.get((kind, r), 0.0)
        ann = announced.get(r, 0.0)
        step = ann if ann > prev else prev + 1.0
        last_step[(kind, r)] = step
        st = sum(t[k] for k in names) / 1000.0
        rows[kind].add(n, rank=as_float(r), step=step, step_time_s=st, **timers.phases(t))
    use = rows["global"] if len(rows["global"]) else rows["micro"]
    use.drops.update(rows["global"].drops)
    use.undecodable(bad)
    use.notes.append(NOTE)
    out = use.table(src, "DeepSpeed 'time (ms) | forward: …' timer line", EXAMPLE)
    out.log_rate = rate if rate is not None and rate[0] > 0 else None
    return out


def _rank(text: str, tag: int | None) -> int:
    m = _RANK.search(text)
    if m:
        return int(m.group(1) or m.group(2))
    return tag or 0
