"""Read nccl-tests output (``all_reduce_perf`` and the other ``*_perf`` binaries) into a table.

Accepted layouts (nccl-tests ``src/common.cu`` ``print_header``/``print_line_header``):

- new: ``size count type redop root  time algbw busbw #wrong  time algbw busbw #wrong``;
- old (≤ 2.10): no ``root`` column, an ``error`` column (max abs error, e.g. ``5e-07``) instead
  of ``#wrong``; ``all_gather``-like tests have no ``redop`` column either.

The header line is read to learn the columns, so any mix of these works. Lines may carry an
OpenMPI ``[1,R]<stdout>:`` tag, an ``srun -l`` ``N:`` prefix or an ISO-8601 timestamp; NCCL INFO
lines, ``Launch mode`` lines and other noise may sit inside the table. A ``#`` preamble with
per-rank ``Rank N [Group G] [Pid P] on HOST device D [BUS] NAME`` lines gives ranks and hosts
(also when abbreviated with ``...``: :mod:`.ranks`); without it the rank count is recovered
from busbw/algbw (§3 of docs/formulas.md) and ``nodes`` stays unknown. Each ``# nThread``
header, a launcher line or a ``# Rank`` list after a finished table starts a new run. A row
cut mid-way keeps its out-of-place half when that half is complete.

Output: :func:`read_nccl_tests` → :class:`NcclTestsResult` whose ``frame`` has one row per
message size and table, columns (units in names):

=====================  =======================================================================
collective             ``all_reduce``, ``all_gather``, ``reduce_scatter``, ``alltoall``,
                       ``broadcast``, ``reduce``, ``sendrecv``, ``gather``, ``scatter``,
                       ``hypercube``
size_bytes, count      int; message bytes S (nccl-tests' size column) and elements
dtype, redop, root     str, str (``""`` when absent), int (-1 when absent)
time_us                out-of-place time per operation, µs
algbw_GBps, busbw_GBps out-of-place algbw = S/t and busbw (GB = 1e9 bytes)
check                  out-of-place ``#wrong`` count or ``error`` value (NaN for ``N/A``)
inplace_*              the same four for in-place (NaN when missing)
ranks, nodes           Int64 (<NA> when unknown)
table, source, line    table index in the file, file path, 1-based line of the row
=====================  =======================================================================

Errors: :class:`~xpuperf.errors.InputError` (``file:line``) for an unreadable file or one with no
result rows; malformed rows are skipped and counted in ``warnings``. Never a traceback.

Sources: nccl-tests ``doc/PERFORMANCE.md`` (algbw/busbw definitions), ``src/*.cu`` (column
layouts, ``count`` per collective).
"""

from __future__ import annotations

import gzip
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from xpuperf.calibrate import ranks as rank_list
from xpuperf.calibrate.infer import COLLECTIVES, DTYPE_BYTES, PERF_RE, bus_factor, finish_table
from xpuperf.calibrate.ranks import RankList
from xpuperf.errors import InputError
from xpuperf.readers.launch import Launch

__all__ = [
    "COLLECTIVES",
    "COLUMNS",
    "DTYPE_BYTES",
    "NcclTestsResult",
    "TableInfo",
    "bus_factor",
    "read_nccl_tests",
    "strip_prefix",
]

COLUMNS = [
    "collective",
    "size_bytes",
    "count",
    "dtype",
    "redop",
    "root",
    "time_us",
    "algbw_GBps",
    "busbw_GBps",
    "check",
    "inplace_time_us",
    "inplace_algbw_GBps",
    "inplace_busbw_GBps",
    "inplace_check",
    "ranks",
    "nodes",
    "table",
    "source",
    "line",
]


_PREFIXES = (
    re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr)>:"),  # OpenMPI --tag-output
    re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?\s"),  # docker/k8s
    re.compile(r"^\s*\d+:\s"),  # srun -l
)
_RANK_RE = re.compile(
    r"^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+(\d+)\s+)?on\s+(\S+)\s+device\s+(\d+)"
    r"\s+\[([^\]]*)\]\s*(.*)$"  # matched on stripped lines; `(.*?)\s*$` is quadratic
)
_AVG_RE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([-+0-9.eE]+|nan|inf)", re.IGNORECASE)
_OOB_RE = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(\w+)?")
_ELLIPSIS_RE = re.compile(r"^\s*(?:\.{3,}|…|\[\s*(?:\.{3,}|…)\s*\])\s*$")
_VERSION_RE = re.compile(r"^#\s*nccl-tests version\s+(\S+)")
_NCCL_VERSION_RE = re.compile(r"\bNCCL version\s+(\S+)")


def strip_prefix(line: str) -> str:
    """Remove launcher tags (OpenMPI ``[1,0]<stdout>:``, ISO timestamp, ``srun -l`` ``N:``)."""
    for rx in _PREFIXES:
        m = rx.match(line)
        if m:
            line = line[m.end() :]
    return line.rstrip("\r\n")


@dataclass
class TableInfo:
    """What is known about one result table (one run of one ``*_perf`` binary).

    Attributes:
        collective: canonical name (see :data:`COLLECTIVES`).
        collective_source: ``"banner"`` (``# Collective test starting``), ``"command"`` (a
            ``*_perf`` name in the file before the table), ``"argument"``, ``"filename"`` or
            ``"columns"`` (inferred from redop/root/count and busbw/algbw).
        ranks: rank count or None; ranks_source ``"preamble"``, ``"busbw/algbw"``, ``"count"``.
        hosts: host names in rank order of first appearance (empty without a preamble).
        nodes: ``len(hosts)`` or None.
        devices: device names seen in the preamble.
        header_line: 1-based line of the column header; rows: rows kept.
        avg_busbw_GBps: the ``# Avg bus bandwidth`` figure, None if absent.
        out_of_bounds: the ``# Out of bounds values`` count, None if absent.
        check_kind: ``"#wrong"`` or ``"error"`` (``""``: the tool prints no check column).
        tool: ``"nccl-tests"`` or ``"hccl_demo"`` (the program that printed the table).
        nodes_source: ``"preamble"`` (distinct hosts of a complete rank list),
            ``"ranks per node"`` (ranks / the first host's rank count, or a launch option),
            ``"hosts"`` (the launcher's host list); empty when unknown.
        rank_lines: ``# Rank`` lines present; abbreviated: the list was cut (``...``, or rank
            ids with gaps), so the count came from elsewhere (:mod:`.ranks`); ranks_min: the
            count is at least this (a list elided at its end), ranks_per_node: ranks of one host
            block seen whole in an abbreviated list (nodes = ranks ÷ it); duplicate_rank: a
            rank id printed twice (rank, host, other host), the processes were separate jobs.
    """

    collective: str = ""
    collective_source: str = ""
    ranks: int | None = None
    ranks_source: str = ""
    hosts: list[str] = field(default_factory=list)
    nodes: int | None = None
    devices: list[str] = field(default_factory=list)
    header_line: int = 0
    rows: int = 0
    avg_busbw_GBps: float | None = None  # noqa: N815 (unit in the name)
    out_of_bounds: int | None = None
    check_kind: str = ""
    nccl_tests_version: str | None = None
    nccl_version: str | None = None
    tool: str = "nccl-tests"
    nodes_source: str = ""
    rank_lines: int = 0
    abbreviated: bool = False
    ranks_min: int | None = None
    ranks_per_node: int | None = None
    duplicate_rank: tuple[int, str, str] | None = None


@dataclass
class NcclTestsResult:
    """Result of :func:`read_nccl_tests`: the row table, per-table facts and warnings."""

    frame: pd.DataFrame
    tables: list[TableInfo]
    warnings: list[str]


@dataclass
class _Preamble:
    rl: RankList = field(default_factory=RankList)  # the '# Rank' lines and '# nThread' header
    launch: Launch | None = None  # the launcher line echoed before the table, if any
    collective: str | None = None
    collective_source: str = ""
    version: str | None = None


def _open_lines(path: Path) -> Iterator[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            yield from fh
    except FileNotFoundError:
        raise InputError("file not found; check the path to the nccl-tests output", path) from None
    except IsADirectoryError:
        raise InputError("is a directory; give nccl-tests output files", path) from None
    except (OSError, EOFError) as e:
        raise InputError(f"cannot read: {getattr(e, 'strerror', None) or e}", path) from None


def _num(tok: str) -> float:
    try:
        return float(tok)
    except ValueError:
        return math.nan


def read_nccl_tests(
    path: str | Path, collective: str | None = None, lines: Iterable[str] | None = None
) -> NcclTestsResult:
    """Parse one nccl-tests output file (streamed line by line; ``.gz`` accepted).

    Args:
        path: the file (also used as ``source`` and in messages).
        collective: force the collective (else banner, command line, file name, columns).
        lines: text lines to parse instead of reading ``path`` (for tests and stdin).

    Returns:
        :class:`NcclTestsResult`; ``frame`` has the columns of the module docstring.

    Raises:
        InputError: unreadable file, unknown ``collective``, or no result rows (``file:line``).
    """
    p = Path(path)
    if collective is not None and collective not in COLLECTIVES:
        raise InputError(f"unknown collective {collective!r}; known: {', '.join(COLLECTIVES)}")
    source = lines if lines is not None else _open_lines(p)
    rows: list[dict] = []
    tables: list[TableInfo] = []
    warnings: list[str] = []
    pre = _Preamble()
    nccl_version: str | None = None
    table: TableInfo | None = None
    layout: tuple[list[str], int, int, str] | None = None  # prefix, group width, groups, check
    skipped: list[int] = []
    lineno = 0
    for lineno, raw in enumerate(source, start=1):
        text = strip_prefix(raw)
        s = text.strip()
        if not s:
            continue
        if m := _NCCL_VERSION_RE.search(s):
            nccl_version = m.group(1)
        if s.startswith("#"):
            body = s[1:].split()
            vm = _VERSION_RE.match(s)
            if vm or s.startswith("# nThread"):
                if table is not None or pre.rl.ranks or pre.rl.per_process:  # a new run starts
                    keep = pre.launch if table is None else None
                    pre, table, layout = _Preamble(launch=keep), None, None
                if vm:
                    pre.version = vm.group(1)
                pre.rl.header(s)
            if m := re.match(r"^#\s*Collective test starting:\s*(\w+)", s):
                if table is not None:  # rccl-tests: the banner comes before '# nThread'
                    pre, table, layout = _Preamble(), None, None
                name = m.group(1).removesuffix("_perf")
                if name in COLLECTIVES:
                    pre.collective, pre.collective_source = name, "banner"
            elif m := _RANK_RE.match(s):
                if table is not None:  # a preamble after a table: the next run, no header
                    pre, table, layout = _Preamble(), None, None
                pre.rl.add(int(m.group(1)), m.group(3), m.group(6), int(m.group(4)))
            elif "size" in body and "time" in body and "busbw" in body:
                layout = _layout(body)
                table = _new_table(pre, layout, lineno, nccl_version)
                tables.append(table)
            elif table is not None and (m := _AVG_RE.match(s)):
                table.avg_busbw_GBps = _num(m.group(1))
                layout = None  # the table is over
            elif table is not None and (m := _OOB_RE.match(s)):
                table.out_of_bounds = int(m.group(1))
            elif table is None:
                pre.rl.other(s)  # a rank line cut short, or '# ...' eliding ranks
            continue
        if layout is None or table is None:
            if (m := PERF_RE.search(s)) and pre.collective_source != "banner":
                pre.collective, pre.collective_source = m.group(1), "command"
            if table is None and _ELLIPSIS_RE.match(s):
                pre.rl.other(s)  # the tool's cut landing at a line start: a bare '...'
                continue
            launch = pre.launch if table is None and pre.launch is not None else Launch()
            launch.update(s, lineno)
            if launch.line is not None:  # an echoed mpirun/srun line: this run's or the next's
                if table is not None:  # after a finished table: the next run starts here
                    pre, table = _Preamble(), None
                pre.launch = launch
            continue
        toks = s.split()
        if not (toks[0].isdigit() and len(toks) > 1 and toks[1].isdigit()):
            continue  # NCCL INFO, Launch mode and other noise inside the table
        row = _row(toks, layout)
        if row is None:
            skipped.append(lineno)
            continue
        row.update(table=len(tables) - 1, source=str(path), line=lineno)
        rows.append(row)
        table.rows += 1
    if skipped:
        warnings.append(
            f"{path}: skipped {len(skipped)} malformed result row(s) (first at line {skipped[0]}): "
            "fewer than size, count, type and an out-of-place time/algbw/busbw; "
            "check the file was not cut or interleaved with other output"
        )
    if not rows:
        where = tables[-1].header_line if tables else lineno
        what = (
            "no result rows after the column header"
            if tables
            else f"no nccl-tests result table in {lineno} lines"
        )
        raise InputError(
            f"{what} (a '#  size  count  type … time  algbw  busbw' header followed by rows); "
            f"is this nccl-tests output?",
            path,
            where,
        )
    return build_result(rows, tables, warnings, str(path), collective)


def build_result(
    rows: list[dict],
    tables: list[TableInfo],
    warnings: list[str],
    path: str,
    collective: str | None,
) -> NcclTestsResult:
    """The :class:`NcclTestsResult` of parsed ``rows`` (each with ``table`` = index into
    ``tables``): tables without rows dropped and renumbered, collective and ranks settled
    (:func:`~.infer.finish_table`), columns in :data:`COLUMNS` order. Shared by the readers of
    every collective benchmark (nccl-tests, hccl_demo)."""
    frame = pd.DataFrame(rows)
    tables = [t for t in tables if t.rows]
    keep = sorted(set(frame["table"]))
    frame["table"] = frame["table"].map({old: new for new, old in enumerate(keep)})
    for i, t in enumerate(tables):
        sub = frame.index[frame["table"] == i]
        finish_table(t, frame.loc[sub], collective, Path(path).name, warnings, path)
        rank_list.after_ratio(t, warnings, path)
        frame.loc[sub, "collective"] = t.collective
        frame.loc[sub, "ranks"] = t.ranks if t.ranks is not None else pd.NA
        frame.loc[sub, "nodes"] = t.nodes if t.nodes is not None else pd.NA
    for col in COLUMNS:
        if col not in frame:
            frame[col] = pd.NA
    frame = frame[COLUMNS]
    frame["ranks"] = frame["ranks"].astype("Int64")
    frame["nodes"] = frame["nodes"].astype("Int64")
    return NcclTestsResult(frame, tables, warnings)


def _layout(body: list[str]) -> tuple[list[str], int, int, str]:
    first = body.index("time")
    prefix = body[:first]
    rest = body[first:]
    starts = [i for i, t in enumerate(rest) if t == "time"]
    width = starts[1] - starts[0] if len(starts) > 1 else len(rest)
    return prefix, width, len(starts), "error" if "error" in rest else "#wrong"


def _new_table(
    pre: _Preamble, layout: tuple[list[str], int, int, str], lineno: int, nccl_version: str | None
) -> TableInfo:
    t = TableInfo(header_line=lineno, nccl_tests_version=pre.version, nccl_version=nccl_version)
    t.collective, t.collective_source = pre.collective or "", pre.collective_source
    rank_list.settle(t, pre.rl, pre.launch)
    t.check_kind = layout[3]
    return t


def _row(toks: list[str], layout: tuple[list[str], int, int, str]) -> dict | None:
    prefix, width, groups, _ = layout
    np_ = len(prefix)
    if len(toks) < np_ + 3:
        return None
    vals = dict(zip(prefix, toks[:np_], strict=True))
    try:  # a header whose columns were reordered or cut puts text where a number belongs
        size, count = int(vals["size"]), int(vals["count"]) if "count" in vals else pd.NA
    except (KeyError, ValueError):
        return None
    if size >= 2**63 or (count is not pd.NA and count >= 2**63):
        return None  # past int64: a mangled row (a 400-digit size overflowed float arithmetic)
    out: dict = {
        "size_bytes": size,
        "count": count,
        "dtype": vals.get("type", ""),
        "redop": vals.get("redop", ""),
        "root": int(r) if re.fullmatch(r"-?\d{1,9}", r := vals.get("root", "-1")) else -1,
    }
    for g, name in enumerate(("", "inplace_")[:groups]):
        start = np_ + g * width
        part = [_num(x) for x in toks[start : start + width]]
        part += [math.nan] * (width - len(part))
        t, alg, bus = part[:3]
        complete = not (math.isnan(t) or math.isnan(alg) or math.isnan(bus))
        if not complete:
            if g == 0:
                return None
            t = alg = bus = math.nan
        out[f"{name}time_us"] = t
        out[f"{name}algbw_GBps"] = alg
        out[f"{name}busbw_GBps"] = bus
        out[f"{name}check"] = part[3] if width > 3 and complete else math.nan
    return out
