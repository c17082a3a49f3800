"""Validation of ``plan --measured`` on published scaling ladders (issue 17, scope 5).

Each ladder: leave the top rung out, forecast it from the others, compare with (i) the
uncalibrated plan, (ii) the last measured efficiency held constant, (iii) a line in log2(N)
fitted to the measured efficiencies. One global set of defaults (forecast.SIGMA_REL, Z,
PRIOR_SD); per case only what the publication fixes (hardware, model, batch per GPU).

Sources (synthetic data, img/s; the one-card figure is the denominator):
- TensorFlow "Benchmarks" page, May 2017 (tensorflow/tensorflow,
  tensorflow/docs_src/performance/benchmarks.md @ 5984ffef): "Details for NVIDIA DGX-1 (NVIDIA
  Tesla P100)" (batch 64, AlexNet 512, and "Other Results" at batch 32), "Details for Google
  Compute Engine (NVIDIA Tesla K80)", "Details for Amazon EC2 (NVIDIA Tesla K80)" (p2.8xlarge)
  and "Details for Amazon EC2 Distributed (NVIDIA Tesla K80)" (1 / 8 / 16 / 32 / 64 GPUs on
  p2.8xlarge instances of 8 GPUs, distributed_replicated). The DGX-1 batch-64 figures are also
  formulas.md §7.
The K80 machines are modelled as generic 8-card nodes with one 10 Gb/s NIC (the model's
communication is small there; the ladder's residual carries the rest).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.costmodel.test_validation import dgx1_p100
from xpuperf.advice.forecast import forecast_ladder
from xpuperf.advice.ladder import Ladder, Rung
from xpuperf.costmodel.estimate import Planner, Settings
from xpuperf.costmodel.workloads import model
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


def _case(hw: str, name: str, batch: int, cards: tuple, ips: tuple) -> dict:
    eff = [ips[i] / (cards[i] * ips[0]) for i in range(len(cards))]  # per GPU / one GPU
    t1 = batch / ips[0]
    cluster = dgx1_p100() if hw == "dgx1" else presets.generic(8, 8, 10.0, 1)
    s = Settings(algorithm="ring", framework="tensor")  # the plan's defaults (baseline i)
    q = Settings(algorithm="ring", framework="tensor", compute_cv=0.0)  # as plan --measured:
    # the ladder's C_N is the cost model without its own straggler terms (advice/plan.py)
    pl = Planner(cluster, model(name), t1, batch)
    one = pl.point(1, q).step_time_s
    ladder = Ladder(tuple(Rung(c, None, e, None, f"{c} GPUs") for c, e in
                          zip(cards[:-1], eff[:-1], strict=True)), t1, batch)  # fmt: skip
    top = cards[-1]
    p = forecast_ladder(ladder, [top], 8, lambda n: pl.point(n, q).step_time_s - one).points[0]
    k, c0 = np.polyfit(np.log2(cards[:-1]), eff[:-1], 1)
    return {"measured": eff[-1], "forecast": p.speedup, "low": p.low, "high": p.high,
            "plan": pl.point(top, s).speedup, "constant": eff[-2],
            "log2": c0 + k * np.log2(top)}  # fmt: skip


@pytest.fixture(scope="module")
def table() -> list[dict]:
    return [_case(*c) for c in LADDERS]


def _errors(table: list[dict], key: str) -> np.ndarray:
    return np.array([abs(r[key] - r["measured"]) * 100 for r in table])  # points


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
    "mean |error| 3.4 points, max 21.7 (DGX-1 VGG-16 at batch 32 drops from 0.953 at 4 GPUs to "
    "0.712 at 8: no ladder model nor baseline sees it coming; AWS distributed ResNet-152 0.790 "
    "after 0.910 at 32); targets 3 / 5 points not met (docs/plan.md §14)"))  # fmt: skip
def test_targets_mean_3_max_5_points(table) -> None:
    e = _errors(table, "forecast")
    assert e.mean() <= 3.0
    assert e.max() <= 5.0


def test_print_table(table) -> None:
    """The rows docs/plan.md §14 records (``pytest -s`` prints them)."""
    for c, r in zip(LADDERS, table, strict=True):
        print(f"| {c[0]} {c[1]} b{c[2]} | {c[3][-1]} | {r['measured']:.3f} | "
              f"{r['forecast']:.3f} [{r['low']:.3f}, {r['high']:.3f}] | {r['plan']:.3f} | "
              f"{r['constant']:.3f} | {r['log2']:.3f} |")  # fmt: skip
    assert len(table) == len(LADDERS)
