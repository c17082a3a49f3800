"""Input levers: loader workers, prefetch depth, pinned memory, NUMA binding, faster pipeline.

Each fix's gain direction and setting string; speedups are the cost model's T_compute / step(N)
(compute / (compute + exposed non-compute)), the same scale as every other fix: an input stall
lowers the speedup at one card too and no fix exceeds 1.0. Hand derivations below use
REST = the 16-card step with no input modelled (compute 0.1 s + exposed comm + other, taken from
the model) and the steady-state stall max(0, P / W − REST) (formulas.md §5).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from xpuperf.advice import make_plan, rank_fixes
from xpuperf.advice.input_levers import dataloader_setting, numa_setting
from xpuperf.costmodel import input as inp
from xpuperf.costmodel.estimate import Planner, Settings
from xpuperf.costmodel.workloads import model
from xpuperf.topology import preset

IMAGES_B = 256 * 3 * 224 * 224 * 4  # 154 MB: 256 fp32 crops


@pytest.fixture(scope="module")
def pl() -> Planner:
    # ResNet-50, 0.1 s single-card step, on 2 two-socket PCIe servers (10 CPUs per card)
    return Planner(preset("pcie-8gpu", 2), model("resnet50"), 0.1, 256)


def rest(pl: Planner, cards: int = 16) -> float:
    """The step at ``cards`` without any input model (compute + exposed comm + other), s."""
    return pl.point(cards, Settings()).step_time_s


def fixes(pl: Planner, loader: inp.Loader, cards: int = 16) -> dict:
    s = Settings(loader=loader)
    out = {f.lever: f for f in rank_fixes(pl, cards, s)}
    base = pl.point(cards, s)
    for f in out.values():  # every fix on one scale: T_compute (0.1 s) / step(N), never > 1
        assert f.speedup_before == pytest.approx(base.speedup)
        assert f.speedup_after == pytest.approx(0.1 / pl.point(cards, f.applied).step_time_s)
        assert f.speedup_after <= 1.0
    return out


def test_workers_sweep_picks_the_smallest_that_keeps_up(pl: Planner) -> None:
    # 0.3 s of CPU per batch: 2 workers give 150 ms > the step, 4 give 75 ms < it
    f = fixes(pl, inp.Loader(0.3, workers=1, numa="local"))["workers"]
    assert f.value == 4
    assert f.setting == "DataLoader(..., num_workers=4, prefetch_factor=2, pin_memory=True)"
    assert pl.point(16, f.applied).input_stall_s == 0.0
    # today one worker: step = REST + (0.3 − REST) = 0.3 s, speedup 0.1 / 0.3 (one card alike);
    # 4 workers: 75 ms < REST, no stall, speedup 0.1 / REST
    assert pl.point(1, Settings(loader=inp.Loader(0.3, workers=1))).speedup == pytest.approx(1 / 3)
    assert f.speedup_before == pytest.approx(0.1 / 0.3)
    assert f.speedup_after == pytest.approx(0.1 / rest(pl))


def test_workers_capped_by_cpus_then_faster_pipeline(pl: Planner) -> None:
    # 3 s per batch: even the node's 10 CPUs per card leave 0.3 − C per step
    got = fixes(pl, inp.Loader(3.0, workers=0, numa="local"))
    assert got["workers"].value == 8  # the largest swept value <= 10 CPUs per card
    assert got["input"].gain > got["workers"].gain
    # today (num_workers=0): the whole 3 s batch is in the step → 0.1 / (REST + 3);
    # 8 workers: a batch every 375 ms > REST → step 0.375 s → 0.1 / 0.375;
    # a pipeline that keeps up: 0.1 / REST
    assert got["workers"].speedup_before == pytest.approx(0.1 / (rest(pl) + 3.0))
    assert got["workers"].speedup_after == pytest.approx(0.1 / 0.375)
    assert got["input"].speedup_after == pytest.approx(0.1 / rest(pl))
    assert "cannot hide a deficit" in got["input"].reason
    assert "DALI" in got["input"].setting


def test_pinned_memory(pl: Planner) -> None:
    lo = inp.Loader(0.05, workers=2, pinned=False, batch_bytes=IMAGES_B, numa="local")
    f = fixes(pl, lo)["pinned"]
    assert "pin_memory=True" in f.setting
    assert "non_blocking=True" in f.setting
    # the pageable copy (2 × 154 MB / 12 GB/s = 25.7 ms) leaves the step
    base = pl.point(16, Settings(loader=lo))
    assert base.input_stall_s == pytest.approx(2 * IMAGES_B / 12e9)
    assert pl.point(16, f.applied).input_stall_s == 0.0
    # 2 workers make a batch every 25 ms < REST: only the blocking copy stalls
    sync = 2 * IMAGES_B / 12e9
    assert f.speedup_before == pytest.approx(0.1 / (rest(pl) + sync))
    assert f.speedup_after == pytest.approx(0.1 / rest(pl))


def test_numa_binding(pl: Planner) -> None:
    f = fixes(pl, inp.Loader(0.1, workers=1, numa="remote"))["numa-binding"]
    assert f.setting.startswith("torchrun --numa-binding=node")
    assert "numactl --cpunodebind=0 --membind=0 for local ranks 0–3" in f.setting
    assert "numactl --cpunodebind=1 --membind=1 for local ranks 4–7" in f.setting
    assert f.applied.loader.numa == "local"
    # remote: 0.1 × 1.10 = 0.11 s per batch > REST (≈ 0.102 s) → step 0.11 s, speedup 0.1 / 0.11;
    # local: 0.1 s < REST, no stall → 0.1 / REST
    assert rest(pl) < 0.11
    assert f.speedup_before == pytest.approx(0.1 / 0.11)
    assert f.speedup_after == pytest.approx(0.1 / rest(pl))


def test_prefetch_depth_absorbs_jitter(pl: Planner) -> None:
    smp = inp.Samples(np.random.default_rng(3).exponential(0.09, 3000))
    lo = inp.Loader(0.09, workers=1, prefetch_factor=1, numa="local", samples=smp)
    f = fixes(pl, lo)["prefetch"]
    assert f.value > 1
    assert f"prefetch_factor={f.value}" in f.setting
    # mean 90 ms < REST: no mean deficit, only jitter stalls; speedup = 0.1 / (REST + stall)
    # with the queue's stall at each depth, and a deeper queue stalls less (but > 0)
    stall = [inp.stall_s(replace(lo, prefetch_factor=k), rest(pl), pl.host) for k in (1, f.value)]
    assert stall[0] > stall[1] > 0
    assert f.speedup_before == pytest.approx(0.1 / (rest(pl) + stall[0]))
    assert f.speedup_after == pytest.approx(0.1 / (rest(pl) + stall[1]))


def test_no_input_levers_without_an_input_model(pl: Planner) -> None:
    levers = {f.lever for f in rank_fixes(pl, 16, Settings())}
    assert not levers & {"workers", "prefetch", "pinned", "numa-binding", "input"}


def test_settings_strings() -> None:
    assert dataloader_setting(inp.Loader(1.0, workers=0, pinned=False)) == (
        "DataLoader(..., num_workers=0, pin_memory=False)")  # fmt: skip
    node = preset("eflops", 1).nodes[0]  # cards 0,1 on NUMA 0; 2,3 on NUMA 1
    assert "--cpunodebind=1 --membind=1 for local ranks 2–3" in numa_setting(node)
    bare = replace(node, devices=tuple(replace(d, numa_node=None) for d in node.devices))
    assert "N = the card's NUMA node" in numa_setting(bare)


def test_fix_curves_follow_input_fixes() -> None:
    r = make_plan(preset("pcie-8gpu", 2), model("resnet50"), 0.1, cards=[1, 8, 16],
                  settings=Settings(loader=inp.Loader(0.3, workers=0, numa="unbound")))  # fmt: skip
    assert {"workers", "numa-binding"} <= {f.lever for f in r.fixes}
    assert r.fix_curves is not None
    assert not r.fix_curves.notes
    for c in r.fix_curves.fixes:
        f = next(x for x in r.fixes if x.name == c.name)
        assert c.speedup[-1] == pytest.approx(f.speedup_after)
