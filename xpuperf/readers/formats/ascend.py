"""Ascend PyTorch/MindSpore profiler ``step_trace_time.csv`` and msprof-analyze's
``cluster_step_trace_time.csv`` (CANN 7/8, torch_npu 2.1+; no corpus sample — the layout follows
msprof-analyze's ``MsprofStepTraceTimeAdapter``).

Header (times in MICROseconds per step)::

    Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,
    Communication(Not Overlapped and Exclude Receive),Preparing

The cluster file adds ``Type,Index`` after ``Step``; rows with Type ``rank`` are kept, Index is
the rank (``stage`` rows aggregate pipeline stages and are skipped).

Columns: ``step`` = Step (a blank Step — single-step profiles — becomes 0); ``step_time_s`` =
(Computing + Communication(Not Overlapped) + Free) / 1e6 — msprof-analyze's end-to-end time;
``compute_s`` = Computing; ``comm_s`` = Communication(Not Overlapped) (exposed communication;
the pipeline receive wait ``Bubble`` is part of it); ``data_s`` = Preparing (time before the
first device task of the step: data loading and host work) when present. Overlapped and total
Communication are not step-table columns.

This format claims ``.csv`` files: a CSV whose header is not this layout is handed to the generic
CSV reader unchanged.
"""

from __future__ import annotations

import csv

from xpuperf.errors import InputError
from xpuperf.readers.base import Source
from xpuperf.readers.formats import console
from xpuperf.readers.formats.table import NAN, Rows, TextTable
from xpuperf.readers.generic import read_csv

NAME = "ascend_step_trace"
EXTENSIONS = (".csv",)
EXAMPLE = (
    "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
    "Communication(Not Overlapped and Exclude Receive),Preparing  then  1,95000.5,12000.2,…"
)
REQUIRED = ("Step", "Computing", "Communication(Not Overlapped)", "Free")


def _header(line: str) -> list[str]:
    return [h.strip() for h in next(csv.reader([line.removeprefix("\ufeff")]), [])]


def sniff(lines: list[str]) -> bool:
    """The first non-blank line is a step_trace_time header."""
    first = next((x for x in lines if x.strip()), "")
    return all(h in _header(first) for h in REQUIRED)


def read(src: Source) -> TextTable:
    """Parse a step_trace_time CSV; any other CSV goes to the generic reader."""
    if not sniff(src.first_lines(5)):
        return read_csv(src)  # type: ignore[return-value]
    rows = Rows()
    bad: list[int] = []
    idx: dict[str, int] = {}
    for n, _tag, text in console.iter_lines(src, bad):
        if not idx:
            idx = {h: i for i, h in enumerate(_header(text))}
            continue
        if not text.strip():
            continue
        f = next(csv.reader([text]), [])
        if len(f) != len(idx):
            rows.drop(f"wrong number of fields (header has {len(idx)})", n)
            continue
        if "Type" in idx and f[idx["Type"]].strip().lower() != "rank":
            continue
        try:
            comp, comm, free = (float(f[idx[k]]) for k in REQUIRED[1:])
            step = float(f[idx["Step"]]) if f[idx["Step"]].strip() else 0.0
            prep = float(f[idx["Preparing"]]) if "Preparing" in idx else NAN
            rank = float(f[idx["Index"]]) if "Index" in idx else None
        except ValueError:
            rows.drop("non-numeric value", n)
            continue
        rows.add(n, step=step, step_time_s=(comp + comm + free) / 1e6, compute_s=comp / 1e6,
                 comm_s=comm / 1e6, data_s=prep / 1e6,
                 **({"rank": rank} if rank is not None else {}))  # fmt: skip
    rows.undecodable(bad)
    if not idx:
        raise InputError("empty step_trace_time file", src.name)
    return rows.table(src, "step_trace_time row", EXAMPLE)
