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
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

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

INFO_MARK = "NCCL INFO "
# Linear on hostile lines: _PREFIX starts only where a host name can (a search from every
# position of a long run was quadratic); no lazy group before `\s*$` (quadratic on blank runs).
_PREFIX = re.compile(r"(?<![^\s:])([^\s:]+):(\d+):(\d+) \[(\d+)\] $")
_MPI_TAG = re.compile(r"^\[\d+,(\d+)\]<std(?:out|err)>:")
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)(?:\+(\S+))?")
_COMM = re.compile(r"\bcomm (0x[0-9a-fA-F]+) rank (\d+) n[Rr]anks (\d+)(.*)$")
_KV = re.compile(r"\b(cudaDev|nvmlDev|busId|commId|nNodes|localRanks|localRank) (\S+)")
_RING = re.compile(r"^Channel (\d+)/(\d+) :((?:\s+\d+)+)\s*$")
_CONN = re.compile(
    r"^Channel (\d+)(?:/\d+)? : (\d+)\[([0-9a-fA-Fx:.]+)\] -> (\d+)\[([0-9a-fA-Fx:.]+)\]"
    r"(?: \[(send|receive)\])? via (\S(?:.*\S)?)\s*$"
)
_TREE = re.compile(r"\[(\d+)\] (-?\d+(?:/-?\d+)*)->(-?\d+)->(-?\d+)")
_NCHAN = re.compile(r"^(\d+) coll channels")
_IB = re.compile(r"^NET/IB ?: Using (.*)$")
_IB_DEV = re.compile(r"\[\d+\]([\w.-]+):\d+/(IB|RoCE)")
_SOCKET = re.compile(r"^NET/Socket ?: Using (.*)$")
_SOCK_IF = re.compile(r"\[\d+\]([\w.@-]+):")
_NO_DEV = re.compile(r"^NET/(\w+) ?: No device found")
_NETWORK = re.compile(r"^Using network (.*\S)\s*$")
_PROVIDER = re.compile(r"^NET/OFI Selected Provider is (\w+)")
_GDR = re.compile(r"GPU Direct RDMA (?:\(DMABUF\) )?(Enabled|Disabled|enabled|disabled) for (.*)$")
_ENV = re.compile(r"^(NCCL_\w+) set by environment to (.*)$")  # value: see _global_line
_ENV_SET = re.compile(r"Setting (NCCL_\w+) (?:environment variable )?to \"?([^\"\s]*)\"?")
_PATTERN = re.compile(
    r"^Pattern (\d+), crossNic (\d+), nChannels (\d+), bw ([\d.]+)/([\d.]+), "
    r"type (\w+)/(\w+), sameChannels (\d+)"
)
_FALLBACK = re.compile(r"Could not find a path for pattern (\d+), falling back to simple order")
_COMPLETE = re.compile(r"- Init COMPLETE")


def _lines(path: Path) -> Iterator[str]:
    with path.open("rb") as fh:
        magic = fh.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rb") as fh:  # type: ignore[operator]
        for raw in fh:
            yield raw.decode("utf-8", "replace").rstrip("\r\n")


def has_nccl_lines(path: str | Path, max_bytes: int | None = 64 << 20) -> bool:
    """True when ``path`` holds ``NCCL INFO`` (``.gz`` read transparently) within its first
    ``max_bytes`` bytes (None: the whole file). Reads raw chunks; unreadable files give False."""
    mark = INFO_MARK.encode()
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
                if mark in tail + chunk:
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
            c.n_channels = c.n_channels or total
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


def _ranks_of(item: tuple) -> list[int]:
    """Rank ids a pending item names (ring order, transport ends, tree rank, parent, children)."""
    if item[0] == "ring":
        return item[3]
    if item[0] == "conn":
        return [item[1].src, item[1].dst]
    if item[0] == "tree":
        return [item[1], *(r for kids, up in item[2].values() for r in (*kids, up))]
    return []


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


def _split(line: str) -> tuple[tuple, str | None, str] | None:
    """(thread key, host, message) of an NCCL INFO line, else None."""
    i = line.find(INFO_MARK)
    if i < 0:
        return None
    msg = line[i + len(INFO_MARK) :].strip()
    m = _PREFIX.search(line[:i])
    if m:
        host, pid, tid = m.group(1), int(m.group(2)), int(m.group(3))
        return (host, pid, tid), host, msg
    tag = _MPI_TAG.match(line)
    return ("mpi", tag.group(1) if tag else None), None, msg


def _parse_line(b: _Builder, line: str, no: int) -> None:
    try:
        _parse(b, line, no)
    except ValueError:  # a number past int()'s 4300-digit limit: not a line NCCL wrote
        return


def _parse(b: _Builder, line: str, no: int) -> None:
    log = b.log
    if log.version is None and "NCCL version" in line:
        v = _VERSION.search(line)
        if v:
            log.version, log.cuda = v.group(1), v.group(2)
    got = _split(line)
    if got is None:
        return
    thread, host, msg = got
    log.info_lines += 1
    if host is not None and host not in log.hosts:
        log.hosts.append(host)
    if not msg.startswith(("Channel", "Trees")):
        m = _COMM.search(msg) if "comm 0x" in msg else None
        if m:
            _comm_line(b, thread, host, m, no)
        else:
            _global_line(b, thread, host, msg, no)
        return
    m = _RING.match(msg)
    if m:
        order = [int(x) for x in m.group(3).split()]
        if max(order) >= MAX_CARDS:
            b.skip(no)
            return
        b.item(thread, ("ring", int(m.group(1)), int(m.group(2)), order))
        return
    m = _CONN.match(msg)
    if m:
        via = m.group(7)
        parts = via.split("/")
        kind = parts[0].upper()
        net = parts[1] if kind in ("NET", "COLLNET") and len(parts) > 1 else None
        if max(int(m.group(2)), int(m.group(4))) >= MAX_CARDS:
            b.skip(no)
            return
        conn = Connection(
            int(m.group(1)), int(m.group(2)), int(m.group(4)), via, kind, net, "GDRDMA" in via, no
        )
        b.item(thread, ("conn", conn, host, msg))
        return
    if msg.startswith("Trees"):
        trees = {
            int(t[0]): ([int(x) for x in t[1].split("/")], int(t[3])) for t in _TREE.findall(msg)
        }
        rank = _TREE.search(msg)
        if rank and max(_ranks_of(("tree", int(rank.group(3)), trees))) >= MAX_CARDS:
            b.skip(no)
        elif rank:
            b.item(thread, ("tree", int(rank.group(3)), trees))


def _comm_line(b: _Builder, thread: tuple, host: str | None, m: re.Match, no: int) -> None:
    rank, nranks = int(m.group(2)), int(m.group(3))
    if nranks > MAX_CARDS or rank >= nranks:
        b.skip(no)
        return
    kv = dict(_KV.findall(m.group(4)))
    ptr = (host, thread[1] if host is not None else None, m.group(1))
    known = b.pointer.get(ptr)
    if "commId" in kv:
        key = f"commId {kv['commId']}"
        if known is not None and known != key and known.startswith("nranks "):
            b.merge(known, key)
    else:
        key = known or f"nranks {nranks}"
    b.pointer[ptr] = key
    c = b.comm(key)
    c.nranks = nranks
    if "nNodes" in kv and kv["nNodes"].isdigit():
        c.nnodes = int(kv["nNodes"])
    if "localRanks" in kv and kv["localRanks"].isdigit():
        c.local_ranks = int(kv["localRanks"])
    info = c.ranks.setdefault(rank, RankInfo(rank))
    info.host = host or info.host
    info.host_inferred = False
    if host is not None:
        info.pid = thread[1]
    if kv.get("cudaDev", "").isdigit():
        info.cuda_dev = int(kv["cudaDev"])
    if "busId" in kv:
        info.bus_id = kv["busId"]
    if "Destroy" not in m.group(4):
        b.announce(thread, key, bool(_COMPLETE.search(m.group(4))))


def _global_line(b: _Builder, thread: tuple, host: str | None, msg: str, no: int) -> None:
    log = b.log
    m = _NCHAN.match(msg)
    if m:
        b.item(thread, ("nchan", int(m.group(1))))
        return
    m = _PATTERN.match(msg)
    if m:
        g = m.groups()
        gs = GraphSearch(
            int(g[0]), int(g[1]), int(g[2]), float(g[3]), float(g[4]), g[5], g[6], int(g[7]),
            host, no,
        )  # fmt: skip
        b.item(thread, ("search", gs))
        return
    m = _FALLBACK.search(msg)
    if m:
        b.item(thread, ("fallback", int(m.group(1)), no))
        return
    m = _IB.match(msg)
    if m:
        for dev, _ in _IB_DEV.findall(m.group(1)):
            if dev not in log.ib_devices:
                log.ib_devices.append(dev)
        return
    m = _SOCKET.match(msg)
    if m:
        for name in _SOCK_IF.findall(m.group(1)):
            if name not in log.socket_ifs:
                log.socket_ifs.append(name)
        return
    m = _NO_DEV.match(msg)
    if m:
        log.ib_none = log.ib_none or m.group(1) == "IB"
        return
    m = _NETWORK.match(msg)
    if m:
        if m.group(1) not in log.network:
            log.network.append(m.group(1))
        return
    m = _PROVIDER.match(msg)
    if m:
        log.provider = m.group(1)
        return
    m = _GDR.search(msg)
    if m:
        target = log.gdr_enabled if m.group(1).lower() == "enabled" else log.gdr_disabled
        target.append((m.group(2).strip(), host, no))
        return
    m = _ENV.match(msg)
    if m:  # trailing blanks and one final dot dropped (was `(.*?)\.?\s*$`: quadratic)
        value = m.group(2).rstrip()
        log.env.setdefault(m.group(1), (value[:-1] if value.endswith(".") else value, no))
        return
    m = _ENV_SET.search(msg)
    if m:
        log.env.setdefault(m.group(1), (m.group(2), no))


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
        before = b.log.info_lines
        try:
            for no, line in enumerate(_lines(Path(p)), 1):
                _parse_line(b, line, no)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise InputError(f"cannot read: {exc}", p) from exc
        if b.log.info_lines == before:
            raise InputError(
                "no 'NCCL INFO' line: not an NCCL debug log; rerun the job with "
                "NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH shows transports and rings)",
                p,
            )
        b.log.sources.append(str(p))
    return b.finish()
