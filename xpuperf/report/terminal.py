"""Terminal renderer: a short rich summary of an :class:`AnalyzeResult` (presentation only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from xpuperf.report.checks_view import straggler_verdict
from xpuperf.report.common import print_checks, print_findings, safe
from xpuperf.report.figures import throughput_rows

if TYPE_CHECKING:
    from xpuperf.analysis.results import AnalyzeResult


def _pct(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{100 * x:.{digits}f}%"


def _basis(b: object) -> str:
    """``, compute_s on 1 of 30 steps: weak`` when the phases rest on few steps."""
    if not getattr(b, "weak", False):
        return ""
    steps = getattr(b, "phase_steps", {})
    k = min(steps.values()) if steps else 0
    return f", phases on {k} of {getattr(b, 'n_steps', '?')} steps: weak"


def render_terminal(result: AnalyzeResult, console: Console) -> None:
    """Print the summary, jitter, stragglers, breakdown and findings to ``console``."""
    s = result.summary
    nodes = f" on {s.nodes} node(s)" if s.nodes else ""
    console.print(
        f"[bold]xpuperf analyze[/] — {s.ranks} rank(s){nodes}, {s.steps} steady step(s) "
        f"({s.warmup_steps} warm-up excluded)"
    )
    if result.sources:
        more = f" (+{len(result.sources) - 3} more)" if len(result.sources) > 3 else ""
        console.print("sources: " + safe(", ".join(result.sources[:3])) + more, style="dim")

    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    t = s.step_time_s
    head.add_row(
        "step time",
        f"median {t['median']:.4f} s   mean {t['mean']:.4f} s   p90 {t['p90']:.4f} s   "
        f"p99 {t['p99']:.4f} s",
    )
    for label, text in throughput_rows(s):  # wall-clock headline, median step, jitter cost
        head.add_row(label, safe(text))
    b = result.breakdown
    if b.speedup is not None:
        head.add_row(
            "speedup",
            f"{b.speedup:.3f} vs one card alone (baseline step {b.baseline_step_time_s:.4f} s)",
        )
    j = result.jitter
    if j is not None:
        extra = []
        if j.spike_steps:
            extra.append(f"{len(j.spike_steps)} spike(s)")
        if j.period_steps:
            extra.append(f"every {j.period_steps} steps")
        if j.change_points:
            extra.append(f"{len(j.change_points)} change point(s)")
        fps = f"   FPS cv {j.fps_cv:.4f}" if j.fps_cv is not None else ""
        head.add_row(
            "jitter",
            f"cv {j.cv:.4f}{fps}   p99/p50 {j.p99_over_p50:.3f}"
            + (("   " + ", ".join(extra)) if extra else ""),
        )
    if b.source != "none":
        head.add_row(
            "breakdown",
            f"compute {_pct(b.compute_fraction)} · comm {_pct(b.comm_fraction)} · "
            f"data {_pct(b.data_fraction)} · other {_pct(b.other_fraction)}  [dim](from "
            f"{b.source}{_basis(b)})[/]",
        )
    console.print(head)

    sr = result.stragglers
    if sr is not None and sr.stragglers:
        tab = Table(title=f"Stragglers (work = {sr.work_source}, {sr.n_steps} steps)")
        for col in ("kind", "rank", "node", "slowdown", "95% CI", "cost", "slow phase"):
            tab.add_column(col)
        for x in sr.stragglers:
            ci = f"{_pct(x.slowdown_ci[0])}–{_pct(x.slowdown_ci[1])}" if x.slowdown_ci else ""
            tab.add_row(
                x.kind,
                "" if x.rank is None else str(x.rank),
                safe(x.node or ""),
                _pct(x.slowdown),
                ci,
                _pct(x.cost_fraction),
                x.slow_phase or "",
            )
        console.print(tab)
    elif sr is not None and s.ranks == 1:
        console.print("stragglers: n/a (one rank)")
    elif sr is not None:
        verdict = straggler_verdict(
            result.checks, f"none (work = {sr.work_source}, {sr.n_steps} steps)"
        )
        console.print("stragglers: " + safe(verdict))

    if result.nccl is not None:
        from xpuperf.report.nccl_section import render_nccl

        render_nccl(result.nccl, console, findings=False, checks=False)  # listed below
    print_findings(result.findings, console)
    print_checks(result.checks, console)
