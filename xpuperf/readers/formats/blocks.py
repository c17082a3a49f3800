"""Reading a text log in large blocks of whole lines (bounded memory, one decode per line).

:func:`blocks` streams the decompressed content of a :class:`~xpuperf.readers.base.Source` in
blocks of about :data:`BLOCK_BYTES` bytes, each cut after a newline, so that a block holds only
whole lines (a line longer than the block grows that one block until its newline). Memory is one
block plus one partial line, whatever the size of the file. Each block knows its byte offset and
the 1-based number of its first line; format parsers either split it into lines (the line path,
:func:`~xpuperf.readers.formats.console.block_lines`) or scan it whole with one compiled regex (a
fast path, e.g. Megatron-LM's), and :func:`reread` fetches a block again when a warning needs the
exact line of a row found by a fast path.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from xpuperf.errors import InputError
from xpuperf.readers import progress
from xpuperf.readers.base import Source

BLOCK_BYTES = 1 << 19
"""Bytes read at a time (512 KiB): large enough that per-block costs vanish, small enough that a
block and its copies stay in the CPU's L2 cache. Measured on the Megatron-LM benchmark log
(benchmarks/text_logs.py, one core): 512 KiB blocks parse about 15 % faster than 4 MiB blocks
(a fresh 4 MiB buffer per read and per copy costs page faults and cache misses), and 64–512 KiB
are alike."""


@dataclass
class Block:
    """Whole lines of a file.

    Attributes:
        offset: byte offset of ``data[0]`` in the decompressed content.
        first_line: 1-based number of the first line in ``data``.
        data: the bytes (every line ends with ``\\n`` except perhaps the file's last); None marks
            corrupt compressed data: the lines before it were all delivered, line ``first_line``
            and the rest are lost.
        lines: newlines in ``data``.
    """

    offset: int
    first_line: int
    data: bytes | None
    lines: int = 0


def blocks(
    src: Source,
    size: int = BLOCK_BYTES,
    *,
    start: int = 0,
    end: int | None = None,
    first_line: int = 1,
    report: bool = True,
) -> Iterator[Block]:
    """Stream ``src`` as :class:`Block` s of whole lines (see the module docstring).

    ``start``/``end`` restrict the stream to a byte range of an uncompressed file (cut after a
    newline; the first line of the range is numbered ``first_line``). ``report`` sends the bytes
    read to the progress display (:mod:`xpuperf.readers.progress`).

    Raises:
        InputError: the file cannot be opened. Corrupt gzip data ends the stream with a block
            whose ``data`` is None.
    """
    try:
        stream = src.open()
    except OSError as exc:
        raise InputError(f"cannot read: {exc}", src.name) from exc
    # gzip is read in small pieces so that corrupt data loses at most one piece of lines
    step = min(size, 1 << 16) if src.gzip else size
    offset, line = start, first_line
    pending: list[bytes] = []
    have = 0
    left = -1 if end is None else end - start
    with stream:
        if start:
            stream.seek(start)
        while True:
            try:
                chunk = stream.read(step if left < 0 else min(step, left))
            except (OSError, EOFError, zlib.error):
                chunk = None
            if chunk and left >= 0:
                left -= len(chunk)
            if chunk:
                pending.append(chunk)
                have += len(chunk)
                if have < size:
                    continue
            data = b"".join(pending) if len(pending) != 1 else pending[0]
            cut = len(data) if chunk == b"" else data.rfind(b"\n") + 1
            pending = [data[cut:]] if cut < len(data) else []
            have = len(data) - cut
            if cut:
                whole = data[:cut] if cut < len(data) else data
                nl = newlines(whole)
                yield Block(offset, line, whole, nl)
                offset += cut
                line += nl
                if report:
                    progress.advance_bytes(src.path, offset if not src.gzip else _raw_pos(stream))
            if chunk is None:
                yield Block(offset, line, None)
                return
            if chunk == b"":
                return


def newlines(data: bytes) -> int:
    """``data.count(b"\\n")``, about twice as fast on a large block (numpy compares 32 or 64 bytes
    per instruction; ``bytes.count`` looks at one at a time)."""
    if len(data) < 4096:
        return data.count(b"\n")
    return int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == 10))


def _raw_pos(stream: object) -> int:
    """Compressed bytes consumed so far by a gzip stream (0 when unknown)."""
    try:
        return int(stream.fileobj.tell())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return 0


def reread(src: Source, offset: int, length: int) -> bytes:
    """``length`` bytes of the decompressed content at ``offset`` (to locate a warning).

    Raises:
        InputError: the file cannot be read any more.
    """
    try:
        with src.open() as f:
            f.seek(offset)
            return f.read(length)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read: {exc}", src.name) from exc
