"""What surrounds the numbers of a scaling table: a column naming each row's model or
configuration (:func:`label_column`), and lines of a training log pasted next to the table
(:func:`step_log_lines`).

A post often holds two ladders in one table (``| Model | GPUs | img/s |`` with ResNet-50 and
ResNet-152 rows): each has its own one-card row, so the rows are grouped by that column. A post
also often pastes a few lines of the training log under the table (Megatron-LM's
``iteration 10/ 500 | … elapsed time per iteration (ms): …``): the step-log readers' own sniffers
(:data:`xpuperf.readers.formats.MODULES`) say which lines those are.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from xpuperf.readers.scaling.cells import strip_markup

if TYPE_CHECKING:
    from xpuperf.readers.scaling.cells import Header
    from xpuperf.readers.scaling.layout import Grid

LABEL_HEADER = re.compile(
    r"(model|network|net|arch(itecture)?|config(uration)?|setting|precision|dtype|mode"
    r"|framework|backend|benchmark|task|dataset|variant|version|method|strategy|experiment"
    r"|workload|name)s?\b",
    re.I,
)
"""Headers of a column naming the model or configuration of each row (matched at the start)."""


def label_column(grid: Grid, heads: list[Header], idx: dict[str, int | None]) -> int | None:
    """Index of the column naming each row's model / configuration, or None: a column the
    reader does not use (or a ``config`` column beside a card column) whose header matches
    :data:`LABEL_HEADER` and whose non-empty cells hold words (``ResNet-50``, ``AMP``)."""
    for i, h in enumerate(heads):
        spare = h.kind is None or (h.kind == "config" and idx["cards"] is not None)
        if not spare or not LABEL_HEADER.match(h.text):
            continue
        cells = [strip_markup(r[i]) for r in grid.rows if i < len(r)]
        if any(cells) and all(any(ch.isalpha() for ch in x) for x in cells if x):
            return i
    return None


def step_log_lines(lines: list[str], used: set[int]) -> tuple[int, str, int] | None:
    """``(count, format name, first 1-based line)`` of the lines outside the table (``used``:
    1-based lines of the table) that a framework step-log reader's sniffer accepts, for the first
    reader (in sniffing order) that accepts any; None when no reader does. Never raises."""
    from xpuperf.readers.formats import MODULES, console  # the registry imports this package

    rest = [(i + 1, console.clean(x)[1]) for i, x in enumerate(lines)
            if i + 1 not in used and any(ch.isdigit() for ch in x)]  # fmt: skip
    if not rest:
        return None
    texts = [x for _, x in rest]
    for mod in MODULES:
        if getattr(mod, "EXTENSIONS", ()):
            continue  # JSON / CSV readers: chosen by extension, not by lines in a post
        try:
            if not mod.sniff(texts):
                continue
            hits = [n for n, x in rest if mod.sniff([x])]
        except Exception:  # a sniffer's bug must never break reading a table
            continue
        if hits:
            return len(hits), mod.NAME, hits[0]
    return None
