"""Importer for ``lscpu`` (util-linux; flat layout of 2.3x and the indented tree of 2.37+).

Input shape: ``Key: value`` lines, possibly indented (tree layout), possibly after a ``$ lscpu``
prompt or inside a larger dump (``collect_env``); wrapped ``Flags`` continuation lines have no
colon and are skipped. Keys read::

    CPU(s): 72                         Socket(s): 1
    Thread(s) per core: 1              Core(s) per socket: 72
    Model name: Neoverse-V2            NUMA node(s): 8
    NUMA node0 CPU(s): 0-71            NUMA node2 CPU(s):        # empty: a CPU-less node

Extracted: NUMA node ids as listed (ids may skip, e.g. no node1 on GH200) with CPU lists (``()``
for CPU-less nodes); CPU count, sockets, cores per socket, threads per core and model name into
``cpu_info`` (``"-"`` or an empty model name is dropped). Memory sizes are not printed by lscpu.

Errors: :class:`~xpuperf.errors.InputError` with file and line for a CPU list that cannot be
read. ``NUMA node(s)`` disagreeing with the nodes listed is reported as a note.
"""

from __future__ import annotations

import re

from xpuperf.errors import InputError
from xpuperf.topology.build import parse_cpus
from xpuperf.topology.importers.base import Imported, NumaFacts, single_host

NAME = "lscpu"
_KV = re.compile(r"^\s*([A-Za-z][\w ()/-]*?):(.*)$")  # no `(.*?)\s*$`: quadratic on long blanks
_NODE = re.compile(r"^NUMA node(\d+) CPU\(s\)$")
_INFO = {
    "CPU(s)": "cpus",
    "Socket(s)": "sockets",
    "Core(s) per socket": "cores_per_socket",
    "Thread(s) per core": "threads_per_core",
}


def sniff(text: str) -> bool:
    """True for ``lscpu`` output: ``Architecture:`` and ``CPU(s):`` lines."""
    return bool(
        re.search(r"^\s*Architecture:\s+\S", text, re.M)
        and re.search(r"^\s*CPU\(s\):\s+\d+", text, re.M)
    )


def parse(text: str, source: str = "<text>") -> Imported:
    """Read ``lscpu`` output into one host's NUMA and CPU facts (see the module docstring).

    Raises:
        InputError: a NUMA CPU list that cannot be read (file and line).
    """
    imp, host = single_host(source, NAME)
    declared: int | None = None
    for k, line in enumerate(text.splitlines(), start=1):
        m = _KV.match(line)
        if m is None:
            continue
        key, value = m.group(1).strip(), m.group(2).strip()
        if n := _NODE.match(key):
            try:
                cpus = parse_cpus(value)
            except ValueError:
                raise InputError(f"{key}: cannot read CPU list {value!r}", source, k) from None
            host.numa_nodes[int(n.group(1))] = NumaFacts(int(n.group(1)), cpus)
        elif key == "NUMA node(s)" and re.fullmatch(r"[0-9]{1,18}", value):
            declared = int(value)
        elif (
            key in _INFO and re.fullmatch(r"[0-9]{1,18}", value) and _INFO[key] not in host.cpu_info
        ):
            host.cpu_info[_INFO[key]] = int(value)
        elif key == "Model name" and value not in ("", "-") and "model_name" not in host.cpu_info:
            host.cpu_info["model_name"] = value
    if declared is not None and declared != len(host.numa_nodes):
        imp.notes.append(
            f"{source}: 'NUMA node(s): {declared}' but {len(host.numa_nodes)} node CPU lists given"
        )
    if not host.numa_nodes and not host.cpu_info:
        raise InputError("no lscpu fields found (CPU(s), NUMA nodeN CPU(s))", source)
    return imp
