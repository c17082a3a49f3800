"""Read NCCL_DEBUG=INFO logs: version, ranks and hosts, network, transports, rings, trees.

Input: any text stream (``.gz`` too) with NCCL INFO lines, whatever wraps them: NCCL's own
``host:pid:tid [cudaDev] NCCL INFO …`` prefix (the number in brackets is the CUDA device, not the
rank; NCCL ``src/debug.cc``), OpenMPI ``[1,R]<stdout>:`` tags, ``srun -l`` ``N:`` prefixes,
timestamps, nccl-tests tables and training-log lines in between, ranks interleaved. Lines NCCL
prints and this reader knows (NCCL ``src/init.cc``, ``src/transport/{p2p,shm,net,net_ib}.cc``,
``src/graph/{connect,search}.cc``):

==============================================  ===============================================
``NCCL version 2.18.5+cuda12.2``                version, CUDA
``RCCL version 2.18.3+hip6.0 HEAD:…``,          library RCCL, version, HIP
``RCCL version : 2.21.5-…`` + ``HIP version :``
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

from xpuperf.calibrate.nccllog_builder import _Builder
from xpuperf.calibrate.nccllog_lines import INFO_MARK, WARN_MARK, _parse_line
from xpuperf.calibrate.nccllog_model import (
    RING_PATTERN,
    Comm,
    Connection,
    GraphSearch,
    NcclLog,
    RankInfo,
)
from xpuperf.errors import InputError

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
