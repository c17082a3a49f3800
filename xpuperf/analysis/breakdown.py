"""Step-time decomposition (compute / comm / data / other) and speedup vs one card alone.

Speedup has one honest definition (docs/background.md rule 2): per-card throughput with N cards
divided by the throughput of ONE card running alone at the same per-card batch; equivalently
T_compute / (T_compute + T_exposed_noncompute). The denominator is never a node.

The share thresholds follow the retired PyTorch TensorBoard profiler's rules (data loader > 5 %
of the step, communication > 10 %); the "other" (host overhead) threshold is 10 %.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from xpuperf import steps as st
from xpuperf.analysis.grid import Derived, Grid, by_columns, by_rows, median_rows
from xpuperf.analysis.results import BreakdownResult, StragglerResult
from xpuperf.errors import InputError
from xpuperf.findings import Finding, Severity

PHASE_COLUMNS = ("compute_s", "comm_s", "data_s", "other_s")
LABELS = {"comm_s": "communication", "data_s": "data wait", "other_s": "host/other time"}
MIN_PHASE_STEPS = 3  # a phase share from fewer steps than this is weak …
MIN_PHASE_SHARE = 0.05  # … or from fewer than this share of the steady steps


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
    """

    n_steps: int = 0
    phase_steps: dict[str, int] = field(default_factory=dict)
    min_phase_steps: int = MIN_PHASE_STEPS
    weak: bool = False

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


def decompose(
    df: pd.DataFrame | Grid,
    baseline: pd.DataFrame | None = None,
    *,
    speedup_target: float = 0.9,
    comm_threshold: float = 0.10,
    data_threshold: float = 0.05,
    other_threshold: float = 0.10,
    stragglers: StragglerResult | None = None,
) -> tuple[BreakdownResult, list[Finding]]:
    """Split step time into compute / comm / data / other and compute the speedup.

    Args:
        df: canonical step table (:mod:`xpuperf.steps`) of the steady steps of the distributed
            run, one row per (rank, step), times in seconds; or its
            :class:`~xpuperf.analysis.grid.Grid` (every rank has the same steps: per-rank
            medians and sums from the rank × step views, no per-row phase frame).
        baseline: canonical step table of the steady steps of ONE card running alone, or None.
        speedup_target: XP304 fires when speedup < this (0.9 = 90 % of single-card throughput).
        comm_threshold: XP301 when exposed communication > this share of step time (10 %).
        data_threshold: XP302 when data wait > this share (5 %).
        other_threshold: XP303 when host/other time > this share (10 %).
        stragglers: the straggler analysis of the same steps, or None. When ranks wait for a
            straggler (XP101–XP103) for at least half of the exposed communication, XP301 and
            XP304 say "fix the straggler first", not "communication" (:func:`waiting_share`).

    Returns:
        ``(BreakdownResult, findings)``. Fractions are Σ phase / Σ step_time over all rows
        (source ``"phases"``; a phase whose column is absent is None, and ``other`` is None without
        ``compute_s`` since it would hold the compute). Without phases but with a baseline,
        compute = baseline median step time and other = the rest of the distributed median step
        time (source ``"baseline"``). Neither: source ``"none"``, fractions None.
        speedup = (median samples per rank per step / median job step time) of the run over the
        same of the baseline; when samples are unknown in either, baseline median step time /
        run median step time (equal per-card batch assumed, said in XP304). Findings: XP301,
        XP302, XP303 (share above threshold, with remedy), XP304 (speedup below target, with
        the largest non-compute share to fix first), XP305 (per-card batch differs).

    Raises:
        InputError: ``df`` is empty or lacks required columns; ``baseline`` is empty or has
            more than one rank (a speedup baseline is one card alone, never a node).
    """
    grid = df if isinstance(df, Grid) else None
    if grid is not None and 0 in grid.shape:
        raise InputError("step table is empty")
    if grid is None and (df.empty or any(c not in df.columns for c in st.REQUIRED)):
        raise InputError("step table is empty or lacks rank, step, step_time_s")
    if baseline is not None:
        _check_baseline(baseline)
    findings: list[Finding] = []
    fr: dict[str, float | None] = dict.fromkeys(PHASE_COLUMNS)
    per_rank = None
    source = "none"
    phase_steps: dict[str, int] = {}
    if grid is not None:
        t_run = float(np.median(grid.step_median()))
        n_steps = grid.shape[1]
        if any(grid.has(c) for c in PHASE_COLUMNS[:3]):
            source = "phases"
            fr, per_rank, phase_steps = _phases_grid(grid)
    else:
        pf = st.phase_frame(df)
        t_run = float(df.groupby("step")["step_time_s"].median().median())  # job step time, s
        n_steps = int(df["step"].nunique())
        if pf is not None:
            source = "phases"
            fr, per_rank, phase_steps = _phases_frame(df, pf)
    if source != "phases" and baseline is not None:
        source = "baseline"
        t1 = float(baseline["step_time_s"].median())
        fr["compute_s"] = min(t1 / t_run, 1.0)
        fr["other_s"] = 1.0 - fr["compute_s"]

    floor = max(MIN_PHASE_STEPS, math.ceil(MIN_PHASE_SHARE * n_steps))
    result = Breakdown(
        source=source,
        compute_fraction=fr["compute_s"],
        comm_fraction=fr["comm_s"],
        data_fraction=fr["data_s"],
        other_fraction=fr["other_s"],
        per_rank=per_rank,
        n_steps=n_steps,
        phase_steps=phase_steps,
        min_phase_steps=floor,
        weak=any(k < floor for k in phase_steps.values()),
    )
    wait = waiting_share(stragglers, fr["comm_s"])
    thr = (comm_threshold, data_threshold, other_threshold)
    findings += _share_findings(fr, source, *thr, wait, result)
    if baseline is not None:
        findings += _speedup(df, baseline, t_run, fr, result, speedup_target, wait)
    return result, findings


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


def _check_baseline(baseline: pd.DataFrame) -> None:
    if baseline.empty or any(c not in baseline.columns for c in st.REQUIRED):
        raise InputError("baseline step table is empty or lacks rank, step, step_time_s")
    n = int(baseline["rank"].nunique())
    if n > 1:
        raise InputError(
            f"baseline has {n} ranks; a speedup baseline must be one card alone at the same "
            "per-card batch — never a node"
        )


def _phases_frame(
    df: pd.DataFrame, pf: pd.DataFrame
) -> tuple[dict[str, float | None], pd.DataFrame, dict[str, int]]:
    """Shares, per-rank medians and steps per phase (:class:`Breakdown`) of a step table.

    Each share is Σ phase / Σ step time over the rows where the phase is known; ``other_s`` over
    the rows where compute_s and every logged phase column are known.
    """
    masks = _known_masks({c: df[c].notna().to_numpy() for c in PHASE_COLUMNS[:3] if c in df})
    t = df["step_time_s"].to_numpy(dtype=np.float64)
    step = df["step"].to_numpy()
    fr: dict[str, float | None] = dict.fromkeys(PHASE_COLUMNS)
    steps: dict[str, int] = {}
    frame = df[["rank", "step_time_s"]].copy()
    for c in PHASE_COLUMNS:
        k = masks.get(c)
        frame[c] = pf[c].where(k) if k is not None else np.nan  # per-rank medians: known rows
        if k is None or not k.any():
            continue
        fr[c] = float(pf[c].to_numpy()[k].sum()) / float(t[k].sum())
        if c != "other_s":
            steps[c] = len(np.unique(step[k]))
    out = frame.groupby("rank", sort=True).median()
    if "node" in df.columns:
        out.insert(0, "node", df.groupby("rank", sort=True)["node"].first())
    else:
        out.insert(0, "node", pd.array([pd.NA] * len(out), dtype="string"))
    out = out.reset_index()
    return fr, out[["rank", "node", "step_time_s", *PHASE_COLUMNS]], steps


def _known_masks(known: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Row masks of the logged phase columns plus ``other_s`` (compute and all logged known)."""
    if "compute_s" in known:
        known["other_s"] = np.logical_and.reduce(list(known.values()))
    return known


def _phases_grid(g: Grid) -> tuple[dict[str, float | None], pd.DataFrame, dict[str, int]]:
    """:func:`_phases_frame` from a grid, in row blocks (no full-size masked copies)."""
    present = [c for c in PHASE_COLUMNS[:3] if g.has(c)]
    nr, ns = g.shape
    step_t = g.mat("step_time_s")

    def total(a: np.ndarray | Derived) -> float:
        return float(np.sum(by_rows(a, lambda x: np.nansum(x, axis=1))))

    def count(a: np.ndarray | Derived) -> int:
        return int(np.sum(by_rows(a, lambda x: (~np.isnan(x)).sum(axis=1))))

    def masked(vals: np.ndarray | Derived, cols: list[str], fill: float) -> Derived:
        """``vals`` where every column of ``cols`` is known, else ``fill``."""

        def calc(key: object) -> np.ndarray:
            out = np.array(vals[key], dtype=np.float64)
            for c in cols:
                out[np.isnan(g.mat(c)[key])] = fill
            return out

        return Derived(calc, (nr, ns))

    total_t = total(step_t)
    fr: dict[str, float | None] = dict.fromkeys(PHASE_COLUMNS)
    med: dict[str, np.ndarray] = {"step_time_s": median_rows(step_t)}
    steps: dict[str, int] = {}
    has_compute = "compute_s" in present and g.known("compute_s")
    for c in PHASE_COLUMNS:
        cols = present if c == "other_s" else [c]
        if (c == "other_s" and not has_compute) or (c != "other_s" and not g.known(c)):
            med[c] = np.full(nr, np.nan)
            continue
        vals = g.other() if c == "other_s" else g.mat(c)
        full = all(count(g.mat(k)) == nr * ns for k in cols)
        if full:  # every row known: the shared zero-filled views and medians
            fr[c] = total(vals) / total_t
            med[c] = g.rank_median(c)
        else:
            part = masked(vals, cols, np.nan)
            fr[c] = total(part) / total(masked(step_t, cols, np.nan))
            with warnings.catch_warnings():  # a rank without the phase: NaN, said once below
                warnings.simplefilter("ignore", RuntimeWarning)
                med[c] = by_rows(part, lambda x: np.nanmedian(x, axis=1))
        if c != "other_s":
            known = by_columns(g.mat(c), lambda x: (~np.isnan(x)).any(axis=0))
            steps[c] = int(np.count_nonzero(known))
    rows = g.first_rows() + g.start
    if g.has("node"):
        node = g.table["node"].iloc[rows].reset_index(drop=True)
        if node.isna().any():  # first non-null per rank, as groupby().first()
            steady = np.zeros(len(g.table), dtype=bool)
            steady.reshape(nr, -1)[:, g.start :] = True
            node = g.table["node"][steady].groupby(g.table["rank"][steady], sort=True).first()
            node = node.reset_index(drop=True)
    else:
        node = pd.array([pd.NA] * nr, dtype="string")
    out = pd.DataFrame({"rank": g.table["rank"].iloc[rows].to_numpy(), "node": node})
    for c in ("step_time_s", *PHASE_COLUMNS):
        out[c] = med[c]
    return fr, out, steps


def _median_samples(df: pd.DataFrame | Grid) -> float | None:
    if isinstance(df, Grid):
        if not df.known("samples"):
            return None
        return float(np.nanmedian(df.mat("samples")))
    if "samples" not in df.columns or not df["samples"].notna().any():
        return None
    return float(df["samples"].median())


def _speedup(
    df: pd.DataFrame | Grid,
    baseline: pd.DataFrame,
    t_run: float,
    fr: dict[str, float | None],
    result: BreakdownResult,
    target: float,
    wait: tuple[float, str] | None = None,
) -> list[Finding]:
    """Fill ``result.speedup`` and the baseline fields; return XP304 / XP305."""
    out: list[Finding] = []
    t1 = float(baseline["step_time_s"].median())
    b1, bd = _median_samples(baseline), _median_samples(df)
    result.baseline_step_time_s = t1
    if b1 is not None and bd is not None:
        thr1, thrd = b1 / t1, bd / t_run
        result.baseline_throughput_samples_per_s = thr1
        result.speedup = thrd / thr1
        basis = f"per-card throughput {thrd:.1f} vs {thr1:.1f} samples/s on one card alone"
        if not np.isclose(b1, bd, rtol=1e-6):
            out.append(
                Finding(
                    "XP305",
                    Severity.WARNING,
                    f"per-card batch differs: {bd:g} samples per rank per step vs {b1:g} in the "
                    f"single-card baseline (should be equal); the speedup "
                    f"{result.speedup:.2f} is still the per-card throughput ratio, but not at "
                    f"equal batch. Remedy: rerun the baseline on one card at batch {bd:g}.",
                    {"batch_per_rank": bd, "baseline_batch": b1, "speedup": result.speedup},
                )
            )
    else:
        if b1 is not None:
            result.baseline_throughput_samples_per_s = b1 / t1
        result.speedup = t1 / t_run
        basis = (
            f"median step time {t_run:.3f} s vs {t1:.3f} s on one card alone; samples not logged, "
            f"so equal per-card batch is assumed"
        )
    if result.speedup < target:
        noncomp = {c: v for c, v in fr.items() if c != "compute_s" and v is not None}
        if noncomp:
            worst = max(noncomp, key=noncomp.__getitem__)
            what = "non-compute time" if result.source == "baseline" else LABELS[worst]
            first = f"fix first: {what}, {noncomp[worst]:.1%} of step time"
            if worst == "comm_s" and wait is not None:
                first = (
                    f"fix the straggler first: {wait[1]} — waiting for it is "
                    f"{wait[0]:.1%} of step time, most of the {noncomp[worst]:.1%} blocked in "
                    "collectives"
                )
        else:
            worst, first = None, "log per-rank phase times (compute_s, comm_s, data_s) to see "
            first += "where the time goes"
        out.append(
            Finding(
                "XP304",
                Severity.WARNING,
                f"speedup {result.speedup:.2f} vs one card alone is below the target "
                f"{target:.2f} ({basis}); {first}.",
                {
                    "speedup": result.speedup,
                    "target": target,
                    "largest_noncompute": worst,
                    "equal_batch_assumed": b1 is None or bd is None,
                },
            )
        )
    return out


def _with_basis(out: list[Finding], result: Breakdown | None) -> list[Finding]:
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


def _share_findings(
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
    return _with_basis(out, result)
