"""Gradient accumulation, a fixed global batch, the optimizer step and the default
synchronisation tax (issue 20; xpuperf/costmodel/accumulation.py, scale.py, estimate.py)."""

from __future__ import annotations

import pytest

from xpuperf.costmodel import accumulation as acc
from xpuperf.costmodel import scale
from xpuperf.costmodel.checks import CostModelError
from xpuperf.costmodel.estimate import Planner, Settings
from xpuperf.costmodel.workloads import model
from xpuperf.topology.presets import preset

E16 = 1.7659913930547881
"""E[max of 16 standard normals] (order statistics; scale.expected_max_std_normal(16))."""


@pytest.fixture(scope="module")
def a100() -> Planner:
    return Planner(preset("dgx-a100", 2), model("resnet50"), 0.1, 32)


def test_default_spread_is_the_published_floor() -> None:
    # Sinha et al. SC'22: 8 % spread over ~1000 cards = 6.48 sigma of a normal -> 1.2 %
    assert pytest.approx(0.08 / 6.48, abs=5e-4) == scale.JITTER_CV
    assert Settings().compute_cv == scale.JITTER_CV


def test_accumulation_shares_the_per_allreduce_costs(a100: Planner) -> None:
    one = a100.point(16, Settings(compute_cv=0.0))
    four = a100.point(16, Settings(compute_cv=0.0, accumulation=4))
    # one allreduce per 4 micro-steps: exposed comm and slowdown per micro-step are a quarter;
    # the optimizer is amortised over 4 in the one-card step too (reference K = 4): no change
    assert four.exposed_comm_s == pytest.approx(one.exposed_comm_s / 4)
    assert four.other_s == pytest.approx(one.other_s / 4)
    assert four.speedup == pytest.approx(0.1 / (0.1 + (one.exposed_comm_s + one.other_s) / 4))
    assert four.speedup > one.speedup


def test_sync_tax_shrinks_with_the_square_root_of_k(a100: Planner) -> None:
    # per micro-step: 0.1 s x 1.2 % x E[max of 16] / sqrt(K)
    for k in (1, 4, 9):
        p = a100.point(16, Settings(accumulation=k))
        assert p.straggler_s == pytest.approx(0.1 * 0.012 * E16 / k**0.5, rel=1e-3)


def test_global_batch_sets_k_per_count_and_amortises_the_optimizer(a100: Planner) -> None:
    # B = 32 x 16 x 4 = 2048: K = 4 at 16 cards, 64 at one card (the one-card step's K)
    s = Settings(compute_cv=0.0, global_batch=2048)
    assert a100.micro_steps(16, s) == 4
    assert a100.micro_steps(1, s) == 64
    # F = 25,557,032 parameters x 28 B / 1555 GB/s (A100 40 GB) = 0.46019 ms; at 16 cards the
    # step pays F/4 - F/64 = F x 15/64 = 0.10786 ms more than the one-card step amortised
    f = 25_557_032 * 28 / 1555e9
    assert a100.optimizer_s(s) == pytest.approx(f)
    p, k4 = a100.point(16, s), a100.point(16, Settings(compute_cv=0.0, accumulation=4))
    assert p.other_s - k4.other_s == pytest.approx(f * 15 / 64, rel=1e-9)
    assert f * 15 / 64 == pytest.approx(1.0786e-4, rel=1e-3)
    assert a100.point(1, s).speedup == 1.0
    with pytest.raises(CostModelError, match="not a whole number"):
        a100.point(16, Settings(global_batch=1000))
    no_batch = Planner(preset("dgx-a100", 2), model("resnet50"), 0.1)
    with pytest.raises(CostModelError, match="batch size"):
        no_batch.point(16, Settings(global_batch=512))


def test_optimizer_step_from_memory_bandwidth() -> None:
    # BERT-large, 335,141,888 parameters x 28 B: 10.43 ms at V100's 900 GB/s, 6.03 ms at 1555
    assert acc.optimizer_step_s(335_141_888, "V100-SXM2") == pytest.approx(10.427e-3, rel=1e-3)
    assert acc.optimizer_step_s(335_141_888, "A100-SXM4") == pytest.approx(6.035e-3, rel=1e-3)
    assert acc.hbm_GBps("A100-SXM4-80GB") == 2039.0  # the longer prefix wins
    assert acc.hbm_GBps("H100-SXM5") == 3350.0
    assert acc.hbm_GBps(None) == acc.DEFAULT_HBM_GBPS == 900.0


def test_no_overlap_exposes_every_bucket(a100: Planner) -> None:
    p = a100.point(16, Settings(compute_cv=0.0, overlap=False))
    # all buckets start after backward: the whole allreduce time is exposed, nothing overlaps
    assert p.exposed_comm_s == pytest.approx(p.comm_s)
    assert p.other_s == 0.0
    assert p.speedup < a100.point(16, Settings(compute_cv=0.0)).speedup


@pytest.mark.parametrize("bad", [{"accumulation": 0}, {"accumulation": 1.5},
                                 {"accumulation": True}, {"global_batch": -1},
                                 {"reference_accumulation": 0}, {"optimizer_s": -1}])  # fmt: skip
def test_bad_settings(bad: dict) -> None:
    with pytest.raises(CostModelError):
        Settings(**bad)
