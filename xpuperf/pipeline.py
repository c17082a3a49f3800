"""Library façade: log paths in, :class:`AnalyzeResult` out (readers → analyses), no CLI needed.

>>> from xpuperf.pipeline import analyze_logs
>>> result = analyze_logs(["logs/"], baseline="single_card.csv")  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from xpuperf.analysis import analyze
from xpuperf.analysis.results import AnalyzeResult
from xpuperf.readers import read_logs


def analyze_logs(
    paths: Sequence[str | os.PathLike],
    *,
    baseline: str | os.PathLike | None = None,
    fmt: str | None = None,
    batch_size: float | None = None,
    warmup: int | None = None,
    straggler_threshold: float = 0.05,
) -> AnalyzeResult:
    """Read per-rank logs (and an optional single-card baseline) and analyse them.

    Args:
        paths: files, directories or glob patterns (see :func:`xpuperf.readers.read_logs`).
        baseline: log of ONE card alone at the same per-card batch, for the speedup.
        fmt: force a reader format instead of sniffing.
        batch_size: samples per rank per step when the logs do not say.
        warmup: leading steps to exclude (None = detect).
        straggler_threshold: slowdown fraction above which a rank is a straggler.

    Raises:
        InputError: unreadable or unusable input (exit code 2 in the CLI).
    """
    run = read_logs(paths, fmt=fmt, batch_size=batch_size)
    warnings = list(run.warnings)
    base_table = None
    if baseline is not None:
        base = read_logs([baseline], fmt=fmt, batch_size=batch_size)
        base_table = base.table
        warnings += [f"baseline: {w}" for w in base.warnings]
    return analyze(
        run.table,
        baseline=base_table,
        warmup=warmup,
        straggler_threshold=straggler_threshold,
        sources=run.sources,
        read_warnings=warnings,
    )
