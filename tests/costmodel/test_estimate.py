"""estimate(): step time, breakdown and speedup at each card count (formulas.md §1–6)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xpuperf.costmodel import comm, levels, scale
from xpuperf.costmodel.checks import CostModelError
from xpuperf.costmodel.collectives import allreduce_s
from xpuperf.costmodel.estimate import DEFAULT_CARDS, Planner, Settings, estimate
from xpuperf.costmodel.workloads import model
from xpuperf.topology import preset


@pytest.fixture(scope="module")
def a100() -> Planner:
    return Planner(preset("dgx-a100", 128), model("resnet50"), 0.1, 256)


def test_single_card_speedup_is_exactly_one(a100: Planner) -> None:
    p = a100.point(1)
    assert p.speedup == 1.0
    assert p.step_time_s == 0.1
    assert p.exposed_comm_s == p.other_s == p.straggler_s == 0.0


def test_default_cards_and_breakdown_adds_up() -> None:
    e = estimate(preset("dgx-a100", 128), model("resnet50"), step_time_s=0.1, batch_size=256)
    assert [p.cards for p in e.points] == list(DEFAULT_CARDS)
    for p in e.points:
        assert sum(p.breakdown.values()) == pytest.approx(p.step_time_s)
        assert p.speedup == pytest.approx(0.1 / p.step_time_s)
        assert p.throughput_samples_per_s == pytest.approx(256 * p.cards / p.step_time_s)
        assert 0 < p.speedup <= 1.0


def test_auto_is_no_worse_than_any_algorithm(a100: Planner) -> None:
    auto = a100.point(1024, Settings()).speedup
    for algo in comm.candidates(a100.cluster):
        assert auto >= a100.point(1024, Settings(algorithm=algo)).speedup - 1e-12


def test_partial_node_and_bad_card_counts(a100: Planner) -> None:
    assert a100.point(4).nodes == 1  # fewer cards than a node: one partial node
    with pytest.raises(CostModelError, match="multiple of 8"):
        a100.point(12)
    with pytest.raises(CostModelError, match="more than the topology"):
        a100.point(2048)
    with pytest.raises(CostModelError, match="beyond the supported"):
        a100.point(100_008)


def test_hundred_thousand_cards() -> None:
    pl = Planner(preset("dgx-a100", 12_500), model("resnet50"), 0.1)
    p = pl.point(100_000)
    assert p.nodes == 12_500
    assert 0 < p.speedup < 1


def test_curve_matches_allreduce_formula_for_simple() -> None:
    # the affine decomposition reproduces allreduce_s with NCCL ring/Simple latencies
    lv = levels.from_cluster(preset("dgx-a100", 4))
    for algo in ("ring", "hd", "2d-ring", "2d-ring-bcast", "recursive-doubling"):
        c = comm.curve(algo, 32, lv)
        i = c.protocols.index("simple")
        direct = allreduce_s(algo, 2**26, 32, lv.with_nccl_latency("ring", "simple"))
        assert c.latency_s[i] + 2**26 * c.s_per_B[i] == pytest.approx(direct, rel=1e-9)


def test_curve_takes_fastest_protocol() -> None:
    lv = levels.from_cluster(preset("dgx-a100", 16))
    c = comm.curve("ring", 128, lv)
    small, big = c.time_s([1024.0, 2.0**30])
    # LL: 6.6 + 224 × 0.6 + 30 × 2.7 = 222 µs latency (formulas.md §2), fastest for 1 KiB
    assert small == pytest.approx(c.latency_s[0] + 1024 * c.s_per_B[0])
    assert c.latency_s[0] == pytest.approx(222.0e-6)
    # 1 GiB: the best of LL, LL128 and Simple (Simple latency × 1.4 plateau, sm80)
    plat = (1.0, 1.0, 1.4)
    each = [lat * f + 2**30 * b for lat, b, f in zip(c.latency_s, c.s_per_B, plat, strict=True)]
    assert big == pytest.approx(min(each))


def test_resolve_hd_on_multilevel_network_and_hdrm_needs_bigraph() -> None:
    assert comm.resolve("hd", preset("dgx-a100", 2)) == "hd-fattree"
    assert comm.resolve("hd", preset("pcie-8gpu", 2)) == "hd"
    assert comm.resolve("hdrm", preset("eflops")) == "hdrm"
    with pytest.raises(CostModelError, match="BiGraph"):
        comm.resolve("hdrm", preset("dgx-a100", 2))


def test_nic_per_card_helps_shared_nics() -> None:
    pl = Planner(preset("pcie-8gpu", 16), model("bert_large"), 0.4)
    shared = pl.point(128, Settings(algorithm="2d-ring")).speedup
    own = pl.point(128, Settings(algorithm="2d-ring", nic_per_card=True)).speedup
    assert own > shared


def test_interleaved_ring_is_slower() -> None:
    pl = Planner(preset("dgx-a100", 16), model("resnet50"), 0.1)
    good = pl.point(128, Settings(algorithm="ring")).speedup
    bad = pl.point(128, Settings(algorithm="ring", ring_order="interleaved")).speedup
    assert bad < good


def test_input_stall_and_stragglers() -> None:
    pl = Planner(preset("dgx-a100", 2), model("resnet50"), 0.1)
    p = pl.point(16, Settings(input_time_s=0.13))
    rest = p.step_time_s - p.input_stall_s  # C: the step without its stall (input.py)
    assert 0.1 < rest < 0.13
    assert p.input_stall_s == pytest.approx(0.13 - rest)  # max(0, P − C), formulas.md §5
    # one card waits 0.03 s per step for a 0.13 s batch: compute / (compute + stall) = 0.1 / 0.13
    one = pl.point(1, Settings(input_time_s=0.13))
    assert one.input_stall_s == pytest.approx(0.03)
    assert one.speedup == pytest.approx(0.1 / 0.13)
    assert p.speedup == pytest.approx(0.1 / p.step_time_s)
    q = pl.point(16, Settings(compute_cv=0.05))
    assert q.straggler_s == pytest.approx(0.1 * 0.05 * scale.expected_max_std_normal(16))
    r = pl.point(16, Settings(slowest_factor=1.1, compute_cv=0.0))
    assert r.straggler_s == pytest.approx(0.01)
    # the default spread (scale.JITTER_CV = 1.2 %) adds the random part: 0.1 × 0.012 × E[max of
    # 16 standard normals] (1.7660) = 2.12 ms on top of the deterministic 10 ms
    d = pl.point(16, Settings(slowest_factor=1.1))
    assert d.straggler_s == pytest.approx(0.01 + 0.1 * 0.012 * 1.7660, rel=1e-3)


def test_bigger_buckets_fewer_calls(a100: Planner) -> None:
    few = a100.point(64, Settings(bucket_mb=256)).n_buckets
    many = a100.point(64, Settings(bucket_mb=1)).n_buckets
    assert few < many
    assert a100.point(64, Settings(framework="tensor")).n_buckets == len(model("resnet50").tensors)


@pytest.mark.parametrize(
    "bad",
    [
        {"algorithm": "magic"},
        {"framework": "jax"},
        {"bucket_mb": 0},
        {"dtype": "int8"},
        {"backward_fraction": 1.5},
        {"slowest_factor": 0.9},
        {"ring_order": "random"},
    ],
)
def test_bad_settings(bad: dict) -> None:
    with pytest.raises(CostModelError):
        Settings(**bad)


def test_bad_planner_inputs() -> None:
    with pytest.raises(CostModelError):
        Planner(preset("dgx-a100"), model("resnet50"), -1.0)
    with pytest.raises(CostModelError):
        Planner(preset("dgx-a100"), model("resnet50"), math.inf)
    with pytest.raises(CostModelError, match="unknown setting"):
        estimate(preset("dgx-a100"), model("resnet50"), step_time_s=0.1, colour="red")


def test_ring_packing_on_direct_connect_nodes() -> None:
    # DGX-1V hybrid cube mesh: 2 × 40 + 2 × 20 = 120 GB/s = 6 NVLinks × 20 (formulas.md §2);
    # NVSwitch full mesh stays one card's 12 × 20 = 240
    assert levels.from_cluster(preset("dgx1-v100", 2)).intra_bw_GBps == pytest.approx(120.0)
    assert levels.from_cluster(preset("dgx-a100", 2)).intra_bw_GBps == pytest.approx(240.0)


def test_expected_max_normal_values() -> None:
    assert scale.expected_max_std_normal(1) == 0.0
    assert scale.expected_max_std_normal(2) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-6)
    assert scale.expected_max_std_normal(1000) == pytest.approx(3.2414, abs=1e-3)
    x = np.random.default_rng(1).normal(size=200_000)
    assert scale.expected_max_empirical(x, 2) == pytest.approx(0.5642, abs=0.01)
    with pytest.raises(CostModelError):
        scale.deterministic_straggler_s(1.0, 0.5)
