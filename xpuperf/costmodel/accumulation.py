"""Gradient accumulation, strong scaling with a fixed global batch, and the optimizer step.

- **Accumulation** K: each card runs K micro-steps (one batch each) per allreduce (PyTorch DDP
  ``no_sync``, Horovod ``backward_passes_per_step``, NVIDIA's BERT scripts
  ``gradient_accumulation_steps``). Everything paid once per allreduce — exposed communication,
  compute slowdown, the synchronisation wait, the optimizer step — is shared by K micro-steps.
- **Global batch** B (strong scaling): published runs keep B fixed and shrink the accumulation
  as cards are added, K(N) = B / (b·N) for a per-card micro-batch b (NVIDIA DeepLearningExamples
  BERT pre-training tables: 65536 sequences at every node count). K(N) must be a whole number
  ≥ 1, else :class:`CostModelError`.
- **Optimizer step**: memory-bound, once per allreduce on every card (data parallelism
  replicates it): F = parameters × :data:`OPTIMIZER_BYTES_PER_PARAM` / the card's memory
  bandwidth (:data:`HBM_GBPS`). It is part of the measured one-card step at the accumulation
  that step was measured with (K_ref); at N cards with K(N) < K_ref the step grows by
  F/K(N) − F/K_ref per micro-step.

Seconds, bytes and GB/s = 1e9 bytes/s throughout.
"""

from __future__ import annotations

import math

from xpuperf.costmodel.checks import CostModelError, positive

OPTIMIZER_BYTES_PER_PARAM = 28
"""Memory traffic of an Adam-style update per fp32 parameter: read parameter, gradient and the
two moments (4 × 4 B), write parameter and moments (3 × 4 B) — one fused pass, as apex
``FusedAdam``/``FusedLAMB`` and ``torch.optim.Adam(fused=True)`` do (multi-tensor apply). LAMB's
trust ratio adds a norm pass; unfused per-tensor kernels several — so this is a floor."""

HBM_GBPS: dict[str, float] = {
    "P100": 732.0,
    "V100": 900.0,
    "A100-SXM4-80GB": 2039.0,
    "A100-PCIE-80GB": 1935.0,
    "A100": 1555.0,
    "H100-PCIE": 2000.0,
    "H100": 3350.0,
    "H200": 4800.0,
    "B200": 8000.0,
}
"""Memory bandwidth by card model (prefix match, longest first), GB/s: NVIDIA data sheets
(Tesla P100, V100, A100 40/80 GB, H100 SXM/PCIe, H200, B200)."""
DEFAULT_HBM_GBPS = 900.0
"""A card model not in :data:`HBM_GBPS` (or not named): V100's 900 GB/s."""


def hbm_GBps(card_model: str | None) -> float:
    """Memory bandwidth of ``card_model`` (longest matching prefix in :data:`HBM_GBPS`)."""
    name = (card_model or "").upper()
    for key in sorted(HBM_GBPS, key=len, reverse=True):
        if name.startswith(key.upper()):
            return HBM_GBPS[key]
    return DEFAULT_HBM_GBPS


def optimizer_step_s(n_params: int, card_model: str | None) -> float:
    """Memory-bound optimizer step, seconds: n_params × 28 B / memory bandwidth (BERT-large,
    335 M parameters: 10.4 ms on V100, 6.0 ms on A100 40 GB). Source: the update's memory traffic
    (:data:`OPTIMIZER_BYTES_PER_PARAM`) over the data-sheet bandwidth (:data:`HBM_GBPS`)."""
    return n_params * OPTIMIZER_BYTES_PER_PARAM / (hbm_GBps(card_model) * 1e9)


def micro_steps(global_batch: float, batch: float, cards: int) -> int:
    """K(N) = B / (b·N): micro-steps per allreduce at ``cards`` for a fixed global batch.

    Raises :class:`CostModelError` when it is not a whole number ≥ 1 (the published runs choose
    B as b·N·K)."""
    b = positive("global batch", global_batch)
    k = b / (positive("batch size", batch) * cards)
    if k < 1 - 1e-9 or not math.isclose(k, round(k), rel_tol=1e-9):
        raise CostModelError(
            f"global batch {b:g} is not a whole number of micro-batches of {batch:g} per card "
            f"on {cards} card{'s' if cards > 1 else ''} ({k:.4g} micro-steps); use a global "
            "batch that is batch × cards × K for every card count, or --accumulation K"
        )
    return round(k)


def describe(s, optimizer_s: float, default_cv: float) -> tuple[str, ...]:
    """The assumptions of the step terms of issue 20 in force with settings ``s`` (a
    :class:`~xpuperf.costmodel.step_settings.Settings`), one sentence each, for reports."""
    out = []
    if s.straggler_tail is None and s.compute_cv > 0:
        src = " (default: published GPU variability)" if s.compute_cv == default_cv else ""
        out.append(f"random stragglers: per-rank compute spread {s.compute_cv:.3g}{src}; each "
                   "step waits for the slowest of N ranks")  # fmt: skip
    if s.global_batch is not None or s.accumulation > 1:
        k = (f"{s.global_batch:g} / (batch × cards)" if s.global_batch is not None
             else str(s.accumulation))  # fmt: skip
        out.append(f"gradient accumulation: {k} micro-steps per allreduce; times are per "
                   f"micro-step; optimizer step {optimizer_s * 1e3:.3g} ms")  # fmt: skip
    if not s.overlap:
        out.append("the allreduce starts after backward (no overlap)")
    return tuple(out)
