"""Console noise shared by every framework log: decoding, rank tags, ANSI codes, tqdm, timestamps.

:func:`iter_lines` streams a :class:`~xpuperf.readers.base.Source` line by line (never the whole
file in memory) and yields ``(line_number, rank_tag, text)``:

- ``line_number``: 1-based physical line; the pieces of a line split at ``\\r`` share it.
- ``rank_tag``: the rank named by a launcher prefix, or None. Recognised prefixes:
  ``[rank3]:`` (torchrun ``--tee``/``local_ranks_filter``), ``[default3]:`` (torchrun log
  redirects), ``[1,3]<stdout>:`` (Open MPI ``--tag-output``, rank after the comma) and ``3: ``
  (Slurm ``srun -l``).
- ``text``: the line with the prefix removed, UTF-8 decoded (GB18030/GBK when the line is not
  UTF-8, e.g. logs from Chinese Windows consoles), ANSI colour codes removed, line end (LF or CRLF)
  stripped, and a tqdm progress bar glued in front of a log line (``  3%|███| 12/345 [00:07<06:50,
  1.23s/it][2023-…] …``) removed. A carriage return inside a line (tqdm updates) splits it into
  pieces, each yielded on its own.

:func:`timestamp` reads the first date-time of a line (``2023-07-25 21:01:40,644``,
``2023/05/24 20:20:37``, ``[2021/02/23 22:52:57]``, ``2025-05-21T03:50:19.029644300Z``, Primus'
``[20251121 12:10:29]``) as Unix epoch seconds (a time without zone is taken as UTC, like the
generic readers do).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator

from xpuperf.readers.base import Source
from xpuperf.readers.formats.blocks import blocks

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_PREFIX = re.compile(
    r"^(?:\[(?:rank|default)(\d{1,9})\]:\s?|\[\d+,(\d{1,9})\]<std(?:out|err)>:\s?"
    r"|\s{0,4}(\d{1,5}): )"
)
_TQDM = re.compile(r"^\s*\d{1,3}%\|[^|]*\|[^\[\]]*\[[^\]]*\]")
_TS = re.compile(
    r"(\d{4})(?:[-/](\d\d)[-/](\d\d)|(?<=(?<!\d)\d{4})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01]))"
    r"[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?"
)
"""``2023-07-25 21:01:40,644``, ``2023/05/24 20:20:37``, ISO ``T`` and zones; also the compact
``20251121 12:10:29`` (AMD Primus' logger; eight digits alone, a valid month and day)."""
_DAYS: dict[tuple[int, int, int], int] = {}

UNDECODABLE = "line is neither UTF-8 nor GB18030 text (re-save the file as UTF-8)"
"""Drop reason for a line that no encoding decodes cleanly."""


def decode(raw: bytes) -> tuple[str, bool]:
    """Bytes of one line → ``(text, ok)``: UTF-8, else GB18030 (a superset of GBK/GB2312);
    ``ok`` is False when neither decodes it cleanly (then bad bytes are replaced)."""
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("gb18030"), True
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), False


def no_ansi(text: str) -> str:
    """``text`` without ANSI codes (colours, tqdm's cursor-up ``\\x1b[A`` of nested bars)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def clean(text: str) -> tuple[int | None, str]:
    """One decoded line piece → ``(rank_tag, text)`` without prefix, ANSI codes or tqdm bar."""
    text = no_ansi(text)
    rank = None
    c = text[:1]
    if c == "[" or c == " " or c.isdigit():
        m = _PREFIX.match(text)
        if m:
            g = m.group(1) or m.group(2) or m.group(3)
            rank = int(g)
            text = text[m.end() :]
    if "%|" in text:
        m = _TQDM.match(text)
        if m:
            text = text[m.end() :]
    return rank, text


def iter_lines(src: Source, bad: list[int] | None = None) -> Iterator[tuple[int, int | None, str]]:
    """Stream ``(line_number, rank_tag, text)`` for every line piece of a file.

    The file is read in blocks of whole lines (:func:`~xpuperf.readers.formats.blocks.blocks`):
    memory stays at one block whatever the file size.

    Args:
        src: the file (gzip is decompressed on the fly).
        bad: when given, the numbers of lines that could not be decoded cleanly are appended.

    Raises:
        InputError: the file cannot be opened. A corrupt gzip stream ends the iteration early
            (the lines before it are kept).
    """
    for blk in blocks(src):
        if blk.data is None:  # corrupt compressed stream: keep what came before
            if bad is not None:
                bad.append(blk.first_line)
            return
        yield from block_lines(blk.data, blk.first_line, bad)


def block_lines(
    data: bytes, first_line: int, bad: list[int] | None = None
) -> Iterator[tuple[int, int | None, str]]:
    """:func:`iter_lines` for the whole lines of one block that starts at line ``first_line``
    (line 1 loses a UTF-8 byte-order mark)."""
    raws = data.split(b"\n")
    if raws and not raws[-1]:
        raws.pop()
    if first_line == 1 and raws:
        raws[0] = raws[0].removeprefix(b"\xef\xbb\xbf")
    for n, raw in enumerate(raws, first_line):
        if raw.endswith(b"\r"):
            raw = raw.rstrip(b"\r")
        text, ok = decode(raw)
        if not ok and bad is not None:
            bad.append(n)
        if "\r" in text:
            for piece in text.split("\r"):
                if piece.strip():
                    rank, t = clean(piece)
                    yield n, rank, t
            continue
        rank, t = clean(text)
        yield n, rank, t


def timestamp(text: str) -> float | None:
    """Unix epoch seconds of the first ``YYYY-MM-DD hh:mm:ss[.,frac][zone]`` in ``text``
    (``/`` also separates the date, ``T`` the time); None when there is none."""
    m = _TS.search(text)
    if m is None:
        return None
    y, mo, d, mo2, d2, h, mi, s, frac, zone = m.groups()
    if mo is None:
        mo, d = mo2, d2
    key = (int(y), int(mo), int(d))
    day = _DAYS.get(key)
    if day is None:
        try:
            day = calendar.timegm((*key, 0, 0, 0, 0, 0, 0))
        except (ValueError, OverflowError):
            return None
        _DAYS[key] = day
    t = day + int(h) * 3600 + int(mi) * 60 + int(s)
    if frac:
        t += int(frac) / 10 ** len(frac)
    if zone and zone != "Z":
        sign = -1 if zone[0] == "+" else 1
        z = zone[1:].replace(":", "")
        t += sign * (int(z[:2]) * 3600 + int(z[2:]) * 60)
    return float(t)


def first_text_line(src: Source) -> tuple[int, str] | None:
    """``(line_number, text)`` of the first non-blank line of the head, for error messages."""
    for i, raw in enumerate(src.head.split(b"\n")[:-1] or src.head.split(b"\n"), 1):
        text, _ = decode(raw.rstrip(b"\r"))
        if text.strip():
            return i, clean(text.removeprefix("\ufeff"))[1].strip()
    return None
