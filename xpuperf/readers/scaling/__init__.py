"""Scaling tables: cards vs throughput or time per step, as people post them.

>>> t = read_scaling_table("| GPUs | img/s |\\n|---|---|\\n| 1 | 380 |\\n| 8 | 2736 |")
>>> t.rows[["cards", "throughput_per_card_samples_per_s"]].values.tolist()
[[1.0, 380.0], [8.0, 342.0]]

Accepted layouts (:mod:`.layout`): Markdown pipe tables (with or without the alignment row and
the outer pipes, ``-- | --`` from pasted HTML), CSV / TSV / semicolon files, whitespace-aligned
columns (``GPUs  img/sec``), and one result per line (``1 GPU: 380 img/s``). Headers and cells
(:mod:`.cells`): units in headers (``Throughput (img/s)``, ``[ms]``) or cells (``371 img/s``,
``1.38s/it``), ``1x8``/``2x8xH100`` (nodes × cards), thousands separators, ``-``/``N/A`` empty.

:attr:`ScalingTable.rows` columns (one row per table row, in table order):

- ``cards`` (float, > 0): cards (GPUs/NPUs/ranks) of the run.
- ``nodes``, ``cards_per_node`` (float, NaN when the table does not say).
- ``throughput_samples_per_s``: job throughput in items/s (the item is
  :attr:`ScalingTable.throughput_unit`); NaN when only a time without batch is known.
- ``throughput_per_card_samples_per_s``: job throughput / cards.
- ``step_time_s``: seconds per step (from ``s/it``, ``ms/step``, ``it/s``…), else NaN.
- ``run_time_s``: time for a fixed amount of work (per epoch, to train), else NaN.
- ``batch_per_card``: samples per card per step (NaN unknown; a global batch column is divided
  by ``cards``).
- ``reported_efficiency`` (fraction), ``reported_throughput_ratio`` (× one card): what the
  table itself claims, NaN when absent — never trusted, only compared.
- ``line``: 1-based line of the row in the source.
- ``group`` (str): the row's value in a column naming the model or configuration (``Model``,
  ``Network``, ``Precision``…: :data:`LABEL_HEADER`), ``""`` when the table has none. A table
  with several values holds several ladders: :func:`split_by_group` separates them.

Gzip-compressed files (``table.md.gz``) are read like plain ones. Lines outside the table that
a step-log reader recognises (``iteration 10/ 500 | …``) are not read: a note says how many and
which ``--format`` reads them (:attr:`ScalingTable.log_lines`).

A time per step with a per-card batch becomes throughput (``batch × cards / step_time``).
Errors: :class:`~xpuperf.errors.InputError` with ``file:line`` and what is needed.
"""

from __future__ import annotations

import dataclasses
import math
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from xpuperf.errors import InputError
from xpuperf.readers.scaling import cells as c
from xpuperf.readers.scaling.around import LABEL_HEADER, label_column, step_log_lines
from xpuperf.readers.scaling.layout import MEASURE_KINDS, Grid, context, find_grids

__all__ = [
    "LABEL_HEADER",
    "ScalingTable",
    "all_scaling_tables",
    "looks_like_scaling_table",
    "read_scaling_table",
    "sniff_scaling_table",
    "split_by_group",
]

COLUMNS = (
    "cards", "nodes", "cards_per_node", "throughput_samples_per_s",
    "throughput_per_card_samples_per_s", "step_time_s", "run_time_s", "batch_per_card",
    "reported_efficiency", "reported_throughput_ratio", "line",
)  # fmt: skip
HEAD_BYTES = 256 * 1024
"""Bytes read by :func:`looks_like_scaling_table`; a scaling table file is small."""
SNIFF_MAX_LINES = 3000
"""Longer files are not sniffed as scaling tables (a README with tables stays well below)."""
MAX_BYTES = 4 * 1024 * 1024
NAN = float("nan")
GZIP_MAGIC = b"\x1f\x8b"


@dataclass
class ScalingTable:
    """A scaling table read from a file or a string.

    Attributes:
        rows: DataFrame with :data:`COLUMNS` (module docstring).
        source: file name, or ``<text>``.
        measure: what the numbers are: ``throughput`` (job), ``throughput_per_card``,
            ``step_time``, ``step_rate`` (converted to ``step_time_s``) or ``run_time``.
        measure_column: the header of the column read, as written.
        throughput_unit: ``samples``, ``images`` or ``tokens``.
        cards_per_node: stated in the table or the text around it, else None.
        single_node: the text says every run was on one node.
        header_line: 1-based line of the header.
        form: ``markdown``, ``csv``, ``tsv``, ``semicolon``, ``whitespace`` or ``lines``.
        notes: how the table was read, one line each (columns chosen, units assumed, rows
            skipped with file:line).
        group_column: header of the column naming each row's model / configuration when it
            holds two values or more (rows[``group``]), else None.
        group: after :func:`split_by_group`, the value every row shares, else None.
        log_lines: lines outside the table that a step-log reader recognises (not read here);
            ``log_format``: that reader's ``--format`` name, ``log_first_line``: 1-based line of
            the first.
        skipped: rows not read, ``file:line: why`` each (no card count, no value, a value ≤ 0, out
            of range).
    """

    rows: pd.DataFrame
    source: str
    measure: str
    measure_column: str
    throughput_unit: str = "samples"
    cards_per_node: int | None = None
    single_node: bool = False
    header_line: int = 0
    form: str = "markdown"
    notes: list[str] = field(default_factory=list)
    group_column: str | None = None
    group: str | None = None
    log_lines: int = 0
    log_format: str | None = None
    log_first_line: int = 0
    skipped: list[str] = field(default_factory=list)


def _decompressed(raw: bytes, limit: int, where: str | None) -> bytes:
    """``raw`` (at most ``limit`` bytes) or, when it is gzip-compressed, its first ``limit``
    decompressed bytes (a cut stream gives what it holds; a bomb stops at ``limit``).

    Raises:
        InputError: a gzip stream that cannot be decompressed.
    """
    if raw[:2] != GZIP_MAGIC:
        return raw[:limit]
    try:
        return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(raw, limit)
    except zlib.error as exc:
        raise InputError(f"cannot decompress this gzip file ({exc}): pass the plain table",
                         where) from exc  # fmt: skip


def _text_of(path_or_text: str | os.PathLike[str]) -> tuple[str, str]:
    """(text, source name). A Path, or a one-line string naming an existing file, is read."""
    text = str(path_or_text)
    try:
        is_path = isinstance(path_or_text, os.PathLike) or (
            "\n" not in text and len(text) < 4096 and Path(text).is_file()
        )
    except (OSError, ValueError):  # a NUL byte or an over-long name: text
        is_path = False
    if not is_path:
        return str(path_or_text), "<text>"
    path = Path(path_or_text)
    try:
        with path.open("rb") as fh:
            raw = _decompressed(fh.read(MAX_BYTES), MAX_BYTES, str(path))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path) from exc
    if b"\x00" in raw[:4096]:
        raise InputError("binary file, not a scaling table", path)
    return raw.decode("utf-8", errors="replace").lstrip("\ufeff"), str(path)


_PRIORITY = {k: i for i, k in enumerate(MEASURE_KINDS)}


def _pick(grids: list[Grid]) -> Grid:
    """The first grid with a throughput or step-time column; else the first."""

    def best(g: Grid) -> int:
        return min(_PRIORITY.get(k or "", 99) for k in g.kinds)

    return min(grids, key=lambda g: (best(g) >= _PRIORITY["run_time"], grids.index(g)))


def read_scaling_table(path_or_text: str | os.PathLike[str]) -> ScalingTable:
    """Read a scaling table (see the module docstring for layouts and columns).

    Raises:
        InputError: no table with a card column and a throughput/time column; no row with a
            card count and a value (``file:line`` of the header).
    """
    return _read(*_text_of(path_or_text))


def _read(text: str, source: str) -> ScalingTable:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    grids = find_grids(lines)
    if not grids:
        raise InputError(
            "no scaling table found: expected a header with a card column (GPUs, cards, NPUs, "
            "nodes, 1x8) and a throughput or time column (img/s, samples/s, tokens/s, s/it, "
            "ms/step), or lines like '1 GPU: 380 img/s'",
            None if source == "<text>" else source,
        )
    grid = _pick(grids)
    notes = [
        f"line {g.header_line}: another table ({len(g.rows)} row(s)) not read; put it in a "
        "file of its own to analyse it"
        for g in grids
        if g is not grid
    ]
    table = _build(grid, source, notes)
    cpn, single = context(lines, {grid.header_line, *grid.lines})
    if table.cards_per_node is None and len(cpn) == 1:
        table.cards_per_node = cpn.pop()
        notes.append(f"cards per node {table.cards_per_node}: read from the text around the table")
    table.single_node = single and table.cards_per_node is None and table.rows["nodes"].isna().all()
    if table.single_node:
        notes.append("the text says one node: every row is read as a single-node run")
    log = step_log_lines(lines, {grid.header_line, *grid.lines})
    if log is not None:
        table.log_lines, table.log_format, table.log_first_line = log
        where = "FILE" if source == "<text>" else source
        notes.append(
            f"{log[0]} line(s) from line {log[2]} look like a {log[1]} step log and are not read "
            f"with the table: analyse them with `xpuperf analyze --format {log[1]} {where}`"
        )
    return table


def _col(kinds: list[str | None], kind: str) -> int | None:
    return next((i for i, k in enumerate(kinds) if k == kind), None)


def _build(grid: Grid, source: str, notes: list[str]) -> ScalingTable:
    heads = [c.classify(h) for h in grid.header]
    kinds = [h.kind for h in heads]
    mi = min((i for i, k in enumerate(kinds) if k in MEASURE_KINDS),
             key=lambda i: (_PRIORITY[kinds[i] or ""], i))  # fmt: skip
    measure, mhead = kinds[mi] or "", heads[mi]
    for i, h in enumerate(heads):
        if i != mi and h.kind in MEASURE_KINDS:
            notes.append(f"column {h.text!r} not used; the analysis uses {mhead.text!r}")
    if measure in ("step_time", "run_time") and mhead.scale_s is None:
        notes.append(f"column {mhead.text!r} names no time unit: read as seconds")
    idx = {k: _col(kinds, k) for k in c.KINDS}
    bpc_head = heads[idx["batch_per_card"]] if idx["batch_per_card"] is not None else None
    if bpc_head is not None and "batch" in bpc_head.text.lower():
        low = bpc_head.text.lower()
        if not any(w in low for w in ("gpu", "card", "device", "npu", "rank", "local", "micro")):
            notes.append(f"column {bpc_head.text!r} read as the per-card batch (name it "
                         "'global batch' if it is the job's)")  # fmt: skip
    label = label_column(grid, heads, idx)
    out: dict[str, list[float]] = {k: [] for k in COLUMNS}
    groups: list[str] = []
    skipped: list[str] = []
    item = mhead.item
    for cells_, line in zip(grid.rows, grid.lines, strict=True):
        row = dict(zip(range(len(cells_)), cells_, strict=False))

        def cell(kind: str, row: dict[int, str] = row) -> str | None:
            i = idx[kind]
            return row.get(i) if i is not None else None

        cards = _cards(cell, grid.form == "lines")
        value = row.get(mi, "")
        num = c.number(value, spaced_thousands=grid.spaced_thousands)
        if cards is None or cards.cards is None or num is None or num <= 0:
            why = ("no card count" if cards is None or cards.cards is None
                   else "no value" if num is None else f"value {num:g} ≤ 0")  # fmt: skip
            skipped.append(f"{source}:{line}: {why}")
            continue
        n = float(cards.cards)
        item = item or c.item_of(value)
        bpc = _num(cell("batch_per_card"), grid)
        gb = _num(cell("global_batch"), grid)
        if math.isnan(bpc) and not math.isnan(gb):
            bpc = gb / n
        thr = pc = t = rt = NAN
        if measure == "throughput":
            thr, pc = num, num / n
        elif measure == "throughput_per_card":
            thr, pc = num * n, num
        elif measure in ("step_time", "step_rate"):
            t = (c.duration_s(value, mhead.scale_s) or NAN) if measure == "step_time" else 1 / num
            if not math.isnan(bpc) and t > 0:
                pc, thr = bpc / t, bpc * n / t
        else:
            rt = c.duration_s(value, mhead.scale_s) or NAN
        if any(math.isinf(v) for v in (n, thr, pc, t, rt)):
            skipped.append(f"{source}:{line}: value out of range")
            continue
        eff, spd = _reported(cell("efficiency"), cell("speedup"))
        nodes = cards.nodes or _num(cell("nodes"), grid)
        cpn = cards.cards_per_node or _num(cell("cards_per_node"), grid)
        values = (n, nodes, cpn, thr, pc, t, rt, bpc, eff, spd, line)
        for k, v in zip(COLUMNS, values, strict=True):
            out[k].append(NAN if v is None else float(v))
        groups.append("" if label is None else " ".join(c.strip_markup(row.get(label, "")).split()))
    if skipped:
        notes.append(f"{len(skipped)} row(s) skipped, first {skipped[0]}")
    rows = pd.DataFrame(out, columns=list(COLUMNS))
    rows["group"] = pd.Series(groups, dtype=object)
    if rows.empty:
        raise InputError(
            "the table has no row with both a card count and a positive value; each row needs "
            f"cards (8, 8 GPUs, 2x8) and a number in {mhead.text!r}",
            None if source == "<text>" else source,
            grid.header_line,
        )
    known = {int(v) for v in rows["cards_per_node"].dropna()}
    several = label is not None and rows["group"].nunique() >= 2
    return ScalingTable(
        rows=rows,
        source=source,
        measure=measure,
        measure_column=mhead.text,
        throughput_unit=item or "samples",
        cards_per_node=known.pop() if len(known) == 1 else None,
        header_line=grid.header_line,
        form=grid.form,
        notes=notes,
        group_column=heads[label].text if several and label is not None else None,
        skipped=skipped,
    )


def split_by_group(table: ScalingTable) -> list[ScalingTable]:
    """One table per value of :attr:`ScalingTable.group_column` (in table order; ``[table]``
    when there is none): several models or configurations are several ladders, each with its
    own one-card row."""
    col = table.group_column
    if col is None:
        return [table]
    out = []
    for value, rows in table.rows.groupby("group", sort=False):
        note = (f"rows with {col!r} = {value!r} ({len(rows)} of {len(table.rows)}): each "
                f"{col!r} is compared with its own one-card row")  # fmt: skip
        out.append(dataclasses.replace(table, rows=rows.reset_index(drop=True), group=str(value),
                                       notes=[*table.notes, note]))  # fmt: skip
    return out


def _num(cell: str | None, grid: Grid) -> float:
    if cell is None:
        return NAN
    v = c.number(cell, spaced_thousands=grid.spaced_thousands)
    return NAN if v is None or not 0 < v < math.inf else v


def _cards(cell, sentence: bool) -> c.Cards | None:
    for kind in ("cards", "config"):
        text = cell(kind)
        if text is not None:
            got = c.cards_cell(text, config=kind == "config" or sentence)
            if got is not None:
                return _fill(got, cell)
    nodes = cell("nodes")
    if nodes is not None and c.number(nodes):
        return _fill(c.Cards(None, int(c.number(nodes) or 0)), cell)
    return None


def _fill(got: c.Cards, cell) -> c.Cards:
    """Cards from nodes × cards per node when the row gives only nodes."""
    if got.cards is not None:
        return got
    per = cell("cards_per_node")
    per_n = c.number(per) if per is not None else None
    if got.nodes and per_n:
        return c.Cards(int(got.nodes * per_n), got.nodes, int(per_n))
    return got


def _reported(eff_cell: str | None, spd_cell: str | None) -> tuple[float, float]:
    eff = spd = NAN
    if eff_cell is not None and (v := c.number(eff_cell)) is not None:
        eff = v / 100 if c.is_percent(eff_cell) or v > 1.5 else v
    if spd_cell is not None and (v := c.number(spd_cell)) is not None:
        if c.is_percent(spd_cell):
            eff = v / 100
        else:
            spd = v
    return eff, spd


def sniff_scaling_table(path: str | os.PathLike[str]) -> ScalingTable | None:
    """The table in ``path`` when it (at most 256 KiB and 3000 lines, decompressed when it is
    gzip) holds a short table (at most 200 rows) with a card column and a throughput/time
    column and no step-log column (``step``, ``iter``, ``rank``, ``epoch``, ``timestamp``),
    with at least one row; else None. Cheap (under 0.1 s) and never raises."""
    try:
        with Path(path).open("rb") as f:
            raw = _decompressed(f.read(HEAD_BYTES + 1), HEAD_BYTES + 1, None)
    except (OSError, InputError):
        return None
    if len(raw) > HEAD_BYTES or raw.count(b"\n") > SNIFF_MAX_LINES:
        return None  # a long file is a log, not a table someone posted
    if b"\x00" in raw[:4096]:
        return None
    try:
        return _read(raw.decode("utf-8", errors="replace").lstrip("\ufeff"), str(path))
    except (InputError, ValueError, IndexError, KeyError):
        return None


def looks_like_scaling_table(path: str | os.PathLike[str]) -> bool:
    """True when :func:`sniff_scaling_table` finds a table with at least two different card
    counts (``.gz`` too). Cheap and never raises: a per-rank step log is never claimed."""
    table = sniff_scaling_table(path)
    return table is not None and table.rows["cards"].nunique() >= 2


def all_scaling_tables(paths: list[str] | tuple[str, ...]) -> bool:
    """True when ``paths`` is non-empty and every one is a regular file that
    :func:`looks_like_scaling_table` accepts (folders and globs are step logs' business)."""
    return bool(paths) and all(Path(p).is_file() and looks_like_scaling_table(p) for p in paths)
