"""A draft ``--pattern`` for a log no format recognises, built from its most frequent numeric line.

:func:`draft` takes the first lines of a file (console noise already removed) and:

1. gives each line a *shape*: date-times (:data:`~xpuperf.readers.formats.pattern.TS`) and numbers
   replaced by placeholders, blank runs collapsed; the most frequent shape among lines with at
   least two numbers is the step line (ties: more numbers, then the earlier line);
2. turns its first line into a pattern: the date-time becomes ``{timestamp}``; each number becomes
   ``{_}``, except
   - ``{step}``: an integer slot that never decreases from one such line to the next and
     whose rises are mostly (at least half) by 1, else by one positive stride;
   - ``{step_time_<unit>}``: the first number followed by a time unit (``812.5 ms/it``, ``0.36s``)
     or following a ``time`` word (``time: 0.3636``, seconds);
   - ``{samples_per_s}``: a number followed by ``img/s``, ``samples/s``, ``images/sec`` …;
     ``{tokens_per_s}``: followed by ``tok/s``, ``tokens/s`` or preceded by ``tps``;
   - ``{mfu}``: after the word ``mfu`` (``{mfu}%`` when a ``%`` follows).

The result is a draft the user edits: it guesses, and says so.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass

from xpuperf.readers.formats.pattern import TS

_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_TS = re.compile(TS)
_TIME_UNIT = re.compile(r"\s?(ms|msec|s|sec|us)(?![a-zA-Z])")
_TIME_WORD = re.compile(r"time\w*\s*[:=]?\s*$", re.IGNORECASE)
_SAMPLES_RATE = re.compile(
    r"\s?(?:img|imgs|images|samples?|seqs?|sequences|examples)\s?/\s?s(?:ec)?\b", re.IGNORECASE
)
_TOKENS_RATE = re.compile(r"\s?(?:tok|tokens?)\s?/\s?s(?:ec)?\b", re.IGNORECASE)
_TPS_WORD = re.compile(r"\b(?:tps|tokens_per_s\w*)\s*[:=]?\s*$", re.IGNORECASE)
_MFU_WORD = re.compile(r"\bmfu\s*[:=]?\s*$", re.IGNORECASE)
_MIN_NUMBERS = 2


@dataclass
class Draft:
    """A suggested pattern.

    Attributes:
        pattern: the draft ``--pattern`` text.
        line: 1-based line it was built from (in the list given to :func:`draft`).
        count: lines of the same shape.
        guessed: what was guessed (``{step}``, ``{step_time_ms}`` …), for the message.
    """

    pattern: str
    line: int
    count: int
    guessed: list[str]


def _shape(text: str) -> tuple[str, int]:
    t = _TS.sub("\x00", text)
    t, n = _NUMBER.subn("\x01", t)
    return " ".join(t.split()), n


def _numbers(text: str) -> list[re.Match[str]]:
    """The number matches of ``text`` outside its first date-time."""
    ts = _TS.search(text)
    out = []
    for m in _NUMBER.finditer(text):
        if ts and m.start() < ts.end() and m.end() > ts.start():
            continue
        out.append(m)
    return out


def _step_slot(rows: list[list[str]]) -> int | None:
    """The slot that never decreases and grows by 1 in most of its rises (lines of several ranks
    repeat a step: equal values are allowed), else by one positive stride."""
    best: tuple[bool, int, int] | None = None  # (stride is 1, lines with the stride, -slot)
    for i in range(min(len(r) for r in rows)):
        try:
            vals = [int(r[i].replace(",", "")) for r in rows]
        except ValueError:
            continue
        diffs = [b - a for a, b in itertools.pairwise(vals)]
        grow = [d for d in diffs if d > 0]
        if not grow or any(d < 0 for d in diffs):
            continue
        stride, count = Counter(grow).most_common(1)[0]
        key = (stride == 1, count, -i)
        if 2 * count >= len(grow) and (best is None or key > best):
            best = key
    return None if best is None else -best[2]


def _role(text: str, m: re.Match[str], used: set[str]) -> str | None:
    """The field a number most likely is, from the text around it (None: ``{_}``)."""
    before, after = text[: m.start()], text[m.end() :]
    if "mfu" not in used and _MFU_WORD.search(before):
        return "mfu%" if after.startswith("%") else "mfu"
    if "samples_per_s" not in used and _SAMPLES_RATE.match(after):
        return "samples_per_s"
    if "tokens_per_s" not in used and (_TOKENS_RATE.match(after) or _TPS_WORD.search(before)):
        return "tokens_per_s"
    if any(u.startswith("step_time") for u in used):
        return None
    unit = _TIME_UNIT.match(after)
    if unit:
        u = {"msec": "ms", "sec": "s"}.get(unit.group(1), unit.group(1))
        return f"step_time_{u}"
    if _TIME_WORD.search(before) and "data" not in before[-16:].lower():
        return "step_time_s"
    return None


def _literal(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def draft(lines: list[str]) -> Draft | None:
    """A draft pattern from ``lines`` (cleaned text), or None when no line holds two numbers."""
    shapes: dict[str, list[int]] = {}
    nums: dict[str, int] = {}
    for i, text in enumerate(lines):
        shape, n = _shape(text)
        if n >= _MIN_NUMBERS:
            shapes.setdefault(shape, []).append(i)
            nums[shape] = n
    if not shapes:
        return None
    shape = max(shapes, key=lambda s: (len(shapes[s]), nums[s], -shapes[s][0]))
    idx = shapes[shape]
    text = " ".join(lines[idx[0]].split())
    found = _numbers(text)
    rows = [[m.group(0) for m in _numbers(" ".join(lines[i].split()))] for i in idx]
    step = _step_slot(rows) if len(rows) > 1 else None
    used: set[str] = set()
    out, pos, guessed = [], 0, []
    ts = _TS.search(text)
    for k, m in enumerate(found):
        if ts and pos <= ts.start() < m.start():
            out += [_literal(text[pos : ts.start()]), "{timestamp}"]
            pos = ts.end()
            guessed.append("{timestamp}")
        role = "step" if k == step else _role(text, m, used)
        out.append(_literal(text[pos : m.start()]))
        if role is None:
            out.append("{_}")
        else:
            name = role.rstrip("%")
            used.add(name)
            out.append(f"{{{name}}}")
            guessed.append(f"{{{name}}}")
        pos = m.end()
    if ts and pos <= ts.start():
        out += [_literal(text[pos : ts.start()]), "{timestamp}"]
        pos = ts.end()
        guessed.append("{timestamp}")
    out.append(_literal(text[pos:]))
    pattern = "".join(out).strip()
    return Draft(pattern, idx[0] + 1, len(idx), guessed)
