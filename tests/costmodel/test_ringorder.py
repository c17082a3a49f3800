"""Ring order: cross-node steps counted from the order (formulas.md §1 "Ring order", §2)."""

from __future__ import annotations

import pytest

from xpuperf.costmodel import collectives as c
from xpuperf.costmodel import levels
from xpuperf.costmodel import ringorder as ro
from xpuperf.costmodel.checks import CostModelError
from xpuperf.topology import preset
from xpuperf.topology.model import Cluster

GiB = 2**30


@pytest.mark.parametrize(("m", "g"), [(1, 8), (2, 8), (4, 8), (128, 8), (16, 4)])
def test_node_contiguous_order_has_2_m_minus_1_inter_steps(m: int, g: int) -> None:
    order = list(range(m * g))
    assert ro.n_inter_steps(order, cards_per_node=g) == 2 * (m - 1)
    assert ro.cross_node_edges(order, cards_per_node=g) == (m if m > 1 else 0)
    assert ro.max_edges_leaving_node(order, cards_per_node=g) == (1 if m > 1 else 0)


@pytest.mark.parametrize(("m", "g"), [(2, 8), (4, 8), (16, 4)])
def test_interleaved_order_crosses_on_every_step(m: int, g: int) -> None:
    order = ro.interleaved_order(m, g)
    n = m * g
    assert ro.n_inter_steps(order, cards_per_node=g) == 2 * (n - 1)
    assert ro.cross_node_edges(order, cards_per_node=g) == n
    assert ro.max_edges_leaving_node(order, cards_per_node=g) == g


def test_one_misplaced_pair_by_hand() -> None:
    # 2 nodes of 4: swap ranks 3 and 4 → order 0 1 2 4 3 5 6 7; nodes 0 0 0 1 0 1 1 1
    order = [0, 1, 2, 4, 3, 5, 6, 7]
    assert ro.n_inter_steps(order, cards_per_node=4) == 2 * 3
    assert ro.cross_node_edges(order, cards_per_node=4) == 4


def test_order_from_a_cluster_placement() -> None:
    base = preset("dgx-a100", 2)
    # ranks alternate between the two nodes
    placement = tuple((r % 2, r // 2) for r in range(16))
    cl = Cluster(base.nodes, base.network, placement=placement)
    assert ro.n_inter_steps(list(range(16)), cl) == 30
    order = ro.node_contiguous_order(cl)
    assert order == [0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15]
    assert ro.n_inter_steps(order, cl) == 2


def test_bad_orders() -> None:
    with pytest.raises(CostModelError):
        ro.n_inter_steps([0, 1, 1], cards_per_node=2)
    with pytest.raises(CostModelError):
        ro.n_inter_steps([0, 1, 2])


def test_interleaved_ring_is_slower_and_pays_net_latency() -> None:
    lv = levels.from_cluster(preset("dgx-a100", 4), latency="nccl")
    n = 32
    good = c.allreduce_s("ring", GiB, n, lv)
    bad = c.allreduce_s("ring", GiB, n, lv, order=ro.interleaved_order(4, 8))
    # contiguous: bottleneck min(240, 8 × 24) = 192 GB/s; interleaved: one card's 24 GB/s
    base = 8.4e-6
    lat_good = base + (62 - 6) * 3.4e-6 + 6 * 14e-6
    lat_bad = base + 62 * 14e-6
    assert good == pytest.approx(lat_good + 2 * 31 / 32 * GiB / 192e9)
    assert bad == pytest.approx(lat_bad + 2 * 31 / 32 * GiB / 24e9)
    assert bad / good > 7
