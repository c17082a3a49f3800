"""Configuration fixes applied together (xpuperf/advice/combined.py)."""

from __future__ import annotations

import pytest

from xpuperf.advice import make_plan, rank_fixes
from xpuperf.advice.combined import CONFIG_LEVERS, combine_fixes, overlay
from xpuperf.costmodel import input as inp
from xpuperf.costmodel.estimate import Planner, Settings
from xpuperf.costmodel.workloads import model
from xpuperf.topology import preset


@pytest.fixture(scope="module")
def pl() -> Planner:
    # ResNet-50, 0.1 s single-card step, 4 two-socket PCIe servers
    return Planner(preset("pcie-8gpu", 4), model("resnet50"), 0.1, 256)


def test_workers_and_buckets_together_equal_the_plan_without_input(pl: Planner) -> None:
    # 0.3 s of CPU per batch loaded in the training process stalls every step; with enough
    # workers the steady-state stall max(0, P / W − rest) is 0 (formulas.md §5), so workers +
    # the bucket fix together must give exactly the plan with no input model at that bucket size
    s = Settings(bucket_mb=25.0, loader=inp.Loader(0.3, workers=0, pinned=True, numa="local"))
    fixes = rank_fixes(pl, 32, s)
    assert {f.lever for f in fixes} == {"workers", "bucket"}
    c = combine_fixes(pl, 32, fixes, s)
    assert c is not None
    assert c.fixes == ("loader workers", "bucket size")
    assert c.skipped == ()
    no_input = pl.point(32, Settings(bucket_mb=c.settings.bucket_mb)).speedup
    assert c.speedup_after == pytest.approx(no_input, rel=1e-12)
    assert c.speedup_after > max(f.speedup_after for f in fixes)


def test_loader_changes_of_two_fixes_both_survive() -> None:
    today = Settings(loader=inp.Loader(0.3, workers=0, pinned=False, numa="unbound"))
    workers = Settings(loader=inp.Loader(0.3, workers=4, pinned=False, numa="unbound"))
    pinned = Settings(loader=inp.Loader(0.3, workers=0, pinned=True, numa="unbound"))
    both = overlay(overlay(today, workers, today), pinned, today)
    assert both.loader == inp.Loader(0.3, workers=4, pinned=True, numa="unbound")
    assert overlay(today, Settings(bucket_mb=8.0, loader=today.loader), today).bucket_mb == 8.0


def test_bert_1024_cards_leaves_out_math_and_hardware_fixes() -> None:
    from xpuperf.cli.plan import EXAMPLE  # the bundled example's cluster and workload

    r = make_plan(preset(EXAMPLE[0], 128), model(EXAMPLE[2]), EXAMPLE[3], cards=[8, 1024],
                  settings=Settings(bucket_mb=4.0, loader=inp.Loader(0.12, workers=0,
                                    pinned=False, batch_bytes=524288.0, numa="unbound")),
                  batch_size=EXAMPLE[4])  # fmt: skip
    c = r.combined
    assert c is not None
    names = {f.name: f for f in r.fixes}
    assert "fp16 gradient allreduce" in names  # changes the math: not combined
    assert "fp16 gradient allreduce" not in {*c.fixes, *c.skipped}
    assert "NIC per card" not in {*c.fixes, *c.skipped}  # hardware: never combined
    assert {*c.fixes, *c.skipped} == {f.name for f in r.fixes if f.lever in CONFIG_LEVERS}
    assert c.speedup_after >= max(f.speedup_after for f in r.fixes if f.lever in CONFIG_LEVERS)
    # speedup is against today's one card (0.4 s + its 0.12 s loader stall): the fixes together
    # may pass 1.0 (one card gets faster too) but never the compute-only bound one_card_step_s / 0.4
    assert 1.0 < c.speedup_after < r.estimate.one_card_step_s / EXAMPLE[3]
    assert r.estimate.one_card_step_s > 0.4 + 0.12  # one card waits for its batch every step
    assert c.speedup_after == pytest.approx(
        Planner(preset(EXAMPLE[0], 128), model(EXAMPLE[2]), EXAMPLE[3], EXAMPLE[4],
                reference=r.estimate.settings)
        .point(1024, c.settings).speedup, rel=1e-12)  # fmt: skip


def test_fewer_than_two_configuration_fixes_give_none(pl: Planner) -> None:
    s = Settings(bucket_mb=4.0, loader=inp.Loader(0.3, workers=0, pinned=True, numa="local"))
    fixes = rank_fixes(pl, 32, s)
    assert [f.lever for f in fixes] == ["workers"]
    assert combine_fixes(pl, 32, fixes, s) is None
