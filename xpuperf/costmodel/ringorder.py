"""Ring order: which ring steps cross a node boundary, and the node-contiguous order.

A ring *order* is a sequence of ranks; rank ``order[i]`` sends to ``order[i+1]`` and the last
sends to the first. ``node_of`` maps a rank to its node: a sequence (``node_of[rank]``), a
:class:`~xpuperf.topology.model.Cluster` (its rank placement, :meth:`Cluster.slot`), or ``None``
with ``cards_per_node`` for node-major placement (rank r on node r // G).

NCCL's latency model counts ``nInterSteps`` of the 2(N−1) steps of a ring allreduce as crossing
nodes (formulas.md §2). Each of the two phases walks N−1 consecutive ring edges; following NCCL we
start the walk at ``order[0]``, so the closing edge is not counted and a node-contiguous order
gives 2(M−1) — the figure in formulas.md §1/§2 (NCCL 2.19's tuning.cc counted 2M; the chunk that
starts just after a node boundary does cross M boundaries per phase, a 2-hop difference).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

from xpuperf.costmodel.checks import CostModelError, positive_int
from xpuperf.topology.model import Cluster

NodeMap = Sequence[int] | Cluster | None


def node_ids(order: Sequence[int], node_of: NodeMap, cards_per_node: int | None = None) -> list:
    """Node of each rank of ``order`` (list, same length as ``order``).

    Raises :class:`CostModelError` when ``order`` is not a permutation of 0..N−1, when a rank
    has no node, or when neither ``node_of`` nor ``cards_per_node`` is given.
    """
    n = len(order)
    if sorted(order) != list(range(n)):
        raise CostModelError(f"a ring order must list every rank 0..{n - 1} exactly once")
    if isinstance(node_of, Cluster):
        if node_of.n_ranks < n:
            raise CostModelError(f"the topology has {node_of.n_ranks} ranks, the order {n}")
        return [node_of.rank_slots[r][0] for r in order]
    if node_of is None:
        if cards_per_node is None:
            raise CostModelError("give node_of (rank → node) or cards_per_node")
        g = positive_int("cards_per_node", cards_per_node)
        return [r // g for r in order]
    if len(node_of) < n:
        raise CostModelError(f"node_of has {len(node_of)} entries for {n} ranks")
    return [node_of[r] for r in order]


def cross_node_edges(
    order: Sequence[int], node_of: NodeMap = None, cards_per_node: int | None = None
) -> int:
    """Number of the N edges of the closed ring whose two ranks sit on different nodes.

    Node-contiguous order on M > 1 nodes: M; fully interleaved: N. Raises as :func:`node_ids`.
    Source: formulas.md §1 "Ring order" (the edges that go through a NIC).
    """
    nodes = node_ids(order, node_of, cards_per_node)
    if len(nodes) < 2:
        return 0
    return sum(a != b for a, b in zip(nodes, nodes[1:] + nodes[:1], strict=True))


def max_edges_leaving_node(
    order: Sequence[int], node_of: NodeMap = None, cards_per_node: int | None = None
) -> int:
    """Largest number of ring edges leaving any one node (flows sharing that node's NICs).

    Node-contiguous: 1; fully interleaved: G. Raises as :func:`node_ids`. These flows share the
    node's NIC bandwidth (formulas.md §1: β_e = NIC bandwidth / flows sharing it).
    """
    nodes = node_ids(order, node_of, cards_per_node)
    if len(nodes) < 2:
        return 0
    out = Counter(a for a, b in zip(nodes, nodes[1:] + nodes[:1], strict=True) if a != b)
    return max(out.values(), default=0)


def n_inter_steps(
    order: Sequence[int], node_of: NodeMap = None, cards_per_node: int | None = None
) -> int:
    """NCCL's ``nInterSteps`` for a ring allreduce in this order: steps that cross nodes.

    2 × (crossings along order[0] → … → order[N−1]); see the module docstring. Node-contiguous
    order: 2(M−1); interleaved: 2(N−1) (every step crosses a NIC). Raises as :func:`node_ids`.
    Source: formulas.md §1 "Ring order", §2; NCCL ``src/graph/tuning.cc``.
    """
    nodes = node_ids(order, node_of, cards_per_node)
    return 2 * sum(a != b for a, b in itertools.pairwise(nodes))


def node_contiguous_order(node_of: NodeMap = None, n_ranks: int | None = None) -> list[int]:
    """A ring order with each node's ranks contiguous, nodes in order of first appearance.

    ``node_of``: a sequence or :class:`Cluster` (its placement may scatter a node's ranks), or
    ``None`` for node-major placement of ``n_ranks`` ranks (then the identity order). Within a
    node, ranks keep their numeric order. Raises :class:`CostModelError` without ranks.
    """
    if isinstance(node_of, Cluster):
        nodes = [node_of.rank_slots[r][0] for r in range(node_of.n_ranks)]
    elif node_of is None:
        nodes = list(range(positive_int("n_ranks", n_ranks or 0)))
    else:
        nodes = list(node_of)
    if not nodes:
        raise CostModelError("no ranks to order")
    groups: dict[int, list[int]] = {}
    for rank, node in enumerate(nodes):
        groups.setdefault(node, []).append(rank)
    return [r for members in groups.values() for r in members]


def interleaved_order(n_nodes: int, cards_per_node: int) -> list[int]:
    """The worst order on node-major ranks: one rank from each node in turn (rank i·G + j at
    position j·M + i), so that every ring edge crosses a node. Raises for counts < 1."""
    m = positive_int("n_nodes", n_nodes)
    g = positive_int("cards_per_node", cards_per_node)
    return [i * g + j for j in range(g) for i in range(m)]
