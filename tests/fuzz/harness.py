"""Shared fuzz machinery: seeds (the real samples), byte mutations, the property check.

A mutation turns the bytes of a real sample into hostile input: truncation at a position class
(mid-number, mid-line, at a line end, inside a multi-byte character), byte flips, duplicated,
deleted and shuffled lines, CRLF/CR line endings, invalid UTF-8, NUL bytes, hostile numbers
(huge, tiny, NaN, inf, negative, zero), long lines, a BOM, random bytes, lines spliced from
another sample, an empty file. :func:`check` runs one target under a hard per-example deadline and
accepts only a valid result or the project's own error.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
SAMPLES = ROOT / "sample_logs"

LONG = os.environ.get("XPUPERF_FUZZ", "").lower() == "long"
PROFILE = "xpuperf-fuzz-long" if LONG else "xpuperf-fuzz-ci"
HANG_S = float(os.environ.get("XPUPERF_FUZZ_HANG_S", "30"))
"""Hard per-example deadline: an example running longer is a hang (a failure)."""

COUNTS: dict[str, Counter] = defaultdict(Counter)
"""Per target: examples that returned a valid result (``ok``) or raised the project's error."""


def save_counts() -> None:
    """Write :data:`COUNTS` to ``XPUPERF_FUZZ_REPORT`` (JSON) when that variable is set."""
    out = os.environ.get("XPUPERF_FUZZ_REPORT")
    if out:
        tmp = Path(out + ".tmp")
        tmp.write_text(json.dumps({t: dict(c) for t, c in sorted(COUNTS.items())}, indent=1))
        tmp.replace(out)


def fuzz_settings(**kw: Any) -> settings:
    """The selected profile (registered in conftest.py), optionally overridden."""
    return settings(settings.get_profile(PROFILE), **kw)


# --- seeds -----------------------------------------------------------------------------------


def read_seeds(*dirs: str, pattern: str = "*") -> list[tuple[str, bytes]]:
    """(file name, bytes) of every file under ``tests/data/<dir>`` except README.md."""
    out = []
    for d in dirs:
        base = DATA / d if (DATA / d).exists() else ROOT / d
        for p in sorted(base.glob(pattern)):
            if p.is_file() and p.name != "README.md":
                out.append((p.name, p.read_bytes()))
    assert out, f"no seeds in {dirs}"
    return out


# --- mutations -------------------------------------------------------------------------------

HOSTILE_NUMBERS = [
    b"0", b"-0", b"-0.0", b"-1", b"-5e3", b"1e308", b"1e309", b"-1e309", b"2e-320", b"1e-300",
    b"nan", b"NaN", b"-nan", b"inf", b"-inf", b"Infinity", b"-Infinity", b"9" * 40,
    b"18446744073709551616", b"2147483648", b"-2147483649", b"9223372036854775808",
    b"1" + b"0" * 400, b"0x1F", b"1_000", b"1,5", b"", b"1e", b".", b"-", b"+1", b"\xd9\xa3",
]  # fmt: skip
BAD_UTF8 = [b"\xff", b"\xfe\xff", b"\xc0\xaf", b"\x80", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"]
_NUM = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _positions(data: bytes, pred: Callable[[int], bool]) -> list[int]:
    return [i for i in range(1, len(data)) if pred(i)]


def _cut(draw, data: bytes, where: list[int]) -> bytes:
    return data[: draw(st.sampled_from(where))] if where else data


def trunc_mid_number(draw, data: bytes) -> bytes:
    return _cut(draw, data, _positions(data, lambda i: (data[i - 1 : i + 1]).isdigit()))


def trunc_mid_line(draw, data: bytes) -> bytes:
    return _cut(draw, data, _positions(data, lambda i: data[i] != 10 and data[i - 1] != 10))


def trunc_line_end(draw, data: bytes) -> bytes:
    return _cut(draw, data, _positions(data, lambda i: data[i - 1] == 10))


def trunc_multibyte(draw, data: bytes) -> bytes:
    where = _positions(data, lambda i: 0x80 <= data[i] <= 0xBF and data[i - 1] >= 0x80)
    if not where:  # plant a multi-byte character ("µs", 3-byte "…", 4-byte emoji) first
        at = draw(st.integers(0, len(data)))
        ch = draw(st.sampled_from(["µ", "…", "\U0001f680"])).encode()
        data = data[:at] + ch + data[at:]
        where = list(range(at + 1, at + len(ch)))
    return _cut(draw, data, where)


def flip(draw, data: bytes) -> bytes:
    if not data:
        return data
    i = draw(st.integers(0, len(data) - 1))
    return data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1 :]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def dup_line(draw, data: bytes) -> bytes:
    ls = _lines(data)
    i = draw(st.integers(0, len(ls) - 1))
    k = draw(st.sampled_from([1, 2, 50]))
    return b"".join(ls[: i + 1] + [ls[i]] * k + ls[i + 1 :])


def del_line(draw, data: bytes) -> bytes:
    ls = _lines(data)
    i = draw(st.integers(0, len(ls) - 1))
    return b"".join(ls[:i] + ls[i + 1 :])


def shuffle_lines(draw, data: bytes) -> bytes:
    ls = _lines(data)
    a = draw(st.integers(0, len(ls) - 1))
    b = min(len(ls), a + draw(st.integers(2, 200)))
    part = ls[a:b]
    random.Random(draw(st.integers(0, 2**32))).shuffle(part)
    return b"".join(ls[:a] + part + ls[b:])


def crlf(draw, data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def cr_only(draw, data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r")


def _insert(draw, data: bytes, what: bytes) -> bytes:
    at = draw(st.integers(0, len(data)))
    return data[:at] + what + data[at:]


def bad_utf8(draw, data: bytes) -> bytes:
    return _insert(draw, data, draw(st.sampled_from(BAD_UTF8)))


def nul_bytes(draw, data: bytes) -> bytes:
    return _insert(draw, data, b"\x00" * draw(st.sampled_from([1, 7, 9000])))


def random_bytes(draw, data: bytes) -> bytes:
    return _insert(draw, data, draw(st.binary(min_size=1, max_size=64)))


def long_line(draw, data: bytes) -> bytes:
    unit = draw(st.sampled_from([b"x", b"9", b"[", b"{", b'"', b",", b" ", b"\t", b"\xe2\x80\xa6"]))
    return _insert(draw, data, unit * draw(st.integers(1000, 300_000)))


def hostile_number(draw, data: bytes) -> bytes:
    found = list(_NUM.finditer(data))
    if not found:
        return data
    repl = draw(st.sampled_from(HOSTILE_NUMBERS))
    if draw(st.booleans()):  # one number
        m = draw(st.sampled_from(found))
        return data[: m.start()] + repl + data[m.end() :]
    k = draw(st.integers(2, 7))  # every k-th number (a whole column, roughly)
    count = iter(range(len(found)))
    return _NUM.sub(lambda m: repl if next(count) % k == 0 else m[0], data)


def bom(draw, data: bytes) -> bytes:
    return b"\xef\xbb\xbf" + data


def empty(draw, data: bytes) -> bytes:
    return draw(st.sampled_from([b"", b"\n", b" \r\n\t\n", b"\x00"]))


MUTATIONS: tuple[Callable, ...] = (
    trunc_mid_number, trunc_mid_line, trunc_line_end, trunc_multibyte, flip, flip, dup_line,
    del_line, shuffle_lines, crlf, cr_only, bad_utf8, nul_bytes, random_bytes, long_line,
    hostile_number, hostile_number, bom, empty,
)  # fmt: skip


@st.composite
def mutated(draw, seeds: list[tuple[str, bytes]], max_ops: int = 4) -> tuple[str, bytes]:
    """(seed name, bytes) of one seed after 0..max_ops mutations, sometimes spliced with lines
    of another seed."""
    name, data = draw(st.sampled_from(seeds))
    if len(seeds) > 1 and draw(st.integers(0, 9)) == 0:
        _, other = draw(st.sampled_from(seeds))
        ls, lo = _lines(data), _lines(other)
        a, b = draw(st.integers(0, len(ls))), draw(st.integers(0, len(lo)))
        data = b"".join(ls[:a] + lo[b : b + draw(st.integers(1, 40))] + ls[a:])
    for op in draw(st.lists(st.sampled_from(MUTATIONS), max_size=max_ops)):
        data = op(draw, data)
    return name, data


# --- the property ----------------------------------------------------------------------------


class Hang(BaseException):
    """Raised by the deadline alarm (a BaseException so no ``except Exception`` swallows it)."""


@contextmanager
def hard_deadline(seconds: float = HANG_S) -> Iterator[None]:
    """Raise :class:`Hang` in the main thread when the block runs longer than ``seconds``."""

    def _alarm(_sig, _frame):
        raise Hang

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def check(target: str, fn: Callable[..., Any], *args: Any, expect: tuple = (), **kw: Any) -> Any:
    """Run ``fn(*args, **kw)``: return its result, or None when it raised one of ``expect``
    (whose message must be one non-empty line). Anything else — another exception, a hang past
    :data:`HANG_S` — fails the example."""
    try:
        with hard_deadline():
            try:
                out = fn(*args, **kw)
            except expect as e:
                msg = str(e)
                assert msg.strip(), "empty message"
                assert "\n" not in msg, repr(msg)
                assert "\r" not in msg, repr(msg)
                COUNTS[target]["error"] += 1
                _tally(target)
                return None
    except Hang:
        raise AssertionError(f"{target}: no answer within {HANG_S} s (hang)") from None
    COUNTS[target]["ok"] += 1
    _tally(target)
    return out


def _tally(target: str) -> None:
    if LONG and sum(COUNTS[target].values()) % 250 == 0:
        save_counts()  # progress of a long run, kept if the run is stopped
