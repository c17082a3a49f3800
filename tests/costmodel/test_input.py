"""Data-input model (costmodel/input.py): closed forms, the M/M/1/K queue, H2D copies, NUMA."""

from __future__ import annotations

import numpy as np
import pytest

from xpuperf.costmodel import input as inp
from xpuperf.costmodel.checks import CostModelError
from xpuperf.costmodel.estimate import Planner, Settings
from xpuperf.costmodel.workloads import model
from xpuperf.topology import preset

PCIE = inp.Host.of(preset("pcie-8gpu", 1).nodes[0])  # PCIe Gen3 12 GB/s, UPI 10 GB/s, 2 sockets
IMAGES_B = 256 * 3 * 224 * 224 * 4  # a batch of 256 fp32 ImageNet crops: 154,140,672 bytes


def test_host_figures_from_the_topology() -> None:
    assert (PCIE.pcie_GBps, PCIE.sys_GBps, PCIE.numa_nodes) == (12.0, 10.0, 2)
    assert PCIE.cpus_per_card == 80 // 8  # 2 sockets × 20 cores × 2 threads over 8 cards


@pytest.mark.parametrize(
    ("service", "consumer", "workers", "depth", "expected"),
    [
        (0.3, 0.1, 1, 2, 0.2),  # one worker: P − C
        (0.3, 0.1, 2, 4, 0.05),  # two workers: P/2 − C
        (0.3, 0.1, 4, 8, 0.0),  # four workers keep up: P/4 < C
        (0.3, 0.1, 2, 2, 0.05),  # depth does not change a steady deficit (formulas.md §5)
        (0.05, 0.1, 1, 1, 0.0),
    ],
)
def test_deterministic_queue_is_the_closed_form(service, consumer, workers, depth, expected):
    got = inp.queue_stall_s(np.full(2000, service), consumer, workers, depth, skip=200)
    assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("mean_s", "depth"), [(1.25, 2), (0.8, 2), (1.25, 1)])
def test_one_worker_with_exponential_times_is_mm1k(mean_s: float, depth: int) -> None:
    # M/M/1/K (K = depth + 1 batches: waiting + the one in use), consumer rate μ = 1/s,
    # producer rate λ = 1/mean_s, ρ = λ/μ: P(consumer idle) π0 = (1 − ρ)/(1 − ρ^(K+1)); idle
    # time per consumed batch = π0 / (μ (1 − π0)). Tolerance 3 % for 100 000 seeded steps.
    rng = np.random.default_rng(7)
    n = 100_000
    s, c = rng.exponential(mean_s, n), rng.exponential(1.0, n)
    rho, k = 1 / mean_s, depth + 1
    pi0 = (1 - rho) / (1 - rho ** (k + 1))
    expected = pi0 / (1 - pi0)
    assert inp.queue_stall_s(s, c, 1, depth, skip=1000) == pytest.approx(expected, rel=0.03)


def test_h2d_copy_of_an_image_batch() -> None:
    local = IMAGES_B / 12e9  # 12.845 ms over PCIe Gen3
    assert inp.h2d_s(IMAGES_B, PCIE) == pytest.approx(local)
    assert inp.h2d_s(IMAGES_B, PCIE, pinned=False) == pytest.approx(2 * local)
    remote = IMAGES_B / 10e9  # crosses UPI: min(12, 10) GB/s
    assert inp.h2d_s(IMAGES_B, PCIE, "remote") == pytest.approx(remote)
    assert inp.h2d_s(IMAGES_B, PCIE, "unbound") == pytest.approx((local + remote) / 2)


def test_numa_factors() -> None:
    assert inp.remote_fraction("unbound", PCIE) == 0.5
    assert inp.cpu_factor("remote", PCIE) == pytest.approx(1.10)
    assert inp.cpu_factor("unbound", PCIE) == pytest.approx(1.05)
    assert inp.cpu_factor("local", PCIE) == 1.0


def test_stall_by_loader_setting() -> None:
    c = 0.1
    assert inp.stall_s(inp.Loader(0.3, workers=0), c, PCIE) == pytest.approx(0.3)
    assert inp.stall_s(inp.Loader(0.3, workers=2), c, PCIE) == pytest.approx(0.05)
    assert inp.stall_s(inp.Loader(0.3, workers=2, numa="remote"), c, PCIE) == pytest.approx(
        0.33 / 2 - c)  # fmt: skip
    # pinned copy overlaps; pageable blocks the step and the producer gets that much more time
    pinned = inp.Loader(0.05, workers=2, batch_bytes=IMAGES_B)
    assert inp.stall_s(pinned, c, PCIE) == 0.0
    sync = 2 * IMAGES_B / 12e9
    pageable = inp.Loader(0.3, workers=2, pinned=False, batch_bytes=IMAGES_B)
    assert inp.stall_s(pageable, c, PCIE) == pytest.approx(sync + max(0, 0.15 - c - sync))


def test_measured_samples_drive_the_queue_and_depth_absorbs_jitter() -> None:
    rng = np.random.default_rng(3)
    smp = inp.Samples(rng.exponential(0.09, 5000))  # mean 90 ms, consumer 100 ms
    shallow = inp.stall_s(inp.Loader(0.09, workers=1, prefetch_factor=1, samples=smp), 0.1, PCIE)
    deep = inp.stall_s(inp.Loader(0.09, workers=1, prefetch_factor=8, samples=smp), 0.1, PCIE)
    assert shallow > deep > 0  # no deficit on average: depth absorbs jitter
    assert inp.stall_s(inp.Loader(0.09, workers=1, samples=smp), 0.1, PCIE) > 0
    constant = inp.stall_s(inp.Loader(0.09, workers=1), 0.1, PCIE)
    assert constant == 0.0


def test_planner_stall_uses_the_rest_of_the_step() -> None:
    pl = Planner(preset("pcie-8gpu", 2), model("bert_large"), 0.4)
    s = Settings(loader=inp.Loader(0.42, workers=1, numa="local"))
    one, sixteen = pl.point(1, s), pl.point(16, s)
    assert one.input_stall_s == pytest.approx(0.02)
    rest = sixteen.step_time_s - sixteen.input_stall_s
    assert rest > 0.42  # BERT-large communication on PCIe: the longer step hides the input
    assert sixteen.input_stall_s == 0.0
    # speedup = T_compute / step(N): one card stalls 0.42 − 0.40 = 0.02 s, so 0.40 / 0.42;
    # at 16 the stall is hidden and the step is compute + exposed comm + other only
    assert one.speedup == pytest.approx(0.4 / 0.42)
    assert sixteen.speedup == pytest.approx(0.4 / rest)
    # (+ the random-straggler wait of the default 1.2 % spread, scale.JITTER_CV)
    parts = sixteen.exposed_comm_s + sixteen.other_s + sixteen.straggler_s
    assert sixteen.speedup == pytest.approx(0.4 / (0.4 + parts))


@pytest.mark.parametrize(
    "bad",
    [
        {"batch_time_s": -1},
        {"batch_time_s": float("inf")},
        {"batch_time_s": 0.1, "workers": -1},
        {"batch_time_s": 0.1, "prefetch_factor": 0},
        {"batch_time_s": 0.1, "numa": "far"},
        {"batch_time_s": 0.1, "batch_bytes": -5},
    ],
)
def test_bad_loader(bad: dict) -> None:
    with pytest.raises(CostModelError):
        inp.Loader(**bad)


def test_bad_samples_and_queue() -> None:
    with pytest.raises(CostModelError):
        inp.Samples([])
    with pytest.raises(CostModelError):
        inp.Samples([0.1, float("nan")])
    with pytest.raises(CostModelError):
        inp.queue_stall_s(np.ones(10), 0.1, 2, 1)
