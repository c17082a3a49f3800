"""Megatron-LM (NVIDIA, 2019–2025), its forks (Megatron-LLM, Megatron-DeepSpeed) and GPT-NeoX.

Step line (printed by the last pipeline rank, one per ``--log-interval`` iterations)::

     iteration      182/  250000 | consumed samples:       186368 | elapsed time per iteration
     (ms): 126995.3 | learning rate: 1.365E-05 | global batch size:  1024 | lm loss: 2.38E+00 | …

GPT-NeoX puts ``samples/sec: 6.922 |`` in front and has no global batch size. Newer Megatron-LM
prefixes ``[2024-05-01 10:00:00]``.

Columns produced (one row per logged iteration, rank 0 — the line describes the whole job):

==============  ============================================================================
column          from
==============  ============================================================================
step            ``iteration N``
step_time_s     ``elapsed time per iteration (ms)`` / 1000 (mean over the log interval)
samples         ``global batch size`` (GLOBAL, not per card), else ``samples/sec`` × time
t_end_s         the ``[date time]`` prefix when present
phases          timer lines (:mod:`~xpuperf.readers.formats.timers`): Megatron-LM style timers
                follow their iteration line, NeoX/DeepSpeed style timers precede it
==============  ============================================================================

Reading: the file streams in 512 KiB blocks of whole lines (:mod:`.blocks`). A block that is ASCII
without ANSI codes, carriage returns or tqdm bars takes the fast path: one regex scan
(:data:`.megatron_scan.TOKENS`) yields the standard step lines' numbers in bulk and the other
lines that matter, which go through the per-line rules in order; other blocks take the per-line
path. Both give the same rows (tests compare them). A large uncompressed file is parsed in byte
ranges on several cores (:mod:`.ranges`). Memory: one block plus 32 bytes per kept row (step, step
time, samples, line number).

Errors: :class:`~xpuperf.errors.InputError` when no iteration line parses. A line that mentions
``iteration N/`` but lacks the elapsed time (e.g. cut at the end of an excerpt) is skipped with a
warning.
"""

from __future__ import annotations

import functools
import statistics

import numpy as np

from xpuperf.readers.base import Source
from xpuperf.readers.formats import console, ranges, timers
from xpuperf.readers.formats.blocks import BLOCK_BYTES, blocks
from xpuperf.readers.formats.megatron_lines import (
    ELAPSED,
    FAST,
    LINE,
    LOG_PREFIX,
    RANK_OF,
    TPS,
    first_number,
    job_tokens,
    scan_facts,
    step_match,
    tokens_rate,
    world_of,
)
from xpuperf.readers.formats.megatron_lines import fields as _fields
from xpuperf.readers.formats.megatron_resolve import Resolver
from xpuperf.readers.formats.megatron_scan import FIRST, GET, TOKENS, TOKENS_EXACT, numbers
from xpuperf.readers.formats.table import (
    NAN,
    Rows,
    TextTable,
    as_float,
    job_level_note,
    near_int,
)

NAME = "megatron"
EXAMPLE = (
    " iteration      182/  250000 | consumed samples: 186368 | elapsed time per iteration (ms): "
    "126995.3 | global batch size:  1024 | lm loss: 2.382640E+00 |"
)
BROKEN = "an 'iteration N/ M |' line without 'elapsed time per iteration (ms)' (cut line?)"
NOT_A_TIME = "'elapsed time per iteration (ms)' is not a number (nan or text)"
_ELAPSED = ELAPSED.encode()


def sniff(lines: list[str]) -> bool:
    """Any line holds ``iteration N/ M |`` (behind a logger prefix: with the elapsed time)."""
    return any("iteration" in x and step_match(x) for x in lines)


class _Parser:
    """The per-line state machine (the reference) plus the block fast path."""

    def __init__(self) -> None:
        self.rows = Rows()
        self.bad: list[int] = []
        self.pending: dict[str, float] = {}  # NeoX/DeepSpeed timers, for the next iteration line
        self.pending_kind = ""
        self.spread: list[float] = []  # max/min of Megatron (min, max) timers
        self.in_minmax = False
        self.gbs_seen = False
        self.done: list[tuple[int, int, int, int]] = []  # fast blocks: offset, length, line, row
        self.next_line = 1  # number of the line after the last one parsed
        # cells for the row before this byte range (timers after the step line that ended the
        # previous range), later values over earlier ones as on one row: applied to that row
        # when the ranges are merged (_merge); one dict, so memory stays bounded
        self.orphans: dict[str, float] = {}
        self.facts: dict[str, int] = {}  # world_size, seq_length (megatron_lines.scan_facts)

    def clean(self) -> bool:
        """No state carries over to the next line (the fast path may start here)."""
        return not self.pending and not self.in_minmax

    def line(self, n: int, text: str) -> None:
        """One cleaned line (the reference behaviour)."""
        rows = self.rows
        if self.in_minmax:
            mm = timers.minmax(text)
            if mm is not None:
                name, lo, hi = mm
                ph = timers.phases({name: hi})
                if ph:
                    self._set_last(ph)
                if lo > 0 and name in ("forward-compute", "backward-compute"):
                    self.spread.append(hi / lo)
                return
            self.in_minmax = False
        if "iteration" in text:
            fast = FAST.match(text)
            if fast is not None and not self.pending:
                try:
                    step, ms = float(fast.group(1)), float(fast.group(2))
                except ValueError:
                    fast = None
                else:
                    rows.add(n, step=step, step_time_s=ms / 1000.0, samples=float(fast.group(3)))
                    self.gbs_seen = True
                    return
            m = step_match(text)
            if m:
                f = _fields(text[m.end() :])
                elapsed = f.get("elapsed time per iteration (ms)")
                step_s = first_number(elapsed) / 1000.0
                if step_s != step_s:
                    rows.drop(BROKEN if elapsed is None else NOT_A_TIME, n)
                    return
                head = _fields(LOG_PREFIX.sub("", text[: m.start()]) + "|")
                samples = NAN
                if "global batch size" in f:
                    samples = as_float(f["global batch size"])
                    self.gbs_seen = True
                elif "samples/sec" in head:
                    samples = near_int(as_float(head["samples/sec"]) * step_s)
                pre = text[: m.start()]
                ts = console.timestamp(pre) if pre.strip() else None
                tps = tokens_rate(f)
                if "[rank-" in pre and (w := RANK_OF.search(pre)):
                    self.facts.setdefault("world_prefix", int(w.group(2)))
                rows.add(n, step=float(m.group(1)), step_time_s=step_s, samples=samples,
                         t_end_s=ts if ts is not None else NAN,
                         **({TPS: tps} if tps is not None else {}), **self.pending)  # fmt: skip
                self.pending, self.pending_kind = {}, ""
                return
        if timers.MINMAX_HEAD in text:
            self.in_minmax = True
            return
        if "time (ms)" in text:
            t = timers.pairs(text)
            k = timers.kind(t)
            if k == "megatron":
                self._set_last(timers.phases(t))
            elif (k == "deepspeed" or self.pending_kind != "deepspeed") and not any(
                x.endswith("_microstep") for x in t
            ):
                self.pending, self.pending_kind = timers.phases(t), k

    def _set_last(self, values: dict[str, float]) -> None:
        """Timer cells for the last row; kept in :attr:`orphans` while there is none yet."""
        if not self.rows.set_last(**values):
            self.orphans.update(values)

    def lines(self, data: bytes, first_line: int) -> None:
        """The line path over one block."""
        for n, _rank, text in console.block_lines(data, first_line, self.bad):
            self.line(n, text)

    def fast(self, data: bytes, where: int, exact: bool = False) -> bool:
        """The block path: one regex scan of the block (see the module docstring); rows get the
        placeholder line number ``where``. ``exact``: scan with :data:`TOKENS_EXACT`. False (and
        nothing parsed) when the block holds a step line the scan does not see, e.g. behind a
        logger prefix (Primus): the caller then takes the line path."""
        first = FIRST[exact].match(data)
        toks = (TOKENS_EXACT if exact else TOKENS).findall(data, first.end() if first else 0)
        if first:
            toks.insert(0, first.groups(b""))
        other = [i for i, t in enumerate(toks) if t[3]] if any(map(GET[3], toks)) else []
        a = [t for t in toks if not t[3]] if other else toks
        if data.count(_ELAPSED) != len(a) + sum(toks[i][3].count(_ELAPSED) for i in other):
            return False  # 'elapsed time per iteration' in a line the scan does not see
        if not toks:
            self._tail(data)
            return True
        try:
            cols = numbers(a)
        except ValueError:  # an elapsed time like '1.2.3': the exact scan (see NUM)
            return self.fast(data, where, exact=True)
        if a:
            self.gbs_seen = True
        done = 0  # A rows added so far
        for k, i in enumerate([*other, len(toks)]):
            upto = i - k  # A tokens before token i
            if upto > done and self.pending:
                st, sec, gbs = (float(x) for x in cols[:, done])
                self.rows.add(where, step=st, step_time_s=sec, samples=gbs, t_end_s=NAN,
                              **self.pending)  # fmt: skip
                self.pending, self.pending_kind = {}, ""
                done += 1
            if upto > done:
                sl = slice(done, upto)
                self.rows.extend(where, upto - done, step=cols[0, sl],
                                 step_time_s=cols[1, sl], samples=cols[2, sl])  # fmt: skip
                done = upto
            if i < len(toks):
                first, *more = toks[i][3].split(b"\n")
                self.line(where, first.decode("ascii"))
                for raw in more:
                    self.line(where, console.clean(raw.decode("ascii"))[1])
                self.in_minmax = False  # the next line is not a minmax line (see TOKENS)
        self._tail(data)
        return True

    def _tail(self, data: bytes) -> None:
        """Set ``in_minmax`` as the line path would after the block's last line: walking back,
        timer lines keep the state of the line before them, a ``(min, max)`` head (not an
        iteration line) opens the block, any other line (an empty one too) closes it; the block
        started clean (closed). Exact whatever the number or length of the timer lines."""
        end = len(data) - data.endswith(b"\n")
        self.in_minmax = False  # the state at the block's start, if only timer lines follow it
        while end >= 0:
            start = data.rfind(b"\n", 0, end) + 1
            text = console.clean(data[start:end].decode("ascii"))[1]
            head = timers.MINMAX_HEAD in text and not ("iteration" in text and LINE.search(text))
            if head or timers.minmax(text) is None:
                self.in_minmax = head
                return
            end = start - 1


def eligible(data: bytes) -> bool:
    """Whether a block may take the fast path: ASCII, no ANSI codes, no carriage returns, no
    tqdm bars (cheap single-byte scans first)."""
    return (
        data.isascii()
        and b"\x1b" not in data
        and b"\r" not in data
        and (b"%" not in data or b"%|" not in data)
    )


def _run(
    p: _Parser, src: Source, start: int, end: int | None, line: int, report: bool,
    fast: bool = True, block_bytes: int = BLOCK_BYTES,
) -> None:  # fmt: skip
    """Parse the byte range ``[start, end)`` (first line numbered ``line``) into ``p``."""
    p.next_line = line
    for blk in blocks(src, block_bytes, start=start, end=end, first_line=line, report=report):
        if blk.data is None:  # corrupt compressed data: keep what came before
            p.bad.append(blk.first_line)
            break
        data, offset, line = blk.data, blk.offset, blk.first_line
        scan_facts(data, p.facts)
        if fast and eligible(data):
            while data and not p.clean():  # state from the line before: line path until clean
                cut = data.find(b"\n") + 1 or len(data)
                p.lines(data[:cut], line)
                data, offset, line = data[cut:], offset + cut, line + 1
            if data:
                p.done.append((offset, len(data), line, len(p.rows)))
                if not p.fast(data, -len(p.done)):
                    p.done.pop()
                    p.lines(data, line)
        else:
            p.lines(data, line)
        p.next_line = blk.first_line + blk.lines


def _merge(p: _Parser, part: _Parser, line_shift: int, block_shift: int) -> None:
    """Append a worker's parse of the next byte range (see :mod:`.ranges`)."""
    if part.orphans:  # as a sequential pass: onto the row that ended our range
        p._set_last(part.orphans)
    rows_before = len(p.rows)
    lines = np.frombuffer(part.rows.lines, dtype=np.int64)
    p.rows.append_rows(part.rows, ranges.shift_lines(lines, line_shift, block_shift))
    for reason, d in part.rows.drops.items():
        first = d.first
        if first is not None:
            first = first + line_shift if first >= 0 else first - block_shift
        mine = p.rows.drops.get(reason)
        if mine is None:
            p.rows.drops[reason] = type(d)(reason, d.count, first)
        else:
            mine.count += d.count
    p.bad += [n + line_shift for n in part.bad]
    p.spread += part.spread
    p.gbs_seen |= part.gbs_seen
    for k, v in part.facts.items():
        p.facts.setdefault(k, v)
    p.done += [(o, ln, fl + line_shift, r + rows_before) for o, ln, fl, r in part.done]
    p.pending, p.pending_kind, p.in_minmax = part.pending, part.pending_kind, part.in_minmax
    p.next_line = part.next_line + line_shift


def read(
    src: Source, *, fast: bool = True, block_bytes: int = BLOCK_BYTES, workers: int | None = None
) -> TextTable:
    """Parse a Megatron-LM / GPT-NeoX log (see the module docstring).

    ``fast=False`` sends every block through the line path (the reference the fast path must
    equal; tests compare the two, also with small ``block_bytes``). A large uncompressed file is
    parsed in byte ranges on several cores (:mod:`.ranges`); ``workers`` forces the number of
    ranges."""
    run = functools.partial(_run, fast=fast, block_bytes=block_bytes)  # picklable for workers
    p = ranges.parse(src, _Parser, run, _merge, ranges.workers_for(src, workers))
    done = p.done
    rows = p.rows
    rows.undecodable(p.bad)
    locate = None
    if done:
        resolver = Resolver(src, done, rows, _Parser)
        for d in rows.drops.values():
            if d.first is not None and d.first < 0:
                d.first = resolver.drop_line(-d.first - 1, d.reason)
        locate = resolver.locate
    out = rows.table(
        src, "Megatron 'iteration N/ M | … elapsed time per iteration (ms)' line", EXAMPLE, locate
    )
    what = "samples = the global batch size" if p.gbs_seen else "samples = samples/sec × step time"
    out.notes.append(job_level_note(what))
    out.notes += job_tokens(out.frame, p.facts)
    out.world_size, out.world_source = world_of(p.facts)
    if p.spread:
        med = statistics.median(p.spread)
        if med > 1.05:
            out.notes.append(
                f"Megatron timers: the slowest rank's forward/backward compute is {med:.2f}× the "
                "fastest (median over logged iterations; threshold 1.05): a straggler; rerun with "
                "per-rank timers (--timing-log-option all) to name it"
            )
    return out
