"""Validation against published scaling figures (formulas.md §7) with ONE set of global defaults.

Global defaults, the same for every case (nothing here is tuned per case): backward = 2/3 of
the single-card step; each gradient ready when its layer's backward is done, backward time split
over the layers in proportion to their MACs (dgrad + wgrad; the CNN presets carry per-layer MACs
that reproduce torchvision's published GFLOPs); NCCL's latencies and
protocol shares (formulas.md §2); compute slowed 15 % while NVLink-class links carry traffic
and 2 % otherwise (Calculon); link bandwidths from the topology builders (NCCL's figures).
What differs between cases is only what the published setting itself fixes: the hardware, the
framework's bucketing, the algorithm the software used, the per-GPU batch and the single-GPU
throughput.

The default per-rank spread (``scale.JITTER_CV`` = 1.2 %, published GPU variability) adds
E[max over N] − mean of the compute to every multi-card step (issue 20): 1.7 % at 8 GPUs,
≈ 3 % at 512.

Agreement is checked as scaling efficiency = speedup (per-GPU throughput at N GPUs / one GPU),
within 5 percentage points. Where the model misses by more, the test stays, marked xfail with
the number we get and the reason, rather than a fudged default.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from xpuperf.costmodel.estimate import Planner, Settings
from xpuperf.costmodel.workloads import model
from xpuperf.topology import build
from xpuperf.topology.model import (
    PCIE_GBPS_BY_GEN,
    SYS_GBPS,
    Cluster,
    Device,
    Link,
    Network,
    Node,
)

TOLERANCE = 0.05


def dgx1_p100() -> Cluster:
    """DGX-1 (Pascal): 8 × P100-SXM2 on the hybrid cube mesh — two quads fully connected by one
    NVLink per pair, plus one NVLink from GPU i to GPU i+4 (4 NVLinks per P100, 20 GB/s each per
    direction, NCCL's figure); 2 sockets (GPUs 0–3 / 4–7), 4 × 100 Gb/s EDR NICs (unused here)."""
    numa = [0, 0, 0, 0, 1, 1, 1, 1]
    sw = [f"sw{i // 2}" for i in range(8)]
    devs = tuple(Device(i, "P100-SXM2", 21.2, numa[i], None, sw[i]) for i in range(8))
    links = build.groups([[0, 1, 2, 3], [4, 5, 6, 7]], "nvlink", 1)
    links += [Link(i, i + 4, "nvlink", 1) for i in range(4)]
    nics = build.nics_for([f"mlx5_{i}" for i in range(4)], 100.0, [0, 0, 1, 1],
                          ["sw0", "sw1", "sw2", "sw3"])  # fmt: skip
    node = Node("dgx1-p100", devs, (), nics, build.merge_links(links), (),
                PCIE_GBPS_BY_GEN[3], SYS_GBPS["skylake"])  # fmt: skip
    return Cluster((build.assign_nearest_nics(node),), Network("single-switch"), name="dgx1")


def horovod_cluster(nodes: int = 128) -> Cluster:
    """Horovod's benchmark cluster: ``nodes`` servers × 4 Pascal (P100-PCIe) GPUs under one PCIe
    Gen3 switch (12 GB/s), one 25 Gb/s RoCE NIC per server (3.125 GB/s shared by the 4 GPUs), a
    non-blocking two-level fat-tree."""
    devs = tuple(Device(i, "P100-PCIE-16GB", 18.7, 0, None, "sw0") for i in range(4))
    nics = build.nics_for(["eth0"], 25.0, [0], ["sw0"])
    node = Node("p100", devs, (), nics, tuple(build.pcie_tree(devs)), (), PCIE_GBPS_BY_GEN[3],
                SYS_GBPS["skylake"])  # fmt: skip
    node = build.assign_nearest_nics(node)
    members = tuple(replace(node, name=f"p100-{i}") for i in range(nodes))
    return Cluster(members, Network("fat-tree", 2), name="horovod-p100")


# TensorFlow benchmarks, May 2017, DGX-1 8 × P100, synthetic data: img/s at 1/2/4/8 GPUs, batch
TF_DGX1 = {
    "inception_v3": ((142, 284, 569, 1131), 64),
    "resnet50": ((219, 422, 852, 1734), 64),
    "resnet152": ((91.8, 181, 356, 716), 64),
    "alexnet": ((2987, 5658, 10509, 17822), 512),
    "vgg16": ((154, 295, 584, 1081), 64),
}
DGX1_MISSES = {
    ("alexnet", 4): 0.981,
    ("alexnet", 8): 0.979,
    ("vgg16", 8): 0.979,
}
"""Model speedups where the published loss is not a communication cost we model."""
TF_DGX1_REPLICATED = {"alexnet", "vgg16"}
"""Models the DGX-1 page ran with ``variable_update=replicated`` (with NCCL); the other three used
``parameter_server`` on the CPU (TensorFlow docs, performance/benchmarks.md, "Details for NVIDIA
DGX-1 (NVIDIA Tesla P100)", 2017)."""


def _dgx1_cases():
    for name, (ips, batch) in TF_DGX1.items():
        for n, measured in zip((2, 4, 8), ips[1:], strict=True):
            published = measured / (n * ips[0])
            marks = []
            if (name, n) in DGX1_MISSES:
                lost_ms = batch * (n / measured - 1 / ips[0]) * 1e3
                ring20_ms = 2 * (n - 1) / n * model(name).grad_bytes() / 20e9 * 1e3
                marks.append(pytest.mark.xfail(strict=True, reason=(
                    f"model {DGX1_MISSES[name, n]:.3f} vs published {published:.3f}: {name} "
                    f"loses {lost_ms:.0f} ms per step here in the published run, which used "
                    "variable_update=replicated with NCCL (only AlexNet and VGG16 did); our ring "
                    "over the cube mesh costs at most 13 ms and overlaps backward; a ring on one "
                    f"20 GB/s NVLink with no overlap at all would cost {ring20_ms:.0f} ms (that "
                    "NCCL 1 ran one ring and TF did not overlap is not established by the "
                    "sources); AlexNet and VGG-16 lose the same 23 ms at 4 GPUs and 58 ms at 8 "
                    "although VGG-16 moves 2.26x the bytes — the loss is not a communication "
                    "cost we can derive")))  # fmt: skip
            yield pytest.param(name, n, batch, ips[0], published, marks=marks, id=f"{name}-{n}")


@pytest.mark.parametrize(("name", "n", "batch", "ips1", "published"), list(_dgx1_cases()))
def test_tf_benchmarks_dgx1_p100(name: str, n: int, batch: int, ips1: float,
                                 published: float) -> None:  # fmt: skip
    """TensorFlow benchmarks (May 2017), DGX-1 8 × P100, synthetic data (formulas.md §7).

    Assumptions: tf_cnn_benchmarks with ``variable_update=replicated`` and NCCL all-reduce,
    i.e. one NCCL (1.x: ring only) allreduce per gradient tensor, no fusion (framework
    ``tensor``), launched as each gradient is ready; batch 64 per GPU (AlexNet 512); the
    single-GPU step is batch / published 1-GPU img/s; 2 and 4 GPUs are the first GPUs of one
    DGX-1 (a partial node: 0–1 share one NVLink, 0–3 are a fully connected quad).
    Inception-v3 without the auxiliary head; AlexNet = torchvision's 61.1 M parameters.
    """
    pl = Planner(dgx1_p100(), model(name), batch / ips1, batch)
    ours = pl.point(n, Settings(algorithm="ring", framework="tensor")).speedup
    assert ours == pytest.approx(published, abs=TOLERANCE)


HOROVOD = {
    # model: (single-GPU img/s on DGX-1 P100-SXM2, published efficiency at 512 GPUs)
    "inception_v3": (142.0, 0.90),
    "resnet101": (None, 0.90),
    "vgg16": (154.0, 0.68),
}
P100_PCIE_OVER_SXM2 = 1303 / 1480
"""P100-PCIe boost clock / P100-SXM2 boost clock (NVIDIA datasheets): compute scales with it."""


def _resnet101_ips() -> float:
    """ResNet-101 1-GPU img/s on P100-SXM2, interpolated in FLOPs between the published
    ResNet-50 (219 img/s, 4.1 GFLOPs) and ResNet-152 (91.8 img/s, 11.5 GFLOPs) figures: time per
    image linear in FLOPs, 7.8 GFLOPs → ≈ 129 img/s."""
    t50, t152 = 1 / 219, 1 / 91.8
    return 1 / (t50 + (t152 - t50) * (7.8 - 4.1) / (11.5 - 4.1))


@pytest.mark.parametrize(
    "name",
    [
        "inception_v3",
        "resnet101",
        pytest.param("vgg16", marks=pytest.mark.xfail(strict=True, reason=(
            "model 0.800 vs published 0.68 (0.824 without the 17 ms synchronisation tax of the "
            "default 1.2 % per-rank spread, scale.JITTER_CV): the fully connected layers "
            "(124 M of 138 M "
            "parameters, 0.8 % of the MACs) are first in backward, so 90 % of the gradient bytes "
            "are ready within 1 % of backward; the ring at the 25 Gb/s line rate (3.125 GB/s "
            "per server) moves the 553 MB in 415 ms against 315 ms of backward, leaving 94 ms "
            "exposed. 0.68 means ≈ 222 ms lost per step; the model gets there when the NIC "
            "delivers ≈ 18.6 of its 25 Gb/s (74 %, ≈ 540 ms of communication) — a network "
            "efficiency of that 2017 RoCE cluster the model cannot know without calibrating "
            "it (xpuperf calibrate)"))),
    ],
)  # fmt: skip
def test_horovod_512_gpus(name: str) -> None:
    """Horovod (Sergeev & Del Balso 2018): 128 servers × 4 Pascal GPUs, 25 Gb/s RoCE,
    TensorFlow, scaling efficiency at 512 GPUs ≈ 90 % Inception-v3 and ResNet-101, 68 % VGG-16.

    Assumptions: Horovod 2017 ran NCCL 2's flat ring allreduce across all 512 GPUs (node-
    contiguous rings) with tensor fusion at its 2017 default threshold of 64 MiB (the 5 ms cycle
    is not modelled); batch 64 per GPU; one GPU's step = 64 / (DGX-1 P100-SXM2 img/s × PCIe/SXM2
    clock ratio 0.88); ResNet-101 img/s interpolated in FLOPs (:func:`_resnet101_ips`);
    servers as in :func:`horovod_cluster`.
    """
    ips, published = HOROVOD[name]
    ips = (ips or _resnet101_ips()) * P100_PCIE_OVER_SXM2
    pl = Planner(horovod_cluster(), model(name), 64 / ips, 64)
    p = pl.point(512, Settings(algorithm="ring", framework="horovod", bucket_mb=64))
    assert p.speedup == pytest.approx(published, abs=TOLERANCE)
