"""CSV text → numpy columns: chunks parsed on all cores, or pyarrow's streaming reader.

The sink of the generic CSV/TSV reader (:mod:`xpuperf.readers.generic`): the wanted columns of a
delimited file, read with the options the caller worked out (names, types, the invalid-row
handler), into a DataFrame whose float64 columns were filled in place
(:class:`xpuperf.readers.arrowcols.Columns`).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from xpuperf.readers import progress
from xpuperf.readers.arrowcols import Columns
from xpuperf.readers.base import Source

CHUNK_BYTES = 8 << 20
"""Bytes per chunk of the chunked CSV path (8 MiB: two chunks in flight stay small)."""


def stream_csv(
    src: Source,
    delimiter: str,
    names: list[str],
    skip: int,
    wanted: list[str],
    types: dict[str, pa.DataType],
    on_invalid: Callable[[object], str],
) -> pd.DataFrame | None:
    """Read the wanted columns into a DataFrame; None when a column came out binary (text that
    is not UTF-8: the caller reads the file line by line instead; a row with the wrong number of
    fields that is not UTF-8 is caught by :func:`undecodable_rows` around this call).

    Memory stays near the size of the result: each parsed piece is copied into the final numpy
    columns and released before the next but one is parsed
    (:class:`xpuperf.readers.arrowcols.Columns`); the Arrow data and the frame are never held
    together.

    Two ways, the same rows and values: a plain file whose columns all have a given type is cut
    into chunks of :data:`CHUNK_BYTES` after a newline and each chunk parsed by
    ``pyarrow.csv.read_csv`` on all cores, the next chunk parsed while the previous one is copied
    (:func:`_read_chunks`); from the first chunk that holds a double quote (a quoted field may
    hold a newline, so a cut could split a row) to the end of the file, and for gzip files and
    columns whose type is inferred, pyarrow's streaming reader (one core) reads instead.
    """
    parse = pacsv.ParseOptions(delimiter=delimiter, invalid_row_handler=on_invalid)
    convert = pacsv.ConvertOptions(
        include_columns=wanted,
        column_types=types,
        strings_can_be_null=True,
        quoted_strings_can_be_null=True,
    )
    # rows <= bytes / fields: every row has fields − 1 delimiters and a line end
    cap = None if src.gzip else src.path.stat().st_size // max(len(names), 1) + 2
    start = None if src.gzip or set(wanted) - set(types) else _data_start(src, skip)
    cols, rest = (
        (None, None) if start is None else _read_chunks(src, start, names, parse, convert, cap)
    )
    if rest is None and cols is not None:
        return cols.frame()
    resume = rest is not None and rest != start  # chunks were read: stream the rest
    with _Quotes(src.open()) as counted, pa.PythonFile(counted, mode="r") as stream:
        if resume:
            counted.seek(rest)
        reader = pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=0 if resume else skip),
            parse_options=parse,
            convert_options=convert,
        )
        if any(pa.types.is_binary(t) for t in reader.schema.types):
            return None
        cols = cols or Columns(reader.schema, cap)
        before = cols.n
        for batch in reader:
            cols.add(batch)
            if not src.gzip:
                progress.advance_bytes(src.path, counted.tell())
        # an unclosed quote: the parser took the rest of the file (or up to the next stray
        # quote) as one field; the line reader keeps the other lines and names the bad one
        swallowed = counted.lines - (0 if resume else skip) - (cols.n - before)
        if counted.quotes % 2 or (counted.quotes and swallowed > SWALLOWED_LINES):
            return None
        return cols.frame()


SWALLOWED_LINES = 100
"""A file with double quotes whose streamed part has more lines than rows by this much is read
line by line: quoted fields across lines are rare in step logs, an unclosed quote is not."""


class _Quotes:
    """A binary file object that counts the double quotes and newlines read through it (the
    chunked part before a resumed stream holds no quote: :func:`_read_chunks` hands over at the
    first chunk with one). An odd count of quotes means a quoted field that is never closed:
    pyarrow would read the rest of the file into it (a break-it pass lost 19 995 of 20 000 rows
    that way, with no warning); an even count can hide one (a literal ``5"`` elsewhere), so
    lines that did not become rows are counted too (:data:`SWALLOWED_LINES`)."""

    def __init__(self, raw: Any) -> None:
        self.raw, self.quotes, self.lines = raw, 0, 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.quotes += data.count(b'"')
        self.lines += data.count(b"\n")
        return data

    def seek(self, pos: int, whence: int = 0) -> int:
        return self.raw.seek(pos, whence)

    def tell(self) -> int:
        return self.raw.tell()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return bool(self.raw.seekable())

    @property
    def closed(self) -> bool:
        return bool(self.raw.closed)

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> _Quotes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_hook_lock = threading.Lock()
_active: dict[int, tuple[Callable[[object], str], list[int]]] = {}
"""Handlers inside :func:`undecodable_rows` right now (``id`` → handler, its report list)."""
_hook_before: list[Any] = []
"""The ``sys.unraisablehook`` that was there when the first of them started."""


def _hook(u: Any) -> None:
    entry = _active.get(id(u.object))
    if entry is not None and entry[0] is u.object and isinstance(u.exc_value, UnicodeDecodeError):
        entry[1].append(1)
    else:
        (_hook_before[0] if _hook_before else sys.__unraisablehook__)(u)


@contextlib.contextmanager
def undecodable_rows(handler: Callable[[object], str]) -> Iterator[list[int]]:
    """Count, instead of printing, pyarrow's failures to decode an invalid row for ``handler``.

    pyarrow decodes an invalid row (wrong number of fields) as UTF-8 before it calls the
    invalid-row handler; when the row is not UTF-8 that raises inside pyarrow, which Python
    prints to stderr as "Exception ignored in: <function …on_invalid>" with a traceback, and the
    read goes on or fails. While this is active such reports are appended to the yielded list
    (the caller then reads the file line by line, which names the bad lines); any other
    unraisable exception goes to the hook that was there before. Thread-safe: files read on
    several threads share one hook, installed by the first and removed by the last (the hook
    that was there before is put back)."""
    seen: list[int] = []
    with _hook_lock:
        if not _active:
            _hook_before[:] = [sys.unraisablehook]
            sys.unraisablehook = _hook
        _active[id(handler)] = (handler, seen)
    try:
        yield seen
    finally:
        with _hook_lock:
            _active.pop(id(handler), None)
            if not _active:
                if sys.unraisablehook is _hook:
                    sys.unraisablehook = _hook_before[0]
                _hook_before.clear()


def _data_start(src: Source, skip: int) -> int | None:
    """Byte offset of the line after the first ``skip`` lines, found in the head; None when the
    head does not reach it or one of those lines has an odd number of double quotes (a quoted
    field that goes on past the newline: lines and CSV rows may differ)."""
    pos = 0
    for _ in range(skip):
        nl = src.head.find(b"\n", pos)
        if nl < 0 or src.head.count(b'"', pos, nl) % 2:
            return None
        pos = nl + 1
    return pos


def _read_chunks(
    src: Source,
    start: int,
    names: list[str],
    parse: pacsv.ParseOptions,
    convert: pacsv.ConvertOptions,
    cap: int | None,
) -> tuple[Columns | None, int | None]:
    """Parse the plain file ``src`` from byte ``start`` in chunks cut after a newline.

    Returns ``(columns, resume)``: ``resume`` is None when the file was read to its end, else the
    byte offset of the first chunk not read (it holds a double quote, or a line longer than a
    chunk): the streaming reader reads from there. ``columns`` is None when no chunk was read.
    Two buffers alternate: chunk k + 1 is read and parsed (pyarrow, GIL released, on a second
    thread) while the rows of chunk k are copied.
    """
    read = pacsv.ReadOptions(column_names=names)
    size = min(CHUNK_BYTES, max(1, src.path.stat().st_size - start + 1))  # + 1: EOF is seen
    bufs = [bytearray(size), bytearray(size)]
    cols: Columns | None = None

    def parse_chunk(view: memoryview) -> pa.Table:
        return pacsv.read_csv(
            pa.BufferReader(pa.py_buffer(view)),
            read_options=read,
            parse_options=parse,
            convert_options=convert,
        )

    def take(table: pa.Table) -> None:
        nonlocal cols
        cols = cols or Columns(table.schema, cap)
        for batch in table.to_batches():
            cols.add(batch)

    finished = False
    # a file that fits in one chunk is parsed here: starting a thread per file cost about a
    # fifth of reading a 1000-row per-rank file (1.5 ms -> 1.2 ms a file without it)
    threads = contextlib.nullcontext() if size < CHUNK_BYTES else ThreadPoolExecutor(1)
    with src.path.open("rb") as f, threads as pool:
        f.seek(start)
        pos, carry, k, pending = start, 0, 0, None  # pos: file offset of the buffer's byte 0
        while not finished:
            buf = bufs[k % 2]
            n = carry + f.readinto(memoryview(buf)[carry:])  # fills the buffer unless at EOF
            finished = n < size
            end = n if finished else buf.rfind(b"\n", 0, n) + 1
            if n == 0:
                break
            if end == 0 or buf.find(b'"', 0, end) >= 0:
                finished = False  # a line longer than a chunk, or quotes: the streaming
                break  # reader goes on from pos
            if pool is None:
                nxt = Future()
                nxt.set_result(parse_chunk(memoryview(buf)[:end]))
            else:
                nxt = pool.submit(parse_chunk, memoryview(buf)[:end])
            if pending is not None:
                take(pending.result())  # chunk k − 1, parsed while chunk k was read
            pending, k = nxt, k + 1
            carry = n - end  # an unfinished line: to the front of the other buffer
            bufs[k % 2][:carry] = buf[end:n]
            pos += end
            progress.advance_bytes(src.path, pos)
        if pending is not None:
            take(pending.result())
    return cols, None if finished and cols is not None else pos
