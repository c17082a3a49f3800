"""Physical line numbers for text tables, found only when a warning needs them.

The fast readers (pyarrow) do not report where a record came from. :func:`scan` streams the
decompressed file in chunks and, with numpy, maps record ordinals to 1-based physical line numbers
using the same rules as the parser:

- CSV/TSV: a record ends at a newline outside double quotes; empty lines are skipped; a record
  whose delimiter count (outside quotes) differs from the header's is *ragged* (the parser skips
  it, so it has no ordinal).
- JSON Lines: one record per line; whitespace-only lines are skipped.

The slow paths (:func:`read_csv_lines`, :func:`read_json_lines`) parse line by line in Python,
recording the physical line of every record; they run only when the fast path fails (text that is
not UTF-8, malformed JSON).
"""

from __future__ import annotations

import csv
import json
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from xpuperf.errors import InputError
from xpuperf.readers.base import Drop, Source
from xpuperf.surrogates import clean_parsed

CHUNK = 1 << 22
_QUOTE, _NL, _CR = 34, 10, 13
_OPEN = np.zeros(256, dtype=np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1
MAX_JSON_DEPTH = 64
"""Deepest bracket nesting of a JSON line handed to the native (pyarrow) JSON reader: a record of
a step log is flat, and pyarrow's recursive parser crashes the process (stack overflow) on lines
nested tens of thousands deep. Deeper lines go to :func:`read_json_lines`, which drops lines
deeper than :data:`MAX_JSON_DEPTH` with a counted warning."""
TOO_DEEP = f"JSON nested more than {MAX_JSON_DEPTH} levels deep (a step record is flat)"
_WS = np.array([9, 10, 11, 12, 13, 32], dtype=np.uint8)


@dataclass
class Scan:
    """Result of :func:`scan`: line of each requested record ordinal, and the ragged records."""

    lines: dict[int, int | None] = field(default_factory=dict)
    ragged: int = 0
    first_ragged: int | None = None


def scan(
    src: Source,
    targets: Sequence[int],
    *,
    header_line: int = 0,
    delimiter: str | None = None,
    fields: int = 0,
    ragged: bool = True,
) -> Scan:
    """Map record ordinals to physical lines in one streaming pass.

    Args:
        src: the file.
        targets: 0-based ordinals among the kept (non-ragged) records after ``header_line``.
        header_line: 1-based line of the CSV header (0 for JSON Lines: no header).
        delimiter: CSV field separator, or None for JSON Lines (quotes ignored).
        fields: number of header fields (CSV only).
        ragged: the file has ragged records (the parser said so): count delimiters to recognise
            them. Without, every non-empty line is a record and the scan is cheaper.

    Returns a :class:`Scan`; ordinals past the end map to None. Stops as soon as every target
    (and, with ``ragged``, the first ragged record) is found.
    """
    want = sorted({int(t) for t in targets})
    res = Scan(lines=dict.fromkeys(want))
    csv_mode = delimiter is not None
    delim = ord(delimiter) if csv_mode else -1
    carry = b""
    line_base = 0  # physical lines before the current buffer
    ordinal = 0
    ti = 0
    try:
        stream = src.open()
    except OSError as exc:
        raise InputError(f"cannot read: {exc}", src.name) from exc
    with stream:
        eof = False
        while not eof:
            try:
                chunk = stream.read(CHUNK)
            except (OSError, EOFError, zlib.error):
                chunk = b""
            eof = not chunk
            buf = carry + chunk
            if not buf:
                break
            a = np.frombuffer(buf, dtype=np.uint8)
            nl = np.flatnonzero(a == _NL)
            if csv_mode:
                q = a == _QUOTE
                inside = (np.cumsum(q, dtype=np.uint8) & 1).astype(bool) if q.any() else None
            else:
                inside = None
            ends = nl if inside is None else nl[~inside[nl]]
            if eof:
                if len(ends) == 0 or ends[-1] != len(a) - 1:
                    ends = np.append(ends, len(a))
                carry = b""
            else:
                if len(ends) == 0:
                    carry = buf
                    continue
                carry = buf[ends[-1] + 1 :]
            starts = np.concatenate(([0], ends[:-1] + 1))
            phys = np.searchsorted(nl, starts) + line_base + 1
            stop = ends.copy()
            crlf = (stop > starts) & (a[np.minimum(stop, len(a)) - 1] == _CR)
            stop[crlf] -= 1
            if csv_mode and not ragged:
                keep = (stop > starts) & (phys > header_line)
            elif csv_mode:
                keep = (stop > starts) & (phys > header_line)
                is_delim = a == delim
                if inside is not None:
                    is_delim &= ~inside
                d = np.flatnonzero(is_delim)
                nd = np.searchsorted(d, stop) - np.searchsorted(d, starts)
                bad = keep & (nd != fields - 1)
                if bad.any():
                    res.ragged += int(bad.sum())
                    if res.first_ragged is None:
                        res.first_ragged = int(phys[bad][0])
                keep &= ~bad
            else:
                nonws = np.concatenate(([0], np.cumsum(~np.isin(a, _WS), dtype=np.int64)))
                keep = (nonws[stop] - nonws[starts]) > 0
            rec_lines = phys[keep]
            n = len(rec_lines)
            while ti < len(want) and want[ti] < ordinal + n:
                res.lines[want[ti]] = int(rec_lines[want[ti] - ordinal])
                ti += 1
            ordinal += n
            line_base += int(np.searchsorted(nl, ends[-1], side="right"))
            if ti >= len(want) and (not csv_mode or not ragged or res.first_ragged is not None):
                break
    return res


def line_depth(raw: bytes) -> int:
    """Upper bound of the bracket nesting depth of one line (brackets inside strings count too)."""
    opens = raw.count(b"[") + raw.count(b"{")
    if opens <= MAX_JSON_DEPTH:  # the depth is at most the number of openers
        return opens
    best = depth = 0  # 1 MiB at a time: a 50 MB line must not cost 8 bytes per byte at once
    for at in range(0, len(raw), 1 << 20):
        a = np.frombuffer(raw, dtype=np.uint8, count=min(1 << 20, len(raw) - at), offset=at)
        d = np.cumsum(_OPEN[a], dtype=np.int64) + depth
        best, depth = max(best, int(d.max())), int(d[-1])
    return best


def json_too_deep(src: Source, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when some line may nest ``[``/``{`` deeper than ``limit`` (cheap streaming bound).

    Counts brackets per line with numpy, ignoring strings, so brackets inside string values can
    only over-estimate the depth (the file then takes the slow, safe path). An unreadable or
    corrupt stream answers True (the slow path reports it).
    """
    depth = 0  # depth carried over from the unfinished line at the end of the previous chunk
    try:
        stream = src.open()
    except OSError:
        return True
    with stream:
        while True:
            try:
                chunk = stream.read(CHUNK)
            except (OSError, EOFError, zlib.error):
                return True
            if not chunk:
                return False
            a = np.frombuffer(chunk, dtype=np.uint8)
            delta = _OPEN[a].astype(np.int64)
            nl = a == _NL
            if delta.any():
                cs = np.cumsum(delta)
                # depth relative to the start of each line: subtract the running sum at the
                # line's start (the last newline before it)
                line_id = np.cumsum(nl)
                starts = np.concatenate(([0], cs[np.flatnonzero(nl)]))
                rel = cs - starts[line_id]
                rel[line_id == 0] += depth
                if int(rel.max()) > limit:
                    return True
                depth = int(rel[-1])  # 0 when the chunk ends with a newline
            elif nl.any():
                depth = 0


def physical_lines(src: Source) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes without line end) for each line; None once the data is corrupt."""
    try:
        stream = src.open()
    except OSError as exc:
        raise InputError(f"cannot read: {exc}", src.name) from exc
    with stream:
        n = 0
        try:
            for n, raw in enumerate(stream, 1):
                line = raw.rstrip(b"\n").rstrip(b"\r")
                if n == 1:
                    line = line.removeprefix(b"\xef\xbb\xbf")
                yield n, line
        except (OSError, EOFError, zlib.error):
            yield n + 1, None


class _Drops:
    def __init__(self) -> None:
        self.found: dict[str, Drop] = {}

    def add(self, reason: str, line: int) -> None:
        d = self.found.get(reason)
        if d is None:
            self.found[reason] = Drop(reason, 1, line)
        else:
            d.count += 1

    def list(self) -> list[Drop]:
        return list(self.found.values())


def split_fields(text: str, delimiter: str) -> list[str] | None:
    """Fields of one CSV line (quotes honoured), or None when the line cannot be parsed."""
    try:
        return next(csv.reader([text], delimiter=delimiter), [])
    except csv.Error:
        return None


UNDECODABLE = "not valid UTF-8 text (re-save the file as UTF-8)"
TRUNCATED = "the compressed data is truncated or corrupt from here on; the rest is lost"


def locate_from(lines: np.ndarray) -> Callable[[Sequence[int]], dict[int, int | None]]:
    """A ``RawTable.locate`` for rows whose physical lines are known."""

    def locate(idx: Sequence[int]) -> dict[int, int | None]:
        return {int(i): int(lines[i]) if 0 <= i < len(lines) else None for i in idx}

    return locate


def unique_names(names: Sequence[str]) -> list[str]:
    """Column names made unique as the CSV readers name them: a repeated name gets ``.1``,
    ``.2``, … after its first column (which keeps the name, and so is the one read)."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        k = seen.get(n, 0)
        seen[n] = k + 1
        out.append(n if k == 0 else f"{n}.{k}")
    return out


def _utf8(field: str) -> bool:
    """The field came from valid UTF-8 (no byte kept as a lone surrogate by
    ``surrogateescape``)."""
    try:
        field.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_csv_lines(
    src: Source, delimiter: str, wanted: Sequence[str] | None = None
) -> tuple[list[str], pd.DataFrame, np.ndarray, list[Drop]]:
    """Parse a CSV/TSV file line by line (the slow, line-tracking path).

    Args:
        src: the file.
        delimiter: field separator.
        wanted: header names to keep (None: all).

    Returns ``(header, frame, lines, drops)``: ``frame`` has string columns (one per wanted header
    name) and ``lines[i]`` is the physical line of row ``i``. Quoted fields may not span lines.

    Raises:
        InputError: the header line is not UTF-8 or there is no header.
    """
    drops = _Drops()
    header: list[str] | None = None
    cols: list[list[str | None]] = []
    keep_idx: list[int] = []
    lines: list[int] = []
    for n, raw in physical_lines(src):
        if raw is None:
            drops.add(TRUNCATED, n)
            break
        undecodable = False
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            if header is None and wanted is None:
                raise InputError(f"header line is {UNDECODABLE}", src.name, n) from None
            # kept when the bytes that are not UTF-8 sit only in columns not read (as on the
            # pyarrow path, which decodes only the wanted columns; a wanted name is valid text)
            text, undecodable = raw.decode("utf-8", errors="surrogateescape"), header is not None
        if header is None:
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            header = split_fields(text, delimiter)
            if header is None:
                raise InputError("cannot parse the header line", src.name, n)
            names = unique_names([h.strip() for h in header])  # as the pyarrow path names them
            keep_idx = [i for i, h in enumerate(names) if wanted is None or h in wanted]
            cols = [[] for _ in keep_idx]
            continue
        if not text:
            continue
        row = split_fields(text, delimiter)
        if undecodable and (
            row is None or len(row) != len(header) or not all(_utf8(row[i]) for i in keep_idx)
        ):
            drops.add(UNDECODABLE, n)
            continue
        if row is None or len(row) != len(header):
            drops.add(f"wrong number of fields (header has {len(header)})", n)
            continue
        for c, i in zip(cols, keep_idx, strict=True):
            c.append(row[i])
        lines.append(n)
    if header is None:
        raise InputError("no header line found", src.name)
    names = [names[i] for i in keep_idx]
    frame = pd.DataFrame(
        {
            name: pd.Series(pa.array(c, pa.string()).to_pandas())
            for name, c in zip(names, cols, strict=True)
        }
    )
    return header, frame, np.asarray(lines, dtype=np.int64), drops.list()


def read_json_lines(src: Source) -> tuple[pd.DataFrame, np.ndarray, list[Drop]]:
    """Parse JSON Lines line by line (slow path): one object per non-blank line.

    Returns ``(frame, lines, drops)``; ``frame`` has one column per key seen (object dtype),
    ``lines[i]`` the physical line of row ``i``. Lines that are not valid JSON, not an object or
    not UTF-8 are dropped with a reason.
    """
    drops = _Drops()
    records: list[dict] = []
    lines: list[int] = []
    for n, raw in physical_lines(src):
        if raw is None:
            drops.add(TRUNCATED, n)
            break
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            drops.add(UNDECODABLE, n)
            continue
        if line_depth(raw) > MAX_JSON_DEPTH:
            drops.add(TOO_DEEP, n)
            continue
        try:
            obj = clean_parsed(json.loads(text), text)
        except RecursionError:
            drops.add(TOO_DEEP, n)
            continue
        except ValueError:
            drops.add("not valid JSON", n)
            continue
        if not isinstance(obj, dict):
            drops.add("not a JSON object", n)
            continue
        records.append(obj)
        lines.append(n)
    keys: dict[str, None] = {}
    for r in records:
        for k in r:
            keys.setdefault(str(k), None)
    frame = pd.DataFrame(
        {k: pd.Series([r.get(k) for r in records], dtype=object) for k in keys},
        index=pd.RangeIndex(len(records)),
    )
    return frame, np.asarray(lines, dtype=np.int64), drops.list()
