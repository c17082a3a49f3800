"""Framework and runtime warnings printed in training logs (findings XP701–XP719).

:func:`scan_events` streams the job's text logs (stdout/stderr, ``.gz`` allowed), finds the
warnings PyTorch DDP, Lightning, the DataLoader, apex/DeepSpeed/Megatron/fairseq loss scaling,
the NCCL watchdog and torchrun print, and turns them into findings with a cost model where one
exists, plus one :class:`~xpuperf.findings.Check` per check (docs/diagnosis.md, "Framework
warnings in training logs").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from xpuperf.events import checks, overflow, runtime
from xpuperf.events.scan import Event, Facts, scan_files
from xpuperf.findings import Check, Finding

__all__ = ["Event", "EventReport", "scan_events"]


@dataclass
class EventReport:
    """Result of :func:`scan_events`.

    Attributes:
        findings: XP7xx findings, most severe first.
        checks: one Check per check (problem / clean / not_checked), always all of them.
        events: each warning kind seen: kind, file, first line number, count, first text; the
            settings the OpenMP check reads (OMP_NUM_THREADS, processes per node, ``CPU(s):``)
            are one ``omp_settings`` event, so a file holding only them is job output.
        warnings: notes on the input (unreadable or truncated files).
        files_scanned: text files scanned; files_skipped: tables and binary files not scanned.
        lines: lines scanned over all text files.
    """

    findings: list[Finding] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    files_scanned: list[str] = field(default_factory=list)
    files_skipped: list[str] = field(default_factory=list)
    lines: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "findings": [f.to_dict() for f in self.findings],
            "checks": [c.to_dict() for c in self.checks],
            "events": [e.to_dict() for e in self.events],
            "warnings": list(self.warnings),
            "files_scanned": list(self.files_scanned),
            "files_skipped": list(self.files_skipped),
            "lines": self.lines,
        }


def diagnose(facts: Facts, step_table: pd.DataFrame | None = None) -> EventReport:
    """Findings and checks from scanned :class:`Facts` (``step_table``: canonical step table of
    the same job, used for costs; None when the input had no step records)."""
    table = step_table if step_table is not None and not step_table.empty else None
    parts = [
        checks.ddp(facts, table),
        checks.workers(facts, table),
        checks.worker_crash(facts),
        overflow.check(facts, table),
        runtime.nccl(facts, table),
        runtime.omp(facts),
    ]
    findings = [f for found, _c in parts for f in found]
    findings.sort(key=lambda f: -f.severity.rank)
    return EventReport(
        findings=findings,
        checks=[c for _f, c in parts],
        events=sorted(facts.events.values(), key=lambda e: (e.file, e.line)),
        warnings=list(facts.warnings),
        files_scanned=list(facts.text_files),
        files_skipped=list(facts.skipped_files),
        lines=facts.lines,
    )


def scan_events(paths: list[Path], step_table: pd.DataFrame | None = None) -> EventReport:
    """Scan ``paths`` for framework warnings and diagnose them.

    Args:
        paths: input files; text logs (``.gz`` read transparently) are scanned, Parquet, binary
            files and structured step tables (.csv/.tsv/.json/.jsonl) are skipped — for those
            alone every check is ``not_checked``.
        step_table: the canonical step table (:mod:`xpuperf.steps`) read from the same input,
            or None; used for the skipped-step fraction, the inter-epoch stall and the world size.

    Returns:
        An :class:`EventReport`. Never raises for bad content: unreadable files are noted in
        ``warnings`` and scanned as far as they are good.
    """
    return diagnose(scan_files([Path(p) for p in paths]), step_table)
