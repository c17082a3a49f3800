"""The card-by-card relation matrix that vendor tools print after ``nvidia-smi topo -m``'s model
(``mx-smi topo -m``, ``npu-smi info -t topo``), read once for their importers.

Shape: a header naming the cards (``GPU0 GPU1 …``, ``NPU0 …``, ``Phy-ID12 …``), possibly other
devices (``NIC0 …``), then named columns (``CPU Affinity``, ``Node Affinity`` …); one row per
device starting with its label; a blank line or ``Legend:`` ends the table. Columns are tabs or
runs of spaces; a blank named value is placed by its position under the header.

:func:`read` returns the codes between card pairs (a < b, as printed in row a) and each card's
named values; the caller maps codes to link kinds. Errors are
:class:`~xpuperf.errors.InputError` with file and line.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

from xpuperf.errors import InputError
from xpuperf.topology.build import parse_cpus

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass
class Matrix:
    """What :func:`read` found.

    Attributes:
        cards: card indices in header order (the number in each card label).
        codes: (a, b) → the cell of row a, column b, for every ordered card pair a ≠ b.
        values: card → named column → value as printed ('' when blank).
        others: header labels that are not cards (NICs …), not imported.
        header_line: 1-based line of the header.
    """

    cards: list[int] = field(default_factory=list)
    codes: dict[tuple[int, int], str] = field(default_factory=dict)
    values: dict[int, dict[str, str]] = field(default_factory=dict)
    others: list[str] = field(default_factory=list)
    header_line: int = 0
    row_line: dict[int, int] = field(default_factory=dict)

    def pairs(self, prefix: str, notes: list[str], source: str) -> list[tuple[int, int, str]]:
        """(a, b, code) for each card pair in header order, a before b, with the cell of row a;
        a cell that differs from its mirror adds a note (``prefix``: ``GPU``, ``NPU``)."""
        out = []
        for i, a in enumerate(self.cards):
            for b in self.cards[i + 1 :]:
                code, back = self.codes[(a, b)], self.codes[(b, a)]
                if code != back:
                    notes.append(f"{source}: {prefix}{a}/{prefix}{b} is {code} but "
                                 f"{prefix}{b}/{prefix}{a} is {back}; using {code}")  # fmt: skip
                out.append((a, b, code))
        return out

    def cpus(self, card: int, column: str, source: str) -> tuple[int, ...] | None:
        """The card's CPU list in ``column`` (None when blank, ``-`` or N/A).

        Raises:
            InputError: the value is not a CPU list (with the row's line).
        """
        value = self.values.get(card, {}).get(column, "")
        if value in ("", "-", "NA", "N/A"):
            return None
        try:
            return parse_cpus(value)
        except ValueError:
            raise InputError(f"card {card}: {column} {value!r} is not a CPU list", source,
                             self.row_line.get(card)) from None  # fmt: skip


def _tokens(line: str, named: Collection[str]) -> list[tuple[int, str]]:
    """(column, token) of a line, multi-word named columns kept whole."""
    line = line.expandtabs(8)
    for name in named:
        line = line.replace(name, name.replace(" ", "\x00"))
    return [(m.start(), m.group().replace("\x00", " ")) for m in re.finditer(r"\S+", line)]


def read(
    text: str,
    source: str,
    label: re.Pattern[str],
    named: Collection[str],
    codes: Collection[str],
    tool: str,
) -> Matrix:
    """Read the matrix (module docstring). ``label`` matches a card label with the index in group
    1; ``named`` are the known named columns; ``codes`` the cell values allowed between cards
    (``X`` on the diagonal is always checked).

    Raises:
        InputError: no header, a row with too few cells, a row naming no header column, an
            unknown code, ``X`` off the diagonal or a missing row.
    """
    lines = _ANSI.sub("", text).splitlines()
    out = Matrix()
    start = None
    for i, line in enumerate(lines):
        toks = _tokens(line, named)
        if toks and label.fullmatch(toks[0][1]) and (line[:1].isspace() or len(toks) == 1 or
                                                     label.fullmatch(toks[1][1])):  # fmt: skip
            start = i
            break
    if start is None:
        raise InputError(f"no `{tool}` table (a header line of card labels)", source)
    out.header_line = start + 1
    header = _tokens(lines[start], named)
    n = next((k for k, (_, t) in enumerate(header) if t in named), len(header))
    cols = [t for _, t in header[:n]]
    tail = header[n:]
    index = {}
    for c in cols:
        if m := label.fullmatch(c):
            index[c] = int(m.group(1))
            out.cards.append(int(m.group(1)))
        else:
            out.others.append(c)
    rows: dict[int, tuple[list[str], int]] = {}
    for k in range(start + 1, len(lines)):
        line = lines[k]
        if not line.strip() or re.match(r"\s*(#|(NIC )?Legend\b)", line):
            if rows:
                break
            continue
        toks = _tokens(line, named)
        if toks[0][1] not in cols:
            if rows or label.fullmatch(toks[0][1]):
                raise InputError(f"row {toks[0][1]!r} is not a column of the header", source, k + 1)
            continue
        if len(toks) < n + 1:
            raise InputError(
                f"row {toks[0][1]} has {len(toks) - 1} cells for {n} columns", source, k + 1
            )
        if toks[0][1] not in index:
            continue  # a NIC row
        card = index[toks[0][1]]
        rows[card] = ([t for _, t in toks[1 : n + 1]], k + 1)
        out.row_line[card] = k + 1
        out.values[card] = _named(toks[n + 1 :], tail)
    missing = [c for c in cols if c in index and index[c] not in rows]
    if missing:
        raise InputError(f"no row for {', '.join(missing)}", source, out.header_line)
    for a, (cells, ln) in rows.items():
        for col, v in zip(cols, cells, strict=True):
            if col not in index:
                continue
            b = index[col]
            if (v == "X") != (a == b):
                raise InputError(f"{col} of row {a}: {v!r} (X marks a card itself)", source, ln)
            if a != b and v not in codes:
                raise InputError(
                    f"row {a}, column {col}: unknown code {v!r}; expected one of "
                    f"{', '.join(sorted(codes))}",
                    source,
                    ln,
                )
            if a != b:
                out.codes[(a, b)] = v
    return out


def _named(toks: list[tuple[int, str]], tail: list[tuple[int, str]]) -> dict[str, str]:
    """Named values: in order when every column has one, else each under the nearest header."""
    out = dict.fromkeys((t for _, t in tail), "")
    if len(toks) >= len(tail):
        out.update(zip(out, (t for _, t in toks), strict=False))
        return out
    for pos, tok in toks:
        name = min(tail, key=lambda h: abs(h[0] - pos))[1]
        out[name] = tok
    return out
