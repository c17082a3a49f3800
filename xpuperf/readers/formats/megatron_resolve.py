"""Line numbers of the rows the Megatron block fast path found (:mod:`.megatron`): the fast path
stores a placeholder per block; a row's or a drop's real line is found, only when a warning needs
it, by reading the block again and replaying it through the line path."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from xpuperf.readers.base import Source
from xpuperf.readers.formats.blocks import reread
from xpuperf.readers.formats.table import Rows


class Resolver:
    """Exact line numbers for rows and drops found by the fast path: the block is read again and
    replayed through the line path (which starts clean there, as the fast path did)."""

    def __init__(
        self, src: Source, fast: list[tuple[int, int, int, int]], rows: Rows,
        parser: Callable[[], Any],
    ) -> None:  # fmt: skip
        self.src, self.fast, self.parser = src, fast, parser
        self.lines = np.frombuffer(rows.lines, dtype=np.int64).copy()
        self.cache: dict[int, Any] = {}

    def _replay(self, b: int) -> Any:
        got = self.cache.get(b)
        if got is None:
            offset, length, first_line, _ = self.fast[b]
            got = self.parser()
            got.lines(reread(self.src, offset, length), first_line)
            self.cache = {b: got}
        return got

    def drop_line(self, b: int, reason: str) -> int | None:
        d = self._replay(b).rows.drops.get(reason)
        return d.first if d else None

    def locate(self, idx: Sequence[int]) -> dict[int, int | None]:
        out: dict[int, int | None] = {}
        for i in idx:
            i = int(i)
            if not 0 <= i < len(self.lines):
                out[i] = None
                continue
            line = int(self.lines[i])
            if line < 0:
                b = -line - 1
                k = i - self.fast[b][3]
                replayed = self._replay(b).rows.lines
                line = int(replayed[k]) if 0 <= k < len(replayed) else -1
            out[i] = line if line > 0 else None
        return out
