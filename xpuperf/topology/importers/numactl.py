"""Importer for ``numactl -H`` / ``numactl --hardware`` (numactl 2.x, any Linux).

Input shape::

    available: 8 nodes (0-7)
    node 0 cpus: 0 1 2 … 15          # empty after the colon for a CPU-less (memory) node
    node 0 size: 64992 MB
    node 0 free: 4950 MB
    node distances:
    node   0   1 …                   # header and rows may carry trailing spaces
      0:  10  22 …

Extracted: NUMA node ids (possibly non-contiguous), each node's CPU list (``()`` when CPU-less)
and size in MB (numactl's MB are MiB: 1 MiB = 1.048576 MB), and the distance matrix (relative,
10 = local; asymmetric matrices are kept as printed; imported as ``numa_nodes[].distances``). The
command line itself may precede the output. ``free`` is a moment's snapshot and is ignored.

Errors: :class:`~xpuperf.errors.InputError` with file and line for a node line that cannot be
read, a distance row of the wrong length (tolerated, with a note, on a cut last line), or
``available: N nodes`` disagreeing with the nodes listed.
"""

from __future__ import annotations

import re

from xpuperf.errors import InputError
from xpuperf.topology.importers.base import Imported, NumaFacts, single_host

NAME = "numactl"
MIB_MB = 1.048576
_AVAILABLE = re.compile(r"^available:\s*([0-9]+)\s+nodes?\s*\(([^)]*)\)", re.M)
_NODE = re.compile(r"^node\s+([0-9]{1,9})\s+(cpus|size|free):(.*)$")


def sniff(text: str) -> bool:
    """True for ``numactl -H`` output (an ``available: N nodes (…)`` line and node lines)."""
    return bool(_AVAILABLE.search(text)) and bool(re.search(r"^node\s+\d+\s+cpus:", text, re.M))


def parse(text: str, source: str = "<text>") -> Imported:
    """Read ``numactl -H`` output into one host's NUMA facts (see the module docstring).

    Raises:
        InputError: malformed node or distance lines (file and line).
    """
    imp, host = single_host(source, NAME)
    lines = text.splitlines()
    expected: int | None = None
    header: list[int] | None = None
    rows_seen: set[int] = set()
    for k, raw in enumerate(lines, start=1):
        line = raw.strip()
        if m := _AVAILABLE.match(line):
            expected = int(m.group(1))
            continue
        if m := _NODE.match(line):
            nid, what, value = int(m.group(1)), m.group(2), m.group(3).strip()
            node = host.numa_nodes.setdefault(nid, NumaFacts(nid))
            try:
                if what == "cpus":
                    node.cpus = tuple(int(c) for c in value.split())
                elif what == "size":
                    mb = re.fullmatch(r"(\d+(?:\.\d+)?)\s*MB", value)
                    if mb is None:
                        raise ValueError(value)
                    node.memory_MB = round(float(mb.group(1)) * MIB_MB, 3)
            except ValueError:
                raise InputError(
                    f"node {nid} {what}: cannot read {value!r} (expected CPU ids or 'N MB')",
                    source,
                    k,
                ) from None
            continue
        if re.match(r"^node(\s+\d+)+$", line):
            header = [int(x) for x in line.split()[1:]]
            continue
        if header is not None and (m := re.match(r"^([0-9]{1,9}):(.*)$", line)):
            cells = m.group(2).split()
            bad = next((c for c in cells if not re.fullmatch(r"[0-9]{1,9}", c)), None)
            if bad is not None and not (k == len(lines) and bad == cells[-1]):
                raise InputError(
                    f"distance row {m.group(1)}: cannot read {bad[:20]!r}; numactl prints whole "
                    "numbers (10 = local)",
                    source,
                    k,
                )
            if int(m.group(1)) not in header:
                raise InputError(
                    f"distance row {m.group(1)} but the header lists nodes "
                    f"{' '.join(map(str, header))}",
                    source,
                    k,
                )
            row = [int(x) for x in cells if re.fullmatch(r"[0-9]{1,9}", x)]
            rows_seen.add(int(m.group(1)))
            if len(row) != len(header) or bad is not None:
                if k == len(lines):
                    imp.notes.append(f"{source}:{k}: distance row {m.group(1)} is cut; ignored")
                    continue
                raise InputError(
                    f"distance row {m.group(1)} has {len(row)} values for {len(header)} nodes",
                    source,
                    k,
                )
            for to, d in zip(header, row, strict=True):
                host.distances[(int(m.group(1)), to)] = d
    if not host.numa_nodes:
        raise InputError("no `node N cpus:` lines; is this `numactl -H` output?", source)
    missing = [n for n in header or () if n not in rows_seen]
    if missing and rows_seen:
        imp.notes.append(
            f"{source}: the distance matrix has no row for node(s) "
            f"{', '.join(map(str, missing))} (output cut?); their distances are left unknown"
        )
    if expected is not None and expected != len(host.numa_nodes):
        raise InputError(
            f"'available: {expected} nodes' but {len(host.numa_nodes)} nodes are listed", source
        )
    return imp
