"""The knobs a plan (and each fix) is evaluated with: :class:`Settings`, with the default of
every term of the step (:mod:`.estimate` puts them together). Split out of ``estimate.py``;
``xpuperf.costmodel.estimate`` re-exports every name here.
"""

from __future__ import annotations

from dataclasses import dataclass

from xpuperf.costmodel import comm, scale
from xpuperf.costmodel import input as inp
from xpuperf.costmodel.checks import CostModelError, nonneg, positive
from xpuperf.costmodel.tail import TailDist
from xpuperf.costmodel.workloads import dtype_bytes

FRAMEWORKS: tuple[str, ...] = ("ddp", "horovod", "deepspeed", "tensor")
"""Bucketing rules: PyTorch DDP, Horovod fusion, DeepSpeed ZeRO, or one allreduce per tensor."""
BACKWARD_FRACTION = 2 / 3
"""Share of the single-card step spent in backward (backward ≈ 2 × forward FLOPs)."""
RING_ORDERS: tuple[str, ...] = ("node-contiguous", "interleaved")
JITTER_CV = scale.JITTER_CV
"""Default coefficient of variation of per-rank compute per step (:data:`.scale.JITTER_CV`)."""
MAX_ACCUMULATION = 1_000_000
"""Largest gradient accumulation taken (micro-steps per allreduce)."""


@dataclass(frozen=True)
class Settings:
    """The knobs a plan (and each fix) is evaluated with.

    Attributes:
        algorithm: one of :data:`~xpuperf.costmodel.comm.USER_ALGORITHMS`.
        framework: one of :data:`FRAMEWORKS`.
        bucket_mb: bucket / fusion size in MiB (None: the framework default: DDP 25, Horovod 128,
            DeepSpeed 5e8 elements).
        dtype: gradient dtype (fp32, fp16, bf16).
        ring_order: ``node-contiguous`` or ``interleaved`` (the flat ring's rank order).
        nic_per_card: what-if — every card gets a NIC of the node's NIC speed.
        backward_fraction: share of the step in backward.
        slowdown: compute slowdown while communicating (None: Calculon by link kind).
        input_time_s: seconds one loader worker needs per batch (per step, per card), one worker
            in the background; None: not modelled. Ignored when ``loader`` is given.
        loader: the full input pipeline (:class:`~xpuperf.costmodel.input.Loader`).
        compute_cv: coefficient of variation of per-rank compute per micro-step (random
            stragglers; default :data:`JITTER_CV`, the published spread of same-model GPUs,
            :data:`.scale.JITTER_CV`; 0 turns the synchronisation tax off).
        slowest_factor: the slowest card's compute relative to the mean (≥ 1).
        straggler_tail: measured per-rank compute relative to its mean
            (:class:`~xpuperf.costmodel.tail.TailDist`); replaces the normal ``compute_cv`` model.
        accumulation: K, micro-steps (one batch per card each) per allreduce (gradient
            accumulation: DDP ``no_sync``, Horovod ``backward_passes_per_step``); the allreduce
            overlaps the last micro-step's backward only, and every per-allreduce cost (exposed
            communication, slowdown, synchronisation wait) is shared by K micro-steps
            (:mod:`.accumulation`).
        global_batch: B, samples per optimizer step over all cards, fixed as cards are added
            (strong scaling): K(N) = B / (batch × N) replaces ``accumulation``; needs the
            planner's ``batch_size``.
        reference_accumulation: the K the single-card step was measured with (default: K at
            one card — ``accumulation``, or B / batch with ``global_batch``); the optimizer step
            is amortised over it in the single-card step.
        overlap: False when the allreduce starts only after backward (NVIDIA's BERT scripts'
            ``allreduce_post_accumulation``; a flat-buffer allreduce): every bucket is ready at
            the end of backward and nothing overlaps.
        optimizer_s: seconds of one optimizer step (None: memory-bound estimate,
            :func:`.accumulation.optimizer_step_s`); it changes the speedup only where K(N)
            differs from the reference K.
    """

    algorithm: str = "auto"
    framework: str = "ddp"
    bucket_mb: float | None = None
    dtype: str = "fp32"
    ring_order: str = "node-contiguous"
    nic_per_card: bool = False
    backward_fraction: float = BACKWARD_FRACTION
    slowdown: float | None = None
    input_time_s: float | None = None
    compute_cv: float = JITTER_CV
    slowest_factor: float = 1.0
    loader: inp.Loader | None = None
    straggler_tail: TailDist | None = None
    accumulation: int = 1
    global_batch: float | None = None
    reference_accumulation: int | None = None
    optimizer_s: float | None = None
    overlap: bool = True

    def __post_init__(self) -> None:
        if self.algorithm.lower() not in comm.USER_ALGORITHMS:
            raise CostModelError(
                f"unknown algorithm {self.algorithm!r}; "
                f"use one of {', '.join(comm.USER_ALGORITHMS)}"
            )
        if self.framework not in FRAMEWORKS:
            raise CostModelError(
                f"unknown framework {self.framework!r}; use one of {', '.join(FRAMEWORKS)}"
            )
        if self.ring_order not in RING_ORDERS:
            raise CostModelError(f"ring order must be one of {', '.join(RING_ORDERS)}")
        if self.bucket_mb is not None:
            positive("bucket size (MiB)", self.bucket_mb)
        dtype_bytes(self.dtype)
        f = nonneg("backward_fraction", self.backward_fraction)
        if f > 1:
            raise CostModelError(f"backward_fraction must be within 0..1, got {f}")
        if self.slowdown is not None:
            nonneg("slowdown", self.slowdown)
        if self.input_time_s is not None:
            nonneg("input time (s)", self.input_time_s)
        nonneg("compute_cv", self.compute_cv)
        if self.slowest_factor < 1:
            raise CostModelError(f"slowest_factor must be >= 1, got {self.slowest_factor}")
        for k in (self.accumulation, self.reference_accumulation):
            if k is None:
                continue
            if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_ACCUMULATION:
                raise CostModelError(f"accumulation must be a whole number of micro-steps "
                                     f"between 1 and {MAX_ACCUMULATION:,}, got {k!r}")  # fmt: skip
        if self.global_batch is not None:
            positive("global batch", self.global_batch)
        if self.optimizer_s is not None:
            nonneg("optimizer step (s)", self.optimizer_s)
