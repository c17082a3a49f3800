"""CPU/NUMA binding of the ranks of a job, read from what launchers and tools print, and its audit
against a topology (``xpuperf topo check TOPOLOGY --binding FILE``).

Formats (:data:`FORMATS`; the file's format is sniffed, ``--binding-format`` overrides):

========== ==================================================================================
name       input
========== ==================================================================================
cpus       per-rank CPU lists: CSV/TSV (``rank,cpus``), YAML or JSON (:mod:`.tables`)
launcher   a launcher config in YAML: torchrun ``--numa-binding`` or per-local-rank
           ``numactl``/``taskset`` wrappers (:mod:`.tables`)
numactl    ``numactl --show`` blocks, one per rank (:mod:`.text`)
taskset    ``taskset -cp PID`` / ``taskset -p PID`` lines (:mod:`.text`)
slurm      ``srun --cpu-bind=verbose`` lines (:mod:`.text`)
openmpi    Open MPI ``--report-bindings`` lines, 1.8–4.x picture and 5.x package styles
========== ==================================================================================

:func:`read_binding` returns a :class:`BindingFile`; :func:`xpuperf.topology.binding.audit.check`
resolves it against a :class:`~xpuperf.topology.model.Cluster` into findings XP510–XP516.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from xpuperf.errors import InputError, UsageError
from xpuperf.topology.binding.records import BindingFile, RankBinding, read_text
from xpuperf.topology.binding.tables import parse_cpus_table, parse_launcher, sniff_structured
from xpuperf.topology.binding.text import PARSERS, sniff

FORMATS: dict[str, Callable[[str, str], BindingFile]] = {
    "cpus": parse_cpus_table,
    "launcher": parse_launcher,
    **PARSERS,
}
"""Binding format name → parser ``(text, source) -> BindingFile``."""


def detect(text: str) -> str | None:
    """The format name of a binding file's text, or None when none matches."""
    return sniff_structured(text) or sniff(text)


def read_binding(path: str | Path, fmt: str | None = None) -> BindingFile:
    """Read a binding file (format sniffed unless ``fmt`` names one of :data:`FORMATS`).

    Raises:
        UsageError: ``fmt`` is not a known format.
        InputError: unreadable file, unknown format, or a line that cannot be read (file:line).
    """
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"--binding-format {fmt!r} is not one of {', '.join(FORMATS)}")
    text = read_text(path)
    name = fmt or detect(text)
    if name is None:
        raise InputError(
            "not a binding format xpuperf reads; expected per-rank CPU lists (rank,cpus), a "
            "launcher config, numactl --show, taskset -cp, srun --cpu-bind=verbose or Open MPI "
            "--report-bindings output (or name it with --binding-format)",
            path,
        )
    try:
        return FORMATS[name](text, str(path))
    except (ValueError, RecursionError) as e:  # a value no parser check anticipated: exit 2
        raise InputError(
            f"cannot read this {name} binding file: {str(e)[:100] or type(e).__name__}", path
        ) from None


__all__ = ["FORMATS", "BindingFile", "RankBinding", "detect", "read_binding"]
