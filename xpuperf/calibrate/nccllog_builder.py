"""The builder of :mod:`xpuperf.calibrate.nccllog`: parsed line items → communicators.

:mod:`~xpuperf.calibrate.nccllog_lines` parses one line and hands what it finds to a
:class:`_Builder`, which assigns per-communicator items (rings, transports, trees) to their
communicator (rules in :mod:`xpuperf.calibrate.nccllog`'s docstring) and finishes the
:class:`~xpuperf.calibrate.nccllog_model.NcclLog`. Imports no other NCCL-log module but the
model, so that the line parser and the reader import it one way.
"""

from __future__ import annotations

from xpuperf.calibrate.nccllog_model import Comm, Connection, NcclLog, RankInfo
from xpuperf.topology.nodes import MAX_CARDS


def ranks_of(item: tuple) -> list[int]:
    """Rank ids a pending item names (ring order, transport ends, tree rank, parent, children)."""
    if item[0] == "ring":
        return item[3]
    if item[0] == "conn":
        return [item[1].src, item[1].dst]
    if item[0] == "tree":
        return [item[1], *(r for kids, up in item[2].values() for r in (*kids, up))]
    if item[0] == "links":
        return list(item[2:5])
    return []


class _Builder:
    """Accumulates parsed items and assigns per-communicator ones to their communicator."""

    def __init__(self) -> None:
        self.log = NcclLog()
        self.comms: dict[str, Comm] = {}
        self.thread: dict[tuple, str | None] = {}
        self.pending: dict[tuple, list[tuple]] = {}
        self.pointer: dict[tuple, str] = {}  # (host, pid, comm pointer) -> key
        self.skipped = 0  # lines with rank ids no communicator can hold
        self.first_skipped: int | None = None  # line number of the first one, when known
        self.source: str | None = None  # file being read (WARN lines keep it)

    def skip(self, no: int | None = None) -> None:
        """Count a line whose rank ids are out of range (reported, not parsed)."""
        self.skipped += 1
        if self.first_skipped is None and no is not None:
            self.first_skipped = no

    def merge(self, old: str, new: str) -> None:
        """A comm first seen without ``commId`` (key ``nranks N``) turns out to be ``new``."""
        src, dst = self.comms.pop(old, None), self.comm(new)
        for t, k in self.thread.items():
            if k == old:
                self.thread[t] = new
        for p, k in self.pointer.items():
            if k == old:
                self.pointer[p] = new
        if src is None:
            return
        for r, info in src.ranks.items():
            dst.ranks.setdefault(r, info)
        dst.rings.update({k: v for k, v in src.rings.items() if k not in dst.rings})
        dst.trees.update({k: v for k, v in src.trees.items() if k not in dst.trees})
        for k, v in src.connections.items():
            dst.connections.setdefault(k, v)
        for k, v in src.ends.items():
            dst.ends.setdefault(k, v)
        dst.searches += src.searches
        for k, v in src.ring_links.items():
            dst.ring_links.setdefault(k, v)
        dst.fallbacks += src.fallbacks
        dst.n_channels = dst.n_channels or src.n_channels
        dst.nnodes = dst.nnodes if dst.nnodes is not None else src.nnodes
        dst.local_ranks = dst.local_ranks if dst.local_ranks is not None else src.local_ranks

    def comm(self, key: str) -> Comm:
        if key not in self.comms:
            self.comms[key] = Comm(key)
        return self.comms[key]

    def item(self, thread: tuple, item: tuple) -> None:
        key = self.thread.get(thread)
        if key is not None:
            self.apply(self.comms[key], item)
        else:
            self.pending.setdefault(thread, []).append(item)

    def announce(self, thread: tuple, key: str, complete: bool) -> None:
        for item in self.pending.pop(thread, []):
            self.apply(self.comms[key], item)
        self.thread[thread] = None if complete else key

    def apply(self, c: Comm, item: tuple) -> None:
        kind = item[0]
        if c.nranks is not None and max(ranks_of(item), default=-1) >= c.nranks:
            self.skip()
            return
        if kind == "ring":
            _, channel, total, order = item
            c.rings[channel] = order
            c.n_channels = c.n_channels or total or None
        elif kind == "conn":
            conn: Connection = item[1]
            host = item[2]
            printer = conn.dst if "[receive]" in item[3] else conn.src
            conn.printer = printer
            c.connections.setdefault((conn.channel, conn.src, conn.dst, conn.via), conn)
            c.ends.setdefault((conn.channel, conn.src, conn.dst, printer), conn)
            info = c.ranks.setdefault(printer, RankInfo(printer))
            if info.host is None and host is not None:
                info.host = host
        elif kind == "tree":
            _, rank, trees = item
            for channel, value in trees.items():
                c.trees[(rank, channel)] = value
        elif kind == "nchan":
            c.n_channels = item[1]
        elif kind == "search":
            c.searches.append(item[1])
        elif kind == "fallback":
            c.fallbacks.append((item[1], item[2]))
        elif kind == "links":
            _, channel, rank, prev, nxt, host = item
            c.ring_links[(channel, rank)] = (prev, nxt)
            info = c.ranks.setdefault(rank, RankInfo(rank))
            if info.host is None and host is not None:
                info.host = host

    def finish(self) -> NcclLog:
        leftovers = [it for items in self.pending.values() for it in items]
        if leftovers and not self.comms:
            self.comm("unnamed")
        by_size = sorted(self.comms.values(), key=lambda c: -(c.nranks or 0))
        for item in leftovers:
            target = by_size[0]
            if item[0] == "ring":
                same = [c for c in by_size if c.nranks == len(item[3])]
                target = same[0] if len(same) == 1 else target
            self.apply(target, item)
        for c in by_size:
            _rings_from_links(c)
            _infer_hosts(c)
            if c.nranks is None:
                known = set(c.ranks) | {r for order in c.rings.values() for r in order}
                c.nranks = max(known) + 1 if known else None
        self.log.comms = sorted(by_size, key=lambda c: (-(c.nranks or 0), c.key))
        if self.skipped:
            at = f" (first at line {self.first_skipped})" if self.first_skipped else ""
            self.log.warnings.append(
                f"skipped {self.skipped} NCCL INFO line(s) naming a rank id beyond the "
                f"communicator's nranks or the {MAX_CARDS}-card cap{at}: not lines NCCL writes; "
                "check that the log is not truncated or mixed with other text"
            )
        return self.log


def _rings_from_links(c: Comm) -> None:
    """Ring order of each channel without a ``Channel NN/MM :`` line, from the per-rank
    ``Ring NN : prev -> rank -> next`` lines when every rank of the channel printed one and
    following ``next`` from rank 0 visits all of them once (NCCL ``src/graph/rings.cc``)."""
    n = c.nranks
    if not c.ring_links or not n:
        return
    for ch in sorted({ch for ch, _ in c.ring_links}):
        nxt = {r: v[1] for (k, r), v in c.ring_links.items() if k == ch}
        if ch in c.rings or len(nxt) != n:
            continue
        order, r = [0], nxt.get(0)
        while r is not None and r != 0 and len(order) <= n:
            order.append(r)
            r = nxt.get(r)
        if r == 0 and sorted(order) == list(range(n)):
            c.rings[ch] = order


def unnamed_host(k: int) -> str:
    """The label of the ``k``-th node (1-based, node-major) when no line of the log names it."""
    return f"node {k} (name not in the log)"


def _infer_hosts(c: Comm) -> None:
    """Fill unknown hosts from nNodes/localRanks, node-major, when consistent with known ones."""
    g, n = c.local_ranks, c.nranks
    if not g or not n or n > 1 << 24 or c.nnodes is None or g * c.nnodes != n:
        return
    block_host: dict[int, str] = {}
    for r, info in c.ranks.items():
        if info.host is not None and block_host.setdefault(r // g, info.host) != info.host:
            return  # ranks are not placed node-major: do not guess
    for r in range(n):
        info = c.ranks.setdefault(r, RankInfo(r))
        if info.host is None:
            info.host = block_host.get(r // g, unnamed_host(r // g + 1))
            info.host_inferred = True
