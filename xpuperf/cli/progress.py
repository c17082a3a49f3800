"""A rich progress bar on stderr while logs are read (files, bytes) and then analysed.

Shown only when stderr is a terminal, ``--quiet`` is off, and the work has run for more than a
second; it disappears when the block ends (``transient``). Reading is fed by
:mod:`xpuperf.readers.progress`; once every file is read the bar says "analysing" and pulses
until the analysis returns, so a long analysis never looks like a hang.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

DELAY_S = 1.0
"""Reads shorter than this show no bar."""


def _total_bytes(paths: Sequence[str]) -> tuple[int, int | None]:
    """(files, bytes) the readers will look at; (0, None) when that cannot be told cheaply."""
    from xpuperf.readers import FORMATS, SNIFFED_EXTENSIONS
    from xpuperf.readers.paths import expand

    wanted = set(SNIFFED_EXTENSIONS) | {e for f in FORMATS for e in f.extensions}
    try:
        found = expand(list(paths), wanted)
        return len(found), sum(f.path.stat().st_size for f in found)
    except Exception:
        return 0, None


@contextmanager
def read_progress(console: Console, paths: Sequence[str], quiet: bool) -> Iterator[None]:
    """Show read progress for the block (see the module docstring)."""
    from xpuperf.readers import progress as rp  # imports pandas: not at CLI start-up

    if quiet or not console.is_terminal:
        yield
        return
    files, total = _total_bytes(paths)
    bar = Progress(
        TextColumn("{task.fields[phase]} {task.fields[files]}/{task.fields[nfiles]} files"),
        BarColumn(),
        DownloadColumn(binary_units=True),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    task = bar.add_task("read", total=total, files=0, nfiles=files or "?", phase="reading")
    started = threading.Event()
    lock = threading.Lock()

    def start() -> None:
        with lock:
            if not started.is_set():
                started.set()
                bar.start()

    def sink(done_files: int, done_bytes: int) -> None:
        bar.update(task, completed=done_bytes, files=done_files)
        if files and done_files >= files:  # every file read: the analysis runs now
            bar.update(task, total=None, phase="read; analysing —")

    timer = threading.Timer(DELAY_S, start)  # shown once the block has run for DELAY_S
    timer.daemon = True
    timer.start()
    try:
        with rp.reporting(sink):
            yield
    finally:
        timer.cancel()
        with lock:
            if started.is_set():
                bar.stop()
            started.set()  # a timer that fires late must not start the bar any more
