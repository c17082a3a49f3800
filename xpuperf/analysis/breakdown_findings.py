"""The record and the finding texts of :mod:`xpuperf.analysis.breakdown`: :class:`Breakdown`
(the shares and the steps they rest on), XP301–XP303 (a non-compute share above its threshold,
with its remedy) and :func:`waiting_share` (when exposed communication is mostly waiting for a
straggler, the straggler is the fix).

Split out of ``breakdown.py`` to keep modules small; the numbers are computed there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xpuperf.analysis.results import BreakdownResult, StragglerResult
from xpuperf.findings import Finding, Severity

LABELS = {"comm_s": "communication", "data_s": "data wait", "other_s": "host/other time"}
MIN_PHASE_STEPS = 3  # a phase share from fewer steps than this is weak …
MIN_PHASE_SHARE = 0.05  # … or from fewer than this share of the steady steps
OTHER_UNSEEN = 0.001
"""When step time − (compute + comm + data) is at most this share of the step time on every
row, the step time is the sum of the logged phases (DeepSpeed's timers: forward + backward +
optimizer step): "other" is 0 by construction, not a measurement."""


@dataclass
class Breakdown(BreakdownResult):
    """:class:`BreakdownResult` plus the steps its phase shares rest on.

    Megatron prints its timers (``time (ms) | forward-compute: …``) on some iterations only, so
    a phase column can be known on a few rows; each share is taken over the rows where its phase
    is known (``other_s``: where compute and every logged phase are known), never with the
    unknown rows counted as 0.

    Attributes:
        n_steps: steady steps of the run (distinct step numbers).
        phase_steps: per phase column, the steps (distinct step numbers) with the phase known
            on at least one rank; absent phases are left out.
        min_phase_steps: the floor, max(3, ⌈5 % of ``n_steps``⌉).
        weak: a known phase rests on fewer steps than ``min_phase_steps``: its share is a hint,
            not a verdict (XP301–XP303 are then info, not warnings).
        other_unseen: the largest share of step time left outside compute + comm + data on
            any row, when it is ≤ :data:`OTHER_UNSEEN` (the step time is the sum of the logged
            phases, so the log holds no evidence of host/other time: ``other_fraction`` is then
            None); None otherwise.
    """

    n_steps: int = 0
    phase_steps: dict[str, int] = field(default_factory=dict)
    min_phase_steps: int = MIN_PHASE_STEPS
    weak: bool = False
    other_unseen: float | None = None

    def basis(self, col: str) -> str:
        """`` (from 1 of 31 steps with compute_s logged; weak: …)`` or ``""`` for every step."""
        k = self.phase_steps.get("compute_s" if col == "other_s" else col, self.n_steps)
        if k >= self.n_steps:
            return ""
        what = "compute_s" if col == "other_s" else col
        out = f" (from {k} of {self.n_steps} steps with {what} logged"
        if k < self.min_phase_steps:
            out += (
                f"; weak evidence: a share needs ≥ {self.min_phase_steps} such steps "
                f"(≥ {MIN_PHASE_STEPS} and ≥ {MIN_PHASE_SHARE:.0%} of steps), so this is a hint, "
                "not a verdict: log the phase times on more steps (Megatron: the timers print "
                "every --log-interval iterations with --timing-log-level ≥ 1)"
            )
        return out + ")"


def waiting_share(
    stragglers: StragglerResult | None, comm: float | None
) -> tuple[float, str] | None:
    """The share of step time ranks spend waiting for a straggler, when it is most of ``comm``.

    In synchronous data parallelism the ranks that finish first wait inside the collective for
    the slowest, so their blocked time (``comm_s``) holds that wait: the deterministic
    stragglers' ``cost_fraction`` (step time saved if they worked at the median pace) plus the
    healthy ranks' ``sync_cost_fraction`` (slowest healthy work − median work, per step;
    :mod:`.stragglers`). When a straggler was found (deterministic or random) and that wait is at
    least half the exposed communication share, the communication is mostly waiting and the
    straggler is the fix.

    Returns:
        ``(wait_fraction, who)`` — who: ``"rank 5 (XP101)"``, ``"ranks 5, 9 (XP101)"``,
        ``"rank 2 (XP101, intermittent)"`` (an intermittent straggler owes the sync cost),
        ``"node n03 (XP102)"`` or ``"random stragglers (XP103)"`` — or None.
    """
    if stragglers is None or not stragglers.stragglers or comm is None or comm <= 0:
        return None
    det_cost = sum(x.cost_fraction for x in stragglers.stragglers if x.kind == "deterministic")
    wait = min(det_cost + float(stragglers.sync_cost_fraction), comm)
    if not wait >= 0.5 * comm:
        return None
    det = [x for x in stragglers.stragglers if x.kind in ("deterministic", "intermittent")]
    nodes = [x.node for x in det if x.rank is None and x.node]
    ranks = [x.rank for x in det if x.rank is not None]
    if nodes:
        who = "node " + ", ".join(nodes[:3]) + " (XP102)"
    elif ranks:
        who = ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks[:5]))
        who += " (XP101, intermittent)" if det[-1].kind == "intermittent" else " (XP101)"
    else:
        who = "random stragglers (XP103)"
    return wait, who


def with_basis(out: list[Finding], result: Breakdown | None) -> list[Finding]:
    """Say how many steps each XP301–XP303 share rests on ("from 1 of 31 steps with compute_s
    logged"); from fewer than ``result.min_phase_steps`` it is weak: info, not a warning."""
    col = {"XP301": "comm_s", "XP302": "data_s", "XP303": "other_s"}
    for i, f in enumerate(out):
        basis = result.basis(col[f.code]) if result is not None else ""
        if basis:
            head, dot, rest = f.message.partition(". ")
            weak = "weak evidence" in basis
            data_ = {**f.data, "steps": result.n_steps, "weak": weak}
            data_["phase_steps"] = result.phase_steps.get(
                "compute_s" if col[f.code] == "other_s" else col[f.code]
            )
            sev = Severity.INFO if weak else f.severity
            out[i] = Finding(f.code, sev, f"{head}{basis}{dot}{rest}", data_)
    return out


def share_findings(
    fr: dict[str, float | None],
    source: str,
    comm_t: float,
    data_t: float,
    other_t: float,
    wait: tuple[float, str] | None = None,
    result: Breakdown | None = None,
) -> list[Finding]:
    """XP301 / XP302 / XP303 when a non-compute share exceeds its threshold."""
    out: list[Finding] = []
    comm, data, other = fr["comm_s"], fr["data_s"], fr["other_s"]
    if comm is not None and comm > comm_t and wait is not None:
        share, who = wait
        msg = (
            f"communication exposed: {comm:.1%} of step time is spent blocked in collectives "
            f"(threshold {comm_t:.0%}), but {share:.1%} of step time is waiting for {who}, "
            f"so {comm - share:.1%} is left for the collectives themselves. Fix the "
            "straggler first (see its finding for the remedy); tune communication (bucketing, "
            "ring/tree, NICs) only if the share stays above the threshold after."
        )
        data_ = {"value": comm, "threshold": comm_t, "waiting_fraction": share, "waiting_for": who}
        out.append(Finding("XP301", Severity.WARNING, msg, data_))
    elif comm is not None and comm > comm_t:
        msg = (
            f"communication exposed: {comm:.1%} of step time is spent blocked in collectives "
            f"(threshold {comm_t:.0%}; includes waiting for slower ranks, see XP1xx). Remedy: "
            "overlap the allreduce with backward (gradient bucketing, tune the bucket size), "
            "use a hierarchical (2D) ring or tree across nodes, check ring order and NICs per card."
        )
        out.append(Finding("XP301", Severity.WARNING, msg, {"value": comm, "threshold": comm_t}))
    if data is not None and data > data_t:
        msg = (
            f"input stall: {data:.1%} of step time is spent waiting for data (threshold "
            f"{data_t:.0%}). Remedy: more data-loader workers, pinned (page-locked) host memory, "
            "prefetch a few batches ahead and overlap the host-to-card copy with compute; bind "
            "loader workers to the card's NUMA node."
        )
        out.append(Finding("XP302", Severity.WARNING, msg, {"value": data, "threshold": data_t}))
    if other is not None and other > other_t:
        if source == "baseline":
            what = "is non-compute (step time beyond the single-card step: comm, data, host)"
            fix = "log per-rank compute_s, comm_s and data_s to split it"
        else:
            missing = [c for c in ("comm_s", "data_s") if fr[c] is None]
            unlogged = (
                f", incl. unlogged {' and '.join(LABELS[c] for c in missing)}" if missing else ""
            )
            what = f"is outside compute, comm and data (host overhead, launch gaps{unlogged})"
            fix = f"log {' and '.join(missing)} per rank to split it out; " if missing else ""
            fix += (
                "check CPU affinity and NUMA binding of the training process, kernel-launch "
                "overhead (CUDA graphs, fused kernels), logging or checkpointing on the step path "
                "and GC pauses"
            )
        msg = f"{other:.1%} of step time {what} (threshold {other_t:.0%}). Remedy: {fix}."
        data_ = {"value": other, "threshold": other_t, "source": source}
        out.append(Finding("XP303", Severity.WARNING, msg, data_))
    return with_basis(out, result)
