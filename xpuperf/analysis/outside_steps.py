"""Time outside the logged steps (XP211): the wall span the timestamps give minus Σ step times.

A log whose rows carry end-of-step timestamps measures the run's wall time; the step times
measure only the steps. What lies between them — evaluation, checkpointing, logging, data-loader
restarts — is neither jitter nor spikes of the logged steps, so it is reported apart from them
(:attr:`~xpuperf.analysis.results.Summary.outside_steps_s`) and named here when it reaches
:data:`OUTSIDE_THRESHOLD` of the wall time. Without timestamps the wall time is the Σ of the step
times and nothing outside them can be seen: the check is then not listed.
"""

from __future__ import annotations

from xpuperf.analysis.results import Summary
from xpuperf.findings import Check, CheckStatus, Finding, Severity

OUTSIDE_THRESHOLD = 0.05
"""Share of the steady wall time spent outside the logged steps from which XP211 fires."""


def outside_steps(summary: Summary) -> tuple[list[Finding], Check | None]:
    """XP211 and the ``steps.between_steps`` check of one run's summary.

    Args:
        summary: headline numbers (:func:`xpuperf.analysis.analyze.analyze`); reads
            ``outside_steps_s`` (s, None without timestamps), ``wall_time_s`` (s) and
            ``outside_steps_fraction`` (of the wall time).

    Returns:
        ``([XP211 warning] or [], check)``; ``([], None)`` when the wall time does not come
        from timestamps (no evidence: the check is not listed, like ``steps.phase_jitter``).
    """
    out_s, frac, wall = summary.outside_steps_s, summary.outside_steps_fraction, summary.wall_time_s
    if out_s is None or frac is None or wall is None:
        return [], None
    name, title = "steps.between_steps", "time outside the logged steps"
    logged = wall - out_s
    if out_s < 0:  # the stamps span less than Σ step times: rounding, nothing outside
        evidence = (
            f"end-of-step timestamps: wall span {wall:,.1f} s, Σ logged step times "
            f"{logged:,.1f} s — none outside the steps (the stamps span {-out_s:,.1f} s less: "
            f"rounding of the stamps or of the step times; threshold {OUTSIDE_THRESHOLD:.0%})"
        )
    else:
        evidence = (
            f"end-of-step timestamps: wall span {wall:,.1f} s − Σ logged step times "
            f"{logged:,.1f} s = {out_s:,.1f} s ({frac:.1%} of wall time, threshold "
            f"{OUTSIDE_THRESHOLD:.0%})"
        )
    if frac < OUTSIDE_THRESHOLD:
        return [], Check(name, title, CheckStatus.CLEAN, evidence)
    msg = (
        f"{out_s:,.1f} s = {frac:.1%} of the {wall:,.1f} s steady wall time is outside the "
        f"logged steps (timestamps span {wall:,.1f} s, Σ logged step times {logged:,.1f} s; "
        f"threshold {OUTSIDE_THRESHOLD:.0%}): something runs between the steps the log times — "
        "evaluation, checkpointing, logging, data-loader restarts; log those phases or time "
        "them (a timestamp before and after each) to see which, then make them less frequent "
        "or asynchronous."
    )
    finding = Finding(
        "XP211",
        Severity.WARNING,
        msg,
        {
            "outside_steps_s": out_s,
            "fraction": frac,
            "wall_time_s": wall,
            "threshold": OUTSIDE_THRESHOLD,
        },
    )
    return [finding], Check(name, title, CheckStatus.PROBLEM, evidence, ("XP211",))
