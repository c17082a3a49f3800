"""NCCL INFO / WARN line parsing for :mod:`xpuperf.calibrate.nccllog`: line regexes and parsers.

Each parser reads one line and hands what it finds to the reader's builder (``_Builder`` in
:mod:`~xpuperf.calibrate.nccllog`); the lines known, and the rules for skipped ones, are listed in
that module's docstring. Raises nothing: a line that does not parse is ignored or counted.

Line prefixes (NCCL ``src/debug.cc``): INFO ``host:pid:tid [dev] NCCL INFO msg``; WARN
``host:pid:tid [dev] file.cc:LINE NCCL WARN msg`` (after an empty line; from 2.26 with a
``[YYYY-mm-dd HH:MM:SS]`` timestamp before the host by default). ANSI colour codes are removed
first.
"""

from __future__ import annotations

import re

from xpuperf.calibrate.nccllog_builder import _Builder, ranks_of
from xpuperf.calibrate.nccllog_model import (
    RING_PATTERN,
    Connection,
    GraphSearch,
    NicDistance,
    RankInfo,
    WarnLine,
)
from xpuperf.topology.nodes import MAX_CARDS

INFO_MARK = "NCCL INFO "
WARN_MARK = "NCCL WARN "
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Linear on hostile lines: _PREFIX starts only where a host name can (a search from every
# position of a long run was quadratic); no lazy group before `\s*$` (quadratic on blank runs).
_PREFIX = re.compile(r"(?<![^\s:])([^\s:]+):(\d+):(\d+) \[(\d+)\] $")
_WPREFIX = re.compile(r"(?<![^\s:])([^\s:]+):(\d+):(\d+) \[(\d+)\] (?:[^\s:]+:\d+ )?$")
_MPI_TAG = re.compile(r"^\[\d+,(\d+)\]<std(?:out|err)>:")
# NCCL "NCCL version 2.18.5+cuda12.2"; RCCL (src/init.cc) "RCCL version 2.10.3+hip4.3" (ROCm 4-5.3),
# "RCCL version 2.13.4+hip5.4 develop:7e1cbb4" (5.4-6.2), "RCCL version : 2.21.5-develop:7e1cbb4"
# then "HIP version  : 6.3.42131-fa1d09cbd" and "ROCm version : 6.3.0…" lines (6.3+).
_VERSION = re.compile(r"\b([NR])CCL version(?: :)? (\d+\.\d+\.\d+)(?:\+(\S+))?")
_HIP_VERSION = re.compile(r"\bHIP version\s*: (\d+\.\d+)")
_COMM = re.compile(r"\bcomm (0x[0-9a-fA-F]+) rank (\d+) n[Rr]anks (\d+)(.*)$")
_KV = re.compile(r"\b(cudaDev|nvmlDev|busId|commId|nNodes|localRanks|localRank) (\S+)")
_RING = re.compile(
    r"^(?:Channel|Ring) (\d+)(?:/(\d+))? :((?:\s+\d+)+)\s*$"
)  # 2.3: Ring, 2.4: no /NN
_LINKS = re.compile(r"^Ring (\d+) : (-?\d+) -> (\d+) -> (-?\d+)\s*$")  # 2.12+ GRAPH: prev->r->next
_CONN = re.compile(
    r"^(?:Channel|Ring) (\d+)(?:/\d+)? : (\d+)(?:\[([0-9a-fA-Fx:.]+)\])? -> (\d+)"
    r"(?:\[([0-9a-fA-Fx:.]+)\])?(?: \[(send|receive)\])? via (\S(?:.*\S)?)\s*$"
)
_RCCL_TAIL = re.compile(r" comm 0x[0-9a-fA-F]+ nRanks \d+.*$")  # RCCL appends the communicator
_TREE = re.compile(r"\[(\d+)\] (-?\d+(?:/-?\d+)+)->(-?\d+)->(-?\d+)")  # 2.5+: kids->r->up
_TREE_OLD = re.compile(r"\[(\d+)\] (-?\d+)->(-?\d+)->(-?\d+(?:/-?\d+)+)")  # 2.4: up->r->kids
_NCHAN = re.compile(r"^(\d+) coll channels")
_IB = re.compile(r"^NET/IB ?: Using (.*)$")
_IB_DEV = re.compile(r"\[\d+\] ?([\w.-]+):\d+/(IB|RoCE)")  # 2.3: "NET/IB: [0] mlx5_1:1/IB"
_IB_OLD = re.compile(r"^NET/IB ?: (\[\d+\] [\w.-]+:\d+/(?:IB|RoCE))")
_SOCKET = re.compile(r"^NET/Socket ?: Using (.*)$")
_SOCK_IF = re.compile(r"\[\d+\]([\w.@-]+):")
_NO_DEV = re.compile(r"^NET/(\w+) ?: No device found")
_NETWORK = re.compile(r"^Using (?:internal )?[Nn]etwork (.*\S)\s*$")  # 2.3: "internal Network"
_PROVIDER = re.compile(r"^NET/OFI Selected Provider is (\w+)")
_GDR = re.compile(r"GPU Direct RDMA (?:\(DMABUF\) )?(Enabled|Disabled|enabled|disabled) for (.*)$")
_ENV = re.compile(r"^(NCCL_\w+) set by environment to (.*)$")  # value: see _global_line
_ENV_SET = re.compile(r"Setting (NCCL_\w+) (?:environment variable )?to \"?([^\"\s]*)\"?")
_PATTERN = re.compile(
    r"^Pattern (\d+), crossNic (\d+), nChannels (\d+), bw ([\d.]+)/([\d.]+), "
    r"type (\w+)/(\w+), sameChannels (\d+)"
)
_FALLBACK = re.compile(r"Could not find a path for pattern (\d+), falling back to simple order")
_P2P_OFF = re.compile(
    r"P2P is disabled between|Could not enable P2P between|peer query failed between|"
    r"P2P not supported between|failed to peer with device"
)  # src/graph/paths.cc, src/transport/p2p.cc, src/allocator.cc (2.4-2.2x)
_NET_FAIL = re.compile(
    r"Failed to open libibverbs|NET/IB ?: Unable to open device|Plugin load returned|"
    r"Failed to open libnvidia-ml"
)  # src/misc/ibvwrap.cc / ibvsymbols.cc, src/transport/net_ib.cc, src/net.cc
_NO_PLUGIN = re.compile(r"^NET/Plugin ?: (?:.*No plugin found|Could not find)")
_NIC_DIST = re.compile(r"^CUDA Dev (\d+)\[\d+\], (\S+) NIC distance :((?:\s+[A-Z]+)+)\s*$")  # 2.4
_RING_FAIL = re.compile(r"Could not create rings, falling back on simple ring")  # 2.3-2.4 WARN
_COMPLETE = re.compile(r"- Init COMPLETE")


def _split(line: str) -> tuple[tuple, str | None, str, bool] | None:
    """(thread key, host, message, is_warn) of an NCCL INFO or WARN line, else None."""
    warn = False
    i = line.find(INFO_MARK)
    if i < 0:
        i = line.find(WARN_MARK)
        if i < 0:
            return None
        warn = True
    if "\x1b" in line:
        line = _ANSI.sub("", line)
        i = line.find(WARN_MARK if warn else INFO_MARK)
        if i < 0:
            return None
    msg = line[i + len(INFO_MARK) :].strip()
    m = (_WPREFIX if warn else _PREFIX).search(line[:i])
    if m:
        host, pid, tid = m.group(1), int(m.group(2)), int(m.group(3))
        return (host, pid, tid), host, msg, warn
    tag = _MPI_TAG.match(line)
    return ("mpi", tag.group(1) if tag else None), None, msg, warn


def _parse_line(b: _Builder, line: str, no: int) -> None:
    try:
        _parse(b, line, no)
    except ValueError:  # a number past int()'s 4300-digit limit: not a line NCCL wrote
        return


def _parse(b: _Builder, line: str, no: int) -> None:
    log = b.log
    if log.version is None and "CCL version" in line:
        v = _VERSION.search(line)
        if v:
            log.library = "RCCL" if v.group(1) == "R" else "NCCL"
            log.version, log.cuda = v.group(2), v.group(3) or log.cuda
    if log.cuda is None and "HIP version" in line:
        v = _HIP_VERSION.search(line)
        if v:
            log.library, log.cuda = "RCCL", f"hip{v.group(1)}"
    got = _split(line)
    if got is None:
        return
    thread, host, msg, warn = got
    if host is not None and host not in log.hosts:
        log.hosts.append(host)
    if warn:
        log.warn_lines += 1
        log.warns.append(WarnLine(msg, host, no, b.source))
        _global_line(b, thread, host, msg, no)
        return
    log.info_lines += 1
    if not msg.startswith(("Channel", "Trees", "Ring")):
        m = _COMM.search(msg) if "comm 0x" in msg else None
        if m:
            _comm_line(b, thread, host, m, no)
        else:
            _global_line(b, thread, host, msg, no)
        return
    if " nRanks " in msg:
        msg = _RCCL_TAIL.sub("", msg)
    if msg.startswith("Trees"):
        _trees(b, thread, msg, no)
        return
    if " via " in msg:
        _conn(b, thread, host, msg, no)
        return
    m = _RING.match(msg)
    if m:
        order = [int(x) for x in m.group(3).split()]
        if max(order) >= MAX_CARDS:
            b.skip(no)
            return
        total = int(m.group(2)) if m.group(2) else 0
        b.item(thread, ("ring", int(m.group(1)), total, order))
        return
    m = _LINKS.match(msg)
    if m:
        ch, prev, rank, nxt = (int(x) for x in m.groups())
        if max(prev, rank, nxt) >= MAX_CARDS:
            b.skip(no)
            return
        b.item(thread, ("links", ch, rank, prev, nxt, host))


def _conn(b: _Builder, thread: tuple, host: str | None, msg: str, no: int) -> None:
    """A transport line (``Channel``/``Ring`` ``NN : a[..] -> b[..] via X``, any version)."""
    m = _CONN.match(msg)
    if not m:
        return
    via = m.group(7)
    if via.startswith("direct shared memory"):  # NCCL 2.3-2.7 wording of SHM
        via = "SHM/direct"
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


def _trees(b: _Builder, thread: tuple, msg: str, no: int) -> None:
    """``Trees [c] kids->rank->up`` (2.5+, 2.5-2.7 with ``|down tree``) or ``[c] up->rank->kids``
    (2.4); children ``-1`` = none."""
    found = _TREE.findall(msg)
    if found:
        trees = {int(t[0]): ([int(x) for x in t[1].split("/")], int(t[3])) for t in found}
        rank = int(found[0][2])
    else:
        old = _TREE_OLD.findall(msg)
        if not old:
            return
        trees = {int(t[0]): ([int(x) for x in t[3].split("/")], int(t[1])) for t in old}
        rank = int(old[0][2])
    if max(ranks_of(("tree", rank, trees))) >= MAX_CARDS:
        b.skip(no)
    else:
        b.item(thread, ("tree", rank, trees))


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
    if _RING_FAIL.search(msg):
        b.item(thread, ("fallback", RING_PATTERN, no))
        return
    if _P2P_OFF.search(msg):
        log.p2p_off.append((msg, host, no))
        return
    if _NET_FAIL.search(msg):
        log.net_failures.append((msg, host, no))
        return
    if _NO_PLUGIN.match(msg):
        log.plugin_missing.append((msg, host, no))
        return
    m = _NIC_DIST.match(msg)
    if m:
        kinds = tuple(m.group(3).split())
        log.nic_distances.append(NicDistance(int(m.group(1)), m.group(2), kinds, host, no))
        return

    m = _IB.match(msg) or _IB_OLD.match(msg)
    if m:
        for dev, layer in _IB_DEV.findall(m.group(1)):
            log.roce = log.roce or layer == "RoCE"
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
