"""NCCL graph dumps (``NCCL_GRAPH_DUMP_FILE``, NCCL 2.7+): recognised and refused.

Input shape: the rings and trees NCCL searched for, not the machine::

    <graphs version="1">
      <graph id="0" pattern="4" crossnic="0" nchannels="2" speedintra="20" speedinter="20"
             latencyinter="0" typeintra="NVL" typeinter="PIX" samechannels="1">
        <channel><net dev="0"/><gpu dev="0"/><gpu dev="1"/>…<net dev="0"/></channel>
      </graph>
    </graphs>

(``latencyinter`` only in newer versions; NCCL ``src/graph/xml.cc`` ncclTopoGetXmlFromGraph.)
Its ``<gpu dev>`` and ``<net dev>`` are NCCL's
own device numbers and its link types are the slowest hop of each channel, so no card pair, NUMA
node or NIC-to-card mapping can be read from it. :func:`parse` raises an
:class:`~xpuperf.errors.InputError` that says what the file is (graphs, patterns, channels) and
how to get the topology: ``NCCL_TOPO_DUMP_FILE`` (root ``<system>``), which
:mod:`~xpuperf.topology.importers.ncclxml` reads.
"""

from __future__ import annotations

import re

from xpuperf.errors import InputError
from xpuperf.topology.importers.base import Imported

NAME = "nccl-graph"
PATTERNS = {"1": "balanced tree", "2": "split tree", "3": "tree", "4": "ring", "5": "nvls",
            "6": "collnet direct"}  # fmt: skip
"""``pattern`` numbers of NCCL's ``ncclTopoGraph`` (src/graph/topo.h NCCL_TOPO_PATTERN_*)."""
_GRAPH = re.compile(r"<graph\b([^>]*)>")


def sniff(text: str) -> bool:
    """True for an NCCL graph dump: a ``<graphs`` root holding ``<graph`` elements."""
    head = text.lstrip()[:4096]
    return bool(re.match(r"(<\?xml[^>]*>\s*)?<graphs\b", head)) and "<graph " in text


def parse(text: str, source: str = "<text>") -> Imported:
    """Always raises: an NCCL graph dump is not a topology (module docstring).

    Raises:
        InputError: "this is a graph dump, not a topology", with what the dump holds.
    """
    kinds, channels = [], 0
    for m in _GRAPH.finditer(text):
        attrs = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        kinds.append(PATTERNS.get(attrs.get("pattern", ""), f"pattern {attrs.get('pattern')}"))
        channels += int(attrs["nchannels"]) if attrs.get("nchannels", "").isdigit() else 0
    what = f"{len(kinds)} graph(s): {', '.join(dict.fromkeys(kinds))}; {channels} channel(s)"
    raise InputError(
        f"this is a graph dump, not a topology (NCCL_GRAPH_DUMP_FILE, {what}): it lists the "
        "rings and trees NCCL built, not the cards, links and NICs; dump the topology with "
        "NCCL_TOPO_DUMP_FILE=topo.xml (root <system>) and import that",
        source,
    )
