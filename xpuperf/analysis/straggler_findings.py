"""Finding messages of :mod:`xpuperf.analysis.stragglers` (XP101-XP104): value, threshold, remedy.

Split out of ``stragglers.py`` to keep modules small; the detection and its numbers live there.
:class:`Run` (the matrices both use) lives here, so the two modules import one way only.
Each builder only formats what :func:`xpuperf.analysis.stragglers.find_stragglers` computed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from xpuperf.analysis.grid import Derived, Grid
from xpuperf.analysis.pvalue import format_p
from xpuperf.analysis.results import Straggler
from xpuperf.findings import Finding, Severity


@dataclass
class Run:
    """Rank × step matrices of :func:`xpuperf.analysis.stragglers.find_stragglers`, over the
    steps present on every rank (rows follow ``ranks``); the finding builders read them."""

    ranks: np.ndarray  # (n,) rank ids
    nodes: list[str | None]  # (n,)
    work: np.ndarray  # (n, m) seconds
    step_time: np.ndarray  # (m,) job step time (median over ranks), seconds
    comm: np.ndarray | None  # (n, m) seconds, None when unknown
    phases: dict[str, np.ndarray | Derived]  # phases that make up work -> (n, m) seconds
    grid: Grid | None = None  # the grid the matrices are whole views of (shared medians)
    steps: np.ndarray | None = None  # (m,) step numbers of the columns


PHASE_NAMES = {"compute_s": "compute", "data_s": "data wait", "other_s": "host/other time"}
REMEDY = {
    "compute_s": "check its clocks, thermals and power capping (nvidia-smi -q -d PERFORMANCE "
    "lists throttle reasons) and replace a bad card",
    "data_s": "give its data loader more workers, check the storage it reads from and the "
    "NUMA binding of its loader workers",
    "other_s": "look for host CPU contention (other processes, CPU affinity of the training "
    "process and its threads) and GC pauses",
    None: "log per-rank phase times (compute, data, comm) to locate the slow part",
}
NODE_REMEDY = "check the node's power, cooling and power profile and what else runs on it; "


def _fmt_p(p: float) -> str:
    """``p<1e-16`` below the resolution of the test, never ``p=1.000`` (:mod:`.pvalue`)."""
    return format_p(p)


def _ranks(k: int) -> str:
    return f"{k} rank" if k == 1 else f"{k} ranks"


def _rank_list(ranks: list[int]) -> str:
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}–{ranks[-1]}"
    return ", ".join(str(r) for r in ranks)


def det_finding(s: Straggler, run: Run, ctx: dict, extra: dict) -> Finding:
    """XP101 (rank) / XP102 (node): value, CI, p, sample size, threshold, victims, cost, remedy."""
    rows = np.flatnonzero(np.isin(run.ranks, s.ranks))
    med_w = float(np.median(np.median(run.work[rows], axis=1)))
    ci = ""
    if s.slowdown_ci:
        ci = f"{ctx['confidence']:.0%} CI {s.slowdown_ci[0]:.1%}–{s.slowdown_ci[1]:.1%}, "
    evidence = (
        f"({med_w:.3f} s vs {extra['reference_work_s']:.3f} s; {ci}{_fmt_p(s.p_value or 1.0)}, "
        f"{s.n_steps} steps; threshold {extra['threshold']:.0%})"
    )
    if s.rank is not None:
        who = f"rank {s.rank}" + (f" ({s.node})" if s.node else "")
        head = f"{who} works {s.slowdown:.1%} longer than the median rank {evidence}"
    else:
        who = f"node {s.node}"
        head = (
            f"{who} (ranks {_rank_list(s.ranks)}) is slow: its ranks work {s.slowdown:.1%} "
            f"longer than the median rank {evidence}"
        )
    wait = ""
    healthy, med_comm = ctx["healthy"], ctx["med_comm"]
    if run.comm is not None and healthy.any():
        wait = (
            f"; the other {_ranks(int(healthy.sum()))} wait for it: their median comm "
            f"{float(np.median(med_comm[healthy])):.3f} s vs "
            f"{float(np.median(med_comm[rows])):.3f} s on {who}"
        )
    cost = f"Cost: {s.cost_fraction:.1%} of throughput"
    if extra["n_deterministic"] > 1:
        cost += (
            f" (fixing all {extra['n_deterministic']} deterministic stragglers: "
            f"{extra['cost_fraction_all_deterministic']:.1%})"
        )
    phase = f" The excess is mostly {PHASE_NAMES[s.slow_phase]}." if s.slow_phase else ""
    remedy = (NODE_REMEDY if s.rank is None else "") + REMEDY[s.slow_phase]
    msg = f"{head}{wait}. {cost}.{phase} Remedy: {remedy}."
    data = {**asdict(s), "median_work_s": med_w, **extra}
    return Finding("XP101" if s.rank is not None else "XP102", Severity.WARNING, msg, data)


def random_finding(
    s: Straggler, ranks: np.ndarray, share: np.ndarray, sync_cost: float, threshold: float
) -> Finding:
    """XP103: who is slowest how often, sync cost vs threshold, sample size, remedy."""
    top = np.argsort(-share, kind="stable")[:3]
    top_txt = ", ".join(f"rank {int(ranks[i])} {share[i]:.1%}" for i in top)
    msg = (
        f"random stragglers: the slowest rank changes from step to step (most often slowest: "
        f"{top_txt} of steps; fair share {1 / len(ranks):.1%}); waiting for the slowest costs "
        f"{sync_cost:.3f} s per step = {s.cost_fraction:.1%} of step time (threshold "
        f"{threshold:.0%}), {len(ranks)} ranks × {s.n_steps} steps. It grows with scale, since "
        f"every step waits for the maximum of N ranks. Remedy: reduce OS noise and shared-resource "
        f"contention: isolate CPUs for the training processes, pin their threads, tune or "
        f"schedule GC, keep other jobs off the nodes."
    )
    data = {"top_ranks": [int(ranks[i]) for i in top], "sync_cost_s": sync_cost}
    data |= {"top_slowest_share": [float(share[i]) for i in top], "threshold": threshold}
    data |= {"sync_cost_fraction": s.cost_fraction, "ranks": len(ranks), "n_steps": s.n_steps}
    return Finding("XP103", Severity.WARNING, msg, data)


def _step_list(steps: np.ndarray) -> str:
    """``steps 10, 30, 50 (every 20 steps)``; at most 8 listed."""
    shown = ", ".join(str(int(x)) for x in steps[:8]) + (", …" if len(steps) > 8 else "")
    diffs = np.diff(steps)
    every = (
        f" (every {int(diffs[0])} steps)" if len(steps) > 2 and (diffs == diffs[0]).all() else ""
    )
    return f"step{'s' if len(steps) > 1 else ''} {shown}{every}"


def intermittent_finding(
    s: Straggler,
    steps: np.ndarray,
    owed: float,
    sync_frac: float,
    threshold: float,
    owed_threshold: float,
    excess: dict[str, float],
) -> Finding:
    """XP101, intermittent: one rank owes most of the sync cost on a few steps (kind
    ``"intermittent"``): its share, the steps, the slow phase and its remedy."""
    who = f"rank {s.rank}" + (f" ({s.node})" if s.node else "")
    phase = ""
    if s.slow_phase:
        phase = (
            f" The excess is {PHASE_NAMES[s.slow_phase]}: +{excess[s.slow_phase]:.3f} s over "
            "the median rank at those steps."
        )
    msg = (
        f"{who} is an intermittent straggler: it is slow on {len(steps)} of {s.n_steps} steps "
        f"({_step_list(steps)}; median {s.slowdown:.0%} longer work than the median rank there) "
        f"and the other ranks wait for it in the collective: it owes {owed:.0%} of the sync cost "
        f"(Σ over steps of slowest − median work; threshold {owed_threshold:.0%}), which is "
        f"{sync_frac:.1%} of step time (threshold {threshold:.0%}). Cost: {s.cost_fraction:.1%} "
        f"of throughput.{phase} Remedy: {REMEDY[s.slow_phase]}."
    )
    data = {**asdict(s), "steps": [int(x) for x in steps], "owed_share": owed}
    data |= {"owed_threshold": owed_threshold, "sync_cost_fraction": sync_frac}
    data |= {"threshold": threshold, "intermittent": True}
    return Finding("XP101", Severity.WARNING, msg, data)


def none_finding(run: Run, ctx: dict, sync_frac: float) -> Finding:
    """XP104: the largest slowdown and the sync cost, each against its threshold."""
    n, m = run.work.shape
    slowdown, pvals, threshold = ctx["slowdown"], ctx["pvals"], ctx["threshold"]
    i = int(np.argmax(slowdown))
    nsig = f", not significant ({_fmt_p(float(pvals[i]))})" if slowdown[i] > threshold else ""
    top, top_share = ctx["top_slowest"]
    if sync_frac > threshold:  # waiting is above threshold but mostly for one mild straggler
        nsig += f"; rank {top} is the slowest in {top_share:.0%} of steps"
    msg = (
        f"no straggler: the slowest rank (rank {int(run.ranks[i])}) works "
        f"{slowdown[i]:.1%} longer than the median rank (threshold {threshold:.0%}){nsig}; "
        f"waiting for the slowest rank costs {sync_frac:.1%} of step time (threshold "
        f"{threshold:.0%}); {n} ranks × {m} steps."
    )
    data = {"max_slowdown": float(slowdown[i]), "slowest_rank": int(run.ranks[i])}
    data |= {"sync_cost_fraction": sync_frac, "threshold": threshold, "ranks": n, "n_steps": m}
    return Finding("XP104", Severity.INFO, msg, data)


def intermittent_entry(
    run: Run,
    ctx: dict,
    row: int,
    slowest: np.ndarray,
    hit: np.ndarray,
    gap: np.ndarray,
    owed: float,
    sync_frac: float,
    owed_share: float,
) -> tuple[Straggler, Finding]:
    """The rank that owes most of the sync cost although it is slow on a few steps only.

    ``hit``: its slow steps (column indices), where it was the slowest and worked more than
    ``threshold`` above the median rank. Slow phase: the phase with the largest median excess
    over the step's median rank at those steps. ``slowdown``: median over those steps of
    work / median work − 1. Cost: its gap summed over the steps where it was the slowest.
    """
    ref, thr = ctx["ref_step"], ctx["threshold"]
    excess = {}
    for p, a in run.phases.items():
        blk = np.asarray(a[:, hit])
        excess[p] = float(np.median(blk[row] - np.median(blk, axis=0)))
    phase = max(excess, key=excess.__getitem__) if excess else None
    if phase is not None and excess[phase] <= 0:
        phase = None
    s = Straggler(
        kind="intermittent",
        rank=int(run.ranks[row]),
        node=run.nodes[row],
        ranks=[int(run.ranks[row])],
        slowdown=float(np.median(run.work[row, hit] / ref[hit]) - 1.0),
        cost_fraction=float(gap[slowest].sum()) / ctx["total_t"],
        n_steps=run.work.shape[1],
        slow_phase=phase,
    )
    steps = run.steps[hit] if run.steps is not None else hit
    return s, intermittent_finding(s, steps, owed, sync_frac, thr, owed_share, excess)
