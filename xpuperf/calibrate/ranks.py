"""Rank count, hosts and nodes of one nccl-tests / rccl-tests run from its preamble, also when
the list of ``# Rank`` lines is abbreviated.

What the tool prints (nccl-tests ``src/common.cu``, ``src/util.cu`` from 2.17):
``# nThread T nGpus G minBytes …`` then ``# Using devices`` then, per process, one line per
rank it drives: ``#  Rank R Group C Pid P on HOST device D [BUS] NAME`` (``Group`` from 2.13,
no ``Pid`` before 2019). Rank ``R = p·T·G + i`` for process ``p``: every process owns ``T·G``
consecutive ranks. Each process formats its lines into a 2048-byte buffer; when they do not
fit (many devices per process, long host names) the text is cut at byte 2043 — with ``...``
written there from the JSON-output release (October 2025), silently before — so that process
shows its first ranks only and its last line is partial. People pasting a long job elide the
middle of the list with a ``...`` / ``…`` / ``[snip]`` line.

:func:`settle` turns what was seen into the table's ``ranks``, ``hosts`` and ``nodes``:

- complete list (ids 0…R−1, no cut, no elision): R ranks, nodes = distinct hosts;
- abbreviated: with ``P = T·G`` per process (1 without the header), ranks =
  (largest id seen // P + 1) · P, since a process that printed anything printed its first rank.
  When the list ends in an elision and ``P = 1`` the largest id is only a lower bound
  (``ranks_min``): the launcher line echoed in the file (``mpirun -np N`` … × P, see
  :mod:`.launch`) gives the count, else busbw/algbw does (:func:`.infer.finish_table`);
- nodes of an abbreviated list: the launcher's hosts / ``srun -N`` / ranks per node; else, when
  every process printed its first line (only the tool cut the list), the hosts seen; else
  ranks ÷ the rank count of the first host when its block is complete (ranks 0…k−1 on it and
  rank k elsewhere); else unknown.

Never raises on content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xpuperf.readers.launch import Launch

if TYPE_CHECKING:
    from xpuperf.calibrate.nccltests import TableInfo

MAX_RANKS = 1 << 20  # a rank id or count above this is a mangled line, not a job

_HEADER_RE = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)")
_PARTIAL_RE = re.compile(r"^#\s*Rank\s+(\d+)(?:\s.*?\bon\s+(\S+)\s+device\b)?")
_ELISION_RE = re.compile(
    r"^#?\s*(?:\.{3,}|…|[\[(<]\s*(?:\.{3,}|…|snip\w*)[^\])>]*[\])>]|snip\w*)"  # '# ...', '[snip]'
    r"|(?:\.{3,}|…)\s*$",  # a line the tool cut at byte 2043 ends in '...'
    re.IGNORECASE,
)


@dataclass
class RankList:
    """The ``# Rank`` lines of one preamble.

    Attributes:
        ranks: rank id → (host, device name) of every complete line; device_index: rank id →
            the ``device D`` index of its line.
        partial: rank id → host (None when cut before it) of lines cut short.
        elisions: ``...`` lines and lines ending in ``...``; last_elided: one came after the
            last rank line (the list may go on).
        per_process: ``nThread × nGpus`` of the ``# nThread`` header, None without it.
        duplicates: rank ids printed twice (several jobs writing into one file); duplicate:
            the first of them as (rank, host of its first line, host of its second).
    """

    ranks: dict[int, tuple[str, str]] = field(default_factory=dict)
    device_index: dict[int, int] = field(default_factory=dict)
    partial: dict[int, str | None] = field(default_factory=dict)
    elisions: int = 0
    last_elided: bool = False
    per_process: int | None = None
    duplicates: int = 0
    duplicate: tuple[int, str, str] | None = None  # the first rank id listed twice

    def header(self, line: str) -> bool:
        """Read ``# nThread T nGpus G``; True when ``line`` is that header."""
        if m := _HEADER_RE.match(line):
            per = int(m.group(1)) * int(m.group(2))
            self.per_process = per if 0 < per <= MAX_RANKS else None
            return True
        return False

    def add(self, rank: int, host: str, device: str, index: int) -> None:
        """One complete ``# Rank`` line (``index``: its ``device D``); ids above
        :data:`MAX_RANKS` are ignored."""
        if rank >= MAX_RANKS:
            return
        self.device_index.setdefault(rank, index)
        if rank in self.ranks:
            self.duplicates += 1
            if self.duplicate is None:
                self.duplicate = (rank, self.ranks[rank][0], host)
        cut = device.endswith(("...", "…"))  # the tool's cut landed in the device name
        self.ranks.setdefault(rank, (host, "" if cut else device))
        self.elisions += cut
        self.last_elided = cut

    def other(self, line: str) -> bool:
        """A line inside the rank list that is not a complete ``# Rank`` line: a cut rank line
        or an elision. True when it was one of those."""
        cut = line.endswith(("...", "…"))
        if m := _PARTIAL_RE.match(line):
            if not cut or int(m.group(1)) >= MAX_RANKS:
                return False  # a full line the rank pattern did not take: not ours to read
            self.partial.setdefault(int(m.group(1)), m.group(2))
            self.elisions += 1
            self.last_elided = True
            return True
        if self.ranks and _ELISION_RE.search(line):
            self.elisions += 1
            self.last_elided = True
            return True
        return False

    def ids(self) -> list[int]:
        return sorted(set(self.ranks) | set(self.partial))

    @property
    def abbreviated(self) -> bool:
        ids = self.ids()
        return bool(self.elisions or self.partial or (ids and ids[-1] + 1 != len(ids)))


def settle(t: TableInfo, rl: RankList, launch: Launch | None) -> None:
    """Fill ``t.ranks``/``ranks_source``, ``hosts``, ``nodes``/``nodes_source``, ``devices``,
    ``rank_lines``, ``abbreviated`` and ``ranks_min`` from ``rl`` (see module docstring)."""
    ids = rl.ids()
    if not ids:
        return
    order = [rl.ranks[r] for r in sorted(rl.ranks)]
    t.rank_lines = len(rl.ranks) + len(rl.partial)
    t.duplicate_rank = rl.duplicate
    t.hosts = list(dict.fromkeys(h for h, _ in order))
    t.devices = list(dict.fromkeys(d for _, d in order if d))
    if not rl.abbreviated:
        t.ranks, t.ranks_source = len(ids), "preamble"
        t.nodes, t.nodes_source = len(t.hosts), "preamble"
        return
    t.abbreviated = True
    per = rl.per_process or 1
    n = (ids[-1] // per + 1) * per
    open_end = rl.last_elided and per == 1  # '-g 1' list elided at its end: a lower bound
    got = launch.ranks * per if launch is not None and launch.ranks is not None else None
    if got is not None and n <= got <= MAX_RANKS:
        t.ranks, t.ranks_source = got, f"launcher (line {launch.line}) × {per} per process"
    elif not open_end:
        what = f"nThread × nGpus = {per} per process" if rl.per_process else "1 per process"
        t.ranks, t.ranks_source = n, f"abbreviated preamble: rank ids up to {ids[-1]}, {what}"
    else:
        t.ranks_min = n  # left to busbw/algbw (infer.finish_table), checked against this
    _nodes(t, rl, launch, per)


def _nodes(t: TableInfo, rl: RankList, launch: Launch | None, per: int) -> None:
    n = t.ranks
    procs = n // per if n is not None and n % per == 0 else None  # the launcher counts processes
    if launch is not None and (got := launch.node_count(procs))[0] is not None:
        t.nodes, t.nodes_source = got
        if launch.hosts:
            t.hosts = list(launch.hosts)
        return
    if n is not None and all(r in rl.ranks for r in range(0, n, per)):  # every process printed
        t.nodes, t.nodes_source = len(t.hosts), "preamble (every process's first line)"
        return
    t.ranks_per_node = _ranks_per_node(rl, n)
    set_nodes_from_block(t)


def _ranks_per_node(rl: RankList, n: int | None) -> int | None:
    """Ranks on one host from a block whose both ends are seen: the first host's (ranks 0…k−1
    on it and rank k elsewhere), else the last host's when the list reaches rank n−1 and that
    host's block starts at device 0 (rank b on device 0, rank b−1 elsewhere or not listed)."""
    first = rl.ranks.get(0, ("", ""))[0]
    k = 0
    while k in rl.ranks and rl.ranks[k][0] == first:
        k += 1
    if first and k in rl.ranks:
        return k
    if n is None or rl.last_elided or n - 1 not in rl.ranks:
        return None
    last = rl.ranks[n - 1][0]
    b = n - 1
    while b - 1 in rl.ranks and rl.ranks[b - 1][0] == last:
        b -= 1
    return n - b if rl.device_index.get(b) == 0 and b > 0 else None


def set_nodes_from_block(t: TableInfo) -> None:
    """nodes = ranks ÷ the ranks per node of :func:`_ranks_per_node` (when it divides)."""
    k, n = t.ranks_per_node, t.ranks
    if t.nodes is None and k and n is not None and n % k == 0:
        t.nodes, t.nodes_source = n // k, f"ranks per node ({k}, a complete host block)"


def after_ratio(t: TableInfo, warnings: list[str], path: str) -> None:
    """After busbw/algbw settled the rank count: warn about rank ids printed twice (the
    processes were separate jobs); for a list elided at its end check the count against the
    ids seen (``ranks_min``) and derive nodes from ranks per node."""
    if t.duplicate_rank is not None:
        r, a, b = t.duplicate_rank
        where = f" (rank {r} on {a} and on {b})" if a != b else f" (rank {r} twice on {a})"
        warnings.append(
            f"{path}:{t.header_line}: rank ids printed more than once{where}: the processes did "
            "not form one job — each ran its own benchmark (nccl-tests built without MPI=1, or "
            "started by another MPI's mpirun), so ranks and nodes here are not the job's; "
            "rebuild with `make MPI=1` against the MPI whose mpirun starts it"
        )
    if t.ranks_min is None:
        return
    if t.ranks is not None and t.ranks < t.ranks_min:
        warnings.append(
            f"{path}:{t.header_line}: busbw/algbw gives {t.ranks} ranks but the preamble lists "
            f"rank ids up to {t.ranks_min - 1} before '...': the rank count is unknown (at least "
            f"{t.ranks_min}); pass --ranks N, or keep the launch command (mpirun -np N) in the file"
        )
        t.ranks, t.ranks_source = None, ""
    elif t.ranks is None:
        warnings.append(
            f"{path}:{t.header_line}: the preamble lists rank ids up to {t.ranks_min - 1} "
            "before '...' and busbw/algbw cannot tell the rank count: it is unknown (at least "
            f"{t.ranks_min}); pass --ranks N, or keep the launch command (mpirun -np N) in the file"
        )
    set_nodes_from_block(t)
