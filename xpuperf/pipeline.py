"""Library façade: log paths in, :class:`AnalyzeResult` out (readers → analyses), no CLI needed.

>>> from xpuperf.pipeline import analyze_logs
>>> result = analyze_logs(["logs/"], baseline="single_card.csv")  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from xpuperf.analysis import analyze
from xpuperf.analysis.checks import (
    FRAMEWORK_MISSING,
    NCCL_MISSING,
    not_checked_sources,
    not_checked_steps,
)
from xpuperf.analysis.results import AnalyzeResult
from xpuperf.errors import EmptyLogError, InputError
from xpuperf.events import EventReport, scan_events
from xpuperf.findings import Check, Finding
from xpuperf.kinds import ANALYZE, WHAT_ANALYZE_READS, clip, kind_of, other_kind
from xpuperf.readers import read_logs
from xpuperf.readers.formats.pattern import NO_MATCH

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
    extra_text: Sequence[str | os.PathLike] = (),
) -> AnalyzeResult:
    """Read per-rank logs (and an optional single-card baseline) and analyse them; the run's
    text logs, and ``extra_text`` (the job's stdout/stderr without step records), are also
    scanned for framework warnings (:mod:`xpuperf.events`).

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
    _check_size(run.table)
    base_table, base_warnings, base_notes = read_baseline(baseline, fmt=fmt, batch_size=batch_size)
    warnings, job_files = _skipped_job_output(run.problems())
    result = analyze(
        run.table,
        baseline=base_table,
        warmup=warmup,
        straggler_threshold=straggler_threshold,
        sources=run.sources,
        read_warnings=[*warnings, *base_warnings],
        job_level_cards=run.job_level_cards,
        sampled_rows=run.sampled_rows,
        cards_unknown=run.cards_unknown,
        warmup_rows=run.warmup_rows,
        clock_resolution=run.clock_resolution,
    )
    if run.log_rate is not None:  # the log's own throughput, beside the one measured here
        result.summary.log_throughput_samples_per_s, result.summary.log_throughput_source = (
            run.log_rate
        )
    # notes, not XP401: how the logs were read, the job output files
    result.read_warnings += [*run.notes, *base_notes, *(f"{p}: {_AUX_NOTE}" for p in job_files)]
    texts = [Path(p) for p in (*run.sources, *extra_text, *job_files)]
    add_events(result, scan_events(list(dict.fromkeys(texts)), run.table))
    return result


MAX_ANALYSIS_ROWS = 60_000_000
"""Rows (ranks × steps) one in-memory analysis takes: ≈ 10 GB at the measured ≈ 170 B per row
(docs/reliability.md); more is refused before the analysis starts, not left to run out of
memory."""


def _check_size(table: pd.DataFrame) -> None:
    """Refuse a step table beyond :data:`MAX_ANALYSIS_ROWS` (exit 2)."""
    if len(table) > MAX_ANALYSIS_ROWS:
        raise InputError(
            f"{len(table):,} rows (ranks × steps) exceed what one analysis holds in memory "
            f"({MAX_ANALYSIS_ROWS:,} rows, ≈ 10 GB): analyse a window of the run (fewer steps), "
            "fewer ranks at a time, or a smaller --world-size"
        )


_SKIPPED = ": skipped the file: its format is not recognised"


def _skipped_job_output(warnings: list[str]) -> tuple[list[str], list[str]]:
    """(the reader warnings without those of job output, the job-output files): files a folder
    or glob brought that no step reader knew but that hold NCCL lines or framework warnings are
    read for events, and their "skipped" warning becomes a note."""
    from xpuperf.calibrate.nccllog import has_nccl_lines

    job, keep = [], []
    for w in warnings:
        path = w.split(_SKIPPED)[0] if _SKIPPED in w else None
        if path is not None and (has_nccl_lines(path) or _job_output(Path(path))):
            job.append(path)
        else:
            keep.append(w)
    return keep, job


def add_events(result: AnalyzeResult, events: EventReport) -> None:
    """Merge the framework warnings found in the run's own files (:mod:`xpuperf.events`,
    XP7xx) into ``result``: findings, checks, reader notes, and ``result.events``."""
    result.read_warnings += events.warnings
    if not events.files_scanned:  # step tables only: one "not checked" line, no events section
        result.checks.append(FRAMEWORK_MISSING)
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
) -> tuple[pd.DataFrame | None, list[str], list[str]]:
    """The single-card baseline's step table, its reader warnings and its reader notes (both
    prefixed ``baseline:``), or ``(None, [], [])`` without a baseline. Raises InputError as
    :func:`read_logs`."""
    if baseline is None:
        return None, [], []
    try:
        base = read_logs([baseline], fmt=fmt, batch_size=batch_size)
    except InputError as exc:
        got = kind_of(baseline) if exc.message.startswith("cannot tell the format") else None
        if got is None:
            raise
        raise InputError(
            f"--baseline takes the step log of ONE card alone at the same per-card batch; this "
            f"is {got[0]}",
            baseline,
        ) from None
    return (
        base.table,
        [f"baseline: {w}" for w in base.problems()],
        [f"baseline: {n}" for n in base.notes],
    )


@dataclass
class NoSteps:
    """What inputs without step records say: NCCL debug logs and the job's stdout/stderr.

    Attributes:
        sources: the files.
        nccl: their NCCL report (``calibrate.nccllog_checks.NcclReport``), or None.
        events: framework warnings found in them (:class:`xpuperf.events.EventReport`), or None.
        notes: reader notes (one line each).
        findings: NCCL and framework findings, most severe first.
        checks: the NCCL and framework checks, and the step-log checks as ``not_checked``
            (no step records: what to pass instead).
    """

    sources: list[str]
    nccl: object | None
    events: EventReport | None
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)


def analyze_inputs(
    paths: Sequence[str | os.PathLike], **options: object
) -> tuple[AnalyzeResult | None, NoSteps | None]:
    """Like :func:`analyze_logs`, but NCCL debug logs and the job's stdout/stderr are welcome.

    Files holding ``NCCL INFO``/``WARN`` lines are parsed as one job's NCCL log and diagnosed
    (:func:`xpuperf.calibrate.nccllog_checks.diagnose`, XP650–XP666). A text file named on the
    command line that holds no step records but NCCL lines or framework warnings
    (:mod:`xpuperf.events`, XP7xx) is left out of the step analysis, with a note, instead of
    failing it, and is scanned for framework warnings. ``options`` are those of
    :func:`analyze_logs`.

    Returns:
        (result, nosteps): ``result`` is None when no input holds step records, and ``nosteps``
        then reports what the other inputs say; with step records ``nosteps`` is None and the
        NCCL report is ``result.nccl`` (its findings and checks merged into the result's).

    Raises:
        InputError: as :func:`analyze_logs` for the step logs (a file that is neither a step log
            nor NCCL/framework output keeps its error); an unreadable NCCL log.
    """
    from xpuperf.calibrate.nccllog import has_nccl_lines
    from xpuperf.calibrate.nccllog_checks import diagnose
    from xpuperf.readers import FORMATS, SNIFFED_EXTENSIONS
    from xpuperf.readers.paths import expand

    wanted = set(SNIFFED_EXTENSIONS) | {e for f in FORMATS for e in f.extensions}
    try:
        found = [f.path for f in expand(paths, wanted | set(JOB_OUTPUT_EXTENSIONS))]
    except InputError:
        found = []  # read_logs below raises the same error with its own wording
    nccl_files = [p for p in found if p.suffix.lower() != ".parquet" and has_nccl_lines(p)]
    report = diagnose(nccl_files) if nccl_files else None
    nccl_set = {p.resolve() for p in nccl_files}
    step_paths, notes = list(paths), list(report.log.warnings) if report else []
    named = {Path(p).resolve() for p in paths}
    # job output a folder or glob holds under an extension the step readers do not look at
    aux = [
        p
        for p in found
        if p.resolve() not in named
        and not p.name.lower().removesuffix(".gz").endswith(tuple(wanted))
        and (p.resolve() in nccl_set or _job_output(p))
    ]
    notes += [f"{p}: {_AUX_NOTE}" for p in aux]
    result = None
    unmatched = None  # --pattern matched no line of a file: an error unless another file matched
    while step_paths:
        try:
            result = analyze_logs(step_paths, extra_text=aux, **options)  # type: ignore[arg-type]
            break
        except InputError as exc:
            if unmatched is None and exc.message.startswith(NO_MATCH):
                unmatched = exc
            bad = Path(exc.path).resolve() if exc.path else None
            drop = [p for p in step_paths if bad is not None and Path(p).resolve() == bad]
            inside = [p for p in found if bad is not None and bad in p.resolve().parents]
            aux_dir = bool(inside) and all(p in aux or p.resolve() in nccl_set for p in inside)
            others = [p for p in step_paths if p not in drop] or aux or nccl_files
            if drop and isinstance(exc, EmptyLogError) and others:
                # an empty step log beside other inputs: read what is there, say what was not
                step_paths = [p for p in step_paths if p not in drop]
                notes.append(f"{exc}: skipped; the other inputs are analysed without it")
                continue
            if not drop or not (bad in nccl_set or aux_dir or _job_output(bad)):
                if (
                    exc.path is None
                    and found
                    and all(p.resolve() in nccl_set or p in aux or _job_output(p) for p in found)
                ):
                    break  # a folder of NCCL logs and job output only
                raise
            step_paths = [p for p in step_paths if p not in drop]
            if aux_dir:  # a folder of job output / NCCL logs only: its files are already listed
                aux += [p for p in inside if p not in aux]
                continue
            aux.append(bad)
            kind = "NCCL debug log" if bad in nccl_set else "job output"
            why = (
                ""
                if exc.message.startswith("cannot tell the format")
                else f" ({clip(exc.message, 157)})"
            )
            why = f" ({NO_MATCH})" if exc.message.startswith(NO_MATCH) else why
            notes.append(
                f"{exc.path}: {kind} without step records{why}; read for NCCL lines and "
                "framework warnings only"
            )

    if result is None and unmatched is not None:
        raise unmatched
    if result is None:
        flags = {"baseline": "--baseline", "batch_size": "--batch-size", "warmup": "--warmup",
                 "world_size": "--world-size"}  # fmt: skip
        ignored = [f for k, f in flags.items() if options.get(k) is not None]
        if ignored:
            notes.append(
                f"{', '.join(ignored)} ignored (options of step logs): the inputs hold no step "
                "records"
            )
        return None, _no_steps(aux or found, report, notes)
    _merge_nccl(result, report, notes, nccl_files)
    result.read_warnings = list(dict.fromkeys(result.read_warnings))  # a glob and a walk
    return result, None


_AUX_NOTE = "job output without step records; read for NCCL lines and framework warnings only"
JOB_OUTPUT_EXTENSIONS = (".err", ".out", ".log", ".txt", ".stderr", ".stdout")
"""Extensions of the job's stdout/stderr looked for inside folders and globs (``.gz`` too)."""


STREAM_EXTENSIONS = (".err", ".out", ".stderr", ".stdout")
"""Names only a process's output streams take (``job.err``, ``slurm-42.out``): such a text file
is job output even when it holds no known warning — a healthy job's stderr is plain text."""


def _job_output(path: Path) -> bool:
    """A text file (not a table) in which :mod:`xpuperf.events` finds a framework warning or
    setting; an empty job log; or any text file named like an output stream
    (:data:`STREAM_EXTENSIONS`). ``.log``/``.txt`` files need a warning or setting: a text
    file of another kind must keep its "cannot tell the format" error."""
    name = path.name.lower().removesuffix(".gz")
    if not name.endswith(JOB_OUTPUT_EXTENSIONS):
        return False
    try:
        st = path.stat()
    except OSError:
        return False
    if st.st_size == 0:
        return True
    if name.endswith(STREAM_EXTENSIONS) and _is_text(path):
        return True
    return _has_events(str(path.resolve()), st.st_size, st.st_mtime_ns)


def _is_text(path: Path) -> bool:
    """No NUL byte in the first 4 KiB (after gunzip): not a binary file."""
    import gzip

    try:
        with path.open("rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        opener = gzip.open if gz else open
        with opener(path, "rb") as fh:  # type: ignore[operator]
            return b"\x00" not in fh.read(4096)
    except (OSError, EOFError, gzip.BadGzipFile):
        return False


@functools.lru_cache(maxsize=256)
def _has_events(path: str, size: int, mtime_ns: int) -> bool:
    """Whether :mod:`xpuperf.events` finds anything in ``path`` — scanned once per file version:
    ``analyze_inputs`` asks about the same file while picking job output from folders, when a
    reader refused it and when a folder's readers skipped it."""
    report = scan_events([Path(path)])
    return bool(report.events or report.findings)


def _no_steps(files: list[Path], report: object | None, notes: list[str]) -> NoSteps:
    events = scan_events(list(files))
    ev = events if events.files_scanned else None
    findings = [*(report.findings if report else []), *(ev.findings if ev else [])]  # type: ignore[attr-defined]
    checks = [
        *not_checked_steps(),
        *(report.checks if report else [NCCL_MISSING]),  # type: ignore[attr-defined]
        *(ev.checks if ev else [FRAMEWORK_MISSING]),
    ]
    return NoSteps(
        sources=[str(p) for p in files],
        nccl=report,
        events=ev,
        notes=[*notes, *events.warnings],
        findings=sorted(findings, key=lambda f: -f.severity.rank),
        checks=checks,
    )


def _merge_nccl(
    result: AnalyzeResult, report: object | None, notes: list[str], nccl_files: list[Path]
) -> None:
    """The NCCL report's findings and checks into ``result`` (or the "not checked" line)."""
    if report is None:
        result.checks += not_checked_sources(has_nccl=False)
        result.read_warnings += notes
        return
    world = report.log.world  # type: ignore[attr-defined]
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
    findings = [*result.findings, *report.findings]  # type: ignore[attr-defined]
    result.findings = sorted(findings, key=lambda f: -f.severity.rank)
    result.checks += [*report.checks, *not_checked_sources(has_nccl=True)]  # type: ignore[attr-defined]
