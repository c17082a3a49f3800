"""tqdm progress bars in a text log: the pieces of each line, the bar updates they hold, and the
timed rows of one bar (:class:`Bar`).

tqdm redraws its bar in place: each update is ``\\r`` + the bar, so a log redirected to a file
holds many updates on one physical line. :func:`pieces` streams those ``\\r`` pieces with ANSI
codes removed but the bar KEPT (:func:`~xpuperf.readers.formats.console.iter_lines` removes a
bar that starts a piece, so that other readers see the log line after it); :func:`parse` finds
the updates in a piece.

Shapes read (``tqdm.format_meter``, tqdm 4.x; the bar is Unicode blocks or ASCII ``#``/digits)::

    Epoch 3:  45%|████▌     | 450/1000 [01:23<01:42,  5.38it/s, loss=0.123, v_num=0]
      3%|▎         | 30/1000 [00:12<06:40,  2.42it/s]            (no description: HF Trainer)
    Epoch 0:  22%|██▏       | 4/18 [00:17<01:02,  4.47s/it]       (s/it below 1 it/s)
    Epoch 0:  34% 1020/3000 [01:04<02:05, 15.73it/s]              (ncols=0: no bar)
    Epoch 8: : 150it [00:03, 46.84it/s, loss=1.62]                (unknown total)
    train:  40%|####      | 1.20k/3.00k [1:02:03<1:33:05, 1.23kit/s]   (unit_scale: k, M …)
    0%|          | 0/1000 [00:00<?, ?it/s]                        (first display: no rate)

and the bar of ultralytics ≥ 8.3.18x (its own ``TQDM`` class, no brackets; elapsed ``37.5s``
below a minute, ``1:23`` and ``1:02:03`` above)::

          1/100      3.52G      1.234 …        640: 45% ━━━━━╸────── 211/469 5.6it/s 37.5s<46.1s

Each update gives the counter ``n`` (exact unless ``unit_scale`` printed ``1.23k``), the total,
the elapsed time (``[mm:ss]`` / ``[h:mm:ss]``, truncated to whole seconds: resolution 1 s; the
ultralytics ``37.5s`` form: 0.1 s), the rate in seconds per unit (tqdm's displayed rate is an
exponential moving average of recent updates, smoothing 0.3 by default — not one step's time)
and the unit (``it`` unless the code set another).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from xpuperf.readers.base import Source
from xpuperf.readers.formats import console
from xpuperf.readers.formats.blocks import blocks
from xpuperf.readers.formats.console import no_ansi

READER = "tqdm"
"""The name of the reader of these bars (:mod:`xpuperf.readers.formats.tqdm`)."""
WINDOW = 20
"""A row spans at least this many clock resolutions (20 s for ``[mm:ss]``)."""
SHORT = 5
"""A bar stretch shorter than a window is timed by its clock when it spans this many."""
WINDOWED, SHORTER, RATE, WHOLE = range(4)
"""How a row was timed: a full window, a short stretch by its clock, by the rate, from the bar's
start (a bar seen only at its end)."""
_BRACKET = re.compile(
    r"\[(?P<el>\d{1,9}:\d\d(?::\d\d)?)(?:<[\d:?]{1,16})?, {0,4}"  # [elapsed<remaining,
    r"(?P<rate>\?|\d{1,12}(?:\.\d{1,12})?[kMGTPEZY]?)(?P<inv>s/)? ?"
    r"(?P<unit>[A-Za-z_][^\s,\]/]{0,30})"  # the postfix and ']' after it are not needed
)
"""tqdm's right part, found first: it starts with a literal ``[``, so the search is linear."""
_COUNTER = re.compile(
    r"(?P<n>\d{1,15}(?:\.\d{1,3})?[kMGTPEZY]?)(?:/(?P<total>\d{1,15}(?:\.\d{1,3})?[kMGTPEZY]?|\?)"
    r"|(?P<unit0>[A-Za-z_]\w{0,30}))?"
)
"""``450/1000``, ``1.20k/3.00k``, ``0/?``, ``150it``: the word before the bracket (fullmatch)."""
_PCT = re.compile(r"\d{1,3}%")
_ULTRA = re.compile(
    r"(?:(?P<pct>\d{1,3})% )?[━─╸]{4,40} (?P<n>\d{1,15})(?:/(?P<total>\d{1,15}))? {1,3}"
    r"(?:(?P<rate>\d{1,12}(?:\.\d{1,3})?)(?P<scale>[KMG])?(?P<unit>[A-Za-z_]\w{0,30})/s {1,3})?"
    r"(?P<el>\d{1,9}(?:\.\d)?s|\d{1,9}:\d\d(?::\d\d)?)(?:<\S{1,16})?"
)
_SCALE = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "Z": 1e21,
          "Y": 1e24}  # fmt: skip
_LOOKS = re.compile(r"%\||\[\d{1,9}:\d\d[<,]|% [━─╸]{4}")
"""A piece holding this and no update that parses is a cut bar."""


class Update(NamedTuple):
    """One display of a bar: ``n`` and ``total`` (None unknown) in units, ``elapsed_s`` and its
    resolution ``res_s``, ``rate_s`` seconds per unit as displayed (NaN: ``?``), ``unit``,
    ``scaled`` (``unit_scale`` suffix on n), ``desc`` (the text before the bar, stripped)."""

    desc: str
    n: float
    total: float | None
    elapsed_s: float
    res_s: float
    rate_s: float
    unit: str
    scaled: bool


def _num(text: str) -> tuple[float, bool]:
    f = _SCALE.get(text[-1])
    return (float(text[:-1]) * f, True) if f else (float(text), False)


def _clock(text: str) -> tuple[float, float]:
    """``01:23`` / ``1:02:03`` / ``37.5s`` → (seconds, resolution)."""
    if text.endswith("s"):
        return float(text[:-1]), 0.1 if "." in text else 1.0
    secs = 0
    for part in text.split(":"):
        secs = secs * 60 + int(part)
    return float(secs), 1.0


def _desc(text: str) -> str:
    """The description before a bar: ``'Epoch 3: '`` and ``'Epoch 8: :'`` → ``'Epoch …'``."""
    return text.strip().rstrip(":").rstrip().rstrip(":").strip()


def parse(text: str) -> list[Update]:
    """The bar updates in one ``\\r`` piece (ANSI codes removed), in order; [] when none."""
    if "[" in text:
        return _parse_std(text)
    out: list[Update] = []
    at = 0
    for m in _ULTRA.finditer(text):
        n = float(m.group("n"))
        total = float(m.group("total")) if m.group("total") else None
        el, res = _clock(m.group("el"))
        rate = m.group("rate")
        r = float(rate) * _SCALE.get(m.group("scale") or "", 1.0) if rate else math.nan
        rate_s = 1.0 / r if r > 0 else math.nan
        unit = m.group("unit") or "it"
        out.append(Update(_desc(text[at : m.start()]), n, total, el, res, rate_s, unit, False))
        at = m.end()
    return out


def _parse_std(text: str) -> list[Update]:
    """tqdm's own layout: find each ``[elapsed…`` block, then read the counter, percentage and
    bar before it from right to left (positions only: no search over the text before it)."""
    out: list[Update] = []
    at = 0
    for m in _BRACKET.finditer(text):
        end = m.start()
        while end > at and text[end - 1] == " ":
            end -= 1
        word = max(text.rfind(" ", at, end), text.rfind("|", at, end), at - 1) + 1
        c = _COUNTER.fullmatch(text, word, end)
        if c is None:
            continue
        pct, left = _left_of_counter(text, at, c.start())
        if pct is None and c.group("total") is None and not c.group("unit0"):
            continue  # '123 [00:01, …]' without '/total' or a unit: not tqdm's shape
        n, scaled = _num(c.group("n"))
        total = c.group("total")
        tot = _num(total)[0] if total and total != "?" else None
        el, res = _clock(m.group("el"))
        rate = m.group("rate")
        r = _num(rate)[0] if rate != "?" else math.nan
        rate_s = r if m.group("inv") else (1.0 / r if r > 0 else math.nan)
        desc = _desc(text[at:left])
        out.append(Update(desc, n, tot, el, res, rate_s, m.group("unit"), scaled))
        at = m.end()
    return out


def _left_of_counter(text: str, at: int, end: int) -> tuple[str | None, int]:
    """(the percentage or None, where the description ends) for the text ``text[at:end]`` left of
    the counter: ``'Epoch 3:  45%|█▌   | '``, ``'Epoch 3:  45% '`` (ncols=0), ``'Training: |   | '``
    (no total, Lightning 2.x), ``'Epoch 8: : '`` (no total)."""
    while end > at and text[end - 1] == " ":
        end -= 1
    if end > at and text[end - 1] == "|":
        opening = text.rfind("|", at, end - 1)
        if opening >= 0:
            end = opening
    if end <= at or text[end - 1] != "%":
        return None, end
    word = max(text.rfind(" ", at, end), text.rfind("|", at, end), at - 1) + 1
    if _PCT.fullmatch(text, word, end) is None:
        return None, end
    return text[word : end - 1], word


@dataclass
class Point:
    """One display of a training bar: counter, elapsed s and its resolution, the displayed s per
    step, the physical line, the total."""

    n: float
    e: float
    res: float
    rate_s: float
    line: int
    total: float | None


@dataclass
class Bar:
    """One bar (a description shape, in one process) turned into rows ``(line, step, step_time_s,
    how)``: a row is Δelapsed / Δn between displays :data:`WINDOW` clock ticks apart or more; at
    the end of a stretch (the bar restarts, another bar ran in between, the log ends) the shorter
    rest joins the last window; a stretch without a full window is one row by its clock when it
    spans :data:`SHORT` ticks, else by the displayed rate. ``step`` = the counter + ``offset``
    (a restarted bar continues from the last row)."""

    name: str
    offset: float = 0.0  # step = offset + the bar's counter
    restart_at: float | None = None  # the last step before the open bar restarted
    first: Point | None = None
    last: Point | None = None
    win: Point | None = None
    pending: tuple[int, float, float, float] | None = None  # a full window: line, n, dn, de
    rows: list[tuple[int, float, float, int]] = field(default_factory=list)
    timed_s: float = 0.0
    untimed: float = 0.0
    gap: bool = False  # another bar ran since this bar last moved
    moved: int = 0  # counter values shown since the bar (re)started
    res: float = 1.0  # the clock's resolution, s (of the last display)

    def update(self, p: Point, interlude: bool) -> bool:
        """Take one display; False when it goes backwards (another process's bar?)."""
        last = self.last
        self.gap |= interlude
        if last is None:
            self._start(p)
            self.moved = 1
        elif p.e < last.e or (p.n < last.n and p.e <= p.res) or self._ended(p):  # a new bar
            self.flush()
            prev = self.rows[-1][1] if self.rows else self.offset + last.n
            self.offset, self.restart_at = prev - p.n, prev
            self._start(p)
            self.moved = 1
        elif p.n < last.n:
            return False
        elif p.n == last.n:  # the same step redrawn (postfix set, after a log line)
            pass
        elif self.gap:  # another bar ran since the last update: do not time across it
            self.untimed += p.n - last.n
            self.flush()
            self.restart_at = None
            self._start(p)
            self.moved += 1
        else:
            self.last = p
            self.moved += 1
            win = self.win
            assert win is not None
            if p.e - win.e >= WINDOW * max(p.res, win.res):
                if self.pending is not None:
                    self._emit(*self.pending)
                self.pending = (p.line, p.n, p.n - win.n, p.e - win.e)
                self.win = p
        return True

    def _ended(self, p: Point) -> bool:
        """The open bar had finished (n = total) or ``p`` has another total: ``p`` is a new bar."""
        last = self.last
        assert last is not None
        if last.total is None or p.n == last.n:
            return False
        return last.n >= last.total or (p.total is not None and p.total != last.total)

    def _start(self, p: Point) -> None:
        self.first = self.last = self.win = p
        self.res = p.res
        self.gap = False

    def _emit(self, line: int, n: float, dn: float, de: float, how: int = WINDOWED) -> None:
        self.rows.append((line, self.offset + n, de / dn, how))
        self.timed_s += de

    def flush(self) -> None:
        """Close the open stretch: emit its windows (the last short one merged)."""
        first, last, win = self.first, self.last, self.win
        if first is None or last is None or win is None:
            return
        if self.pending is not None:
            _, _, dn, de = self.pending
            self._emit(last.line, last.n, dn + last.n - win.n, de + last.e - win.e)
        elif last.n > first.n:
            self._short(last, last.n - first.n, last.e - first.e)
        elif last.n == last.total and last.n > 0 and last.e > 0 and self.moved == 1:
            self.offset = self.restart_at or 0.0  # a finished bar seen only at its end
            self._short(last, last.n, last.e, WHOLE)
        self.first = self.last = self.win = self.pending = None

    def _short(self, p: Point, dn: float, de: float, how: int = SHORTER) -> None:
        if de >= SHORT * p.res:
            self._emit(p.line, p.n, dn, de, how)
        elif math.isfinite(p.rate_s) and p.rate_s > 0:
            self._emit(p.line, p.n, dn, dn * p.rate_s, RATE)


def looks_cut(text: str) -> bool:
    """Whether a piece in which :func:`parse` found nothing still looks like a bar (a cut line)."""
    return _LOOKS.search(text) is not None


def pieces(src: Source, bad: list[int] | None = None) -> Iterator[tuple[int, int | None, str]]:
    """Stream ``(line_number, rank_tag, text)`` for every non-blank ``\\r`` piece of a file.

    ``text`` is decoded (UTF-8, else GB18030; lines that neither decodes are appended to ``bad``),
    ANSI codes removed; a launcher prefix (``[rank3]:``, ``3: `` …) is left in ``text`` — split it
    off with :func:`~xpuperf.readers.formats.console.clean` on the text before the bar. The
    launcher tags a physical line once, so ``rank_tag`` is the tag of the line's first piece for
    all its pieces. A corrupt gzip stream ends the iteration (its line goes to ``bad``).
    """
    for blk in blocks(src):
        if blk.data is None:
            if bad is not None:
                bad.append(blk.first_line)
            return
        data = blk.data.removeprefix(b"\xef\xbb\xbf") if blk.first_line == 1 else blk.data
        lines = data.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()
        for number, raw in enumerate(lines, blk.first_line):
            text, ok = console.decode(raw)
            if not ok and bad is not None:
                bad.append(number)
            text = no_ansi(text)
            tag = console.clean(text.split("\r", 1)[0])[0] if text[:1] not in ("\r", "") else None
            for piece in text.split("\r"):
                if piece.strip():
                    yield number, tag, piece


def bar_texts(src: Source, want: set[int]) -> dict[int, str]:
    """The last bar update of each line in ``want`` (for ``formats --explain``: such a line is
    many ``\\r`` pieces, and a bare bar cleans to nothing)."""
    out: dict[int, str] = {}
    last = max(want, default=0)
    for n, _tag, text in pieces(src):
        if n > last:
            break
        if n in want and parse(text):
            out[n] = text.strip()
    return out
