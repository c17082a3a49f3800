"""A rich progress bar (files, bytes) on stderr while logs are read.

Shown only when stderr is a terminal, ``--quiet`` is off, and the read has run for more than a
second; it disappears when the read ends (``transient``). Fed by
:mod:`xpuperf.readers.progress`.
"""

from __future__ import annotations

import threading
import time
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
        TextColumn("reading {task.fields[files]}/{task.fields[nfiles]} files"),
        BarColumn(),
        DownloadColumn(binary_units=True),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    task = bar.add_task("read", total=total, files=0, nfiles=files or "?")
    t0 = time.monotonic()
    started = threading.Event()
    lock = threading.Lock()

    def sink(done_files: int, done_bytes: int) -> None:
        bar.update(task, completed=done_bytes, files=done_files)
        if not started.is_set() and time.monotonic() - t0 > DELAY_S:
            with lock:
                if not started.is_set():
                    started.set()
                    bar.start()

    try:
        with rp.reporting(sink):
            yield
    finally:
        if started.is_set():
            bar.stop()
