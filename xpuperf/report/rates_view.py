"""The throughput rows every analyze report shows (terminal, Markdown, HTML): samples/s, tokens/s
and MFU, each with its unit, from a :class:`~xpuperf.analysis.results.Summary`.

The unit is ``samples/s`` (an image is a sample: tf_cnn_benchmarks' ``images/sec`` and Keras'
``examples/second`` are read as samples) and ``tokens/s`` when the logs count tokens; a run with
both shows both.
"""

from __future__ import annotations

from typing import Any

from xpuperf.report.plotting import pct


def throughput_rows(s: Any) -> list[tuple[str, str]]:
    """(label, text) rows: wall-clock throughput (the headline), median step, tokens/s, MFU and
    the gap between wall-clock and median step as the cost of jitter, spikes and stalls
    (``s``: a ``Summary``)."""
    wall, med = s.throughput_wallclock_samples_per_s, s.throughput_median_step_samples_per_s
    src = "timestamps" if s.wallclock_source == "timestamps" else "Σ step times"
    span = f"{s.wall_time_s:,.1f} s" if s.wall_time_s is not None else "n/a"
    tok_wall = getattr(s, "throughput_wallclock_tokens_per_s", None)
    missing = "unknown (no samples in the logs; use --batch-size)"
    rows = [("throughput", missing if tok_wall is None else "samples unknown (--batch-size)")]
    if wall is not None:
        card = s.throughput_per_card_wallclock_samples_per_s
        text = f"{wall:,.1f} samples/s wall-clock ({card:,.1f} per card; samples / {span} "
        rows = [("throughput", text + f"steady, from {src})")]
    if med is not None:
        card = s.throughput_per_card_samples_per_s
        text = f"{med:,.1f} samples/s ({card:,.1f} per card; a typical step)"
        rows.append(("median-step throughput", text))
    rows += _token_rows(s, span, src)
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
    return rows


def _token_rows(s: Any, span: str, src: str) -> list[tuple[str, str]]:
    """The tokens/s rows (wall-clock, median step) when the logs count tokens."""
    rows = []
    wall = getattr(s, "throughput_wallclock_tokens_per_s", None)
    med = getattr(s, "throughput_tokens_per_s", None)
    if wall is not None:
        card = s.throughput_per_card_wallclock_tokens_per_s
        rows.append(
            (
                "token throughput",
                f"{wall:,.0f} tokens/s wall-clock ({card:,.0f} per card; tokens / {span} "
                f"steady, from {src})",
            )
        )
    if med is not None:
        card = s.throughput_per_card_tokens_per_s
        rows.append(
            ("median-step tokens", f"{med:,.0f} tokens/s ({card:,.0f} per card; a typical step)")
        )
    return rows
