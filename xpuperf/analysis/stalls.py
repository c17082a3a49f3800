"""Synchronous stalls: job spikes that hit every rank at the same steps (finding XP207).

A spike of the job's step time (:mod:`xpuperf.analysis.jitter`) has one of three shapes in the
per-rank logs of a synchronous data-parallel job:

- **one rank's own work** rose at that step and the others waited for it in the collective: a
  random straggler (:mod:`xpuperf.analysis.stragglers`, XP103) — not handled here;
- **every rank's own work** rose at the same step: the job paused as a whole. With per-rank phase
  times the phase names the cause: data wait → the input pipeline or shared storage (every
  loader starved at once), compute → a job-wide slowdown (clocks, power capping), host/other → a
  job-wide pause (checkpoint, evaluation, GC, logging);
- **no rank's own work** rose but the step did: the collective itself was slow on every rank
  (network stall).

Rule, per spike step ``s`` with job excess ``E_s = T_s − median(T)``: a rank took part when its
own time ``x`` (``work_s`` as :func:`xpuperf.steps.work_series` defines it) exceeds its own
median by at least ``PART_SHARE · E_s``. The step is *synchronous* when at least
:data:`ALL_SHARE` of the ranks took part, a *network* stall when none did. Consecutive such steps
form one stall event; its size is its step count and the seconds lost ``Σ E_s`` (wall-clock).

A logged phase names a synchronous stall only when it explains it: its rise (median over ranks of
the phase minus each rank's own median) covers at least :data:`EXPLAIN_SHARE` of ``E_s``. When no
logged phase does (a log with ``data_s`` only whose step time rose by 70 ms while the data wait
rose by 0.2 ms), the stall is *unexplained by the logged phases* and the finding names each
phase's share of the excess instead of blaming the largest riser.

With step time only (no phase columns), every rank's step time rises at every job spike — the
collective makes them wait — so "all ranks" cannot be told from "one rank and the others
waiting": the finding says so in its first words (no "not a straggler" claim), names both
candidates and what to log to tell them apart.

Source: xpuperf's own rule (issue 16 scope 6); culprit vs victim as docs/anchors.md item 9.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from xpuperf.findings import Finding, Severity

PART_SHARE = 0.5
"""A rank takes part in a stall when its own time rose by at least this share of the job's."""
ALL_SHARE = 0.9
"""Share of ranks that must take part for a stall to be synchronous (job-wide)."""
COST_WARNING = 0.01
"""Stalls costing at least this share of the logged step time are a warning, below an info."""
EXPLAIN_SHARE = 0.5
"""A phase names a stall only when its rise covers at least this share of the step-time excess."""
PHASES = {"data_s": "data wait", "compute_s": "compute", "other_s": "host/other time"}
UNEXPLAINED = "unexplained"
"""``StallEvent.phase`` of a stall that no logged phase explains (:data:`EXPLAIN_SHARE`)."""


@dataclass
class StallEvent:
    """One job-wide stall: consecutive synchronous spike steps.

    Attributes:
        first_step, last_step: step numbers (inclusive).
        steps: spike steps in the event.
        lost_s: Σ over its steps of job step time − median job step time, seconds.
        phase: ``data_s``/``compute_s``/``other_s`` whose rise over the ranks' medians (median
            over ranks) is largest and covers ≥ :data:`EXPLAIN_SHARE` of the step's excess,
            :data:`UNEXPLAINED` when no logged phase covers that much, ``comm_s`` for a network
            stall, None when the logs have step time only.
        ranks_share: mean share of ranks that took part.
        rise_s: per logged phase, Σ over the event's steps of its rise (median over ranks of
            the phase minus the rank's own median), seconds; ``rise_s[p] / lost_s`` is the
            share of the excess the phase explains.
    """

    first_step: int
    last_step: int
    steps: int
    lost_s: float
    phase: str | None
    ranks_share: float
    rise_s: dict[str, float] = field(default_factory=dict)


@dataclass
class StallResult:
    """Synchronous stalls of a run; ``events`` empty when none. ``checked``: False when the run
    has fewer than two ranks (a job-level log cannot show whether all ranks stalled).
    ``lost_s`` is in the logged rows' step time; ``step_gap`` the median gap between logged step
    numbers (a log printing every k steps has k: each row may stand for k steps)."""

    checked: bool
    events: list[StallEvent] = field(default_factory=list)
    lost_s: float = 0.0
    lost_fraction: float = 0.0
    work_source: str = "step_time"
    step_gap: int = 1


def find_sync_stalls(
    at: pd.DataFrame,
    rank_median: pd.DataFrame,
    job: pd.DataFrame,
    spike_steps: list[int],
    work_source: str,
) -> tuple[StallResult, list[Finding]]:
    """Classify the job's spike steps; XP207 for the job-wide ones.

    Args:
        at: the steady step-table rows at the spike steps: ``rank, step, step_time_s, work_s``
            and, when known, ``data_s, compute_s, other_s`` (seconds).
        rank_median: one row per rank: ``rank, work_s`` and the same phase columns (medians over
            the steady steps, seconds).
        job: the steady job series ``step, step_time_s`` (seconds).
        spike_steps: the jitter analysis' spike steps.
        work_source: how ``work_s`` was measured (:func:`xpuperf.steps.work_series`).

    Returns:
        ``(StallResult, findings)``: one XP207 when job-wide stalls were found.
    """
    n_ranks = int(rank_median["rank"].nunique())
    if n_ranks < 2:
        return StallResult(False, work_source=work_source), []
    t = job["step_time_s"].to_numpy(float)
    med = float(np.median(t)) if len(t) else float("nan")
    total = float(np.sum(t))
    excess = dict(zip(job["step"].to_numpy(), t - med, strict=True))
    med_by_rank = rank_median.set_index("rank")
    phases = [p for p in PHASES if p in at.columns and at[p].notna().any()]
    kinds: list[tuple[int, float, str | None, float, dict[str, float]]] = []
    for step, rows in at.groupby("step", sort=True):
        e = float(excess.get(step, 0.0))
        if e <= 0:
            continue
        own = rows["work_s"].to_numpy(float) - med_by_rank.loc[rows["rank"], "work_s"].to_numpy()
        share = float(np.mean(own >= PART_SHARE * e))
        if share >= ALL_SHARE:
            rise = _rises(rows, med_by_rank, phases)
            kinds.append((int(step), e, _phase(rise, e), share, rise))
        elif not np.any(own >= PART_SHARE * e) and work_source != "step_time":
            kinds.append((int(step), e, "comm_s", 0.0, {}))
    events = _group(kinds, {int(s) for s in spike_steps}, job["step"].to_numpy())
    lost = sum(ev.lost_s for ev in events)
    result = StallResult(True, events, lost, lost / total if total > 0 else 0.0, work_source)
    gaps = np.diff(job["step"].to_numpy())
    result.step_gap = int(np.median(gaps)) if len(gaps) else 1
    return result, ([_finding(result, n_ranks)] if events else [])


def _rises(rows: pd.DataFrame, med: pd.DataFrame, phases: list[str]) -> dict[str, float]:
    """Per phase, the median over ranks of its value minus the rank's own median, seconds."""
    out = {}
    for p in phases:
        d = rows[p].to_numpy(float) - med.loc[rows["rank"], p].to_numpy(float)
        if np.isfinite(d).any():
            out[p] = float(np.nanmedian(d))
    return out


def _phase(rise: dict[str, float], excess: float) -> str | None:
    """The phase that rose most when it covers ≥ :data:`EXPLAIN_SHARE` of ``excess``;
    :data:`UNEXPLAINED` when none does; None without phase columns."""
    if not rise:
        return None
    top = max(rise, key=lambda p: rise[p])
    return top if rise[top] >= EXPLAIN_SHARE * excess else UNEXPLAINED


def _group(kinds: list, spikes: set[int], steps: np.ndarray) -> list[StallEvent]:
    """Consecutive steady steps of the same phase form one event."""
    pos = {int(s): i for i, s in enumerate(steps)}
    events: list[StallEvent] = []
    prev = None
    for step, lost, phase, share, rise in kinds:
        if step not in spikes:
            continue
        if prev is not None and pos[step] == pos[prev] + 1 and events[-1].phase == phase:
            ev = events[-1]
            ev.ranks_share = (ev.ranks_share * ev.steps + share) / (ev.steps + 1)
            ev.last_step, ev.steps, ev.lost_s = step, ev.steps + 1, ev.lost_s + lost
            for p, v in rise.items():
                ev.rise_s[p] = ev.rise_s.get(p, 0.0) + v
        else:
            events.append(StallEvent(step, step, 1, lost, phase, share, dict(rise)))
        prev = step
    return events


_CAUSE = {
    "data_s": (
        "input-pipeline / storage stall: data wait rose on every rank at once (loaders starved "
        "together: shared storage, a network file system, a dataset shard boundary)",
        "prefetch more batches (prefetch_factor, DALI prefetch_queue_depth), more loader workers, "
        "cache or stage the dataset on local disk, check the storage's throughput at those steps",
    ),
    "compute_s": (
        "job-wide compute slowdown: compute time rose on every rank at once",
        "check clocks and power capping across nodes at those steps (nvidia-smi -q -d "
        "PERFORMANCE), and anything that runs on all GPUs then (evaluation, profiling)",
    ),
    "other_s": (
        "job-wide host pause: host/other time rose on every rank at once (checkpoint, "
        "evaluation, garbage collection, logging)",
        "make checkpoints asynchronous, evaluate less often, gc.freeze()/disable automatic GC "
        "in the training loop",
    ),
    "comm_s": (
        "network stall: no rank's own work rose, the collective itself took longer on every rank",
        "check the fabric at those steps (link flaps, congestion from other jobs; NCCL_DEBUG=INFO "
        "and the switch counters)",
    ),
    None: (
        "job-wide stall: every rank's step time rose at the same steps — a pause shared by all "
        "ranks (input pipeline, shared storage, checkpoint, evaluation) or one rank's pause the "
        "others waited for; per-rank step time cannot tell which",
        "log per-rank data_time (time waiting for the next batch) to confirm the input pipeline; "
        "prefetch more batches and stage the dataset locally if it is",
    ),
}


_UNEXPLAINED_REMEDY = (
    "time the rest of the step per rank (compute_s and comm_s: forward+backward and the "
    "allreduce separately, data_time) so the next stall can be placed, and check what runs on "
    "every rank at those steps (checkpoint, evaluation, garbage collection, logging)"
)


def _dur(s: float) -> str:
    """Seconds as ``70.0 ms`` below one second, else ``1.25 s``."""
    return f"{s * 1e3:.1f} ms" if abs(s) < 1.0 else f"{s:.2f} s"


def _shares(ev: list[StallEvent], only: str | None = None) -> tuple[str, dict[str, float]]:
    """``the 65.5 ms excess: data wait +0.3 ms (0.4%)`` over ``ev`` (phase ``only``, or every
    logged phase), and every phase's share of the excess."""
    lost = sum(e.lost_s for e in ev)
    rise: dict[str, float] = {}
    for e in ev:
        for p, v in e.rise_s.items():
            rise[p] = rise.get(p, 0.0) + v
    share = {p: v / lost for p, v in rise.items()} if lost > 0 else {}
    parts = ", ".join(
        f"{PHASES[p]} {'+' if v >= 0 else '−'}{_dur(abs(v))} ({share[p]:.1%})"
        for p, v in sorted(rise.items(), key=lambda x: -x[1])
        if only is None or p == only
    )
    return f"the {_dur(lost)} excess: {parts}", share


def _cause(phase: str | None, ev: list[StallEvent], source: str) -> tuple[str, str]:
    """(cause, remedy) of the main stall kind; phase-named and unexplained ones say the shares."""
    if phase != UNEXPLAINED:
        cause, remedy = _CAUSE[phase]
        if phase in PHASES:
            text, _ = _shares([e for e in ev if e.phase == phase], phase)
            cause += f" (of {text}; a phase names a stall from {EXPLAIN_SHARE:.0%} of it)"
        return cause, remedy
    text, _ = _shares([e for e in ev if e.phase == UNEXPLAINED])
    what = "step time" if source == "step_time" else "own work"
    why = (
        "a pause of all ranks in a part of the step the logs do not time (compute, "
        "communication, host) or one rank's pause the others waited for; per-rank step time "
        "cannot tell which"
        if source == "step_time"
        else "the time went to a part of the step the logs do not time, or was spread over "
        "several phases"
    )
    cause = (
        f"job-wide stall not explained by the logged phases: every rank's {what} rose at the "
        f"same steps but no logged phase covers ≥ {EXPLAIN_SHARE:.0%} of the rise (of {text}) — "
        f"{why}"
    )
    return cause, _UNEXPLAINED_REMEDY


_SHORT = {
    UNEXPLAINED: "unexplained",
    "data_s": "input",
    "compute_s": "compute",
    "other_s": "host pause",
    "comm_s": "network",
    None: "job-wide",
}


def _finding(r: StallResult, n_ranks: int) -> Finding:
    ev = r.events
    phase = max({e.phase for e in ev}, key=lambda p: sum(e.lost_s for e in ev if e.phase == p))
    cause, remedy = _cause(phase, ev, r.work_source)
    spans = ", ".join(
        f"{e.first_step}" if e.steps == 1 else f"{e.first_step}–{e.last_step}" for e in ev[:6]
    ) + (" …" if len(ev) > 6 else "")
    n_steps = sum(e.steps for e in ev)
    others = [e for e in ev if e.phase != phase]
    also = (
        "; other stall(s): "
        + ", ".join(
            f"step {e.first_step} ({_SHORT[e.phase]}, {e.lost_s:.2f} s)" for e in others[:4]
        )
        if others
        else ""
    )
    window = (
        f"; rows every {r.step_gap} steps: ≈ {r.lost_s * r.step_gap:.1f} s of wall time if each "
        "row averages its window"
        if r.step_gap > 1
        else ""
    )
    msg = (
        f"{cause}: {len(ev)} stall(s) on {'all' if phase != 'comm_s' else 'the'} {n_ranks} "
        f"ranks at steps {spans} ({n_steps} step(s), {r.lost_s:.2f} s lost = "
        f"{r.lost_fraction:.1%} of the logged step time; threshold: ≥ {ALL_SHARE:.0%} of ranks "
        "slower by "
        f"≥ {PART_SHARE:.0%} of the job's excess, warning from {COST_WARNING:.0%})"
        f"{window}{also}. Remedy: {remedy}."
    )
    data = {
        "events": len(ev),
        "steps": n_steps,
        "lost_s": r.lost_s,
        "lost_fraction": r.lost_fraction,
        "phase": phase,
        "phase_shares": _shares([e for e in ev if e.phase == phase])[1],
        "spans": [[e.first_step, e.last_step] for e in ev],
        "ranks": n_ranks,
        "step_gap": r.step_gap,
    }
    sev = Severity.WARNING if r.lost_fraction >= COST_WARNING else Severity.INFO
    return Finding("XP207", sev, msg, data)
