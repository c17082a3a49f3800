"""Validation of ``plan --measured`` on published scaling ladders (issue 17, scope 5).

Each ladder: leave the top rung out, forecast it from the others, compare with (i) the
uncalibrated plan, (ii) the last measured efficiency held constant, (iii) a line in log2(N)
fitted to the measured efficiencies. One global set of defaults (forecast.SIGMA_REL, Z,
PRIOR_SD); per case only what the publication fixes (hardware, model, batch per GPU, gradient
accumulation). The expected efficiencies are computed from the published throughputs.

Sources, part 1 — TensorFlow "Benchmarks" page, May 2017 (synthetic data, img/s; the one-card
figure is the denominator): tensorflow/tensorflow, tensorflow/docs_src/performance/benchmarks.md
@ 5984ffef: "Details for NVIDIA DGX-1 (NVIDIA Tesla P100)" (batch 64, AlexNet 512, and "Other
Results" at batch 32), "Details for Google Compute Engine (NVIDIA Tesla K80)", "Details for
Amazon EC2 (NVIDIA Tesla K80)" (p2.8xlarge) and "Details for Amazon EC2 Distributed (NVIDIA Tesla
K80)" (1 / 8 / 16 / 32 / 64 GPUs on p2.8xlarge instances of 8 GPUs, distributed_replicated). The
DGX-1 batch-64 figures are also formulas.md §7. The K80 machines are modelled as generic 8-card
nodes with one 10 Gb/s NIC (the model's communication is small there; the residual carries it).

Part 2 — NVIDIA DeepLearningExamples vendor tables, the rows of
tests/data/validation_published/points.csv (sources in its README.md; clusters and per-point
settings from tests/costmodel/published.py). Efficiency of a rung = (items/s at N / N) / one
card's items/s (``ips1``); a row given relative to one node is turned into that by the node's
own row, (ips_base / base) / ips1, so 32–256 DGX A100 rows are rel × eff(8).

- MXNet ResNet-50 on one DGX-1 (1/2/4/8) and one DGX-2 (1/2/4/8/16), AMP and FP32.
- TensorFlow BERT-large on DGX A100 (1/4/8 GPUs, then 4/16/32 nodes): multi-node NCCL ladders,
  sequence 128 and 512, AMP and TF32, to 256 GPUs.
- PyTorch BERT-large on DGX-2H (1/4/16/64 nodes, to 1024 GPUs): RELATIVE TO ONE NODE. The
  README's single-GPU table is a DGX-2, not a DGX-2H, so there is no one-card DGX-2H figure:
  ``ips1`` is the one-node row per card, the one-card rung stands for it (speedup 1.0 at 16) and
  every method is compared on the node-relative efficiency the source gives.

The global batch is fixed in the BERT runs, so the accumulation K shrinks as cards are added
(points.csv ``accum``, ``accum_base``; one card: accum_base × base_cards). The ladder's t_N =
t1 / s_N is the time of one micro-step (a per-card throughput is batch / micro-step time), and
the cost model's step is per micro-step too (estimate.py: exposed communication, slowdown and
optimizer step paid once per K micro-steps), so the ladder's C_N = step(N at K_N) − step(1 at
K_1) prices each rung, the held-out one included, at its own published K.

Left out (the forecast refuses them by design, tested below): MXNet ResNet-50 on DGX A100 (1/4/8:
one single-node count above one card cannot say how the loss grows to 8 cards) and PyTorch BERT
on DGX-1 (1/8/32 → 128 cards: one multi-node count cannot tell a fixed inter-node cost from one
that grows with the node count; the README's single-node 4- and 8-GPU rows would not add a
second node count).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from tests.costmodel.published import (
    CARDS_PER_NODE,
    POINTS_CSV,
    PublishedPoint,
    cluster,
    load_points,
    settings,
)
from tests.costmodel.test_validation import dgx1_p100
from xpuperf.advice.forecast import forecast_ladder
from xpuperf.advice.ladder import Ladder, Rung
from xpuperf.costmodel.estimate import Planner, Settings
from xpuperf.costmodel.workloads import model
from xpuperf.errors import InputError
from xpuperf.topology import presets

C4 = (1, 2, 4, 8)
C5 = (1, 8, 16, 32, 64)
LADDERS = [
    # (hardware, model, batch per GPU, cards, img/s)
    ("dgx1", "inception_v3", 64, C4, (142, 284, 569, 1131)),
    ("dgx1", "resnet50", 64, C4, (219, 422, 852, 1734)),
    ("dgx1", "resnet152", 64, C4, (91.8, 181, 356, 716)),
    ("dgx1", "alexnet", 512, C4, (2987, 5658, 10509, 17822)),
    ("dgx1", "vgg16", 64, C4, (154, 295, 584, 1081)),
    ("dgx1", "inception_v3", 32, C4, (128, 259, 520, 995)),
    ("dgx1", "resnet50", 32, C4, (195, 368, 768, 1485)),
    ("dgx1", "resnet152", 32, C4, (82.7, 160, 317, 632)),
    ("dgx1", "vgg16", 32, C4, (144, 281, 549, 820)),
    ("gce-k80", "inception_v3", 64, C4, (30.5, 57.8, 116, 227)),
    ("gce-k80", "resnet50", 64, C4, (51.9, 99.0, 195, 387)),
    ("gce-k80", "resnet152", 32, C4, (20.0, 38.2, 75.8, 148)),
    ("gce-k80", "alexnet", 512, C4, (656, 1209, 2328, 4640)),
    ("gce-k80", "vgg16", 32, C4, (35.4, 64.8, 120, 234)),
    ("aws-k80", "inception_v3", 64, C4, (30.8, 58.7, 117, 230)),
    ("aws-k80", "resnet50", 64, C4, (51.5, 98.0, 195, 384)),
    ("aws-k80", "resnet152", 32, C4, (19.7, 37.6, 74.9, 149)),
    ("aws-k80", "alexnet", 512, C4, (684, 1244, 2479, 4853)),
    ("aws-k80", "vgg16", 32, C4, (36.3, 69.4, 141, 260)),
    ("aws-dist", "inception_v3", 64, C5, (29.7, 229, 459, 902, 1783)),
    ("aws-dist", "resnet50", 64, C5, (52.4, 378, 751, 1388, 2744)),
    ("aws-dist", "resnet152", 32, C5, (19.4, 146, 291, 565, 981)),
    ("aws-dist", "inception_v3", 32, C5, (29.2, 219, 427, 820, 1608)),
    ("aws-dist", "resnet50", 32, C5, (48.4, 333, 667, 1180, 2315)),
]
DLE_LADDERS = [  # points.csv ids without the card count
    "mx-rn50-dgx1-amp", "mx-rn50-dgx1-fp32", "mx-rn50-dgx2-amp", "mx-rn50-dgx2-fp32",
    "tf-bert-a100-s128-amp", "tf-bert-a100-s128-tf32", "tf-bert-a100-s512-amp",
    "tf-bert-a100-s512-tf32", "pt-bert-dgx2h-s128-amp", "pt-bert-dgx2h-s512-amp",
]  # fmt: skip
NODE_RELATIVE = {"pt-bert-dgx2h-s128-amp", "pt-bert-dgx2h-s512-amp"}
REFUSED = {  # ladder -> what the forecast asks to measure instead
    "mx-rn50-a100-amp": "measure 8 cards on one node next",
    "mx-rn50-a100-tf32": "measure 8 cards on one node next",
    "pt-bert-dgx1-s128-amp": "measure 8 nodes (64 cards) next",
    "pt-bert-dgx1-s512-amp": "measure 8 nodes (64 cards) next",
}


def _case(hw: str, name: str, batch: int, cards: tuple, ips: tuple) -> dict:
    eff = [ips[i] / (cards[i] * ips[0]) for i in range(len(cards))]  # per GPU / one GPU
    t1 = batch / ips[0]
    cluster_ = dgx1_p100() if hw == "dgx1" else presets.generic(8, 8, 10.0, 1)
    s = Settings(algorithm="ring", framework="tensor")  # the plan's defaults (baseline i)
    q = Settings(algorithm="ring", framework="tensor", compute_cv=0.0)  # as plan --measured:
    # the ladder's C_N is the cost model without its own straggler terms (advice/plan.py)
    pl = Planner(cluster_, model(name), t1, batch)
    one = pl.point(1, q).step_time_s
    ladder = Ladder(tuple(Rung(c, None, e, None, f"{c} GPUs") for c, e in
                          zip(cards[:-1], eff[:-1], strict=True)), t1, batch)  # fmt: skip
    top = cards[-1]
    p = forecast_ladder(ladder, [top], 8, lambda n: pl.point(n, q).step_time_s - one).points[0]
    k, c0 = np.polyfit(np.log2(cards[:-1]), eff[:-1], 1)
    return {"name": f"{hw} {name} b{batch}", "top": top, "multinode": top > 8,
            "set": "tf2017", "measured": eff[-1], "forecast": p.speedup, "low": p.low,
            "high": p.high, "plan": pl.point(top, s).speedup, "constant": eff[-2],
            "log2": c0 + k * np.log2(top)}  # fmt: skip


def _dle_rungs(key: str) -> tuple[list[PublishedPoint], dict[int, float], dict[int, int]]:
    """The points of ladder ``key`` (top last), efficiency and accumulation K per card count
    (one card: 1.0 and accum_base × base_cards), from points.csv's throughputs."""
    with POINTS_CSV.open(newline="") as f:
        ips_base = {r["id"]: float(r["ips_base"] or "nan") for r in csv.DictReader(f)}
    pts = sorted((p for p in load_points() if p.id.rsplit("-", 1)[0] == key),
                 key=lambda p: p.cards)  # fmt: skip
    eff, k = {1: 1.0}, {1: pts[0].accum_base * pts[0].base_cards}
    for p in pts:
        node = (ips_base[p.id] / p.base_cards) / p.ips1  # the base row against one card
        eff.setdefault(p.base_cards, node)
        k.setdefault(p.base_cards, p.accum_base)
        eff[p.cards], k[p.cards] = p.published * node, p.accum
    return pts, eff, k


def _dle_ladder(key: str) -> tuple[Ladder, Planner, PublishedPoint, dict, dict,
                                   Callable[[int], float]]:  # fmt: skip
    """The ladder of ``key`` without its top rung, the planner, the top point, efficiency and
    K per card count, and the ladder's C_N: n → step(n at its K) − step(1 at its K), s."""
    pts, eff, k = _dle_rungs(key)
    p = pts[-1]
    g = CARDS_PER_NODE[p.hardware]
    pl = Planner(cluster(p.hardware, max(1, p.cards // g)), model(p.model), p.step_time_s,
                 p.batch)  # fmt: skip

    def quiet(n: int) -> Settings:  # as plan --measured: no straggler terms of its own
        return replace(settings(p, k[n]), compute_cv=0.0, slowest_factor=1.0,
                       straggler_tail=None)  # fmt: skip

    one = pl.point(1, quiet(1)).step_time_s
    rungs = tuple(Rung(c, None, e, None, f"{key} {c}") for c, e in sorted(eff.items())[:-1])
    return (Ladder(rungs, p.step_time_s, p.batch), pl, p, eff, k,
            lambda n: pl.point(n, quiet(n)).step_time_s - one)  # fmt: skip


def _dle_case(key: str) -> dict:
    ladder, pl, p, eff, k, loss = _dle_ladder(key)
    g, top = CARDS_PER_NODE[p.hardware], p.cards
    f = forecast_ladder(ladder, [top], g, loss).points[0]
    plan = pl.point(top, settings(p, k[top])).speedup
    if key in NODE_RELATIVE:  # the plan's speedup(N) / speedup(one node)
        plan /= pl.point(p.base_cards, settings(p, k[p.base_cards])).speedup
    below = [c for c in sorted(eff)[:-1] if key not in NODE_RELATIVE or c >= p.base_cards]
    slope, c0 = np.polyfit(np.log2(below), [eff[c] for c in below], 1)
    return {"name": key + (" (rel. 1 node)" if key in NODE_RELATIVE else ""), "top": top,
            "multinode": top > g, "set": "dle", "measured": eff[top], "forecast": f.speedup,
            "low": f.low, "high": f.high, "plan": plan, "constant": eff[below[-1]],
            "log2": c0 + slope * np.log2(top)}  # fmt: skip


@pytest.fixture(scope="module")
def table() -> list[dict]:
    return [_case(*c) for c in LADDERS] + [_dle_case(k) for k in DLE_LADDERS]


def _errors(table: list[dict], key: str) -> np.ndarray:
    return np.array([abs(r[key] - r["measured"]) * 100 for r in table])  # points


def test_dle_ladders_as_published() -> None:
    """Rungs worked out by hand from points.csv (README hand checks) and the K of each rung."""
    _, eff, k = _dle_rungs("tf-bert-a100-s128-amp")
    # 8 GPUs: 2871.89 / 8 / 356.845 = 1.0060; 256 GPUs: 77479.87 / 256 / 356.845 = 0.8481
    assert eff[8] == pytest.approx(1.0060, abs=1e-4)
    assert eff[256] == pytest.approx(0.8481, abs=1e-4)
    assert k == {1: 1024, 4: 256, 8: 128, 32: 32, 128: 8, 256: 4}  # 65536 / (64 N)
    _, eff, k = _dle_rungs("pt-bert-dgx2h-s128-amp")
    # relative to one node: 16 GPUs 1.0 by construction; 1024: 188088.32 / 1024 / 211.2
    assert eff[16] == pytest.approx(1.0)
    assert eff[1024] == pytest.approx(0.8697, abs=1e-4)
    assert k[1024] == 1
    assert k[1] == 1024
    _, eff, _ = _dle_rungs("mx-rn50-dgx2-amp")
    assert eff[16] == pytest.approx(21484 / 16 / 1492)  # 0.8999
    _, _, k = _dle_rungs("tf-bert-a100-s512-amp")  # global batch 32768 on one node (16 x N x K),
    assert k == {1: 2048, 4: 512, 8: 256, 32: 128, 128: 32, 256: 16}  # 65536 on 4-32 nodes


@pytest.mark.parametrize("key", sorted(REFUSED))
def test_ladders_the_forecast_refuses(key: str) -> None:
    ladder, _, p, _, _, loss = _dle_ladder(key)
    with pytest.raises(InputError, match=re.escape(REFUSED[key])):
        forecast_ladder(ladder, [p.cards], CARDS_PER_NODE[p.hardware], loss)


def test_forecast_beats_the_three_baselines_on_mean_error(table) -> None:
    ours = _errors(table, "forecast").mean()
    for base in ("plan", "constant", "log2"):
        assert ours < _errors(table, base).mean(), base


def test_forecast_is_no_worse_than_the_baselines_at_the_worst_case(table) -> None:
    ours = _errors(table, "forecast").max()
    for base in ("plan", "constant", "log2"):
        assert ours <= _errors(table, base).max(), base


def test_interval_covers_the_held_out_rung_in_80_percent(table) -> None:
    inside = sum(r["low"] <= r["measured"] <= r["high"] for r in table)
    assert inside / len(table) >= 0.80


@pytest.mark.xfail(strict=True, reason=(
    "34 ladders: mean |error| 3.05 points (TF 2017 3.40, DLE 2.21), max 21.7 (DGX-1 VGG-16 at "
    "batch 32 drops from 0.953 at 4 GPUs to 0.712 at 8: no ladder model nor baseline sees it "
    "coming; AWS distributed ResNet-152 0.790 after 0.910 at 32; worst DLE: MXNet ResNet-50 AMP "
    "on DGX-1, 4.6); targets 3 / 5 points not met (docs/plan.md §14)"))  # fmt: skip
def test_targets_mean_3_max_5_points(table) -> None:
    e = _errors(table, "forecast")
    assert e.mean() <= 3.0
    assert e.max() <= 5.0


def _summary(rows: list[dict]) -> str:
    inside = sum(r["low"] <= r["measured"] <= r["high"] for r in rows)
    cols = [f"{_errors(rows, k).mean():.2f} / {_errors(rows, k).max():.1f}"
            for k in ("forecast", "plan", "constant", "log2")]  # fmt: skip
    return f"| {len(rows)} | {' | '.join(cols)} | {inside} / {len(rows)} |"


def test_print_table(table) -> None:
    """The rows and summaries docs/plan.md §14 records (``pytest -s`` prints them)."""
    for r in table:
        print(f"| {r['name']} | {r['top']} | {r['measured']:.3f} | "
              f"{r['forecast']:.3f} [{r['low']:.3f}, {r['high']:.3f}] | {r['plan']:.3f} | "
              f"{r['constant']:.3f} | {r['log2']:.3f} |")  # fmt: skip
    subsets = {"all": table, "TF 2017": [r for r in table if r["set"] == "tf2017"],
               "DLE": [r for r in table if r["set"] == "dle"],
               "multi-node": [r for r in table if r["multinode"]],
               "multi-node NCCL (DLE)": [r for r in table if r["multinode"] and r["set"] == "dle"]}  # fmt: skip  # noqa: E501
    for name, rows in subsets.items():
        print(f"| {name} {_summary(rows)}")
    assert len(table) == len(LADDERS) + len(DLE_LADDERS)
