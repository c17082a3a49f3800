"""Gradient bucketing rules of the frameworks, and the overlap of backward with allreduce.

Bucketing (all take gradient sizes in bytes in backward order and return buckets as lists of
tensor indices into that list; a parameter is never split across buckets):

- :func:`ddp_buckets` — PyTorch DDP: ``bucket_cap_mb`` = 25 MiB, first bucket 1 MiB
  (``dist._DEFAULT_FIRST_BUCKET_BYTES``); a bucket closes once it reaches its limit, so it may
  exceed the cap by its last tensor (``compute_bucket_assignment_by_size`` in reducer.cpp).
- :func:`horovod_buckets` — Horovod tensor fusion: fill a 128 MiB fusion buffer
  (``HOROVOD_FUSION_THRESHOLD``) greedily; a tensor that does not fit starts a new buffer.
  (Horovod fuses what is ready within each 1 ms cycle; offline we fuse by size in ready order.)
- :func:`deepspeed_buckets` — DeepSpeed ZeRO ``reduce_bucket_size`` = 5e8 ELEMENTS (not bytes):
  the bucket is reduced before a tensor would push it past the limit.

Overlap: :func:`overlap` runs the FIFO recurrence of formulas.md §4 (one communication stream, as
PyTorch DDP and NCCL): start_k = max(R_k, end_{k−1}), end_k = start_k + C_k, exposed =
max(0, end_B − T_backward) (MG-WFBP, Shi et al., INFOCOM 2019), with an optional compute slowdown
while communication runs (Calculon: 15 % while NVLink is busy, 2 % while InfiniBand is busy).
Times in seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from xpuperf.costmodel.checks import CostModelError, nonneg, positive

MiB = 1024 * 1024
"""Bytes per MiB: the frameworks' "MB" bucket sizes are MiB (× 1024 · 1024)."""
DDP_BUCKET_CAP_MB = 25.0
"""PyTorch DDP ``bucket_cap_mb`` default, MiB (``kDefaultBucketBytesCap`` = 25 · 1024 · 1024 in
torch/csrc/distributed/c10d/reducer.hpp; formulas.md §4)."""
DDP_FIRST_BUCKET_MB = 1.0
"""PyTorch DDP first bucket, MiB (``kDefaultFirstBucketBytes`` = 1024 · 1024 in reducer.hpp,
``dist._DEFAULT_FIRST_BUCKET_BYTES``; formulas.md §4)."""
HOROVOD_FUSION_MB = 128.0
"""Horovod fusion buffer ``HOROVOD_FUSION_THRESHOLD`` default, MiB (was 64; formulas.md §4)."""
DEEPSPEED_REDUCE_BUCKET_ELEMENTS = 500_000_000
"""DeepSpeed ZeRO ``reduce_bucket_size`` default, ELEMENTS not bytes (5e8 in
deepspeed/runtime/zero/config.py; formulas.md §4)."""
CALCULON_SLOWDOWN: dict[str, float] = {"nvlink": 0.15, "ib": 0.02}
"""Compute slowdown while communication uses the link (Calculon, Isaev et al. SC'23)."""


def _sizes(sizes_B: Sequence[float]) -> list[float]:
    out = [float(s) for s in sizes_B]
    if any(s < 0 for s in out):
        raise CostModelError("gradient sizes must be >= 0 bytes")
    return out


def ddp_buckets(
    sizes_B: Sequence[float],
    bucket_cap_mb: float = DDP_BUCKET_CAP_MB,
    first_bucket_mb: float = DDP_FIRST_BUCKET_MB,
) -> list[list[int]]:
    """PyTorch DDP bucket assignment (sizes in backward order → lists of indices).

    Limits in MiB (DDP multiplies ``bucket_cap_mb`` by 1024·1024): the first bucket closes at
    ``first_bucket_mb``, the others at ``bucket_cap_mb``; a bucket closes as soon as its size is
    ≥ its limit. Raises :class:`CostModelError` for a cap ≤ 0 or a negative size.
    Source: ``compute_bucket_assignment_by_size`` in torch/csrc/distributed/c10d/reducer.cpp;
    formulas.md §4.
    """
    sizes = _sizes(sizes_B)
    cap = positive("bucket_cap_mb", bucket_cap_mb) * MiB
    limit = positive("first_bucket_mb", first_bucket_mb) * MiB
    buckets, cur, cur_size = [], [], 0.0
    for i, s in enumerate(sizes):
        cur.append(i)
        cur_size += s
        if cur_size >= limit:
            buckets.append(cur)
            cur, cur_size, limit = [], 0.0, cap
    if cur:
        buckets.append(cur)
    return buckets


def _greedy(sizes: list[float], limit: float) -> list[list[int]]:
    buckets, cur, cur_size = [], [], 0.0
    for i, s in enumerate(sizes):
        if cur and cur_size + s > limit:
            buckets.append(cur)
            cur, cur_size = [], 0.0
        cur.append(i)
        cur_size += s
    if cur:
        buckets.append(cur)
    return buckets


def horovod_buckets(
    sizes_B: Sequence[float], fusion_mb: float = HOROVOD_FUSION_MB
) -> list[list[int]]:
    """Horovod tensor fusion: greedy fill of a ``fusion_mb`` MiB buffer in ready order; a tensor
    larger than the buffer goes alone. Raises :class:`CostModelError` for ``fusion_mb`` ≤ 0 or a
    negative size. Source: Horovod tensor fusion (``HOROVOD_FUSION_THRESHOLD``); formulas.md §4."""
    return _greedy(_sizes(sizes_B), positive("fusion_mb", fusion_mb) * MiB)


def deepspeed_buckets(
    sizes_B: Sequence[float],
    element_bytes: int,
    reduce_bucket_size: float = DEEPSPEED_REDUCE_BUCKET_ELEMENTS,
) -> list[list[int]]:
    """DeepSpeed ZeRO-1/2 gradient buckets: ``reduce_bucket_size`` counts ELEMENTS, so the byte
    limit is ``reduce_bucket_size × element_bytes``; the bucket is flushed before a tensor would
    exceed it. Raises :class:`CostModelError` for a limit or element size ≤ 0 or a negative
    size. Source: ``reduce_independent_p_g_buckets_and_remove_grads`` in
    deepspeed/runtime/zero/stage_1_and_2.py (reduce when elements_in_ipg_bucket + numel >
    reduce_bucket_size); formulas.md §4."""
    limit = positive("reduce_bucket_size", reduce_bucket_size)
    return _greedy(_sizes(sizes_B), limit * positive("element_bytes", element_bytes))


def bucket_bytes(sizes_B: Sequence[float], buckets: Sequence[Sequence[int]]) -> list[float]:
    """Bytes of each bucket (one float per bucket), from sizes in bytes and buckets of indices.

    No checks: an index outside ``sizes_B`` raises ``IndexError`` (buckets come from the
    functions above).
    """
    return [float(sum(sizes_B[i] for i in b)) for b in buckets]


def ready_times(
    sizes_B: Sequence[float],
    buckets: Sequence[Sequence[int]],
    t_backward_s: float,
    tensor_compute_s: Sequence[float] | None = None,
) -> list[float]:
    """R_k: seconds after the start of backward at which bucket k's last gradient is ready.

    ``tensor_compute_s`` gives the backward compute time of each tensor (backward order); by
    default backward time is spread over tensors in proportion to their size (an assumption:
    compute per layer ∝ parameters). Returns one R_k per bucket, seconds (formulas.md §4; the
    proportional split is xpuperf's assumption). Raises :class:`CostModelError` on length
    mismatch or a negative time.
    """
    t_b = nonneg("t_backward_s", t_backward_s)
    if tensor_compute_s is None:
        total = float(sum(sizes_B)) or 1.0
        per = [t_b * s / total for s in sizes_B]
    else:
        if len(tensor_compute_s) != len(sizes_B):
            raise CostModelError("give one backward compute time per gradient tensor")
        per = [nonneg("tensor compute time", x) for x in tensor_compute_s]
    done, acc = [], 0.0
    for x in per:
        acc += x
        done.append(min(acc, t_b))  # float rounding must not push the last one past T_backward
    return [done[max(b)] for b in buckets]


@dataclass(frozen=True)
class OverlapResult:
    """Result of :func:`overlap` (seconds, measured from the start of backward).

    Attributes:
        start_s, end_s: per-bucket communication start and end.
        backward_end_s: when backward compute ends (T_backward, stretched by any slowdown).
        exposed_s: max(0, end_B − backward_end_s): communication not hidden by compute.
        slowdown_s: extra compute time caused by communication running alongside.
        overhead_s: exposed_s + slowdown_s — what overlapped communication adds to the step.
    """

    start_s: tuple[float, ...]
    end_s: tuple[float, ...]
    backward_end_s: float
    exposed_s: float
    slowdown_s: float

    @property
    def overhead_s(self) -> float:
        """exposed_s + slowdown_s."""
        return self.exposed_s + self.slowdown_s


def overlap(
    ready_s: Sequence[float],
    comm_s: Sequence[float],
    t_backward_s: float,
    slowdown: float = 0.0,
) -> OverlapResult:
    """FIFO overlap of bucketed allreduce with backward (formulas.md §4).

    Args:
        ready_s: R_k, bucket k's ready time in compute-seconds of backward (nondecreasing).
        comm_s: C_k, allreduce time of bucket k.
        t_backward_s: T_backward, backward compute time without slowdown.
        slowdown: σ ≥ 0; compute runs at rate 1/(1+σ) while communication runs (Calculon:
            0.15 NVLink, 0.02 InfiniBand). With σ = 0 this is exactly start_k = max(R_k,
            end_{k−1}), end_k = start_k + C_k, exposed = max(0, end_B − T_backward).

    Returns:
        :class:`OverlapResult`, seconds from the start of backward.

    Raises:
        CostModelError: lengths differ, negative times, ready times decreasing or beyond
            T_backward.

    Source: formulas.md §4 (MG-WFBP, Shi et al., INFOCOM 2019); slowdown: Calculon (Isaev et
    al., SC'23).
    """
    t_b = nonneg("t_backward_s", t_backward_s)
    sigma = nonneg("slowdown", slowdown)
    r_arr = _nonneg_array("ready time", ready_s)
    c_arr = _nonneg_array("communication time", comm_s)
    if r_arr.size != c_arr.size:
        raise CostModelError("give one ready time and one communication time per bucket")
    if np.any(r_arr[1:] < r_arr[:-1]) or np.any(r_arr > t_b):
        raise CostModelError("ready times must be nondecreasing and within the backward time")
    ready, comm = r_arr.tolist(), c_arr.tolist()
    clock = _Clock(sigma)  # communication intervals in wall time
    starts, ends = [], []
    prev_end = 0.0
    for r, c in zip(ready, comm, strict=True):
        w = clock.wall(r)
        start = w if w > prev_end else prev_end
        starts.append(start)
        prev_end = start + c
        ends.append(prev_end)
        if c > 0:
            clock.busy.append((start, prev_end))
    bwd_end = clock.wall(t_b)
    end_b = ends[-1] if ends else 0.0
    return OverlapResult(
        tuple(starts), tuple(ends), bwd_end, max(0.0, end_b - bwd_end), bwd_end - t_b
    )


def _nonneg_array(name: str, values: Sequence[float]) -> np.ndarray:
    """``values`` as a 1-D float array; :func:`nonneg`'s error for the first bad one."""
    v = np.asarray(values, dtype=float).ravel()
    bad = ~np.isfinite(v) | (v < 0)
    if bad.any():
        nonneg(name, list(values)[int(np.argmax(bad))])
    return v


class _Clock:
    """Wall time at which a given amount of backward compute is done, compute slowed by 1 + σ
    inside the communication intervals ``busy`` (disjoint, increasing: one FIFO stream).

    :meth:`wall` walks the intervals from time 0; because the queries of :func:`overlap` are
    nondecreasing and every interval appended afterwards starts at or after the last answer, the
    walk resumes at the interval where the previous query stopped, with that interval's saved
    (t, done) — the very values a walk from 0 reaches there, so results are bit-identical to
    walking from 0 every time, in O(buckets) in total instead of O(buckets²).
    """

    __slots__ = ("_done", "_i", "_last", "_t", "busy", "sigma")

    def __init__(self, sigma: float) -> None:
        self.busy: list[tuple[float, float]] = []
        self.sigma = sigma
        self._i, self._t, self._done, self._last = 0, 0.0, 0.0, 0.0

    def wall(self, work: float) -> float:
        """Wall time of ``work`` compute-seconds; ``work`` nondecreasing across calls."""
        busy = self.busy
        if self.sigma == 0 or not busy:
            return work
        if work < self._last:  # not the pattern of overlap(): walk from 0
            self._i, self._t, self._done = 0, 0.0, 0.0
        self._last = work
        rate = 1.0 / (1.0 + self.sigma)
        t, done = self._t, self._done
        for i in range(self._i, len(busy)):
            self._i, self._t, self._done = i, t, done  # the state on entering interval i
            a, b = busy[i]
            if a > t:
                if done + (a - t) >= work:
                    return t + (work - done)
                done += a - t
                t = a
            seg = b - (a if a > t else t)
            if seg > 0:
                if done + seg * rate >= work:
                    return t + (work - done) / rate
                done += seg * rate
                t = b
        self._i, self._t, self._done = len(busy), t, done
        return t + (work - done)
