"""Allreduce formulas (formulas.md §1) with values worked out by hand, and the published checks
of formulas.md §2 (NCCL's latency model and link bandwidths)."""

from __future__ import annotations

import pytest

from xpuperf.costmodel import collectives as c
from xpuperf.costmodel import levels
from xpuperf.costmodel.checks import CostModelError
from xpuperf.errors import EXIT_INPUT, UsageError
from xpuperf.topology import preset

GiB = 2**30
S = GiB
ALPHA = 5e-6  # 5 µs per step
BETA = 1 / 10e9  # 10 GB/s
SB = S * BETA  # 0.1073741824 s to send 1 GiB at 10 GB/s


def test_ring_n8_one_gib_by_hand() -> None:
    # 2·7·5 µs + 2·7/8 · 1 GiB / 10 GB/s = 70 µs + 0.1879048192 s
    assert c.ring(S, 8, ALPHA, BETA) == pytest.approx(70e-6 + 0.1879048192, rel=1e-12)


def test_ring_gamma_term() -> None:
    gamma = 1 / 100e9
    extra = 7 / 8 * S * gamma
    assert c.ring(S, 8, ALPHA, BETA, gamma) - c.ring(S, 8, ALPHA, BETA) == pytest.approx(extra)


def test_recursive_doubling_by_hand() -> None:
    assert c.recursive_doubling(S, 8, ALPHA, BETA) == pytest.approx(3 * (ALPHA + SB))
    assert c.recursive_doubling(S, 5, ALPHA, BETA) == pytest.approx(3 * (ALPHA + SB))  # ⌈log2 5⌉


def test_rabenseifner_power_of_two_by_hand() -> None:
    assert c.halving_doubling(S, 8, ALPHA, BETA) == pytest.approx(30e-6 + 1.75 * SB)


def test_rabenseifner_folding_by_hand() -> None:
    # N = 6: p' = 4, r = 2; (2·2+2)α + (2·3/4 + 2)·Sβ
    assert c.halving_doubling(S, 6, ALPHA, BETA) == pytest.approx(6 * ALPHA + 3.5 * SB)


@pytest.mark.parametrize("n", [2, 4, 8, 64, 1024])
def test_ring_and_halving_doubling_move_the_same_bytes(n: int) -> None:
    # background.md / formulas.md: both move 2(N−1)/N·S per card; only the step counts differ
    bytes_ring = c.ring(S, n, 0.0, 1.0)
    assert bytes_ring == pytest.approx(2 * (n - 1) / n * S)
    assert c.halving_doubling(S, n, 0.0, 1.0) == pytest.approx(bytes_ring)
    steps_ring = c.ring(0, n, 1.0, 0.0)
    steps_hd = c.halving_doubling(0, n, 1.0, 0.0)
    assert (steps_ring, steps_hd) == (2 * (n - 1), 2 * (n.bit_length() - 1))


def test_double_binary_tree_by_hand() -> None:
    assert c.double_binary_tree(S, 8, ALPHA, BETA) == pytest.approx(6 * ALPHA + 2 * SB)
    assert c.double_binary_tree(S, 1, ALPHA, BETA) == 0.0


def test_ring2d_rs_ar_ag_by_hand() -> None:
    # G = 8, M = 4; intra 1 µs / 100 GB/s; inter 5 µs / 10 GB/s per local rank
    t = c.ring2d_rs_ar_ag(S, 8, 4, 1e-6, 1 / 100e9, 5e-6, 1 / 10e9)
    assert t == pytest.approx(14e-6 + 1.75 * S / 100e9 + 30e-6 + 1.5 * (S / 8) / 10e9)
    assert t == pytest.approx(0.03896714112, rel=1e-10)


def test_ring2d_ar_ar_bcast_by_hand() -> None:
    t = c.ring2d_ar_ar_bcast(S, 8, 4, 1e-6, 1 / 100e9, 5e-6, 1 / 10e9)
    intra_ar = 14e-6 + 1.75 * S / 100e9
    inter_ar = 30e-6 + 1.5 * S / 10e9
    bcast = 7e-6 + S / 100e9
    assert t == pytest.approx(intra_ar + inter_ar + bcast)
    assert t == pytest.approx(0.19064017376, rel=1e-10)


def test_torus_equals_2d_ring_with_one_level() -> None:
    # Mikami et al.: 2(X+Y−2)α + 2(XY−1)/(XY)·Sβ — the RS/AR/AG form with equal levels
    t = c.torus2d(S, 8, 4, ALPHA, BETA)
    assert t == pytest.approx(20 * ALPHA + 2 * 31 / 32 * SB)
    assert t == pytest.approx(c.ring2d_rs_ar_ag(S, 8, 4, ALPHA, BETA, ALPHA, BETA))
    # same bytes as a flat ring of 32
    assert c.torus2d(S, 8, 4, 0, BETA) == pytest.approx(c.ring(S, 32, 0, BETA))


def test_loaded_halving_doubling_by_hand() -> None:
    # N = 4: step 0 moves S/2, step 1 S/4, each twice; load 3 on step 1
    t = c.halving_doubling_loaded(S, 4, ALPHA, BETA, [1.0, 3.0])
    assert t == pytest.approx(4 * ALPHA + 2 * (SB / 2) + 2 * (SB / 4) * 3)
    assert c.halving_doubling_loaded(S, 8, ALPHA, BETA) == pytest.approx(
        c.halving_doubling(S, 8, ALPHA, BETA)
    )  # HDRM: load 1 everywhere = Rabenseifner
    with pytest.raises(CostModelError):
        c.halving_doubling_loaded(S, 4, ALPHA, BETA, [0.5, 1.0])
    with pytest.raises(CostModelError):
        c.halving_doubling_loaded(S, 6, ALPHA, BETA)


def lv_two_level() -> levels.LinkLevels:
    return levels.uniform(8, 100.0, 10.0, intra_latency_us=1.0, net_latency_us=5.0)


def test_two_level_2d_ring_matches_formula() -> None:
    lv = lv_two_level()
    assert c.allreduce_s("2d-ring", S, 32, lv) == pytest.approx(0.03896714112, rel=1e-10)
    assert c.allreduce_s("2d-ring-bcast", S, 32, lv) == pytest.approx(0.19064017376, rel=1e-10)


def test_two_level_hd_steps_by_hand() -> None:
    lv = lv_two_level()  # N = 32, G = 8: steps 0,1,2 intra (S/2, S/4, S/8), steps 3,4 inter
    intra = 2 * (3 * 1e-6 + (S / 2 + S / 4 + S / 8) / 100e9)
    inter = 2 * (2 * 5e-6 + (S / 16 + S / 32) / 10e9)
    assert c.allreduce_s("hd", S, 32, lv) == pytest.approx(intra + inter)
    assert c.allreduce_s("hdrm", S, 32, lv) == pytest.approx(intra + inter)


def test_two_level_ring_node_contiguous_by_hand() -> None:
    lv = lv_two_level()  # 8 NICs of 10 GB/s per node → ring edge between nodes 80 GB/s
    n, m = 32, 4
    inter_steps = 2 * (m - 1)
    lat = (2 * (n - 1) - inter_steps) * 1e-6 + inter_steps * 5e-6
    assert c.allreduce_s("ring", S, n, lv) == pytest.approx(lat + 2 * 31 / 32 * S / 80e9)


def test_two_level_tree_by_hand() -> None:
    lv = lv_two_level()
    t = 2 * (7 * 1e-6 + 2 * 5e-6) + 2 * S / 80e9
    assert c.allreduce_s("tree", S, 32, lv) == pytest.approx(t)


def test_fattree_collisions_slow_halving_doubling() -> None:
    lv = lv_two_level()
    hd = c.allreduce_s("hd", S, 64, lv)
    fat = c.allreduce_s("hd-fattree", S, 64, lv)
    assert fat > hd
    loads = c.fattree_loads(64, 8)
    assert loads[:3] == [1.0, 1.0, 1.0]  # inside a node
    assert all(x > 1 for x in loads[3:])
    assert c.allreduce_s("hd-fattree", S, 64, lv, loads=[1.0] * 6) == pytest.approx(hd)
    # with leaves of 16 ranks, the distance-8 step stays under the leaf switch
    assert c.fattree_loads(64, 8, ranks_per_leaf=16)[3] == 1.0


def test_single_rank_costs_nothing() -> None:
    lv = levels.uniform(1, 100.0, 10.0, 1.0, 5.0)
    for algo in c.ALGORITHMS:
        assert c.allreduce_s(algo, S, 1, lv) == 0.0


# ---------------------------------------------------------------- published checks (formulas §2)


def test_a100_node_bandwidth_is_12_nvlinks_of_20() -> None:
    lv = levels.from_cluster(preset("dgx-a100"))
    assert lv.intra_bw_GBps == 12 * 20 == 240
    assert abs(lv.intra_bw_GBps - 232.5) / 232.5 < 0.035  # vs measured busbw 232.5 GB/s


def test_h100_node_bandwidth_and_multinode_a100() -> None:
    assert levels.from_cluster(preset("dgx-h100")).intra_bw_GBps == pytest.approx(18 * 20.6)
    # DGX-A100 with 8 × 200 Gb/s IB: 8 × 24 GB/s (PCIe Gen4 cap) = 192 GB/s, measured 192
    assert levels.from_cluster(preset("dgx-a100", 2)).node_net_bw_GBps == pytest.approx(192.0)


def test_ring_simple_latency_at_1024_cards() -> None:
    # 8.4 + (2046 − 254)·3.4 + 254·14 = 9657.2 µs ≈ 9.7 ms (formulas.md §2)
    lv = levels.from_cluster(preset("dgx-a100", 2), latency="nccl")
    t = c.allreduce_s("ring", 0, 1024, lv)
    assert t == pytest.approx(9657.2e-6)
    assert round(t * 1e3, 1) == 9.7
    assert round(t * 1.4 * 1e3, 1) == 13.5  # × 1.4 plateau on A100+


def test_tree_simple_latency_at_1024_cards() -> None:
    # 8.4 + 2·(7·4.0 + log2(128)·14) = 260.4 µs ≈ 0.26 ms
    lv = levels.from_cluster(preset("dgx-a100", 2)).with_nccl_latency("tree", "simple")
    assert c.allreduce_s("tree", 0, 1024, lv) == pytest.approx(260.4e-6)


# ---------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call",
    [
        lambda: c.ring(-1, 8, ALPHA, BETA),
        lambda: c.ring(S, 0, ALPHA, BETA),
        lambda: c.allreduce_s("ring", S, 30, lv_two_level()),  # 8 does not divide 30
        lambda: c.allreduce_s("butterfly", S, 32, lv_two_level()),
        lambda: levels.uniform(8, -1.0, 10.0),
    ],
)
def test_bad_input_raises_usage_error(call) -> None:
    with pytest.raises(CostModelError) as info:
        call()
    assert isinstance(info.value, UsageError)
    assert isinstance(info.value, ValueError)
    assert info.value.exit_code == EXIT_INPUT
