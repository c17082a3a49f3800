"""``calibrate_files``: nccl-tests / hccl_demo outputs (+ topology) → fitted model and findings.

The result renders to two documents (:mod:`xpuperf.calibrate.render`):

- ``xpuperf.calibrate/1`` JSON (``--json``): inputs, ``fits`` with per-size ``points``
  (measured and leave-one-out predicted busbw), ``findings``, ``warnings``;
- ``xpuperf.calibration/1`` YAML (``-o``): the calibrated constants the cost model reads — one
  entry per (collective, ranks, nodes) and a per-level summary (``net`` for multi-node groups,
  ``intra`` for single-node ones). It is a separate file, not a topology description: the
  topology loader accepts only ``xpuperf.topology/1`` keys.

Errors: :class:`~xpuperf.errors.InputError` from the reader (file:line), :class:`UsageError`
for bad options or when no group has enough sizes to fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from xpuperf.calibrate import checks, runs, single, sweep
from xpuperf.calibrate.fit import MAX_LINES, Fit, fit_frame
from xpuperf.calibrate.hccldemo import is_hccl_demo, read_hccl_demo
from xpuperf.calibrate.nccllog import has_nccl_lines
from xpuperf.calibrate.nccllog_checks import diagnose
from xpuperf.calibrate.nccltests import TableInfo, read_nccl_tests
from xpuperf.errors import InputError, UsageError
from xpuperf.findings import Check, Finding
from xpuperf.topology import evidence
from xpuperf.topology.model import Cluster

MEASUREMENTS = ("best", "out-of-place", "in-place")
NO_CARD_NAMES = (
    "card model unknown: the output has no '#  Rank N Group G Pid P on HOST device D [BUS] NAME' "
    "lines (nccl-tests prints them before the table; keep them when pasting), nor does a "
    "--topology description"
)


@dataclass
class CalibrationResult:
    """Everything ``xpuperf calibrate`` reports.

    Attributes:
        fits: one :class:`Fit` per (collective, ranks, nodes).
        tables: (path, :class:`TableInfo`) for every parsed result table.
        frame: all parsed rows (columns of :mod:`xpuperf.calibrate.nccltests`).
        findings: XP6xx findings, most severe first.
        warnings: reader and fit warnings (value, threshold, remedy).
        measurement: which timing was fitted; topology: its path or preset name, if given.
        nccl: one ``NcclReport`` per file that also holds NCCL INFO lines (their XP65x findings
            are in ``findings``).
        checks: one :class:`~xpuperf.findings.Check` per check (docs/diagnosis.md).
        measurements: groups too small to fit, reported as single measurements
            (:mod:`.single`); link: the ``--link`` given, if any.
    """

    fits: list[Fit]
    tables: list[tuple[str, TableInfo]]
    frame: pd.DataFrame
    findings: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    measurement: str = "best"
    topology: str | None = None
    nccl: list = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    measurements: list[single.Measurement] = field(default_factory=list)
    link: single.Link | None = None
    base_findings: list[Finding] = field(default_factory=list)
    wrong: list[float] = field(default_factory=list)


MAX_INPUT_BYTES = 256 << 20
"""Largest benchmark output read (a full nccl-tests sweep is tens of kB; a 100-run log a few MB)."""


def _check_size(path: str | Path) -> None:
    """Refuse a file too large to be benchmark output, or binary, before it is parsed."""
    p = Path(path)
    try:
        size = p.stat().st_size
        with p.open("rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return  # the reader says what is wrong with it
    if size > MAX_INPUT_BYTES:
        raise InputError(
            f"file is {size / 2**20:,.0f} MiB, larger than the {MAX_INPUT_BYTES >> 20} MiB a "
            "benchmark output can be: pass the output of the benchmark runs alone",
            str(p),
        )
    if head and (b"\x00" in head):
        raise InputError(
            "binary file (NUL bytes near its start): not nccl-tests or hccl_demo text output",
            str(p),
        )


def calibrate_files(
    files: list[str | Path],
    *,
    cluster: Cluster | None = None,
    topology_name: str | None = None,
    measurement: str = "best",
    collective: str | None = None,
    max_lines: int = MAX_LINES,
    pool: bool = False,
    link: single.Link | None = None,
    ranks: int | None = None,
) -> CalibrationResult:
    """Parse ``files``, fit every (collective, ranks, nodes) group, derive findings.

    Args:
        files: nccl-tests output files (any of the layouts of :mod:`.nccltests`) or Gaudi
            hccl_demo output (:mod:`.hccldemo`, recognised by content).
        cluster: topology to compare busbw plateaus against (XP601), or None.
        topology_name: how the topology was given (for the report).
        measurement: ``"best"`` (smaller of out-of-place and in-place time per size; default:
            noise only adds time), ``"out-of-place"`` or ``"in-place"``.
        collective: force the collective of every table (else detected).
        max_lines: largest number of α–β lines (1 = plain α–β).
        pool: fit files with the same (collective, ranks, nodes) together (default: per file).
        link: what one link gives (``--link``), for groups too small to fit.
        ranks: rank count for tables that do not say it (no preamble, busbw/algbw unusable).

    Raises:
        UsageError: no files, bad ``measurement``/``max_lines``, or nothing to fit.
        InputError: a file cannot be read or holds no nccl-tests table.
    """
    if not files:
        raise UsageError("give at least one nccl-tests output file")
    if measurement not in MEASUREMENTS:
        raise UsageError(f"--measurement must be one of {', '.join(MEASUREMENTS)}")
    if not 1 <= max_lines <= 4:
        raise UsageError(f"--max-lines must be 1 to 4, got {max_lines}")
    frames, tables, warnings = [], [], []
    offset = 0
    for f in files:
        _check_size(f)
        try:
            reader = read_hccl_demo if is_hccl_demo(f) else read_nccl_tests
            res = reader(f, collective=collective)
        except InputError as exc:
            if not has_nccl_lines(f):
                raise
            hint = "; it holds NCCL INFO lines only: `xpuperf analyze FILE` reports on them"
            raise InputError(exc.message + hint, exc.path, exc.line) from exc
        fr = res.frame.copy()
        fr["table"] = fr["table"] + offset
        offset += len(res.tables)
        frames.append(fr)
        tables += [(str(f), t) for t in res.tables]
        warnings += res.warnings
    frame = pd.concat(frames, ignore_index=True)
    if ranks is not None:
        if ranks < 1:
            raise UsageError(f"--ranks must be >= 1, got {ranks}")
        frame["ranks"] = frame["ranks"].fillna(ranks)
        for _, t in tables:
            t.ranks = t.ranks or ranks
    fits = fit_frame(frame, measurement=measurement, max_lines=max_lines, pool=pool)
    for fit in fits:  # which run each fit is: file:line of its table, the tool, the hosts
        if fit.table is not None:
            path, t = tables[fit.table]
            fit.tool, fit.run, fit.hosts = t.tool, f"{Path(path).name}:{t.header_line}", t.hosts
        elif fit.sources:
            fit.tool = next((t.tool for p, t in tables if p in fit.sources), fit.tool)
    fitted = {(s, f.collective, f.ranks, f.nodes) for f in fits for s in f.sources}
    measurements = []
    for key, g in frame.groupby(["source", "collective", "ranks", "nodes"], dropna=False):
        src, coll, n, nodes = key
        n = None if pd.isna(n) else int(n)
        nodes = None if pd.isna(nodes) else int(nodes)
        if (src, coll, n, nodes) not in fitted and (m := single.measurement(str(src), g)):
            measurements.append(m)
    if not fits and not measurements:
        raise UsageError("no result row with a size > 0 to fit or compare; run nccl-tests "
                         "over a size range (-b 8 -e 1G -f 2)")  # fmt: skip
    findings: list[Finding] = []
    wrongs = []
    for i, (path, t) in enumerate(tables):
        rows = frame[frame["table"] == i]
        wrong = sum(  # Python floats: a huge #wrong is inf, not a numpy RuntimeWarning
            float(v)
            for col in ("check", "inplace_check")
            for v in pd.to_numeric(rows[col], errors="coerce").fillna(0)
        )
        wrongs.append(wrong if t.check_kind == "#wrong" else 0.0)
        findings += checks.table_findings(path, t, wrongs[-1])
    for fit in fits:
        findings += checks.fit_findings(fit) + sweep.findings(fit)  # XP611: collapsed sizes
    findings += runs.run_findings(tables, fits)  # XP612 several runs in a file, XP610 spread
    result = CalibrationResult(fits, tables, frame, [], warnings, measurement)
    result.measurements, result.link, result.wrong = measurements, link, wrongs
    for f in files:  # NCCL_DEBUG=INFO lines around the tables (corpus 16, 19): XP650–XP659
        if has_nccl_lines(f):
            report = diagnose([f])
            result.nccl.append(report)
            findings += report.findings
    result.base_findings = findings
    if cluster is not None:
        add_topology_findings(result, cluster, topology_name)
    else:
        _finish(result, None)
    return result


def _finish(result: CalibrationResult, cluster: Cluster | None) -> None:
    """Findings and checks that depend on the topology or ``--link`` (XP601, XP606/XP607,
    XP520)."""
    found = list(result.base_findings)
    for fit in result.fits:
        if cluster is not None:
            found += checks.topology_findings(fit, cluster)
        elif result.link is not None:
            found += checks.link_findings(fit, result.link)
    out = checks.fit_checks(result.fits, found, cluster, result.link) if result.fits else []
    out.append(checks.wrong_check(result.tables, result.wrong))
    out.append(runs.run_check(result.fits, found))
    out.append(sweep.check(result.fits, found))
    for m in result.measurements:
        link = result.link
        if cluster is not None and (got := checks.ceiling(m, cluster)) is not None:
            link = single.Link(got[0], f"the topology ({got[1]})")
        check, fs = single.judge(m, link)
        out.append(check)
        found += fs
    for report in result.nccl:  # the NCCL log checks (nccllog_checks), when it reports them
        out += list(getattr(report, "checks", None) or [])
    names = [d for _, t in result.tables for d in t.devices]
    if cluster is not None:
        names += [d.model for n in cluster.nodes for d in n.devices if d.model]
    missing = NO_CARD_NAMES
    if result.tables and all(t.tool == "hccl_demo" for _, t in result.tables):
        missing = "card model unknown: hccl_demo prints no card names, nor does a --topology"
    check, fs = evidence.consumer_p2p(names, cluster=cluster, missing=missing)
    out.append(check)
    found += fs
    result.checks = out
    result.findings = sorted(found, key=lambda f: (-f.severity.rank, f.code))


def add_topology_findings(
    result: CalibrationResult, cluster: Cluster, topology_name: str | None = None
) -> None:
    """Compare every fit's busbw plateau (XP601) and every single measurement (XP606) with
    ``cluster``; recomputes findings and checks in place."""
    result.topology = topology_name
    _finish(result, cluster)
