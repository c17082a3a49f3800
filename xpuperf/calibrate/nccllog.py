"""Read NCCL_DEBUG=INFO logs: version, ranks and hosts, network, transports, rings, trees.

Input: any text stream (``.gz`` too) with NCCL INFO lines, whatever wraps them: NCCL's own
``host:pid:tid [cudaDev] NCCL INFO …`` prefix (the number in brackets is the CUDA device, not the
rank; NCCL ``src/debug.cc``), OpenMPI ``[1,R]<stdout>:`` tags, ``srun -l`` ``N:`` prefixes,
timestamps, nccl-tests tables and training-log lines in between, ranks interleaved. Lines NCCL
prints and this reader knows (NCCL ``src/init.cc``, ``src/transport/{p2p,shm,net,net_ib}.cc``,
``src/graph/{connect,search}.cc``):

==============================================  ===============================================
``NCCL version 2.18.5+cuda12.2``                version, CUDA
``comm 0x… rank R nranks N cudaDev D busId B``   rank → host (from the prefix), device, bus id;
(``nRanks N nNodes M localRanks L``, ``commId``)  the communicator (``commId`` when printed)
``Channel 00/08 :    0   7   6 …``              ring order of channel 0 (of 8)
``Channel 00/0 : 0[101c0] -> 8[101c0] [send]    transport between two ranks: ``P2P/IPC``,
via NET/IB/1/GDRDMA``                            ``P2P/CUMEM``, ``SHM``, ``NET/<name>`` (+GDRDMA)
``Trees [0] 1/-1/-1->0->-1 …``                  tree children/parent per channel
``N coll channels``                              channel count
``NET/IB : Using [0]mlx5_0:1/IB …``,            RDMA devices, socket interfaces, the network
``NET/Socket : Using [0]eth0:…``,                NCCL chose, plugin provider
``Using network IB``, ``NET/OFI … Provider``
``GPU Direct RDMA Enabled|Disabled for …``      GPUDirect RDMA state per HCA/GPU
``NCCL_X set by environment to V``              NCCL settings from the environment
``Pattern 4, crossNic 0, … type NVL/PIX …``     graph search result (ring = pattern 4)
``Could not find a path for pattern 4, falling  topology search gave up
back to simple order``
==============================================  ===============================================

Other lines are ignored. Communicators are kept apart by ``commId`` when NCCL prints it, else by
their size; lines without a communicator on their own line (rings, trees, transports) belong to
the communicator last announced on the same ``host:pid:tid`` thread, else to the one whose size
matches the ring, else to the largest (the "world"). Hosts of ranks that no line names are
inferred from ``nNodes``/``localRanks`` assuming node-major placement (rank r on node
r // localRanks) and marked ``host_inferred``.

A line naming a rank id >= ``MAX_CARDS`` (1,000,000, the topology's cap), a ``comm`` line with
``nranks`` above that cap or ``rank >= nranks``, and a ring/tree/transport line with a rank the
communicator's ``nranks`` does not hold are skipped and counted in ``NcclLog.warnings``.

Errors: :class:`~xpuperf.errors.InputError` for an unreadable file or one with no NCCL INFO line.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Iterator
from pathlib import Path

from xpuperf.calibrate.nccllog_lines import INFO_MARK, WARN_MARK, _parse_line, _ranks_of
from xpuperf.calibrate.nccllog_model import (
    RING_PATTERN,
    Comm,
    Connection,
    GraphSearch,
    NcclLog,
    RankInfo,
)
from xpuperf.errors import InputError
from xpuperf.topology.nodes import MAX_CARDS

__all__ = [
    "RING_PATTERN",
    "Comm",
    "Connection",
    "GraphSearch",
    "NcclLog",
    "RankInfo",
    "has_nccl_lines",
    "parse_lines",
    "read_nccl_log",
]


def _lines(path: Path) -> Iterator[str]:
    with path.open("rb") as fh:
        magic = fh.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rb") as fh:  # type: ignore[operator]
        for raw in fh:
            yield raw.decode("utf-8", "replace").rstrip("\r\n")


def has_nccl_lines(path: str | Path, max_bytes: int | None = 64 << 20) -> bool:
    """True when ``path`` holds ``NCCL INFO`` or ``NCCL WARN`` (a log run with NCCL_DEBUG=WARN;
    ``.gz`` read transparently) within its first ``max_bytes`` bytes (None: the whole file).
    Reads raw chunks; unreadable files give False."""
    mark, wmark = INFO_MARK.encode(), WARN_MARK.encode()
    try:
        with Path(path).open("rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        opener = gzip.open if gz else open
        seen, tail = 0, b""
        with opener(path, "rb") as fh:  # type: ignore[operator]
            while max_bytes is None or seen < max_bytes:
                chunk = fh.read(1 << 20)
                if not chunk:
                    return False
                both = tail + chunk
                if mark in both or wmark in both:
                    return True
                tail = chunk[-len(mark) :]
                seen += len(chunk)
    except (OSError, EOFError, gzip.BadGzipFile):
        return False
    return False


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
        if c.nranks is not None and max(_ranks_of(item), default=-1) >= c.nranks:
            self.skip()
            return
        if kind == "ring":
            _, channel, total, order = item
            c.rings[channel] = order
            c.n_channels = c.n_channels or total or None
        elif kind == "conn":
            conn: Connection = item[1]
            host = item[2]
            c.connections.setdefault((conn.channel, conn.src, conn.dst, conn.via), conn)
            printer = conn.dst if "[receive]" in item[3] else conn.src
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
            info.host = block_host.get(r // g, f"?node{r // g + 1}")
            info.host_inferred = True


def parse_lines(lines: Iterable[str], builder: _Builder | None = None) -> NcclLog:
    """Parse an iterable of text lines (no file needed; for tests and streams)."""
    b = builder or _Builder()
    for no, line in enumerate(lines, 1):
        _parse_line(b, line, no)
    return b.finish()


def read_nccl_log(paths: str | Path | Iterable[str | Path]) -> NcclLog:
    """Parse one NCCL INFO log, or several files of one job merged into one :class:`NcclLog`.

    Args:
        paths: a file or files (plain text or gzip), streamed line by line.

    Raises:
        InputError: a file cannot be read, or a file holds no ``NCCL INFO`` line (named, with the
            remedy: run with ``NCCL_DEBUG=INFO``).
    """
    files = [paths] if isinstance(paths, (str, Path)) else list(paths)
    b = _Builder()
    for p in files:
        before = b.log.info_lines + b.log.warn_lines
        b.source = str(p)
        try:
            for no, line in enumerate(_lines(Path(p)), 1):
                _parse_line(b, line, no)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise InputError(f"cannot read: {exc}", p) from exc
        if b.log.info_lines + b.log.warn_lines == before:
            raise InputError(
                "no 'NCCL INFO' or 'NCCL WARN' line: not an NCCL debug log; rerun the job with "
                "NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH shows transports and rings)",
                p,
            )
        b.log.sources.append(str(p))
    return b.finish()
