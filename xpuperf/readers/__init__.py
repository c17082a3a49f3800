"""Readers: per-rank step-time logs → the canonical step table (:mod:`xpuperf.steps`).

Use :func:`read_logs`. Formats live in a small registry (:data:`FORMATS`): each is a
:class:`Format` with a name, extensions, a ``sniff(first_lines) -> bool`` test and a read function
returning a :class:`~xpuperf.readers.base.RawTable`. A framework-specific text format is one module
that builds a ``Format`` and calls :func:`register_format`.

How a file's format is chosen: ``fmt`` when given; else the extension (``.gz`` stripped first);
else, for ``.log``, ``.txt`` and unknown extensions, the first format whose ``sniff`` accepts the
first lines (framework formats before the generic ones); a file starting with the Parquet magic
bytes is Parquet. Column names, units and derivations: :mod:`xpuperf.readers.columns` and
:mod:`xpuperf.readers.build`.
"""

from __future__ import annotations

import csv
import os
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pandas as pd
import pyarrow as pa

from xpuperf import steps
from xpuperf.errors import EmptyLogError, InputError
from xpuperf.readers import build, progress, world
from xpuperf.readers.base import (
    BINARY_PROBE,
    GZIP_MAGIC,
    HEAD_BYTES,
    PARQUET_MAGIC,
    Format,
    RawTable,
    Source,
    short,
)
from xpuperf.readers.formats.console import first_text_line
from xpuperf.readers.formats.tqdm import eval_only as tqdm_eval_only
from xpuperf.readers.generic import GENERIC_FORMATS
from xpuperf.readers.paths import Found, expand
from xpuperf.readers.tail import drop_cut_tail

T = TypeVar("T")

__all__ = [
    "FORMATS",
    "SNIFFED_EXTENSIONS",
    "Format",
    "RawTable",
    "ReadResult",
    "Source",
    "get_format",
    "read_logs",
    "register_format",
]

FORMATS: list[Format] = list(GENERIC_FORMATS)
"""Known formats in sniffing order: framework-specific ones first, then the generic ones."""
SNIFFED_EXTENSIONS: tuple[str, ...] = (".log", ".txt", ".out")
"""Extensions whose format is decided by content (``sniff``)."""
SNIFF_LINES = 2000
"""Lines of the head (at most HEAD_BYTES) that ``sniff`` functions see: framework logs often start
with hundreds of lines of configuration before the first step line."""


@dataclass
class ReadResult:
    """What :func:`read_logs` returns.

    Attributes:
        table: the canonical step table (see :mod:`xpuperf.steps`), passed through
            :func:`steps.coerce` and :func:`steps.validate`: sorted by (rank, step), every
            ``step_time_s`` finite and > 0 seconds.
        sources: the files actually read, in reading order.
        warnings: one line each: where the first skipped row is (``file:line``), how many rows
            were skipped and why; also files skipped while walking folders.
        skipped_rows: total rows dropped.
        job_level_cards: N when a job-level log was spread over N ranks (``--world-size`` or
            the world size the log states): the ranks are copies of one line per step, so
            nothing can be said about differences between ranks; None otherwise.
        sampled_rows: every file's rows are single iterations shown every k (a reader's
            ``TextTable.sampled``: nanoGPT, timm), not window means.
        notes: the lines of ``warnings`` that say how the logs were read (``file: note``):
            job-level lines, the world size found, tokens derived, deduplicated lines, the
            first row of each rank dropped when step times are timestamp differences… — no
            sign of an incomplete log, so they do not count as XP401 (:meth:`problems`).
        cards_unknown: None when the table's ranks are the job's cards; ``"job"`` when one
            job-level log (one line per step for the whole job) was not spread because no
            world size is known — per-card figures are then unknown; ``"card"`` when the rows
            are ONE card's view of a larger job of unknown size (torchtitan lines printed by
            every rank, one kept) — the job's figures are then unknown.
        warmup_rows: leading steps the log format marks as start-up
            (:attr:`~xpuperf.readers.formats.table.TextTable.warmup_rows`), 0 when none.
        log_rate: (samples/s, what it is) — the job's throughput as a single log prints it
            (:attr:`~xpuperf.readers.formats.table.TextTable.log_rate`), else None.
        clock_resolution: (±fraction per row, what) — the coarsest clock of the files read
            (:attr:`~xpuperf.readers.formats.table.TextTable.clock_resolution`), else None.
    """

    table: pd.DataFrame
    sources: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped_rows: int = 0
    job_level_cards: int | None = None
    sampled_rows: bool = False
    notes: list[str] = field(default_factory=list)
    cards_unknown: str | None = None
    warmup_rows: int = 0
    log_rate: tuple[float, str] | None = None
    clock_resolution: tuple[float, str] | None = None

    def problems(self) -> list[str]:
        """``warnings`` without the ``notes``: skipped rows and files, mismatches (XP401)."""
        said = set(self.notes)
        return [w for w in self.warnings if w not in said]


def register_format(fmt: Format) -> None:
    """Add a format ahead of the generic ones (replacing one of the same name)."""
    FORMATS[:] = [f for f in FORMATS if f.name != fmt.name]
    generic = {f.name for f in GENERIC_FORMATS}
    at = next((i for i, f in enumerate(FORMATS) if f.name in generic), len(FORMATS))
    FORMATS.insert(at, fmt)


def get_format(name: str | Format) -> Format:
    """The format called ``name`` (case-insensitive); an extension without its dot also names
    its format (``"json"`` → jsonl, ``"pq"`` → parquet). A :class:`Format` is returned as it is
    (``--pattern``: :func:`xpuperf.readers.formats.pattern.pattern_format`).

    Raises:
        InputError: unknown name; the message lists the known ones.
    """
    if isinstance(name, Format):
        return name
    key = name.strip().lower()
    for f in FORMATS:
        if f.name == key:
            return f
    generic = {f.name for f in GENERIC_FORMATS}  # an extension names its generic format first
    for f in sorted(FORMATS, key=lambda f: f.name not in generic):
        if f".{key}" in f.extensions:
            return f
    known = ", ".join(f.name for f in FORMATS)
    raise InputError(f"unknown format {name!r}: known formats are {known}")


def _wanted_extensions(fmt: Format | None) -> set[str]:
    exts = set(SNIFFED_EXTENSIONS)
    for f in [fmt] if fmt else FORMATS:
        exts.update(f.extensions)
    return exts


def open_source(found: Found) -> Source:
    """Open a file for reading: check it is a non-empty readable file, load its head.

    Raises:
        InputError: not a regular file, unreadable, empty, or a corrupt gzip stream.
    """
    path = found.path
    name = str(path)
    if not path.is_file():
        raise InputError("not a regular file", name)
    try:
        with path.open("rb") as f:
            magic = f.read(2)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", name) from exc
    is_gz = magic == GZIP_MAGIC
    try:
        head = _gunzip_head(path) if is_gz else _plain_head(path)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read gzip data: {exc}", name) from exc
    if not head:
        raise EmptyLogError("file is empty: expected a header line and one row per step", name)
    return Source(path, name, is_gz, head, found.hint)


def _plain_head(path: Path) -> bytes:
    with path.open("rb") as f:
        return f.read(HEAD_BYTES)


def _gunzip_head(path: Path) -> bytes:
    """First HEAD_BYTES of decompressed data; a truncated stream yields what it holds."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = b""
    with path.open("rb") as f:
        while len(out) < HEAD_BYTES:
            raw = f.read(65536)
            if not raw:
                break
            out += d.decompress(raw, HEAD_BYTES - len(out))
            if d.eof:
                break
    return out


def _check_text(src: Source) -> None:
    probe = src.head[:BINARY_PROBE]
    if probe.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError("file is UTF-16 encoded: convert it to UTF-8", src.name)
    if b"\x00" in probe:
        known = ", ".join(
            f"{f.name} ({', '.join(f.extensions)})" if f.extensions else f.name for f in FORMATS
        )
        raise InputError(
            f"binary file (NUL bytes in the first {BINARY_PROBE} bytes), not a text log; "
            f"expected one of: {known}",
            src.name,
        )
    if not src.head.strip():
        raise InputError("file has only blank lines: expected a header and rows", src.name)


def choose_format(src: Source, found: Found, forced: Format | None) -> Format | None:
    """The format of a file (see the module docstring); None when nothing recognises it."""
    if forced is not None:
        return forced
    if src.head.startswith(PARQUET_MAGIC):
        return get_format("parquet")
    ext = src.suffix
    for f in FORMATS:
        if ext in f.extensions:
            return f
    if b"\x00" in src.head[:BINARY_PROBE]:
        return None
    lines = src.first_lines(SNIFF_LINES)
    for f in FORMATS:
        if not f.binary and f.sniff(lines):
            return f
    return None


def _read_one(found: Found, forced: Format | None) -> tuple[Source, RawTable] | None:
    src = open_source(found)
    fmt = choose_format(src, found, forced)
    if fmt is None and not found.explicit:
        return None
    if fmt is None or not fmt.binary:
        _check_text(src)
    if fmt is None:
        names = ", ".join(f.name for f in FORMATS)
        first = first_text_line(src)
        quote = f"; line {first[0]} reads {short(first[1])!r}" if first else ""
        bars = tqdm_eval_only(src.first_lines(SNIFF_LINES))
        raise InputError(
            f"cannot tell the format: {bars + '; ' if bars else ''}"
            "the extension is not known and the first lines look like "
            f"none of the formats tried ({names}){quote}; rename the file or pass --format NAME "
            "(xpuperf formats lists them with an example line each); any other text log: "
            "--pattern 'STEP LINE' (`xpuperf formats --explain FILE` drafts one)",
            src.name,
            first[0] if first else None,
        )
    return src, fmt.read(src)


def read_logs(
    paths: Sequence[str | os.PathLike[str]],
    *,
    fmt: str | None = None,
    batch_size: float | None = None,
    world_size: int | None = None,
) -> ReadResult:
    """Read per-rank step-time logs into the canonical step table.

    Args:
        paths: files, folders (read recursively) or glob patterns; see
            :mod:`xpuperf.readers.paths`.
        fmt: force a format by name (``"csv"``, ``"tsv"``, ``"jsonl"``, ``"parquet"``, …);
            default: by extension, then by content.
        batch_size: samples per step of one rank; fills a missing ``samples`` column and turns a
            throughput (samples/s) into a step time when the log has no samples column.
        world_size: data-parallel ranks of the job; a single job-level log (one line per step
            for the whole job, e.g. Megatron-LM) becomes that many ranks with per-card
            samples (:mod:`xpuperf.readers.world`).

    Returns:
        :class:`ReadResult` with the table (columns and units per :mod:`xpuperf.steps`: one row
        per (rank, step), ``rank`` int32, ``step`` int64, times float64 seconds), the files read,
        one warning per file and reason for skipped rows, and the number of skipped rows.

    Raises:
        InputError: for every problem with the input (missing paths, unknown format, empty or
            binary files, unusable columns, unknown ranks, two files for one rank, no usable row),
            with the file and line when known. Nothing else escapes.
    """
    forced = get_format(fmt) if fmt else None
    if batch_size is not None:
        given = batch_size
        try:
            batch_size = float(batch_size)
        except (TypeError, ValueError):
            batch_size = float("nan")
        if not (batch_size > 0 and batch_size != float("inf")):
            raise InputError(f"batch size must be a number > 0, got {given!r}")
    world_size = world.check(world_size)
    files = _guard(None, expand, paths, _wanted_extensions(forced))
    warnings: list[str] = []
    parts: list[build.Part] = []

    def one(found: Found) -> build.Part | None:  # files are parsed in parallel, kept in order
        got = _guard(found.path, _read_one, found, forced)
        part = None if got is None else _guard(found.path, build.prepare, *got, batch_size)
        progress.file_done(found.path)
        return part

    for found, part in zip(files, progress.map_files(one, files), strict=True):
        if part is None:
            warnings.append(
                f"{found.path}: skipped the file: its format is not recognised "
                "(pass --format NAME to read it)"
            )
            continue
        parts.append(part)
    if not parts:
        raise InputError("no readable log file among the inputs: " + "; ".join(warnings))
    parts = _bars_beside_steps(parts, {f.path for f in files if not f.explicit}, warnings)
    build.assign_ranks(parts)
    frames = []
    read_notes: list[str] = []
    skipped = 0
    spread: int | bool = False  # the N a job-level log was spread over
    job_level = False
    for p in parts:
        df, warns = build.finish(p)
        warnings.extend(warns)
        # step time from timestamp differences: the first row of each rank has no predecessor;
        # its drop is how the log is read, not a gap in it (no XP401)
        read_notes.extend(w for w in warns if w.endswith(build.FIRST_DIFF))
        notes = list(getattr(p.raw, "notes", ()))
        if len(parts) == 1 and world.is_job_level(notes):
            job_level = True
            df, notes, n = world.job_level(p, df, notes, world_size)
            spread = n or spread
        said = [f"{p.src.name}: {note}" for note in notes]
        warnings.extend(said)
        read_notes.extend(said)
        skipped += sum(d.count for d in p.raw.drops) + sum(n for _, n, _ in p.pending)
        if df.empty and (p.pending or p.raw.drops):
            warnings.append(f"{p.src.name}: no usable rows remain in this file")
        frames.append(df)
    if all(f.empty for f in frames):
        raise _nothing_usable(parts, warnings)
    kept = [f for f in frames if not f.empty]
    frames.clear()
    table = kept[0] if len(kept) == 1 else pd.concat(kept, ignore_index=True)
    if not spread and len(parts) == 1:  # one console cut inside its last step (per-rank files
        rows = len(table)  # that end apart are truncated files: XP403 names them)
        table, cut = drop_cut_tail(table)
        if cut:
            warnings.append(f"{parts[0].src.name}: {cut}")
            skipped += rows - len(table)
    if not (spread or job_level) and len(parts) == 1 and table["rank"].nunique() == 1:
        table, note, n = world.one_rank(parts[0], table, world_size)  # ranks filtered out
        if note:
            said = f"{parts[0].src.name}: {note}"
            warnings.append(said)
            read_notes.append(said)
        spread = n or spread
    if world_size is not None and not spread:
        mismatch = world.not_job_level(int(table["rank"].nunique()), world_size)
        if mismatch:
            warnings.append(mismatch)
    kept.clear()
    for col in steps.OPTIONAL:
        if col in table.columns and table[col].isna().all():
            table = table.drop(columns=col)
    table = steps.validate(steps.coerce(table), source="step table read from logs")
    sampled = all(getattr(p.raw, "sampled", False) for p in parts)
    unknown = None
    if not spread and len(parts) == 1:
        if job_level:
            unknown = "job"
        elif getattr(parts[0].raw, "one_of_many", 0) > 1 and table["rank"].nunique() == 1:
            unknown = "card"
    return ReadResult(
        table,
        [p.src.name for p in parts],
        warnings,
        skipped,
        int(spread) if spread else None,
        sampled,
        read_notes,
        unknown,
        int(getattr(parts[0].raw, "warmup_rows", 0)) if len(parts) == 1 else 0,
        getattr(parts[0].raw, "log_rate", None) if len(parts) == 1 else None,
        max((r for p in parts if (r := getattr(p.raw, "clock_resolution", None))), default=None),
    )


def _guard(path: Path | None, fn: Callable[..., T], *args: object) -> T:
    """Run ``fn``; an OS or Arrow error (unreadable file, corrupt data) becomes an InputError."""
    try:
        return fn(*args)
    except InputError:
        raise
    except (OSError, pa.ArrowException, csv.Error) as exc:
        raise InputError(f"cannot read: {exc}", path) from exc
    except ValueError as exc:  # int() of a digit run past Python's limit, in any text reader
        if "integer string conversion" not in str(exc):
            raise
        raise InputError(
            "holds a number of more than 4300 digits: not a value a training log prints; "
            "check the file is not corrupt or concatenated with binary data",
            path,
        ) from None


def _bars_beside_steps(
    parts: list[build.Part], walked: set[Path], warnings: list[str]
) -> list[build.Part]:
    """Files whose only timing is a tqdm progress bar (the reader of last resort) beside step logs
    of other formats are the job's console output, not more ranks: one found in a folder or by a
    glob (``walked``) is skipped with a warning; one named on its own is an error.

    Raises:
        InputError: naming such a file; ``analyze`` then reads it as job output (NCCL lines,
            framework warnings) when it looks like one.
    """
    from xpuperf.readers.formats.tqdm import BAR_NOTE

    bars = [p for p in parts if any(n.startswith(BAR_NOTE) for n in getattr(p.raw, "notes", ()))]
    if not bars or len(bars) == len(parts):
        return parts
    why = (
        "its only step timing is a tqdm progress bar, read as steps when no other step log is "
        "given; beside the other step logs it is the job's console output"
    )
    named = [p for p in bars if p.src.path not in walked]
    if named:
        raise InputError(f"{why}: pass it alone to read its bar", named[0].src.name)
    # worded as an unrecognised file: analyze reads those for NCCL lines and framework warnings
    said = "skipped the file: its format is not recognised as a step log"
    warnings += [f"{p.src.name}: {said} ({why})" for p in bars]
    skip = {id(p) for p in bars}
    return [p for p in parts if id(p) not in skip]


def _nothing_usable(parts: list[build.Part], warnings: list[str]) -> InputError:
    detail = "; first problem: " + warnings[0] if warnings else ""
    advice = (
        "expected rows with a step number and a step time > 0 (or what derives it); "
        "fix the rows or check the column names"
    )
    if len(parts) == 1:
        p = parts[0]
        placed = [(pos, reason) for reason, _, pos in p.report if pos is not None]
        # the first row of each rank is dropped when step times come from timestamps; the
        # reason the other rows went is the one to tell
        placed = [x for x in placed if x[1] != build.FIRST_DIFF] or placed
        pos, reason = min(placed) if placed else (None, p.report[0][0] if p.report else "none")
        line = pos if p.raw.unit == "line" else None
        at = f" at {p.raw.unit} {pos}" if pos is not None and line is None else ""
        return InputError(
            f"no usable rows: every row was skipped (the first{at}: {reason}); {advice}",
            p.src.name,
            line,
        )
    return InputError(f"no usable rows in any of the {len(parts)} files{detail}; {advice}")


def _register_framework_formats() -> None:
    from xpuperf.readers.formats import FRAMEWORK_FORMATS

    for f in FRAMEWORK_FORMATS:
        register_format(f)


_register_framework_formats()
