"""Read progress (files, bytes) and per-file parallel parsing.

The readers report what they have consumed through :func:`advance_bytes` / :func:`file_done`; a
caller that wants to show progress (the CLI's rich bar) installs a sink with :func:`reporting`.
Without a sink the calls cost one ``None`` check. :func:`map_files` runs a per-file function on a
thread pool: pyarrow's parsers release the GIL, so one file's parse overlaps another file's
Python-side column mapping.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

Sink = Callable[[int, int], None]
"""``sink(files_done, bytes_done)``: running totals, called from any reader thread."""

_lock = threading.Lock()
_sink: Sink | None = None
_done: dict[str, int] = {}
_files = 0


@contextmanager
def reporting(sink: Sink | None) -> Iterator[None]:
    """Send progress of the reads inside the block to ``sink`` (None: no reporting)."""
    global _sink, _files
    with _lock:
        old, _sink = _sink, sink
        _done.clear()
        _files = 0
    try:
        yield
    finally:
        with _lock:
            _sink = old


def _emit() -> None:
    sink = _sink
    if sink is not None:
        sink(_files, sum(_done.values()))


def advance_bytes(path: object, position: int) -> None:
    """The reader of ``path`` has consumed ``position`` bytes of it (on-disk bytes)."""
    if _sink is None:
        return
    with _lock:
        _done[str(path)] = max(_done.get(str(path), 0), int(position))
        _emit()


def file_done(path: object) -> None:
    """``path`` is read completely: its whole on-disk size counts."""
    global _files
    if _sink is None:
        return
    try:
        size = Path(path).stat().st_size  # type: ignore[arg-type]
    except (OSError, TypeError):
        size = 0
    with _lock:
        _done[str(path)] = size
        _files += 1
        _emit()


def workers() -> int:
    """Threads for per-file parsing: the CPUs this process may use, at most 8."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    return max(1, min(8, n))


def map_files(fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
    """``fn(item)`` for each item, results in input order, up to :func:`workers` at a time.

    At most ``2 × workers`` results are in flight, so memory stays near a few files' worth
    beyond what the caller keeps. The first exception (including KeyboardInterrupt in the
    caller) cancels the files not yet started and propagates.
    """
    if len(items) <= 1 or workers() == 1:
        yield from map(fn, items)
        return
    ex = ThreadPoolExecutor(max_workers=workers(), thread_name_prefix="xpuperf-read")
    try:
        ahead = 2 * workers()
        futures = [ex.submit(fn, it) for it in items[:ahead]]
        nxt = len(futures)
        for i in range(len(items)):
            result = futures[i].result()
            futures[i] = None  # type: ignore[call-overload]
            if nxt < len(items):
                futures.append(ex.submit(fn, items[nxt]))
                nxt += 1
            yield result
    finally:
        ex.shutdown(wait=False, cancel_futures=True)
