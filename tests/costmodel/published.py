"""Published data-parallel scaling points (tests/data/validation_published/points.csv) and the
plan each one is evaluated with: ONE global set of defaults, per point only what the published
run fixed (hardware, framework bucketing, algorithm, gradient dtype, per-card batch, gradient
accumulation, one-card throughput). Sources: that folder's README.md.

Efficiency is per-card throughput at N over per-card throughput at ``base_cards`` (1 = one card
alone, background.md's definition; 8 or 16 = one node where the source gives multi-node rows
relative to one node); the model's figure is ``speedup(N) / speedup(base)`` for the same
comparison. Used by ``tests/costmodel/test_validation_published.py`` and
``benchmarks/validation_published.py``.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from xpuperf.costmodel.estimate import Planner, Settings
from xpuperf.costmodel.workloads import model
from xpuperf.topology import build, presets
from xpuperf.topology.model import PCIE_GBPS_BY_GEN, SYS_GBPS, Cluster, Device, Network, Node

POINTS_CSV = Path(__file__).parents[1] / "data" / "validation_published" / "points.csv"


@dataclass(frozen=True)
class PublishedPoint:
    """One row of points.csv (throughputs in items/s, step time in seconds)."""

    id: str
    source: str
    where: str
    model: str
    hardware: str
    framework: str
    algorithm: str
    bucket_mb: float | None
    grad_dtype: str
    batch: float
    ips1: float
    cards: int
    base_cards: int
    accum: int
    accum_base: int
    published: float
    post_accumulation: bool = False
    """The allreduce starts after backward (NVIDIA's BERT scripts: after accumulation)."""

    @property
    def step_time_s(self) -> float:
        """One card's step (one micro-step): batch / one-card items per second."""
        return self.batch / self.ips1


def _num(text: str) -> float | None:
    return float(text) if text.strip() else None


def load_points(path: Path = POINTS_CSV) -> list[PublishedPoint]:
    """The rows of ``path``; efficiency from the throughputs where the source gives them:
    (ips_n / N) / (ips_base / base_cards)."""
    out = []
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            n, base = int(row["cards"]), int(row["base_cards"])
            eff = _num(row["eff_published"])
            if eff is None:
                eff = (float(row["ips_n"]) / n) / (float(row["ips_base"]) / base)
            out.append(PublishedPoint(
                row["id"], row["source"], row["where"], row["model"], row["hardware"],
                row["framework"], row["algorithm"], _num(row["bucket_mb"]), row["grad_dtype"],
                float(row["batch"]), float(row["ips1"]), n, base, int(row["accum"]),
                int(row["accum_base"]), eff, row["allreduce"] == "after-backward"))  # fmt: skip
    return out


def _p100_cube_mesh(nic_gbps: float, nics: int) -> Node:
    """8 × P100-SXM2 on the hybrid cube mesh (as tests/costmodel/test_validation.dgx1_p100)."""
    from tests.costmodel.test_validation import dgx1_p100

    node = dgx1_p100().nodes[0]
    names = [f"eth{i}" for i in range(nics)]
    node = replace(node, nics=build.nics_for(names, nic_gbps), devices=tuple(
        replace(d, nic=None) for d in node.devices))  # fmt: skip
    return build.assign_nearest_nics(node)


def _dgx2() -> Node:
    """DGX-2 / DGX-2H: 16 × V100-SXM3-32GB on NVSwitch (6 NVLinks per card: NCCL's 6 × 20 GB/s),
    8 × 100 Gb/s EDR InfiniBand, PCIe Gen3."""
    devs = tuple(Device(i, "V100-SXM3-32GB", 125.0, i // 8, None, f"sw{i // 2}") for i in range(16))
    nics = build.nics_for([f"mlx5_{i}" for i in range(8)], 100.0, [i // 4 for i in range(8)],
                          [f"sw{2 * i}" for i in range(8)])  # fmt: skip
    node = Node("dgx2", devs, (), nics, build.merge_links(build.full_mesh(range(16), "nvlink", 6)),
                (), PCIE_GBPS_BY_GEN[3], SYS_GBPS["skylake"])  # fmt: skip
    return build.assign_nearest_nics(node)


def cluster(hardware: str, nodes: int) -> Cluster:
    """The cluster a point ran on (points.csv ``hardware``), ``nodes`` nodes."""
    if hardware in ("dgx1-v100", "dgx-a100"):
        return presets.preset(hardware, nodes)
    if hardware == "horovod-p100":
        from tests.costmodel.test_validation import horovod_cluster

        return horovod_cluster(nodes)
    node = {"dgx2": _dgx2, "big-basin": lambda: _p100_cube_mesh(50.0, 1)}[hardware]()
    members = tuple(replace(node, name=f"{hardware}-{i}") for i in range(nodes))
    return Cluster(members, Network("fat-tree", 2 if nodes > 1 else 1), name=hardware)


CARDS_PER_NODE = {"dgx1-v100": 8, "dgx-a100": 8, "dgx2": 16, "horovod-p100": 4, "big-basin": 8}


def settings(p: PublishedPoint, accumulation: int = 1) -> Settings:
    """The plan settings the published run fixes."""
    return Settings(algorithm=p.algorithm, framework=p.framework, bucket_mb=p.bucket_mb,
                    dtype=p.grad_dtype, **extra_settings(p, accumulation))  # fmt: skip


def extra_settings(p: PublishedPoint, accumulation: int) -> dict:
    """Gradient accumulation at this count; the one-card step was measured at the accumulation
    of one card for the same global batch (base K × base cards)."""
    return {"accumulation": accumulation, "reference_accumulation": p.accum_base * p.base_cards,
            "overlap": not p.post_accumulation}  # fmt: skip


def predict(p: PublishedPoint, **overrides: object) -> float:
    """The model's efficiency for ``p``: speedup(N) / speedup(base), one global set of
    defaults (``overrides``: Settings fields changed for every point, e.g. ``compute_cv=0``)."""
    g = CARDS_PER_NODE[p.hardware]
    nodes = max(1, p.cards // g)
    pl = Planner(cluster(p.hardware, nodes), model(p.model), p.step_time_s, p.batch)
    s_n = pl.point(p.cards, replace(settings(p, p.accum), **overrides)).speedup
    s_b = pl.point(p.base_cards, replace(settings(p, p.accum_base), **overrides)).speedup
    return s_n / s_b


@dataclass(frozen=True)
class Summary:
    """Errors in points (100 × (model − published)), over all points or a subset."""

    n: int
    mean_abs: float
    median_abs: float
    max_abs: float
    signed_mean: float
    within5: int


def summarize(errors: list[float]) -> Summary:
    """Mean, median and max of |error| and the signed mean, in points."""
    a = [abs(e) for e in errors]
    return Summary(len(a), statistics.fmean(a), statistics.median(a), max(a),
                   statistics.fmean(errors), sum(x <= 5 for x in a))  # fmt: skip


def run_all(points: list[PublishedPoint] | None = None,
            **overrides: object) -> list[tuple[PublishedPoint, float]]:  # fmt: skip
    """(point, model efficiency) for every point (``overrides``: as :func:`predict`)."""
    return [(p, predict(p, **overrides)) for p in (points if points is not None else load_points())]
