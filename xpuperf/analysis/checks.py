"""The step-log checks of ``analyze`` and the evidence each verdict rests on (issue 16).

Each check becomes one :class:`~xpuperf.findings.Check`: ``problem`` when it produced a finding
(above info), ``clean`` only when the step table held its evidence and nothing was wrong,
``not_checked`` otherwise — with what is missing and how to get it. The table of checks, their
evidence and their codes is docs/diagnosis.md ("Step logs").
"""

from __future__ import annotations

from xpuperf.analysis.breakdown_findings import OTHER_UNSEEN
from xpuperf.analysis.results import BreakdownResult, JitterResult, StragglerResult, Summary
from xpuperf.analysis.stalls import StallResult
from xpuperf.findings import Check, CheckStatus, Finding

MIN_JITTER_STEPS = 20
"""Steady steps a jitter verdict needs (the jitter analysis' ``min_steps``; XP405 below)."""


def _check(
    name: str, title: str, findings: list[Finding], codes: tuple[str, ...], evidence: str
) -> Check:
    """``problem`` when a finding of ``codes`` above info fired, else ``clean``."""
    hit = tuple(sorted({f.code for f in findings if f.code in codes and f.severity.rank > 0}))
    status = CheckStatus.PROBLEM if hit else CheckStatus.CLEAN
    return Check(name, title, status, evidence, hit)


def _missing(name: str, title: str, why: str) -> Check:
    return Check(name, title, CheckStatus.NOT_CHECKED, why)


def step_checks(
    summary: Summary,
    jitter: JitterResult | None,
    stragglers: StragglerResult | None,
    breakdown: BreakdownResult,
    stalls: StallResult,
    findings: list[Finding],
    has_baseline: bool,
    coarse: tuple[float, str] | None = None,
) -> list[Check]:
    """The checks of one step analysis, in a fixed order (see the module docstring); ``coarse``:
    (±fraction, what) when the log's clock times each row only that exactly (jitter not
    checked)."""
    out: list[Check] = []
    ranks, steps = summary.ranks, summary.steps
    shape = f"{ranks} rank(s) × {steps} steady step(s)"
    out.append(_stragglers(stragglers, ranks, findings))
    if jitter is None or jitter.n_steps < MIN_JITTER_STEPS:
        why = (
            f"only {steps} steady step(s) (a flat-FPS verdict needs ≥ {MIN_JITTER_STEPS}); "
            "log more steps after warm-up"
        )
        out.append(_missing("steps.jitter", "FPS jitter (flat FPS line)", why))
        out.append(_missing("steps.spikes", "spikes, periodic spikes, level shifts", why))
    elif coarse:
        why = f"{coarse[1]} (±{coarse[0]:.0%} per row): jitter below that is rounding"
        out.append(_missing("steps.jitter", "FPS jitter (flat FPS line)", why))
        out.append(_missing("steps.spikes", "spikes, periodic spikes, level shifts", why))
    else:
        metric = "FPS" if jitter.fps_cv is not None else "step time"
        out.append(
            _check(
                "steps.jitter",
                "FPS jitter (flat FPS line)",
                findings,
                ("XP201", "XP202"),
                f"job {metric} over {jitter.n_steps} steady steps",
            )
        )
        out.append(
            _check(
                "steps.spikes",
                "spikes, periodic spikes, level shifts",
                findings,
                ("XP203", "XP204", "XP205"),
                f"job step time over {jitter.n_steps} steady steps",
            )
        )
    if not stalls.checked:
        out.append(
            _missing(
                "steps.sync_stalls",
                "synchronous stalls (all ranks at once)",
                "one rank's view of the job: whether every rank stalled needs per-rank logs",
            )
        )
    else:
        src = "phase times" if stalls.work_source != "step_time" else "step time only"
        out.append(
            _check(
                "steps.sync_stalls",
                "synchronous stalls (all ranks at once)",
                findings,
                ("XP207",),
                f"{shape}, per-rank {src}",
            )
        )
    out += _breakdown(breakdown, findings, shape)
    if has_baseline and breakdown.speedup is not None:
        out.append(
            _check(
                "steps.speedup",
                "speedup vs one card alone",
                findings,
                ("XP304", "XP305"),
                f"speedup {breakdown.speedup:.3f} against the single-card baseline",
            )
        )
    else:
        out.append(
            _missing(
                "steps.speedup",
                "speedup vs one card alone",
                "no single-card baseline: pass --baseline ONE_CARD_LOG (one card alone, same "
                "per-card batch)",
            )
        )
    out.append(
        _check(
            "steps.completeness",
            "log completeness (skipped rows, missing ranks or steps)",
            findings,
            ("XP401", "XP402", "XP403"),
            shape,
        )
    )
    return out


def _stragglers(sr: StragglerResult | None, ranks: int, findings: list[Finding]) -> Check:
    name, title = "steps.stragglers", "stragglers (deterministic and random)"
    codes = ("XP101", "XP102", "XP103")
    if sr is None or ranks < 2:
        return _missing(
            name,
            title,
            "one rank's view of the job (a job-level log): per-rank logs, or a rank column, are "
            "needed to compare ranks",
        )
    if any(f.code in codes for f in findings):
        return _check(name, title, findings, codes, f"{ranks} ranks × {sr.n_steps} steps")
    if any(f.code == "XP405" and "straggler" in f.message for f in findings):
        return _missing(name, title, f"too few common steps ({sr.n_steps}) for a verdict")
    if sr.work_source == "step_time":
        return _missing(
            name,
            title,
            f"{ranks} ranks log step time only, which the synchronous allreduce equalises: a "
            "slow rank would not show; log per-rank compute_s/comm_s (or data_time) to check",
        )
    return _check(name, title, findings, codes, f"{ranks} ranks × {sr.n_steps} steps, work = "
                  f"{sr.work_source}")  # fmt: skip


def _breakdown(b: BreakdownResult, findings: list[Finding], shape: str) -> list[Check]:
    parts = (
        ("steps.comm_exposed", "exposed communication", "XP301", b.comm_fraction, "comm_s",
         "per-rank allreduce/communication time"),
        ("steps.data_wait", "input (data-loading) stall", "XP302", b.data_fraction, "data_s",
         "per-rank data-loading wait (data_time)"),
        ("steps.host_overhead", "host / other overhead", "XP303", b.other_fraction, "compute_s",
         "per-rank compute time (forward + backward)"),
    )  # fmt: skip
    out = []
    for name, title, code, frac, col, hint in parts:
        phase_steps = getattr(b, "phase_steps", {})
        n_steps = getattr(b, "n_steps", 0)
        k = phase_steps.get(col, n_steps)
        floor = getattr(b, "min_phase_steps", 0)
        unseen = getattr(b, "other_unseen", None)
        if code == "XP303" and b.source == "phases" and unseen is not None:
            why = (
                "no evidence: the step time is the sum of the logged phases (compute + comm + "
                f"data leave at most {unseen:.2%} of it on any row, threshold {OTHER_UNSEEN:.1%})"
                ", so time outside them is 0 by construction; log the iteration's wall time "
                "(timestamps or an elapsed-time field) to see host work"
            )
            out.append(Check(name, title, CheckStatus.NOT_CHECKED, why))
        elif b.source == "phases" and frac is not None and k < floor:
            why = (f"{col} logged on {k} of {n_steps} steps only (a share needs ≥ {floor}): "
                   f"log {hint} on more steps")  # fmt: skip
            hit = tuple(sorted({f.code for f in findings if f.code == code}))
            out.append(Check(name, title, CheckStatus.NOT_CHECKED, why, hit))
        elif b.source == "phases" and frac is not None:
            what = f"{col} per step" if code != "XP303" else "step time beyond compute, comm, data"
            part = f" (from {k} of {n_steps} steps)" if 0 < k < n_steps else ""
            out.append(
                _check(name, title, findings, (code,), f"{what}: {frac:.1%} of step time{part}")
            )
        elif b.source == "baseline" and code == "XP303" and frac is not None:
            out.append(
                _check(name, title, findings, (code,), "step time beyond the one-card baseline")
            )
        else:
            out.append(
                _missing(
                    name,
                    title,
                    f"no {col} column in the logs: log {hint} per step",
                )
            )
    return out


FRAMEWORK_MISSING = _missing(
    "framework",
    "framework and runtime warnings (DDP, DataLoader, loss scaling, NCCL watchdog, OpenMP)",
    "the input holds step tables only, no framework output: pass the job's stdout/stderr log "
    "(with 2>&1) too",
)
"""The one line standing for the :mod:`xpuperf.events` checks when no text log was read."""
NCCL_MISSING = _missing(
    "nccl",
    "NCCL transports, GPUDirect RDMA, rings",
    "no NCCL_DEBUG=INFO lines in the input: rerun with NCCL_DEBUG=INFO "
    "NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH and pass that log too",
)
"""The one line standing for the NCCL-log checks when no input has NCCL lines."""
TOPOLOGY_MISSING = _missing(
    "topology",
    "topology and CPU/NUMA binding",
    "not part of a step log: run `xpuperf topo check TOPOLOGY --binding FILE`",
)


def not_checked_sources(has_nccl: bool, has_text: bool = True) -> list[Check]:
    """Checks of other evidence kinds absent from an ``analyze`` input (what would enable them):
    framework output (``has_text`` False: only step tables were read, so the framework-warning
    checks of :mod:`xpuperf.events` collapse into one line), NCCL debug lines, topology."""
    return [
        *([] if has_text else [FRAMEWORK_MISSING]),
        *([] if has_nccl else [NCCL_MISSING]),
        TOPOLOGY_MISSING,
    ]


def not_checked_steps() -> list[Check]:
    """The step-log checks, as one ``not_checked`` line, for inputs without step records."""
    return [
        _missing(
            "steps",
            "stragglers, jitter, stalls, step decomposition, speedup",
            "no step records in the input: pass the per-rank step logs (CSV/TSV/JSONL/Parquet "
            "or a framework training log; `xpuperf formats` lists them)",
        )
    ]


def severity_counts(checks: list[Check]) -> dict[str, int]:
    """``{"problem": n, "clean": n, "not_checked": n}``."""
    out = {s.value: 0 for s in CheckStatus}
    for c in checks:
        out[c.status.value] += 1
    return out


__all__ = ["not_checked_sources", "severity_counts", "step_checks"]
