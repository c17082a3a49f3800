"""The Megatron-LM block fast path's scan: one compiled regex per block, and bulk conversion.

:data:`TOKENS` finds, in one ``findall`` over a block of whole lines, every standard step line
(its three numbers) and every other line the per-line rules of :mod:`.megatron` act on; what it
guarantees and where it stops is in its docstring. :func:`numbers` turns the step tokens into
columns with C loops only.

Speed (benchmarks/text_logs.py; docs/performance.md): the scan is most of the parse time, and most
of the scan is spent on the step lines, so their pattern avoids sre's slow opcodes: a two-byte
negated class such as ``[^|\n]`` is written as its complement's ranges, which sre compiles to one
bitmap lookup per byte instead of two comparisons; the elapsed time is ``([\\d.]++)``, checked by
``float`` (see :data:`NUM`); the launcher prefix is a possessive optional group, not an atomic one.
Together with smaller blocks these made the one-core parse about 1.75× faster than the 4 MiB /
exact-pattern version; every change keeps the tokens identical (tests compare with the line path).
"""

from __future__ import annotations

import operator
import re

import numpy as np

_WS = rb"[\t\x0b\x0c\x1c-\x1f ]"
_PFX = (
    rb"(?:\[(?:rank|default)\d{1,9}\]:" + _WS + rb"?|\[\d+,\d{1,9}\]<std(?:out|err)>:" + _WS
    + rb"?|(?: " + _WS + rb"{0,3})?\d{1,5}: )?+"
)  # fmt: skip
"""A launcher prefix as :func:`console.clean` removes it (same digit limits): possessive, so a
line that has one is never also tried without it (``?+`` is a little faster than ``(?>…?)``)."""
_NOT_BAR = rb"[\x00-\x09\x0b-\x7b\x7d-\xff]"  # [^|\n] as a bitmap: one lookup per byte, not two
_NOT_BRACKET = rb"[\x00-\x09\x0b-\x5c\x5e-\xff]"  # [^\]\n], likewise
NUM = rb"(\d+(?:\.\d*)?|\.\d+)"
r"""A number ``float`` reads. The scan uses ``([\d.]++)`` instead (faster); a run of digits and
dots is a float exactly when it matches this, and ``float`` raises otherwise, which sends the block
to the scan with this group (:data:`TOKENS_EXACT`): the two scans then yield the same tokens."""
_A = (  # possessive: what a run consumes can never start the next item, so nothing backtracks
    rb"iteration(?:W)++(\d++)W*+/W*+\d++W*+\|_N_*+\|W*+elapsed time per iteration \(ms\):W*+"
    rb"_NUM_W*+\|_N_*+\|W*+global batch size:W*+(\d++)W*+\|"
)
_TIMERS = (  # timer lines of a (min, max) / max block (as timers.MINMAX: words joined by spaces,
    # ending at a non-blank; possessive, so a line that is no timer line fails without trying
    # every shorter name: 13 % of the scan on the benchmark)
    rb"(?:\nPFX(?:W)+[A-Za-z][\w\-]*+(?: ++[\w\-]++)*+W*+\.{2,}:[^\n]*)"
)
_MINMAX = rb"(?:\(min, max\)|max)W*+time across ranks \(ms\)[^\n]*+" + _TIMERS + rb"++"
"""A ``(min, max) time across ranks (ms):`` or ``max time across ranks (ms):`` head
(``--timing-log-option minmax`` / ``max``) and its timer lines."""
_O = (  # each alternative starts with a distinct literal, so a noise line fails at once; the
    # timer lines after another line go with it: the line path opens a timer block on any line
    # holding 'time across ranks (ms)' (not an iteration line), and replays them in order
    rb"iteration[^\n]*+" + _TIMERS + rb"*+"  # other iteration lines (variants, cut lines)
    rb"|samples/sec[^\n]*+" + _TIMERS + rb"*+"  # GPT-NeoX: 'samples/sec: X | iteration …'
    rb"|time \(ms\)[^\n]*+" + _TIMERS + rb"*+"  # Megatron / NeoX timers
    rb"|(?:\[_B_*+\]W*+)++(?:(?:iteration|samples/sec|(?:rank=\d+W*+)?time \(ms\))[^\n]*+"
    + _TIMERS
    + rb"*+|"
    + _MINMAX
    + rb")"
    rb"|" + _MINMAX  # [date] [Rank 0] … before any of them, or a timer block alone
)


def _tokens(num: bytes, lead: bytes = b"\n") -> re.Pattern[bytes]:
    pattern = lead + rb"PFX(?:W*+" + _A + rb"|(W*+(?:" + _O + rb")))"
    for key, value in ((b"_NUM_", num), (b"_N_", _NOT_BAR), (b"_B_", _NOT_BRACKET), (b"PFX", _PFX)):
        pattern = pattern.replace(key, value)
    return re.compile(pattern.replace(b"W", _WS))


TOKENS = _tokens(rb"([\d.]++)")
"""Every line of a block that the line path acts on, in one scan. A standard step line
(:data:`.megatron.FAST` after a launcher prefix) gives groups 1–3; any other line that may matter
(the last group: its text after the prefix) goes through the line path. What the fast path sees, the
line path would also act on; the converse holds for lines where, after the launcher prefix and
blanks, the step line, timer line or ``(min, max)`` head starts the line or follows only
``[…]`` groups (a logging prefix) and ``rank=N``. Lines shaped otherwise (e.g. ``time (ms)`` after
free text, or a step line after free text and a ``|``) are seen only by the line path: such logs
need ``fast=False``."""
TOKENS_EXACT = _tokens(NUM)
""":data:`TOKENS` with the exact number group (see :data:`NUM`), for a block where ``float``
rejected a number."""
FIRST = {False: _tokens(rb"([\d.]++)", b""), True: _tokens(NUM, b"")}
""":data:`TOKENS` without its leading newline, matched at the block's start: the first line's
token, so that the block needs no newline put in front of it (a copy of the block)."""
GET = [operator.itemgetter(j) for j in range(4)]
"""``GET[j](token)``: group ``j + 1`` of a :data:`TOKENS` match."""


def numbers(a: list[tuple[bytes, ...]]) -> np.ndarray:
    """Step, step time (s) and global batch size of standard step tokens, shape ``(3, len(a))``.
    C loops only (``float`` over ``map``); a global batch size that does not change (the usual
    case) is converted once. Raises ValueError when ``float`` rejects a value."""
    n = len(a)
    cols = np.empty((3, n))
    if n:
        cols[0] = np.fromiter(map(float, map(GET[0], a)), float, n)
        cols[1] = np.fromiter(map(float, map(GET[1], a)), float, n)
        cols[1] /= 1000.0
        gbs = list(map(GET[2], a))
        cols[2] = (
            float(gbs[0]) if gbs.count(gbs[0]) == n else np.fromiter(map(float, gbs), float, n)
        )
    return cols
