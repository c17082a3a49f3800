"""Finding a scaling table in text: Markdown pipe tables, CSV/TSV/semicolon tables,
whitespace-aligned columns, and one-result-per-line sentences (``1 GPU: 380 img/s``).

Each finder returns :class:`Grid` objects (a header and rows of cells with their 1-based line
numbers); :func:`find_grids` tries them in order and keeps every grid whose header names a card
column and a measure column.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from xpuperf.readers.scaling.cells import _CARD_WORD, _NODE_WORD, classify, strip_markup

MEASURE_KINDS = (
    "throughput",
    "throughput_per_card",
    "step_time",
    "step_rate",
    "run_time",
)
CARD_KINDS = ("cards", "config", "nodes")
#: headers that mark a per-step / per-rank log, never a scaling table
LOG_HEADERS = frozenset(
    {"step", "steps", "iter", "iteration", "iterations", "global step", "global_step", "rank",
     "local rank", "local_rank", "timestamp", "epoch", "time", "wall", "ts"}
)  # fmt: skip
MAX_ROWS = 200
"""A scaling table is short; a longer block is a log."""


@dataclass
class Grid:
    """A table found in text.

    Attributes:
        header: header cells as written.
        rows: data rows, each a list of cells.
        lines: 1-based line number of each row.
        header_line: 1-based line of the header.
        form: ``markdown``, ``csv``, ``tsv``, ``semicolon``, ``whitespace`` or ``lines``.
        spaced_thousands: ``10 050`` may be one number (not in whitespace tables).
    """

    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    header_line: int = 0
    form: str = "markdown"
    spaced_thousands: bool = True

    @property
    def kinds(self) -> list[str | None]:
        return [classify(h).kind for h in self.header]

    def usable(self) -> bool:
        """A card column, a measure column, no step-log column, 1..MAX_ROWS rows."""
        kinds = self.kinds
        names = {" ".join(strip_markup(h).lower().split()) for h in self.header}
        return (
            any(k in CARD_KINDS for k in kinds)
            and any(k in MEASURE_KINDS for k in kinds)
            and not names & LOG_HEADERS
            and 0 < len(self.rows) <= MAX_ROWS
        )


_SEP = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$|^[\s|:+=-]+$")


def _pipe_cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [c.strip() for c in s.split("|")]


def markdown_grids(lines: list[str]) -> list[Grid]:
    """Runs of lines holding ``|``: the first non-separator line is the header."""
    grids: list[Grid] = []
    i = 0
    while i < len(lines):
        if "|" not in lines[i]:
            i += 1
            continue
        j = i
        while j < len(lines) and "|" in lines[j]:
            j += 1
        grid: Grid | None = None
        for k in range(i, j):
            if _SEP.match(lines[k]):
                continue
            cells = _pipe_cells(lines[k])
            if grid is None:
                grid = Grid(cells, header_line=k + 1, form="markdown")
            elif any(cells):
                grid.rows.append(cells)
                grid.lines.append(k + 1)
        if grid is not None and len(grid.header) >= 2:
            grids.append(grid)
        i = j
    return grids


def _blocks(lines: list[str]) -> list[tuple[int, list[str]]]:
    """Runs of non-blank lines as (index of the first, lines)."""
    out: list[tuple[int, list[str]]] = []
    start = None
    for i, line in enumerate([*lines, ""]):
        if line.strip() and start is None:
            start = i
        elif not line.strip() and start is not None:
            out.append((start, lines[start:i]))
            start = None
    return out


_CARDISH = re.compile(
    r"gpu|card|npu|xpu|device|accelerator|rank|proc|node|machine|host|server|instance|world"
    r"|config|setup|hardware|topology|cluster|system|scale|chip|#|\bn\b|\bnp\b",
    re.I,
)


def _head_ok(head: list[str]) -> bool:
    """A header naming a card column and a measure column (cheap test before reading rows)."""
    if not _CARDISH.search(" ".join(head[:40])):
        return False
    kinds = [classify(h).kind for h in head[:40]]
    return any(k in CARD_KINDS for k in kinds) and any(k in MEASURE_KINDS for k in kinds)


def _block_grids(
    lines: list[str],
    heads_of: Callable[[str], list[list[str]]],
    split_row: Callable[[str, int], list[str] | None],
    form: str,
    spaced: bool = True,
) -> list[Grid]:
    """Per block of non-blank lines, the first usable grid: a header from ``heads_of(line)``
    and the rows ``split_row(line, n_header)`` gives (``[]`` skips a line, None ends the
    table)."""
    grids: list[Grid] = []
    for start, block in _blocks(lines):
        found = None
        for h, line in enumerate(block[:-1]):
            for head in heads_of(line):
                if len(head) < 2 or split_row(block[h + 1], len(head)) is None:
                    continue  # a header is followed by a row (checked first: it is cheap)
                if not _head_ok(head):
                    continue
                grid = Grid(head, header_line=start + h + 1, form=form, spaced_thousands=spaced)
                for k in range(h + 1, len(block)):
                    cells = split_row(block[k], len(head))
                    if cells is None:
                        break
                    if cells:
                        grid.rows.append(cells)
                        grid.lines.append(start + k + 1)
                    if len(grid.rows) > MAX_ROWS:
                        break
                if grid.usable():
                    found = grid
                    break
            if found is not None:
                break
        if found is not None:
            grids.append(found)
    return grids


def delimited_grids(lines: list[str]) -> list[Grid]:
    """Blocks whose lines split on tab, comma or semicolon into the header's number of fields
    (quoted CSV fields, ``"1,234"``, are one field; ``#`` comment lines are skipped). The
    header is the first line whose cells name a card and a measure column."""
    for delim, form in (("\t", "tsv"), (",", "csv"), (";", "semicolon")):

        def split(line: str, d: str = delim) -> list[str]:
            try:
                return [c.strip() for c in next(csv.reader([line], delimiter=d), [])]
            except csv.Error:  # a field over the csv module's limit, a stray NUL: no table row
                return [line]

        def row(line: str, n: int, split: Callable[[str], list[str]] = split) -> list[str] | None:
            cells = split(line)
            if len(cells) == n:
                return cells
            return [] if line.lstrip().startswith("#") else None

        grids = _block_grids(lines, lambda line, split=split: [split(line)], row, form)
        if grids:
            return grids
    return []


_NUMLIKE = re.compile(r"^[~≈]?[\d(]")
_WIDE = re.compile(r"\s{2,}|\t")


def _ws_heads(line: str) -> list[list[str]]:
    if "|" in line or _NUMLIKE.match(line.strip()):
        return []
    return [_WIDE.split(line.strip()), line.split()]


def _ws_row(line: str, n: int) -> list[str] | None:
    row = line.strip()
    if not _NUMLIKE.match(row):
        return None
    for cells in (_WIDE.split(row), row.split()):
        if len(cells) == n:
            return cells
    return None


def whitespace_grids(lines: list[str]) -> list[Grid]:
    """Whitespace-aligned columns: a header line (cells split on two or more spaces, else on
    single spaces) followed by rows that start with a number and split into as many cells."""
    return _block_grids(lines, _ws_heads, _ws_row, "whitespace", spaced=False)


_UNIT = (
    r"(?P<unit>(?:img|imgs|images?|samples?|seqs?|sequences?|sentences?|tokens?|toks?|ex"
    r"|examples?|infer|inferences?|frames?|items?)\s*/\s*(?:s|sec|secs|second)(?:\s*/\s*gpu)?"
    r"(?:\s+per\s+(?:gpu|card|device))?|fps|tps|ips"
    r"|(?:s|sec|secs|seconds|ms)\s*/\s*(?:it|iter|iteration|step|batch)"
    r"|(?:it|iter|iters|steps?)\s*/\s*s(?:ec)?"
    r"|(?:s|sec|secs|seconds|ms)\s+(?:per\s+)?(?:step|iter|iteration|batch))"
)
SENTENCE = re.compile(
    rf"^[\s*+\->#•]*(?P<who>(?:\d+\s*[x×*]\s*)?\d+\s*[x×]?\s*(?:[A-Za-z][\w-]*\s+)?"
    rf"(?:{_CARD_WORD}|{_NODE_WORD})\b(?:[\s,]*\(?\d+\s*{_CARD_WORD}\)?)?)"
    rf".{{0,40}}?(?P<value>[~≈]?\d[\d,.]*(?:[eE][-+]?\d+)?)\s*{_UNIT}",
    re.I,
)
_LOG_MARK = re.compile(r"\b(step|iteration|iter|epoch|batch)\s*[:=#\[]?\s*\d", re.I)


def sentence_grid(lines: list[str]) -> Grid | None:
    """One result per line: ``1 GPU: 380 img/s``, ``* 2 nodes → ~40 s/step``, ``8 GPU
    performance 1790 img/sec``, ``- 1xA10 GPU - 5878.93 infer/sec``. The unit of the first
    matching line fixes the column; lines with another unit are left out."""
    grid: Grid | None = None
    unit_kind = None
    for i, line in enumerate(lines):
        m = SENTENCE.search(strip_markup(line))
        if not m or _LOG_MARK.search(line):
            continue
        unit = " ".join(m.group("unit").split())
        kind = classify(f"value ({unit})").kind
        if grid is None:
            unit_kind = kind
            grid = Grid(["cards", unit], header_line=i + 1, form="lines")
        elif kind != unit_kind:
            continue
        grid.rows.append([m.group("who"), f"{m.group('value')} {unit}"])
        grid.lines.append(i + 1)
    return grid if grid is not None and len(grid.rows) >= 2 else None


def find_grids(lines: list[str]) -> list[Grid]:
    """Usable grids in reading order: Markdown first, then delimited, whitespace, sentences."""
    for finder in (markdown_grids, delimited_grids, whitespace_grids):
        found = [g for g in finder(lines) if g.usable()]
        if found:
            return found
    grid = sentence_grid(lines)
    return [grid] if grid is not None and grid.usable() else []


_MODEL = (
    r"(?-i:[A-Z][A-Za-z]{0,5}[- ]?\d{1,4}[A-Za-z]{0,3})\b"
    r"(?!\s*(?:cpus?|processors?|sockets?|cores?)\b)"
)
"""A card model named without a card word: ``A100``, ``H100``, ``MI250X``, ``RTX 4090``,
``Gaudi2`` (a capital letter, then digits: ``64 cores``, ``x86``, ``EPYC 7763 CPUs`` are not
cards)."""
_CPN = re.compile(
    rf"(?:(?P<a>\d+)\s*{_CARD_WORD}\s*(?:per|/|each\s+)\s*{_NODE_WORD}"
    rf"|{_NODE_WORD}\s+(?:with|of|having)\s+(?P<b>\d+)\s*(?:x\s*)?(?:[A-Za-z][\w-]*\s+)?{_CARD_WORD}"
    rf"|{_NODE_WORD}\s+(?:with|of|having)\s+(?P<e>\d+)\s*(?:x\s*)?{_MODEL}"
    r"|(?:cards|gpus|npus|devices)[ _-]?per[ _-]?node\s*[:=]\s*(?P<c>\d+)"
    r"|nproc[_-]per[_-]node\s*[=: ]\s*(?P<d>\d+))",
    re.I,
)
_SINGLE = re.compile(
    r"\b(single|one|same|1)[ -](node|machine|host|server|box)\b|\bsingle-node\b", re.I
)


def context(lines: list[str], used: set[int]) -> tuple[set[int], bool]:
    """Cards per node stated in the lines outside the table (``8 GPUs per node``, ``nodes with
    8 A100`` or ``8x H100 GPUs``, ``cards_per_node: 8``, ``--nproc_per_node=8``) and whether the
    text says all runs were on one node (``single node``, ``one machine``)."""
    cpn: set[int] = set()
    single = False
    for i, line in enumerate(lines):
        if i + 1 in used:
            continue
        for m in _CPN.finditer(line):
            v = next(g for g in m.group("a", "b", "c", "d", "e") if g)
            cpn.add(int(v))
        if _SINGLE.search(line):
            single = True
    return {c for c in cpn if c > 0}, single
