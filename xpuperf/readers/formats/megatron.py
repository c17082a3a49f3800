"""Megatron-LM (NVIDIA, 2019–2025), its forks (Megatron-LLM, Megatron-DeepSpeed) and GPT-NeoX.

Step line (printed by the last pipeline rank, one per ``--log-interval`` iterations)::

     iteration      182/  250000 | consumed samples:       186368 | elapsed time per iteration
     (ms): 126995.3 | learning rate: 1.365E-05 | global batch size:  1024 | lm loss: 2.38E+00 | …

GPT-NeoX puts ``samples/sec: 6.922 |`` in front and has no global batch size. Newer Megatron-LM
prefixes ``[2024-05-01 10:00:00]``.

Columns produced (one row per logged iteration, rank 0 — the line describes the whole job):

==============  ============================================================================
column          from
==============  ============================================================================
step            ``iteration N``
step_time_s     ``elapsed time per iteration (ms)`` / 1000 (mean over the log interval)
samples         ``global batch size`` (GLOBAL, not per card), else ``samples/sec`` × time
t_end_s         the ``[date time]`` prefix when present
phases          timer lines (:mod:`~xpuperf.readers.formats.timers`): Megatron-LM style timers
                follow their iteration line, NeoX/DeepSpeed style timers precede it
==============  ============================================================================

Errors: :class:`~xpuperf.errors.InputError` when no iteration line parses. A line that mentions
``iteration N/`` but lacks the elapsed time (e.g. cut at the end of an excerpt) is skipped with a
warning.
"""

from __future__ import annotations

import re
import statistics

from xpuperf.readers.base import Source
from xpuperf.readers.formats import console, timers
from xpuperf.readers.formats.table import NAN, Rows, TextTable, job_level_note, near_int

NAME = "megatron"
EXAMPLE = (
    " iteration      182/  250000 | consumed samples: 186368 | elapsed time per iteration (ms): "
    "126995.3 | global batch size:  1024 | lm loss: 2.382640E+00 |"
)
LINE = re.compile(r"(?:^|\|)\s*(?:\[[^\]]*\]\s*)?iteration\s+(\d+)\s*/\s*(\d+)\s*\|")
FAST = re.compile(
    r"^\s*iteration\s+(\d+)\s*/\s*\d+\s*\|[^|]*\|\s*elapsed time per iteration \(ms\):\s*([\d.]+)"
    r"\s*\|[^|]*\|\s*global batch size:\s*(\d+)\s*\|"
)
"""The fast path: the standard Megatron-LM line, matched in one go (anchored)."""
_FIELD = re.compile(r"\s*([^:|]+?)\s*:\s*([^|]*?)\s*(?:\||$)")
BROKEN = "an 'iteration N/ M |' line without 'elapsed time per iteration (ms)' (cut line?)"


def sniff(lines: list[str]) -> bool:
    """Any line holds ``iteration N/ M |``."""
    return any("iteration" in x and LINE.search(x) for x in lines)


def _fields(text: str) -> dict[str, str]:
    return {m.group(1).strip(): m.group(2) for m in _FIELD.finditer(text)}


def read(src: Source) -> TextTable:
    """Parse a Megatron-LM / GPT-NeoX log (see the module docstring)."""
    rows = Rows()
    bad: list[int] = []
    pending: dict[str, float] = {}  # NeoX/DeepSpeed timers, for the next iteration line
    pending_kind = ""
    spread: list[float] = []  # max/min of Megatron (min, max) timers
    in_minmax = False
    gbs_seen = False
    for n, _rank, text in console.iter_lines(src, bad):
        if in_minmax:
            mm = timers.minmax(text)
            if mm is not None:
                name, lo, hi = mm
                ph = timers.phases({name: hi})
                if ph:
                    rows.set_last(**ph)
                if lo > 0 and name in ("forward-compute", "backward-compute"):
                    spread.append(hi / lo)
                continue
            in_minmax = False
        if "iteration" in text:
            fast = FAST.match(text)
            if fast is not None and not pending:
                rows.add(n, step=float(fast.group(1)), step_time_s=float(fast.group(2)) / 1000.0,
                         samples=float(fast.group(3)))  # fmt: skip
                gbs_seen = True
                continue
            m = LINE.search(text)
            if m:
                f = _fields(text[m.end() :])
                ms = f.get("elapsed time per iteration (ms)")
                try:
                    step_s = float(ms) / 1000.0 if ms is not None else NAN
                except ValueError:
                    step_s = NAN
                if step_s != step_s:
                    rows.drop(BROKEN, n)
                    continue
                head = _fields(text[: m.start()] + "|")
                samples = NAN
                if "global batch size" in f:
                    samples = float(f["global batch size"])
                    gbs_seen = True
                elif "samples/sec" in head:
                    samples = near_int(float(head["samples/sec"]) * step_s)
                ts = console.timestamp(text[: m.start()]) if "[" in text[: m.start()] else None
                rows.add(n, step=float(m.group(1)), step_time_s=step_s, samples=samples,
                         t_end_s=ts if ts is not None else NAN, **pending)  # fmt: skip
                pending, pending_kind = {}, ""
                continue
        if timers.MINMAX_HEAD in text:
            in_minmax = True
            continue
        if "time (ms)" in text:
            t = timers.pairs(text)
            k = timers.kind(t)
            if k == "megatron":
                rows.set_last(**timers.phases(t))
            elif (k == "deepspeed" or pending_kind != "deepspeed") and not any(
                x.endswith("_microstep") for x in t
            ):
                pending, pending_kind = timers.phases(t), k
    rows.undecodable(bad)
    out = rows.table(
        src, "Megatron 'iteration N/ M | … elapsed time per iteration (ms)' line", EXAMPLE
    )
    what = "samples = the global batch size" if gbs_seen else "samples = samples/sec × step time"
    out.notes.append(job_level_note(what))
    if spread:
        med = statistics.median(spread)
        if med > 1.05:
            out.notes.append(
                f"Megatron timers: the slowest rank's forward/backward compute is {med:.2f}× the "
                "fastest (median over logged iterations; threshold 1.05): a straggler; rerun with "
                "per-rank timers (--timing-log-option all) to name it"
            )
    return out
