"""``xpuperf formats --explain FILE [--pattern P]``: which reader reads a file, and why (not).

:func:`explain` returns the report as lines of text:

- **recognised** (by extension, Parquet magic bytes or a format's ``sniff``): the format, why (the
  extension, or the first line its sniff accepts), the first step lines read (line numbers), how
  many lines were step rows / skipped with a reason / noise, and the step table ``analyze`` gets
  (rows, ranks, steps, columns, median step time, reader warnings) or the error it stops with;
- **not recognised**: for each text format the nearest miss (the line sharing most phrases of
  the format's example line), the first non-blank lines, what else the file is (NCCL lines and
  framework warnings: job output ``analyze`` reads for its checks; nccl-tests or topology dumps:
  another subcommand), and a draft ``--pattern`` (:mod:`~xpuperf.readers.formats.pattern_draft`)
  with how many lines it matches;
- **with a pattern**: the lines it matched (line numbers and field values), how many, the
  closest line when none, and the step table it gives.

Errors (exit 2): a missing, empty or binary file (one line), a folder, a malformed pattern.
Only imported by the CLI (it imports :mod:`xpuperf.kinds`, which imports the readers).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from xpuperf.errors import InputError, UsageError
from xpuperf.readers import FORMATS, SNIFF_LINES, open_source, read_logs
from xpuperf.readers import _check_text as check_text  # the readers' own binary/UTF-16 check
from xpuperf.readers.base import PARQUET_MAGIC, Format, Source, short
from xpuperf.readers.formats import console, tqdm_bars
from xpuperf.readers.formats.pattern import Closest, Pattern, compile_pattern, pattern_format
from xpuperf.readers.formats.pattern_draft import draft
from xpuperf.readers.paths import Found, rank_from_name

SHOWN = 5
"""Step lines, first lines and warnings shown per section."""
_PHRASE = re.compile(r"[A-Za-z][A-Za-z_()/ -]*[A-Za-z)]")
_NOT_PHRASES = {"then", "TAB", "or", "JSON", "list", "objects", "such", "Parquet", "table",
                "with", "the", "same", "columns", "as", "CSV", "form", "of"}  # fmt: skip


@dataclass
class Explanation:
    """What :func:`explain` found: ``reader`` is the format name (``pattern`` with a pattern),
    None when nothing reads the file; ``lines`` is the report."""

    path: str
    reader: str | None
    lines: list[str] = field(default_factory=list)


def explain(path: str, pattern: str | None = None) -> Explanation:
    """Explain how ``path`` is read (module docstring).

    Raises:
        UsageError: ``path`` is a folder; a malformed pattern.
        InputError: missing, unreadable, empty or binary file.
    """
    pat = compile_pattern(pattern) if pattern is not None else None
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"--explain takes one file; {path} is a folder: name one of its files")
    if not p.exists():
        raise InputError("no such file", path)
    src = open_source(Found(p, True, (p.name,)))
    if not src.head.startswith(PARQUET_MAGIC):
        check_text(src)
    if pat is not None:
        return _with_pattern(src, pat)
    fmt, why = _choose(src)
    if fmt is None:
        return _unrecognised(src)
    out = Explanation(src.name, fmt.name, [f"{src.name}: read by {fmt.name} ({why})"])
    try:
        raw = fmt.read(src)
    except InputError as exc:
        out.lines.append(f"  the {fmt.name} reader stops: {exc.message}")
        return out
    rows = len(raw.frame)
    where = raw.locate(list(range(min(SHOWN, rows))))
    want = {n for n in where.values() if n is not None} if raw.unit == "line" else set()
    total, texts = _scan(src, want)
    if fmt.name == tqdm_bars.READER:  # its step lines are bars, which cleaning removes
        texts.update(tqdm_bars.bar_texts(src, want))
    if want:
        out.lines.append("  first step lines:")
        out.lines += [f"    {n}: {short(texts.get(n, ''), 100)!r}" for n in sorted(want)]
    skipped = sum(d.count for d in raw.drops)
    noise = max(total - rows - skipped, 0) if raw.unit == "line" else 0
    out.lines.append(
        f"  {rows} step {'line' if raw.unit == 'line' else raw.unit}(s) of {total} lines"
        + (f"; {skipped} skipped with a reason" if skipped else "")
        + (f"; {noise} other lines are noise (not step lines)" if raw.unit == "line" else "")
    )
    out.lines += [f"    skipped {d.count}: {d.reason} (first at line {d.first})" for d in raw.drops]
    out.lines += _table(src.name, fmt)
    return out


def _choose(src: Source) -> tuple[Format | None, str]:
    """The format ``read_logs`` would pick, and why."""
    if src.head.startswith(PARQUET_MAGIC):
        return next(f for f in FORMATS if f.name == "parquet"), "Parquet magic bytes"
    for f in FORMATS:
        if src.suffix in f.extensions:
            return f, f"its extension {src.suffix}"
    lines = src.first_lines(SNIFF_LINES)
    for f in FORMATS:
        if f.binary or not f.sniff(lines):
            continue
        # physical lines: a line of tqdm updates is one line of the file, many \r pieces
        head = src.head.decode("utf-8", "replace").removeprefix("\ufeff")
        for i, line in enumerate(head.split("\n")[:SNIFF_LINES], 1):
            for piece in line.splitlines():
                if f.sniff([piece]):
                    text = console.clean(piece)[1].strip() or console.no_ansi(piece).strip()
                    return f, f"its sniff accepts line {i}: {short(text, 90)!r}"
        return f, f"its sniff accepts the first {len(lines)} lines together"
    return None, ""


def _scan(src: Source, want: set[int]) -> tuple[int, dict[int, str]]:
    """(lines in the file, the cleaned text of the lines in ``want``)."""
    total, texts = 0, {}
    for n, _tag, text in console.iter_lines(src):
        total = n
        if n in want and n not in texts:
            texts[n] = text
    return total, texts


def _table(name: str, fmt: Format) -> list[str]:
    """What ``analyze`` gets from the file read with ``fmt``: the step table, or its error."""
    try:
        r = read_logs([name], fmt=fmt)
    except InputError as exc:
        return [f"  analyze stops: {exc.message}"]
    t = r.table
    ranks = sorted(int(x) for x in t["rank"].unique())
    shown = ", ".join(map(str, ranks[:8])) + (", …" if len(ranks) > 8 else "")
    cols = [c for c in t.columns if c not in ("rank", "step")]
    out = [
        f"  step table: {len(t)} rows, {len(ranks)} rank(s) ({shown}), steps "
        f"{int(t['step'].min())}–{int(t['step'].max())}; columns: {', '.join(cols)}; median step "
        f"time {float(t['step_time_s'].median()):.4g} s"
    ]
    out += [f"  warning: {short(w, 160)}" for w in r.warnings[:SHOWN]]
    if len(r.warnings) > SHOWN:
        out.append(f"  … {len(r.warnings) - SHOWN} more warnings")
    return out


def _with_pattern(src: Source, pat: Pattern) -> Explanation:
    out = Explanation(src.name, "pattern", [f"{src.name}: --pattern {shlex.quote(pat.text)}"])
    matched, total, tags = 0, 0, set()
    closest = Closest(pat)
    shown: list[str] = []
    for n, tag, text in console.iter_lines(src):
        total = n
        if pat.values(text) is None:
            if not matched:
                closest.offer(n, text)
            continue
        matched += 1
        if tag is not None:
            tags.add(tag)
        if len(shown) < SHOWN:
            m = pat.regex.search(text)
            got = "  ".join(f"{f.name}={g}" for f, g in zip(pat.fields, m.groups(), strict=True))
            shown.append(f"    {n}: {got}" + (f"  (prefix rank {tag})" if tag is not None else ""))
    if not matched:
        out.lines.append(f"  matched no line of {total}{closest.describe()}")
        out.lines.append("  (a blank in the pattern matches any run of blanks; {_} skips text)")
        return out
    out.lines.append(f"  matched {matched} of {total} lines (the other lines are noise):")
    out.lines += shown
    if "rank" in pat.columns:
        rank = "the {rank} field"
    elif rank_from_name(src.rank_hint) is not None:
        rank = f"the file name (rank {rank_from_name(src.rank_hint)})"
    elif tags:
        rank = "the launcher prefixes ([rankN]: …)"
    else:
        rank = "none in the file: rank 0 (several such files need a rank in their names)"
    out.lines.append(f"  rank from {rank}")
    out.lines += _table(src.name, pattern_format(pat.text))
    return out


def _unrecognised(src: Source) -> Explanation:
    out = Explanation(src.name, None, [f"{src.name}: no format recognises it"])
    lines = [console.clean(x)[1] for x in src.first_lines(SNIFF_LINES)]
    out.lines.append("  nearest misses:")
    out.lines += [f"    {_miss(f, lines)}" for f in FORMATS if not f.binary]
    first = [(i, x.strip()) for i, x in enumerate(lines, 1) if x.strip()][:SHOWN]
    out.lines.append("  first non-blank lines:")
    out.lines += [f"    {i}: {short(x, 100)!r}" for i, x in first]
    other = _other_kind(src)
    out.lines += other
    d = draft(lines)
    if d is not None and other and not _usable(d.pattern):
        return out  # job output: a draft that gives no step time is noise
    if d is None:
        out.lines.append("  no line with two numbers or more in the first lines: no --pattern "
                         "to suggest; write one from a step line (docs/formats.md)")  # fmt: skip
        return out
    out.lines.append(
        f"  draft --pattern from the {d.count} line(s) shaped like line {d.line} (guessed: "
        f"{', '.join(d.guessed) or 'nothing'}; edit it):"
    )
    out.lines.append(f"    --pattern {shlex.quote(d.pattern)}")
    try:
        pat = compile_pattern(d.pattern)
    except UsageError as exc:
        out.lines.append(f"    not usable yet: {exc}; replace the {{_}} that holds it")
        return out
    hits = sum(1 for x in lines if pat.values(x) is not None)
    out.lines.append(f"    it matches {hits} of the first {len(lines)} lines; check it with:")
    out.lines.append(f"    xpuperf formats --explain {shlex.quote(src.name)} --pattern "
                     f"{shlex.quote(d.pattern)}")  # fmt: skip
    return out


def _usable(text: str) -> bool:
    try:
        compile_pattern(text)
    except UsageError:
        return False
    return True


def _phrases(example: str) -> list[str]:
    out: list[str] = []
    for m in _PHRASE.finditer(example):
        p = " ".join(m.group(0).split()).strip(" -/")
        if len(p) >= 3 and p not in _NOT_PHRASES and p not in out:
            out.append(p)
    return out


def _miss(fmt: Format, lines: list[str]) -> str:
    """``megatron: nearest is line 4, which has 'loss' but not 'iteration', …`` or
    ``…: no line holds 'iteration' or 'consumed samples'``."""
    phrases = _phrases(fmt.example)
    best, at = 0, 0
    for i, x in enumerate(lines, 1):
        score = sum(1 for p in phrases if p in x)
        if score > best:
            best, at = score, i
    if best == 0:
        return f"{fmt.name}: no line holds {' or '.join(repr(p) for p in phrases[:2])}"
    have = [p for p in phrases if p in lines[at - 1]]
    lack = [p for p in phrases if p not in lines[at - 1]]
    return (
        f"{fmt.name}: nearest is line {at}, which has {', '.join(map(repr, have[:3]))} but not "
        f"{', '.join(map(repr, lack[:3]))}"
    )


def _other_kind(src: Source) -> list[str]:
    """What else the file is: job output (NCCL lines, framework warnings) or another input."""
    from xpuperf.calibrate.nccllog import has_nccl_lines
    from xpuperf.events import scan_events
    from xpuperf.kinds import kind_of  # imports the readers: not at module level

    events = scan_events([src.path])
    kinds = sorted({f"{e.kind} ({e.count}×, first at line {e.line})" for e in events.events})
    what = ["NCCL INFO/WARN lines"] if has_nccl_lines(src.path) else []
    what += [f"framework warnings/settings: {', '.join(kinds[:4])}"] if kinds else []
    if what:
        return [
            f"  job output without step lines ({'; '.join(what)}): `xpuperf analyze "
            f"{shlex.quote(src.name)}` reads it for its NCCL and framework-warning checks"
        ]
    kind = kind_of(src.path)
    if kind is not None and "step log" not in kind[0] and "training log" not in kind[0]:
        return [f"  it looks like {kind[0]}: `{kind[1]}` reads it"]
    return []
