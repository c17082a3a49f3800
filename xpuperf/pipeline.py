"""Library façade: log paths in, :class:`AnalyzeResult` out (readers → analyses), no CLI needed.

>>> from xpuperf.pipeline import analyze_logs
>>> result = analyze_logs(["logs/"], baseline="single_card.csv")  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from xpuperf.analysis import analyze
from xpuperf.analysis.checks import not_checked_sources
from xpuperf.analysis.results import AnalyzeResult
from xpuperf.errors import InputError
from xpuperf.events import EventReport, scan_events
from xpuperf.kinds import ANALYZE, WHAT_ANALYZE_READS, other_kind
from xpuperf.readers import read_logs

if TYPE_CHECKING:
    import pandas as pd


def analyze_logs(
    paths: Sequence[str | os.PathLike],
    *,
    baseline: str | os.PathLike | None = None,
    fmt: str | None = None,
    batch_size: float | None = None,
    warmup: int | None = None,
    straggler_threshold: float = 0.05,
    world_size: int | None = None,
) -> AnalyzeResult:
    """Read per-rank logs (and an optional single-card baseline) and analyse them; the run's
    text logs are also scanned for framework warnings (:mod:`xpuperf.events`).

    Args:
        paths: files, directories or glob patterns (see :func:`xpuperf.readers.read_logs`).
        baseline: log of ONE card alone at the same per-card batch, for the speedup.
        fmt: force a reader format instead of sniffing.
        batch_size: samples per rank per step when the logs do not say.
        warmup: leading steps to exclude (None = detect).
        straggler_threshold: slowdown fraction above which a rank is a straggler.
        world_size: data-parallel ranks, for a job-level log (see :mod:`xpuperf.readers.world`).

    Raises:
        InputError: unreadable or unusable input (exit code 2 in the CLI).
    """
    try:
        run = read_logs(paths, fmt=fmt, batch_size=batch_size, world_size=world_size)
    except InputError as exc:
        raise _pointed(exc) from exc.__cause__
    base_table, base_warnings = read_baseline(baseline, fmt=fmt, batch_size=batch_size)
    result = analyze(
        run.table,
        baseline=base_table,
        warmup=warmup,
        straggler_threshold=straggler_threshold,
        sources=run.sources,
        read_warnings=[*run.warnings, *base_warnings],
    )
    add_events(result, scan_events([Path(p) for p in run.sources], run.table))
    return result


def add_events(result: AnalyzeResult, events: EventReport) -> None:
    """Merge the framework warnings found in the run's own files (:mod:`xpuperf.events`,
    XP7xx) into ``result``: findings, checks, reader notes, and ``result.events``."""
    result.read_warnings += events.warnings
    if not events.files_scanned:  # step tables only: one "not checked" line, no events section
        result.checks += not_checked_sources(has_nccl=True, has_text=False)[:1]
        return
    result.events = events
    result.findings = sorted([*result.findings, *events.findings], key=lambda f: -f.severity.rank)
    result.checks += events.checks


def _pointed(exc: InputError) -> InputError:
    """``exc`` for a file no step-log reader recognised, reworded to say what it is instead and
    which subcommand reads it (:mod:`xpuperf.kinds`); other errors unchanged."""
    if exc.path is None or not exc.message.startswith("cannot tell the format"):
        return exc
    hint = other_kind(exc.path, ANALYZE)
    if hint is not None:
        return InputError(f"not a step log: {hint}", exc.path)
    return InputError(f"{exc.message}. {WHAT_ANALYZE_READS}", exc.path, exc.line)


def read_baseline(
    baseline: str | os.PathLike | None, *, fmt: str | None = None, batch_size: float | None = None
) -> tuple[pd.DataFrame | None, list[str]]:
    """The single-card baseline's step table and its reader warnings (prefixed ``baseline:``),
    or ``(None, [])`` without a baseline. Raises InputError as :func:`read_logs`."""
    if baseline is None:
        return None, []
    base = read_logs([baseline], fmt=fmt, batch_size=batch_size)
    return base.table, [f"baseline: {w}" for w in base.warnings]


def analyze_inputs(
    paths: Sequence[str | os.PathLike], **options: object
) -> tuple[AnalyzeResult | None, object | None]:
    """Like :func:`analyze_logs`, but NCCL_DEBUG=INFO logs among ``paths`` are welcome.

    Files holding ``NCCL INFO`` lines are parsed as one job's NCCL log and diagnosed
    (:func:`xpuperf.calibrate.nccllog_checks.diagnose`, findings XP650–XP659). A file named on
    the command line that has NCCL lines but no step records is left out of the step analysis
    (with a warning) instead of failing it. ``options`` are those of :func:`analyze_logs`.

    Returns:
        (result, nccl): ``result`` is None when only NCCL logs were given; ``nccl`` (an
        ``NcclReport``) is None when no input has NCCL lines. When both exist the NCCL findings
        are merged into ``result.findings`` and the report is ``result.nccl``.

    Raises:
        InputError: as :func:`analyze_logs` for the step logs; an unreadable NCCL log.
    """
    from xpuperf.calibrate.nccllog import has_nccl_lines
    from xpuperf.calibrate.nccllog_checks import diagnose
    from xpuperf.readers import FORMATS, SNIFFED_EXTENSIONS
    from xpuperf.readers.paths import expand

    wanted = set(SNIFFED_EXTENSIONS) | {e for f in FORMATS for e in f.extensions}
    try:
        found = [f.path for f in expand(paths, wanted)]
    except InputError:
        found = []  # read_logs below raises the same error with its own wording
    nccl_files = [p for p in found if p.suffix.lower() != ".parquet" and has_nccl_lines(p)]
    if not nccl_files:
        result = analyze_logs(paths, **options)  # type: ignore[arg-type]
        result.checks += not_checked_sources(has_nccl=False)
        return result, None
    report = diagnose(nccl_files)
    nccl_set = {p.resolve() for p in nccl_files}
    step_paths = list(paths)
    notes: list[str] = list(report.log.warnings)
    while True:
        try:
            result = analyze_logs(step_paths, **options)  # type: ignore[arg-type]
            break
        except InputError as exc:
            bad = Path(exc.path).resolve() if exc.path else None
            drop = [p for p in step_paths if bad is not None and Path(p).resolve() == bad]
            if not drop or bad not in nccl_set:
                if exc.path is None and {p.resolve() for p in found} <= nccl_set:
                    return None, report
                raise
            step_paths = [p for p in step_paths if p not in drop]
            why = "" if exc.message.startswith("cannot tell the format") else f" ({exc.message})"
            notes.append(
                f"{exc.path}: NCCL debug log without step records{why[:160]}; it is reported in "
                "the NCCL section only"
            )
            if not step_paths:
                return None, report
    world = report.log.world
    ranks = result.summary.ranks  # 1: a job-level log (one rank prints), nothing to compare
    if world is not None and world.nranks and ranks > 1 and world.nranks != ranks:
        notes.append(
            f"the NCCL log has {world.nranks} ranks, the step logs {result.summary.ranks}: "
            "check that they come from the same job"
        )
    skipped = {str(p) for p in nccl_files}
    result.read_warnings = [
        w for w in result.read_warnings
        if not ("skipped the file" in w and w.split(": skipped the file")[0] in skipped)
    ] + notes  # fmt: skip
    result.nccl = report
    result.findings = sorted([*result.findings, *report.findings], key=lambda f: -f.severity.rank)
    result.checks += [*getattr(report, "checks", []), *not_checked_sources(has_nccl=True)]
    return result, report
