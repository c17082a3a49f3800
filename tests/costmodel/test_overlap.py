"""Bucketing rules and the FIFO overlap recurrence (formulas.md §4), worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from xpuperf.costmodel import overlap as ov
from xpuperf.costmodel import workloads as w
from xpuperf.costmodel.checks import CostModelError

MiB = 2**20


def test_recurrence_three_buckets_by_hand() -> None:
    # R = 0.1, 0.2, 0.3; C = 0.05, 0.2, 0.1; T_backward = 0.3
    # b0: 0.10 → 0.15; b1: max(0.2, 0.15) = 0.2 → 0.4; b2: max(0.3, 0.4) = 0.4 → 0.5
    r = ov.overlap([0.1, 0.2, 0.3], [0.05, 0.2, 0.1], 0.3)
    assert r.start_s == pytest.approx((0.1, 0.2, 0.4))
    assert r.end_s == pytest.approx((0.15, 0.4, 0.5))
    assert r.exposed_s == pytest.approx(0.2)
    assert r.slowdown_s == 0.0
    assert r.overhead_s == pytest.approx(0.2)


def test_recurrence_fully_hidden_but_last() -> None:
    r = ov.overlap([0.0, 0.5, 1.0], [0.1, 0.1, 0.1], 1.0)
    assert r.exposed_s == pytest.approx(0.1)  # rule of thumb: only the last bucket is exposed


def test_rule_of_thumb_one_bucket_exposed_when_it_fits() -> None:
    # B buckets × latency + W/algbw fits into backward → exposed = last bucket's time
    sizes = w.model("resnet50").backward_sizes_B()
    buckets = ov.ddp_buckets(sizes)
    t_bwd, lat, algbw = 0.2, 50e-6, 100e9
    comm = [lat + b / algbw for b in ov.bucket_bytes(sizes, buckets)]
    assert len(buckets) * lat + sum(sizes) / algbw < t_bwd
    ready = ov.ready_times(sizes, buckets, t_bwd)
    r = ov.overlap(ready, comm, t_bwd)
    assert r.exposed_s == pytest.approx(comm[-1])


@pytest.mark.parametrize("cap_mb", [1, 5, 25, 100, 1000])
def test_rule_of_thumb_nothing_hides_comm_longer_than_backward(cap_mb: float) -> None:
    sizes = w.model("vgg16").backward_sizes_B()
    t_bwd, algbw = 0.05, 5e9  # W / algbw = 0.11 s ≥ T_backward
    assert sum(sizes) / algbw >= t_bwd
    buckets = ov.ddp_buckets(sizes, bucket_cap_mb=cap_mb)
    comm = [b / algbw for b in ov.bucket_bytes(sizes, buckets)]
    r = ov.overlap(ov.ready_times(sizes, buckets, t_bwd), comm, t_bwd)
    assert r.exposed_s >= sum(sizes) / algbw - t_bwd - 1e-12


def test_slowdown_by_hand() -> None:
    # σ = 0.15 (Calculon NVLink). b0 runs 0.10–0.15; compute done by 0.15 is 0.1 + 0.05/1.15.
    # R1 = 0.2 of compute → wall 0.15 + (0.2 − 0.143478…) = 0.206522…
    r = ov.overlap([0.1, 0.2, 0.3], [0.05, 0.2, 0.1], 0.3, slowdown=ov.CALCULON_SLOWDOWN["nvlink"])
    done_at_015 = 0.1 + 0.05 / 1.15
    r1 = 0.15 + (0.2 - done_at_015)
    assert r.start_s[1] == pytest.approx(r1)
    # b1 runs r1 → r1 + 0.2; compute still needs 0.1 s of work at rate 1/1.15 → ends r1 + 0.115
    assert r.backward_end_s == pytest.approx(r1 + 0.1 * 1.15)
    assert r.end_s[2] == pytest.approx(r1 + 0.2 + 0.1)
    assert r.exposed_s == pytest.approx(0.3 - 0.115)  # b2 ends r1 + 0.3
    assert r.slowdown_s == pytest.approx(r.backward_end_s - 0.3)


def test_ddp_buckets_by_hand() -> None:
    sizes = [0.5 * MiB, 0.6 * MiB, 10 * MiB, 20 * MiB, 1 * MiB]
    # first bucket closes at ≥ 1 MiB (1.1 MiB); the next at ≥ 25 MiB (30 MiB: no split)
    assert ov.ddp_buckets(sizes) == [[0, 1], [2, 3], [4]]
    assert ov.ddp_buckets([30 * MiB, 1 * MiB]) == [[0], [1]]


def test_ddp_bucket_property_on_resnet50() -> None:
    sizes = w.model("resnet50").backward_sizes_B()
    buckets = ov.ddp_buckets(sizes)
    assert sorted(i for b in buckets for i in b) == list(range(len(sizes)))
    limits = [1 * MiB] + [25 * MiB] * (len(buckets) - 1)
    for b, lim in zip(buckets[:-1], limits, strict=False):
        total = sum(sizes[i] for i in b)
        assert total >= lim
        assert total - sizes[b[-1]] < lim


def test_horovod_and_deepspeed_buckets_by_hand() -> None:
    assert ov.horovod_buckets([100 * MiB, 20 * MiB, 20 * MiB, 200 * MiB]) == [[0, 1], [2], [3]]
    # DeepSpeed counts ELEMENTS: 10 elements of fp16 = 20 bytes
    assert ov.deepspeed_buckets([8, 8, 8, 30], element_bytes=2, reduce_bucket_size=10) == [
        [0, 1],
        [2],
        [3],
    ]
    # the default 5e8 elements of fp32 = 2 GB holds all of BERT-large's 1.34 GB
    bert = w.model("bert_large").backward_sizes_B("fp32")
    assert len(ov.deepspeed_buckets(bert, 4)) == 1


def test_ready_times() -> None:
    sizes = [1.0, 1.0, 2.0]
    assert ov.ready_times(sizes, [[0, 1], [2]], 1.0) == pytest.approx([0.5, 1.0])
    assert ov.ready_times(sizes, [[0], [1, 2]], 1.0, [0.1, 0.2, 0.3]) == pytest.approx([0.1, 0.6])


def test_bad_inputs() -> None:
    with pytest.raises(CostModelError):
        ov.overlap([0.2, 0.1], [0.1, 0.1], 1.0)
    with pytest.raises(CostModelError):
        ov.overlap([0.1], [0.1, 0.1], 1.0)
    with pytest.raises(CostModelError):
        ov.overlap([2.0], [0.1], 1.0)
    with pytest.raises(CostModelError):
        ov.ddp_buckets([1.0], bucket_cap_mb=0)
    with pytest.raises(CostModelError):
        ov.ddp_buckets([-1.0])


def _walk_from_zero(work: float, busy: list[tuple[float, float]], sigma: float) -> float:
    """The definition: walk the communication intervals from t = 0 for every query."""
    t, done, rate = 0.0, 0.0, 1.0 / (1.0 + sigma)
    for a, b in busy:
        if a > t:
            if done + (a - t) >= work:
                return t + (work - done)
            done, t = done + (a - t), a
        seg = b - max(a, t)
        if seg > 0:
            if done + seg * rate >= work:
                return t + (work - done) / rate
            done, t = done + seg * rate, b
    return t + (work - done)


def _fifo_from_zero(ready, comm, t_b, sigma):
    busy, ends, prev = [], [], 0.0
    for r, c in zip(ready, comm, strict=True):
        start = max(_walk_from_zero(r, busy, sigma), prev)
        prev = start + c
        ends.append(prev)
        if c > 0:
            busy.append((start, prev))
    return ends, _walk_from_zero(t_b, busy, sigma)


@pytest.mark.parametrize("sigma", [0.02, 0.15, 1.0])
def test_incremental_clock_equals_walking_from_zero(sigma: float) -> None:
    # 150 buckets, some with no communication, gaps and back-to-back runs: bit-identical ends
    rng = np.random.default_rng(7)
    ready = np.sort(rng.uniform(0, 0.3, 150)).tolist()
    comm = (rng.exponential(0.004, 150) * (rng.random(150) > 0.1)).tolist()
    r = ov.overlap(ready, comm, 0.3, slowdown=sigma)
    ends, bwd_end = _fifo_from_zero(ready, comm, 0.3, sigma)
    assert list(r.end_s) == ends
    assert r.backward_end_s == bwd_end
    clock = ov._Clock(sigma)  # a query earlier than the last one walks from 0 again
    clock.busy += [(0.0, 0.1), (0.2, 0.3)]
    assert [clock.wall(x) for x in (0.25, 0.05, 0.3)] == [
        _walk_from_zero(x, clock.busy, sigma) for x in (0.25, 0.05, 0.3)
    ]
