"""The throughput rows every analyze report shows (terminal, Markdown, HTML): samples/s, tokens/s
and MFU, each with its unit, from a :class:`~xpuperf.analysis.results.Summary`.

The unit is ``samples/s`` (an image is a sample: tf_cnn_benchmarks' ``images/sec`` and Keras'
``examples/second`` are read as samples) and ``tokens/s`` when the logs count tokens; a run with
both shows both.
"""

from __future__ import annotations

from typing import Any

from xpuperf.report.plotting import pct

UNKNOWN_ROWS = {
    "job": ("per card", "unknown (world size not in the log: pass --world-size N)"),
    "card": ("job", "unknown (the figures are one card's; world size not in the log: pass "
             "--world-size N)"),
}  # fmt: skip
"""The row that stands for the side a world size is needed for, by ``Summary.cards_unknown``:
the per-card figures of a job-level log, the job figures of one card's view."""


def throughput_rows(s: Any) -> list[tuple[str, str]]:
    """(label, text) rows: wall-clock throughput (the headline), median step, tokens/s, MFU and
    the gap between wall-clock and median step split into the cost of jitter, spikes and stalls
    of the logged steps and, with timestamps, the time outside them (``s``: a ``Summary``).
    When the job's card count is unknown (``s.cards_unknown``) the side a world size is needed
    for reads "unknown": per card for a job-level log, the job for one card's view."""
    src = "timestamps" if s.wallclock_source == "timestamps" else "Σ step times"
    span = f"{s.wall_time_s:,.1f} s" if s.wall_time_s is not None else "n/a"
    unknown = getattr(s, "cards_unknown", None)
    wall = _rate(s, "wallclock_samples", unknown, "samples", ",.1f")
    med = _rate(s, "samples", unknown, "samples", ",.1f")
    has_tokens = _rate(s, "wallclock_tokens", unknown, "tokens", ",.0f") is not None
    missing = "samples unknown (--batch-size)" if has_tokens else (
        "unknown (no samples in the logs; use --batch-size)")  # fmt: skip
    rows = [("throughput", missing)]
    if wall is not None:
        rows = [("throughput", f"{wall[0]} wall-clock ({wall[1]}samples / {span} steady, "
                 f"from {src})")]  # fmt: skip
    if med is not None:
        rows.append(("median-step throughput", f"{med[0]} ({med[1]}a typical step)"))
    rows += _token_rows(s, span, src)
    cuts = getattr(s, "log_cuts", None) or []
    if cuts:  # a cut/excerpt: those iterations are neither in the wall time nor in the samples
        gone = ", ".join(f"{a:,}–{b:,}" for a, b in cuts[:5]) + (" …" if len(cuts) > 5 else "")
        rows.append(("not in the log", f"iterations {gone} (a cut in the step numbers): the "
                     f"wall clock counts the {s.iterations:,} logged iterations only"))  # fmt: skip
    said = getattr(s, "log_throughput_samples_per_s", None)
    if said is not None:
        card = f"; {_num(said / s.ranks)} per card" if s.ranks > 1 and not unknown else ""
        rows.append(("as the log prints it",
                     f"{_num(said)} samples/s{card} ({s.log_throughput_source})"))  # fmt: skip
    if unknown in UNKNOWN_ROWS and (wall or med or has_tokens or said is not None):
        rows.append(UNKNOWN_ROWS[unknown])
    mfu = getattr(s, "mfu", None)
    if mfu:
        spread = (
            ""
            if mfu["rank_min_rank"] == mfu["rank_max_rank"]  # one rank: nothing to compare
            else f"per rank {pct(mfu['rank_min'])} rank {mfu['rank_min_rank']} – "
            f"{pct(mfu['rank_max'])} rank {mfu['rank_max_rank']}; "
        )
        rows.append(
            (
                "MFU",
                f"median {pct(mfu['median'])} ({spread}first tenth {pct(mfu['first_tenth'])}, "
                f"last tenth {pct(mfu['last_tenth'])})",
            )
        )
    if s.jitter_cost_fraction is not None and s.jitter_cost_s is not None:
        what = "cost" if s.jitter_cost_s >= 0 else "gain (steps mostly faster than the median)"
        text = f"{what} {pct(abs(s.jitter_cost_fraction))} of wall time "
        text += f"({abs(s.jitter_cost_s):,.1f} s of {span}) vs every step at the median"
        rows.append(("jitter & spikes", text))
    out_s, out_f = getattr(s, "outside_steps_s", None), getattr(s, "outside_steps_fraction", None)
    if out_s is not None and out_f is not None and out_s < 0:  # stamps ≤ Σ step times
        rows.append(("outside the steps", f"none: the timestamps span {-out_s:,.1f} s less than "
                     "Σ step times (rounding of the stamps or of the step times)"))  # fmt: skip
    elif out_s is not None and out_f is not None:  # timestamps: wall span − Σ logged step times
        rows.append(("outside the steps", f"{pct(out_f)} of wall time ({out_s:,.1f} s of {span}) "
                     "between the logged steps (timestamps span − Σ step times)"))  # fmt: skip
    return rows


def _token_rows(s: Any, span: str, src: str) -> list[tuple[str, str]]:
    """The tokens/s rows (wall-clock, median step) when the logs count tokens."""
    rows = []
    unknown = getattr(s, "cards_unknown", None)
    wall = _rate(s, "wallclock_tokens", unknown, "tokens", ",.0f")
    med = _rate(s, "tokens", unknown, "tokens", ",.0f")
    if wall is not None:
        rows.append(("token throughput", f"{wall[0]} wall-clock ({wall[1]}tokens / {span} "
                     f"steady, from {src})"))  # fmt: skip
    if med is not None:
        rows.append(("median-step tokens", f"{med[0]} ({med[1]}a typical step)"))
    return rows


def _rate(s: Any, what: str, unknown: str | None, unit: str, fmt: str) -> tuple[str, str] | None:
    """(headline, aside) of one rate: ``throughput_{what}_per_s`` and its per-card twin
    ``throughput_per_card_{what}_per_s`` of ``s``, e.g. ("8.0 samples/s", "1.0 per card; ");
    the aside is "job; " or "" when the card count is unknown (:data:`UNKNOWN_ROWS` says so);
    None when the figure shown first is unknown."""
    job = getattr(s, f"throughput_{what}_per_s", None)
    card = getattr(s, f"throughput_per_card_{what}_per_s", None)
    if unknown == "card":
        return None if card is None else (f"{card:{fmt}} {unit}/s per card", "")
    if job is None:
        return None
    aside = "job; " if unknown == "job" or card is None else f"{card:{fmt}} per card; "
    return f"{job:{fmt}} {unit}/s", aside


def _num(x: float) -> str:
    """A rate as printed: one decimal from 100 up, else four significant digits (7.459)."""
    return f"{x:,.1f}" if abs(x) >= 100 else f"{x:.4g}"
