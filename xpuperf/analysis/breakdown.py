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

import numpy as np
import pandas as pd

from xpuperf import steps as st
from xpuperf.analysis.breakdown_findings import (  # noqa: F401  (waiting_share: re-exported)
    LABELS,
    MIN_PHASE_SHARE,
    MIN_PHASE_STEPS,
    OTHER_UNSEEN,
    Breakdown,
    share_findings,
    waiting_share,
    with_basis,
)
from xpuperf.analysis.grid import Derived, Grid, by_columns, by_rows, median_rows
from xpuperf.analysis.results import BreakdownResult, StragglerResult
from xpuperf.errors import InputError
from xpuperf.findings import Finding, Severity

PHASE_COLUMNS = ("compute_s", "comm_s", "data_s", "other_s")


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
        ``compute_s`` since it would hold the compute, or when step time − (compute + comm +
        data) is ≤ 0.1 % of the step time on every row: the step time is then the sum of the
        logged phases, ``Breakdown.other_unseen``). Without phases but with a baseline,
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
    rest = float("nan")  # largest share of step time outside the logged phases, any row
    if grid is not None:
        t_run = float(np.median(grid.step_median()))
        n_steps = grid.shape[1]
        if any(grid.has(c) for c in PHASE_COLUMNS[:3]):
            source = "phases"
            fr, per_rank, phase_steps, rest = _phases_grid(grid)
    else:
        pf = st.phase_frame(df)
        t_run = float(df.groupby("step")["step_time_s"].median().median())  # job step time, s
        n_steps = int(df["step"].nunique())
        if pf is not None:
            source = "phases"
            fr, per_rank, phase_steps, rest = _phases_frame(df, pf)
    unseen = fr["other_s"] is not None and rest <= OTHER_UNSEEN
    if unseen:  # step time = Σ phases: "other" is 0 by construction, not measured
        fr["other_s"] = None
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
        other_unseen=rest if unseen else None,
    )
    wait = waiting_share(stragglers, fr["comm_s"])
    thr = (comm_threshold, data_threshold, other_threshold)
    findings += share_findings(fr, source, *thr, wait, result)
    if baseline is not None:
        findings += _speedup(df, baseline, t_run, fr, result, speedup_target, wait)
    return result, findings


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
) -> tuple[dict[str, float | None], pd.DataFrame, dict[str, int], float]:
    """Shares, per-rank medians and steps per phase (:class:`Breakdown`) of a step table, and
    the largest ``other_s`` / step time of any row (NaN without ``other_s``).

    Each share is Σ phase / Σ step time over the rows where the phase is known; ``other_s`` over
    the rows where compute_s and every logged phase column are known.
    """
    masks = _known_masks({c: df[c].notna().to_numpy() for c in PHASE_COLUMNS[:3] if c in df})
    t = df["step_time_s"].to_numpy(dtype=np.float64)
    step = df["step"].to_numpy()
    fr: dict[str, float | None] = dict.fromkeys(PHASE_COLUMNS)
    steps: dict[str, int] = {}
    frame = df[["rank", "step_time_s"]].copy()
    rest = float("nan")
    for c in PHASE_COLUMNS:
        k = masks.get(c)
        frame[c] = pf[c].where(k) if k is not None else np.nan  # per-rank medians: known rows
        if k is None or not k.any():
            continue
        fr[c] = float(pf[c].to_numpy()[k].sum()) / float(t[k].sum())
        if c != "other_s":
            steps[c] = len(np.unique(step[k]))
        else:
            rest = float(np.max(pf[c].to_numpy()[k] / t[k]))
    out = frame.groupby("rank", sort=True).median()
    if "node" in df.columns:
        out.insert(0, "node", df.groupby("rank", sort=True)["node"].first())
    else:
        out.insert(0, "node", pd.array([pd.NA] * len(out), dtype="string"))
    out = out.reset_index()
    return fr, out[["rank", "node", "step_time_s", *PHASE_COLUMNS]], steps, rest


def _known_masks(known: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Row masks of the logged phase columns plus ``other_s`` (compute and all logged known)."""
    if "compute_s" in known:
        known["other_s"] = np.logical_and.reduce(list(known.values()))
    return known


def _phases_grid(
    g: Grid,
) -> tuple[dict[str, float | None], pd.DataFrame, dict[str, int], float]:
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
    rest = float("nan")
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
        else:
            src = vals if full else part
            share = Derived(lambda key, src=src: src[key] / step_t[key], (nr, ns))
            with warnings.catch_warnings():  # a rank without the phase: all NaN
                warnings.simplefilter("ignore", RuntimeWarning)
                rest = float(np.nanmax(by_rows(share, lambda x: np.nanmax(x, axis=1))))
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
    return fr, out, steps, rest


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
