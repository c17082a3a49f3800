"""Types shared by the reader modules: an opened input file and a parsed, not yet mapped, table.

A format module turns a :class:`Source` into a :class:`RawTable` (columns named as in the file,
values as read); :mod:`xpuperf.readers.build` maps the columns to the canonical step table.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import pandas as pd
import pyarrow as pa

from xpuperf.errors import InputError

HEAD_BYTES = 65536
"""Bytes of (decompressed) content kept in :attr:`Source.head` for sniffing and header parsing."""
BINARY_PROBE = 8192
"""A text log must have no NUL byte in its first this many bytes."""
GZIP_MAGIC = b"\x1f\x8b"
GZIP_MAX_RATIO = 200
"""A ``.gz`` input may expand to at most this many times its compressed size (text logs compress
3–20×; a file of one repeated line about 350×; a compressed bomb about 1000×) …"""
GZIP_MIN_LIMIT = 256 << 20
"""… but always to at least this many bytes: past both, reading stops with an InputError."""
PARQUET_MAGIC = b"PAR1"


@dataclass
class Source:
    """One input file, opened read-only, with its first bytes in memory.

    Attributes:
        path: the file.
        name: how the file is named in messages (the path as expanded from the user's argument).
        gzip: content is gzip-compressed (by extension or magic bytes); all reads decompress.
        head: up to :data:`HEAD_BYTES` bytes of decompressed content.
        rank_hint: path parts (file name first, then enclosing directories below the directory
            the user named) that may carry a rank number, e.g. ``("rank3.csv",)``.
    """

    path: Path
    name: str
    gzip: bool
    head: bytes
    rank_hint: tuple[str, ...] = ()

    @property
    def suffix(self) -> str:
        """Lower-case extension after stripping ``.gz``, e.g. ``".csv"`` for ``a.csv.gz``."""
        p = self.path
        if p.suffix.lower() == ".gz":
            p = p.with_suffix("")
        return p.suffix.lower()

    def open(self) -> BinaryIO:
        """A binary file object of the decompressed content (caller closes it); gzip content is
        bounded by :data:`GZIP_MAX_RATIO` / :data:`GZIP_MIN_LIMIT` (InputError past them)."""
        if self.gzip:
            return LimitedGzip(self.path, self.name)  # type: ignore[return-value]
        return self.path.open("rb")

    def arrow_stream(self) -> pa.NativeFile:
        """A pyarrow input stream of the decompressed content (native for plain files; gzip goes
        through the bounded :class:`LimitedGzip`)."""
        if self.gzip:
            return pa.input_stream(self.open())
        return pa.input_stream(str(self.path))

    def read_all(self) -> bytes:
        """The whole decompressed content; raises InputError on a corrupt gzip file."""
        try:
            with self.open() as f:
                return f.read()
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"cannot read: {exc}", self.name) from exc

    def first_lines(self, n: int = 30) -> list[str]:
        """Up to ``n`` first lines of the head, decoded leniently, BOM and line ends stripped."""
        text = self.head.decode("utf-8", errors="replace").removeprefix("\ufeff")
        lines = text.splitlines()
        if len(self.head) >= HEAD_BYTES and lines:
            lines = lines[:-1]  # possibly cut in the middle
        return lines[:n]


class LimitedGzip(gzip.GzipFile):
    """A gzip reader that refuses to expand past ``max(GZIP_MAX_RATIO × compressed size,
    GZIP_MIN_LIMIT)`` bytes: a compressed bomb ends in an InputError, not in exhausted memory.

    Raises:
        InputError: on the read that crosses the limit.
    """

    def __init__(self, path: Path, name: str) -> None:
        super().__init__(str(path), "rb")
        self._name = name
        self._size = Path(path).stat().st_size
        self._limit = max(GZIP_MAX_RATIO * self._size, GZIP_MIN_LIMIT)
        self._out = 0

    def _count(self, data: bytes) -> bytes:
        self._out += len(data)
        if self._out > self._limit:
            raise InputError(
                f"gzip data expands more than {GZIP_MAX_RATIO}x ({self._size} compressed bytes, "
                f"stopped past {self._limit >> 20} MiB): a compressed bomb or a broken file; if "
                "the log is genuine, decompress it and pass the plain file",
                self._name,
            )
        return data

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:  # whole stream: in chunks, so the limit bites early
            parts = []
            while chunk := self.read(1 << 20):
                parts.append(chunk)
            return b"".join(parts)
        return self._count(super().read(size))

    def read1(self, size: int = -1) -> bytes:
        return self._count(super().read1(size))

    def readline(self, size: int | None = -1) -> bytes:
        return self._count(super().readline(size))


@dataclass
class Drop:
    """Rows a parser had to skip: ``count`` rows for ``reason``; ``first`` in the table's unit."""

    reason: str
    count: int
    first: int | None


def _record_numbers(idx: Sequence[int]) -> dict[int, int | None]:
    return {int(i): int(i) + 1 for i in idx}


@dataclass
class RawTable:
    """A parsed file before column mapping.

    Attributes:
        frame: one row per record, columns named as in the file, values as read (numbers,
            strings or timestamps); the index is ``0..n-1`` in file order.
        locate: maps record indices to 1-based positions in :attr:`unit` (called only to place
            warnings, so it may be slow); ``None`` entries mean unknown.
        unit: ``"line"`` (physical text line, header = line 1), ``"row"`` or ``"record"``.
        drops: records the parser skipped (wrong field count, undecodable, malformed JSON).
        columns: every column name in the file (``frame`` may hold only the useful ones); for
            messages. Empty means ``frame.columns``.
    """

    frame: pd.DataFrame
    locate: Callable[[Sequence[int]], dict[int, int | None]] = _record_numbers
    unit: str = "line"
    drops: list[Drop] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)

    @property
    def all_columns(self) -> list[str]:
        """Every column name in the file."""
        return self.columns or [str(c) for c in self.frame.columns]


@dataclass(frozen=True)
class Format:
    """A log format the readers know.

    Attributes:
        name: what ``--format`` / ``fmt=`` accepts, e.g. ``"csv"``.
        extensions: file extensions (lower case, with the dot, ``.gz`` stripped) that select it.
        sniff: given the first lines of a file (decoded, line ends stripped), is it this format?
            Used for ``.log``/``.txt`` and unknown extensions; must be cheap and never raise.
        read: parses a :class:`Source` into a :class:`RawTable`; raises only
            :class:`~xpuperf.errors.InputError`.
        example: one example line or short description, for help texts and errors.
        binary: not a text format (no NUL-byte check, no sniffing by text).
    """

    name: str
    extensions: tuple[str, ...]
    sniff: Callable[[list[str]], bool]
    read: Callable[[Source], RawTable]
    example: str
    binary: bool = False


QUOTE_CHARS = 80
"""File content quoted in a message (a line, a value) is cut to this many characters."""
NAME_CHARS = 40
"""A column name quoted in a message is cut to this many characters."""
NAMES_SHOWN = 10
"""A message lists at most this many column names, then ``… (N more)``."""


def short(text: object, limit: int = QUOTE_CHARS) -> str:
    """``text`` as one line of at most ``limit`` characters (``…`` marks a cut)."""
    s = " ".join(str(text).split()) if any(c in str(text) for c in "\r\n") else str(text)
    return s if len(s) <= limit else s[: max(limit - 1, 1)] + "…"


def name_list(names: Sequence[object], limit: int = NAMES_SHOWN, quote: bool = True) -> str:
    """Column names for a message: the first ``limit``, each cut to :data:`NAME_CHARS` (and
    quoted), then ``… (N more)``; ``(none)`` when empty."""
    if not names:
        return "(none)"
    cut = [short(n, NAME_CHARS) for n in names[:limit]]
    shown = ", ".join(repr(c) if quote else c for c in cut)
    more = len(names) - limit
    return shown + (f", … ({more} more)" if more > 0 else "")


def where(name: str, unit: str, pos: int | None) -> str:
    """``file:line`` for text lines, ``file (row N)`` otherwise, ``file`` when unknown."""
    if pos is None:
        return name
    if unit == "line":
        return f"{name}:{pos}"
    return f"{name} ({unit} {pos})"
