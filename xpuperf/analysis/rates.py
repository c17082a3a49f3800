"""Tokens/s and MFU of a run: the figures beside samples/s when the step table has ``tokens``
(tokens per rank per step) or ``mfu`` (model FLOPs utilisation, a fraction) — torchtitan ``tps``
and ``mfu``, Megatron/Primus tokens, nanoGPT ``mfu``.

Tokens/s follows samples/s exactly (:func:`xpuperf.analysis.series.job_steps`: Σ tokens over
ranks / job step time per step; the wall-clock headline = Σ tokens × iterations a row covers /
steady wall time). MFU is a rate the framework computed per rank; it is summarised, never summed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from xpuperf.analysis.series import WallClock


def token_rates(steady_job: pd.DataFrame, wc: WallClock, ranks: int) -> dict[str, float | None]:
    """The four tokens/s figures of :class:`~xpuperf.analysis.results.Summary`.

    Args:
        steady_job: steady job series (``tps`` = job tokens/s per step when tokens are known).
        wc: its wall clock (``wc.tokens`` = Σ tokens × iterations).
        ranks: ranks of the run (per-card = job / ranks).

    Returns:
        ``throughput_tokens_per_s`` (median over steps of job tokens/s),
        ``throughput_per_card_tokens_per_s``, ``throughput_wallclock_tokens_per_s``
        (Σ tokens / wall time) and ``throughput_per_card_wallclock_tokens_per_s``; all None when
        the series has no tokens or a steady step lacks them.
    """
    keys = (
        "throughput_tokens_per_s",
        "throughput_per_card_tokens_per_s",
        "throughput_wallclock_tokens_per_s",
        "throughput_per_card_wallclock_tokens_per_s",
    )
    tps = steady_job["tps"].to_numpy(dtype=float) if "tps" in steady_job.columns else None
    if tps is None or not len(tps) or not np.isfinite(tps).all():
        return dict.fromkeys(keys)
    med = float(np.median(tps))
    wall = wc.tokens / wc.wall_time_s if np.isfinite(wc.tokens) else None
    card = None if wall is None else wall / ranks
    return dict(zip(keys, (med, med / ranks, wall, card), strict=True))


def mfu_summary(steady: pd.DataFrame) -> dict[str, float | int] | None:
    """MFU over the steady rows of the step table, or None without an ``mfu`` column (or values).

    Args:
        steady: canonical step table after warm-up (``rank``, ``mfu`` fraction 0…1).

    Returns:
        ``{"median": median over every steady (rank, step) value, "rank_min": lowest per-rank
        median, "rank_min_rank": its rank, "rank_max", "rank_max_rank", "first_tenth",
        "last_tenth": median of the first / last tenth of steady rows of all ranks by step (the
        drift over the run), "values": rows used}``; fractions 0…1.
    """
    if "mfu" not in steady.columns:
        return None
    rows = steady.loc[steady["mfu"].notna(), ["rank", "step", "mfu"]]
    if rows.empty:
        return None
    per_rank = rows.groupby("rank", sort=True)["mfu"].median()
    steps = np.sort(rows["step"].unique())
    tenth = max(1, len(steps) // 10)
    first = rows.loc[rows["step"] <= steps[tenth - 1], "mfu"]
    last = rows.loc[rows["step"] >= steps[-tenth], "mfu"]
    return {
        "median": float(rows["mfu"].median()),
        "rank_min": float(per_rank.min()),
        "rank_min_rank": int(per_rank.idxmin()),
        "rank_max": float(per_rank.max()),
        "rank_max_rank": int(per_rank.idxmax()),
        "first_tenth": float(first.median()),
        "last_tenth": float(last.median()),
        "values": len(rows),
    }
