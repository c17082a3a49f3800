"""Seeded generator of synthetic synchronous data-parallel runs with known truth.

Used by tests (the truth is asserted), by ``sample_logs/make_samples.py`` and by benchmarks.

Model of one step on rank r (all times seconds)::

    data[r]    = data_s   · LogN(σ)                      input wait
    compute[r] = compute_s · (1 + slow[r]) · LogN(σ) · warm(s) · level(s)
    other[r]   = other_s  · LogN(σ) (+ spike_s on every rank at periodic spike steps)
    ready[r]   = data[r] + compute[r] + other[r]         own work, before the collective
    comm[r]    = max_r' ready[r'] − ready[r] + allreduce  waiting for the slowest + transfer
    step[r]    = ready[r] + comm[r] = max ready + allreduce  (synchronous: equal on every rank)

``LogN(σ)`` is a log-normal factor with median 1 and σ = ``noise_cv``. Random stragglers add
``random_straggler_s`` to a random rank's compute with probability ``random_straggler_prob`` per
rank and step. Warm-up multiplies compute by a factor falling linearly from ``warmup_factor`` to
``1 + (warmup_factor − 1)/warmup_steps`` over the first ``warmup_steps`` steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from xpuperf import steps as st


@dataclass
class Scenario:
    """Parameters of a synthetic run; every field is ground truth for tests.

    Attributes:
        ranks: world size N.
        cards_per_node: G; node of rank r is ``node{r // G:02d}``.
        steps: number of steps, numbered from ``first_step``.
        batch_per_rank: samples per rank per step.
        compute_s, data_s, other_s, allreduce_s: median phase times, seconds.
        noise_cv: σ of the log-normal noise on each phase.
        warmup_steps, warmup_factor: planted warm-up.
        slow_ranks: rank → compute slowdown fraction (deterministic stragglers).
        slow_data_ranks: rank → data-time slowdown fraction.
        spike_period, spike_phase, spike_s: every ``spike_period`` steps starting at step
            ``spike_phase`` (relative to the first step) add ``spike_s`` to every rank.
        change_step, change_factor: from this step index on, compute is × ``change_factor``.
        random_straggler_prob, random_straggler_s: random per-(rank, step) delays.
        seed: RNG seed.
    """

    ranks: int = 8
    cards_per_node: int = 8
    steps: int = 200
    first_step: int = 1
    batch_per_rank: int = 32
    compute_s: float = 0.200
    data_s: float = 0.010
    other_s: float = 0.005
    allreduce_s: float = 0.030
    noise_cv: float = 0.02
    warmup_steps: int = 5
    warmup_factor: float = 3.0
    slow_ranks: dict[int, float] = field(default_factory=dict)
    slow_data_ranks: dict[int, float] = field(default_factory=dict)
    spike_period: int | None = None
    spike_phase: int = 0
    spike_s: float = 0.0
    change_step: int | None = None
    change_factor: float = 1.0
    random_straggler_prob: float = 0.0
    random_straggler_s: float = 0.0
    seed: int = 0


def generate(sc: Scenario) -> pd.DataFrame:
    """Generate the canonical step table of a run (see :mod:`xpuperf.steps`).

    Returns all columns: rank, step, step_time_s, t_end_s, samples, node, data_s, forward_s,
    backward_s, comm_s, optimizer_s, compute_s. Single-rank runs have comm_s = 0.
    """
    rng = np.random.default_rng(sc.seed)
    n, s = sc.ranks, sc.steps

    def noise(shape: tuple[int, ...]) -> np.ndarray:
        return np.exp(rng.normal(0.0, sc.noise_cv, size=shape))

    idx = np.arange(s)
    warm = np.ones(s)
    if sc.warmup_steps > 0:
        w = min(sc.warmup_steps, s)
        last = 1.0 + (sc.warmup_factor - 1.0) / sc.warmup_steps
        warm[:w] = np.linspace(sc.warmup_factor, last, sc.warmup_steps)[:w]
    level = np.ones(s)
    if sc.change_step is not None:
        level[sc.change_step :] = sc.change_factor

    slow = np.zeros(n)
    for r, f in sc.slow_ranks.items():
        slow[r] = f
    slow_data = np.zeros(n)
    for r, f in sc.slow_data_ranks.items():
        slow_data[r] = f

    compute = sc.compute_s * (1.0 + slow)[:, None] * noise((n, s)) * (warm * level)[None, :]
    if sc.random_straggler_prob > 0:
        hit = rng.random((n, s)) < sc.random_straggler_prob
        compute = compute + hit * sc.random_straggler_s
    data = sc.data_s * (1.0 + slow_data)[:, None] * noise((n, s))
    other = sc.other_s * noise((n, s))
    if sc.spike_period:
        spikes = (idx >= sc.spike_phase) & ((idx - sc.spike_phase) % sc.spike_period == 0)
        other = other + spikes[None, :] * sc.spike_s
    ready = data + compute + other
    allreduce = sc.allreduce_s * noise((s,)) if n > 1 else np.zeros(s)
    step_time = ready.max(axis=0) + allreduce
    comm = step_time[None, :] - ready

    fwd = compute * 0.32
    opt = compute * 0.08
    bwd = compute - fwd - opt
    t_end = np.cumsum(step_time)
    ranks = np.repeat(np.arange(n), s)
    g = max(1, sc.cards_per_node)
    df = pd.DataFrame(
        {
            "rank": ranks,
            "step": np.tile(idx + sc.first_step, n),
            "step_time_s": np.tile(step_time, n),
            "t_end_s": np.tile(t_end, n),
            "samples": float(sc.batch_per_rank),
            "node": [f"node{r // g:02d}" for r in ranks],
            "data_s": data.ravel(),
            "forward_s": fwd.ravel(),
            "backward_s": bwd.ravel(),
            "comm_s": comm.ravel(),
            "optimizer_s": opt.ravel(),
            "compute_s": compute.ravel(),
        }
    )
    return st.validate(st.coerce(df), source="synthetic run")
