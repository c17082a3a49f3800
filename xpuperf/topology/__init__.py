"""Cluster topology: the model, the description file, presets, importers and the audit.

Library entry points (usable without the CLI):

- :func:`load` / :func:`loads` / :func:`from_dict` — description file → :class:`Cluster`.
- :func:`preset` / :func:`generic` — built-in clusters (:data:`NODE_PRESETS`).
- :func:`to_json_dict` — the JSON contract of ``xpuperf topo show --json``.
- :func:`check` — audit findings (XP5xx).
- :meth:`Cluster.path` / :meth:`Node.nic_bw_per_card_GBps` — what the cost model consumes.
"""

from xpuperf.topology.audit import check
from xpuperf.topology.loader import from_dict, load, loads
from xpuperf.topology.model import Cluster, Device, Link, Network, Nic, Node, NumaNode, Path
from xpuperf.topology.presets import NODE_PRESETS, generic, preset
from xpuperf.topology.view import describe, to_json_dict

__all__ = [
    "NODE_PRESETS",
    "Cluster",
    "Device",
    "Link",
    "Network",
    "Nic",
    "Node",
    "NumaNode",
    "Path",
    "check",
    "describe",
    "from_dict",
    "generic",
    "load",
    "loads",
    "preset",
    "to_json_dict",
]
