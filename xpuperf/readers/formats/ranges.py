"""One large text log parsed on several CPU cores: byte ranges in worker processes, merged exactly.

A parser that keeps little state from line to line (Megatron-LM's: pending timers, an open
``(min, max)`` block) can parse a byte range of a file on its own, starting from a clean state.
:func:`parse` cuts an uncompressed file into ``k`` ranges after newlines, parses range 0 in this
process while ``k − 1`` forked worker processes parse the others, and appends their results in
file order, shifting line numbers. Exactness: when the state at the end of range ``i`` is not
clean (a timer line waits for its step line, say), range ``i + 1`` — parsed from a clean state —
may differ from a sequential parse, so it is parsed again here, sequentially, with the carried
state. A worker that fails is also replaced by a sequential parse of its range. The result
equals one sequential pass (tests compare both).

Used for files of at least :data:`PARALLEL_BYTES`; gzip files are parsed sequentially (they cannot
be entered in the middle). How many ranges (:func:`workers_for`): one per CPU this process may use
(at most :data:`MAX_WORKERS`) minus the CPUs that OTHER processes keep busy right now
(:func:`busy_others`), rounded, at least 1. The load average is not used: it lags by a minute and
counts this process's own recent work, so a process that has just been busy (a benchmark loop, a
previous file) would see its own load and fall back to one range on an idle machine.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from xpuperf.readers.base import Source

PARALLEL_BYTES = 64 << 20
"""Files smaller than this (64 MiB) are parsed in one process: forking and merging would cost more
than they save."""
MAX_WORKERS = 4
last_ranges = 0
"""Ranges the latest :func:`parse` in this process used (benchmarks report which path ran)."""
LOADAVG = Path("/proc/loadavg")
"""Linux: load averages, then ``running/total`` tasks right now (read by :func:`busy_others`)."""


class RangeParser(Protocol):
    """What :func:`parse` needs from a parser object."""

    rows: Any
    bad: list[int]
    done: list[tuple[int, int, int, int]]
    next_line: int

    def clean(self) -> bool: ...


Run = Callable[[Any, Source, int, int | None, int, bool], None]
"""``run(parser, src, start, end, first_line, report)``: parse a byte range into ``parser``."""


def cpus() -> int:
    """CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def split(src: Source, k: int) -> list[tuple[int, int]]:
    """``k`` byte ranges of ``src`` covering it, each ending after a newline (fewer when lines
    are very long)."""
    size = src.path.stat().st_size
    cuts = [0]
    with src.path.open("rb") as f:
        for i in range(1, k):
            pos = max(cuts[-1], size * i // k)
            f.seek(pos)
            f.readline()
            pos = f.tell()
            if cuts[-1] < pos < size:
                cuts.append(pos)
    cuts.append(size)
    return list(itertools.pairwise(cuts))


def workers_for(src: Source, force: int | None = None) -> int:
    """Ranges to parse ``src`` in: 1 (sequential) unless big, uncompressed and CPUs allow (see
    the module docstring)."""
    if force is not None:
        return max(1, force)
    if src.gzip or cpus() < 2:
        return 1
    try:
        size = src.path.stat().st_size
    except OSError:
        return 1
    return 1 if size < PARALLEL_BYTES else min(cpus(), MAX_WORKERS, free_cpus())


def free_cpus() -> int:
    """CPUs this process may use minus those other processes keep busy (:func:`busy_others`),
    rounded, at least 1. Without ``/proc/loadavg`` (not Linux): CPUs minus the 1-minute load
    average, counting this process as free."""
    others = busy_others()
    if others is None:
        try:
            others = max(0.0, os.getloadavg()[0] - 1.0)
        except OSError:  # not available
            return cpus()
    return max(1, round(cpus() - others))


def busy_others(samples: int = 20, gap_s: float = 0.001) -> float | None:
    """Mean number of OTHER runnable tasks over ``samples`` readings of ``/proc/loadavg`` (its 4th
    field, ``running/total``, counts this process too, which is running while it reads), ``gap_s``
    apart: about 20 ms. A process that keeps a CPU busy counts 1, one busy a third of the time
    about 1/3. None when ``/proc/loadavg`` cannot be read."""
    total = 0
    try:
        for i in range(samples):
            total += int(LOADAVG.read_bytes().split()[3].split(b"/")[0]) - 1
            if i + 1 < samples:
                time.sleep(gap_s)
    except (OSError, ValueError, IndexError):
        return None
    return max(0, total) / samples


def _work(new: Callable[[], Any], run: Run, src: Source, start: int, end: int) -> Any:
    p = new()
    run(p, src, start, end, 2, False)  # line 2: no byte-order mark to strip mid-file
    return p


def parse(
    src: Source,
    new: Callable[[], Any],
    run: Run,
    merge: Callable[[Any, Any, int, int], None],
    k: int,
) -> Any:
    """Parse ``src`` in ``k`` ranges (see the module docstring) and return the merged parser.

    ``new()`` makes a parser; ``run`` parses a range into one; ``merge(into, part, line_shift,
    block_shift)`` appends a worker's parser to ``into`` (line numbers + ``line_shift``, its
    fast-block indices + ``block_shift``).
    """
    global last_ranges
    ranges = split(src, k)
    last_ranges = len(ranges)
    p = new()
    if len(ranges) == 1:
        run(p, src, 0, None, 1, True)
        return p
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=len(ranges) - 1, mp_context=ctx) as ex:
        futs: list[Future[Any]] = [ex.submit(_work, new, run, src, s, e) for s, e in ranges[1:]]
        try:
            run(p, src, ranges[0][0], ranges[0][1], 1, True)
            for (s, e), fut in zip(ranges[1:], futs, strict=True):
                line = p.next_line
                part = None
                if p.clean():
                    try:
                        part = fut.result()
                    except Exception:  # a worker failed: parse its range here instead
                        part = None
                if part is None:
                    fut.cancel()
                    run(p, src, s, e, line, True)
                else:
                    merge(p, part, line - 2, len(p.done))
        finally:
            for f in futs:
                f.cancel()
    return p


def shift_lines(lines: np.ndarray, line_shift: int, block_shift: int) -> np.ndarray:
    """Line numbers of a worker's rows in the whole file: ``≥ 0`` + ``line_shift``; placeholders
    ``-(b + 1)`` of fast block ``b`` → ``-(b + block_shift + 1)``."""
    return np.where(lines >= 0, lines + line_shift, lines - block_shift)
