"""Views of one communicator for the NCCL-log checks and reports: ring node crossings and the
transport summary.

Ring node crossings (:func:`ring_crossings`): a ring over R ranks on H > 1 hosts crosses a node
boundary at least H times (each host's ranks entered once and left once); NCCL's ring search
builds node-contiguous rings (formulas.md §1 "Ring order"; :mod:`xpuperf.costmodel.ringorder`
counts the closed-ring edges). A leaf of the NCCL-log modules: both
:mod:`~xpuperf.calibrate.nccllog_checks` and :mod:`~xpuperf.calibrate.nccllog_verdict` import it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from xpuperf.calibrate.nccllog_model import Comm
from xpuperf.calibrate.nccllog_net import scope
from xpuperf.costmodel.ringorder import cross_node_edges


@dataclass
class RingCrossing:
    """Node crossings of one ring: ``cross_node_edges`` of the closed ring vs ``minimum`` = H
    (0 on one host); ``None`` when a rank's host is unknown. ``inferred``: some hosts guessed."""

    channel: int
    order: list[int]
    cross_node_edges: int | None
    minimum: int | None
    inferred: bool


def ring_crossings(comm: Comm) -> list[RingCrossing]:
    """One :class:`RingCrossing` per ring channel of ``comm``, in channel order."""
    out = []
    for ch, order in sorted(comm.rings.items()):
        hosts = [comm.host_of(r) for r in order]
        inferred = any(comm.ranks[r].host_inferred for r in order if r in comm.ranks)
        if any(h is None for h in hosts) or sorted(order) != list(range(len(order))):
            out.append(RingCrossing(ch, order, None, None, inferred))
            continue
        ids = {h: i for i, h in enumerate(dict.fromkeys(hosts))}
        node_of = [0] * len(order)
        for r, h in zip(order, hosts, strict=True):
            node_of[r] = ids[h]
        n_hosts = len(ids)
        crossings = cross_node_edges(order, node_of)
        out.append(RingCrossing(ch, order, crossings, n_hosts if n_hosts > 1 else 0, inferred))
    return out


def transport_summary(comm: Comm) -> list[dict]:
    """Connections per (scope, label): ``scope`` ``intra``/``inter``/``unknown`` (host of a
    rank unknown), ``label`` as :attr:`Connection.label`, ``connections`` count; sorted."""
    count: Counter = Counter()
    for c in comm.connections.values():
        count[(scope(comm, c.src, c.dst), c.label)] += 1
    return [
        {"scope": s, "transport": lab, "connections": n} for (s, lab), n in sorted(count.items())
    ]
