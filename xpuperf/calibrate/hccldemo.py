"""Read Intel Gaudi ``hccl_demo`` output (``run_hccl_demo.py``) into the nccl-tests row table.

What the tool prints (HabanaAI/hccl_demo ``hccl_demo.cpp``, ``run_hccl_demo.py``; 2022–2025):

- one size (``--size 32m``): a ``####`` banner, ``[BENCHMARK] hcclAllReduce(src!=dst,
  data_size=33554432, count=8388608, dtype=float, iterations=1000)`` (2022–23: ``count=`` only;
  2025: ``hcclAllReduce(dataSize=…, count=…, …)``), then ``[BENCHMARK]     NW Bandwidth   : X GB/s``
  and ``Algo Bandwidth : Y GB/s`` (2022: a single ``Bandwidth : X GB/s``, the NW figure; with
  ``--measure latency``: ``Host Latency : T ms`` and ``Device Latency``);
- a size sweep (``--size_range 32b 1g``): ``[SUMMARY REPORT]`` (2025-10: ``[BANDWIDTH SUMMARY
  REPORT]`` / ``[LATENCY SUMMARY REPORT]``), ``(src!=dst, collective=all_reduce,
  iterations=1000)``, a header ``size count type redop time algo_bw nw_bw`` (``algoBW`` since
  2024-12) over a units line ``(B) (elements) (us) (GB/s) (GB/s)``, then one row per size. Cells
  may carry their unit (``0.452000 ms``, ``12.3 GB/s``; 2025-10). Headers with the units inline
  (``size (B)  …  time (us)  algbw (GB/s)  busbw (GB/s)``) are read too.
- ``Welcome to HCCL demo`` starts every run, then ``nranks = 16``, ``ranks_per_node = 8``,
  ``test = all_reduce`` … (cyan ANSI colour unless ``--no_color``) and the command lines
  (``HCCL_NRANKS=16 HCCL_RANKS_PER_NODE=8 …``; MPI mode: ``mpirun -np 16 --host a:8,b:8 …``).

The time column: until January 2025 hccl_demo printed **milliseconds under a "(us)" label** (the
value was seconds × 1000; fixed by the commit "fix time units in report prints", which changed
the label only). The unit is therefore settled by the data: the printed time must agree with
size / algbw; a warning says when it contradicts the label.

Conversions to the nccl-tests conventions (docs/formulas.md §3), so one fit serves both tools:
``busbw_GBps`` = hccl_demo's ``nw_bw`` (algbw × its factor: all_reduce 2(n−1)/n,
reduce_scatter and all2all (n−1)/n, broadcast/reduce/send_recv 1, all_gather **n − 1** because
its size is one rank's input); for all_gather ``size_bytes`` and ``algbw_GBps`` are multiplied by
n (nccl-tests counts the gathered output), ``count`` stays per rank. ``time_us`` = the printed
time, or size / algbw when only bandwidths are printed. Ranks: ``nranks = N`` (when > 0),
``HCCL_NRANKS=N``, the launcher (:mod:`.launch`), else nw/algo inverted; nodes from
``ranks_per_node`` or the launcher's hosts. Every summary table, and a
repeated size or another configuration among single-size blocks starts a new run (table):
runs are never pooled. Single-size runs of one configuration (a shell loop over ``--size``, each
printing its own ``Welcome`` banner) form one sweep.

Lines may carry ANSI colour codes, OpenMPI ``[1,0]<stdout>:`` tags, timestamps, ``srun -l``
prefixes or ``[Rank N]`` / ``[rankN]:`` prefixes. Errors: :class:`~xpuperf.errors.InputError`
(``file:line``) when no result is found; malformed rows are skipped and counted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from xpuperf.calibrate.infer import COLLECTIVES, DTYPE_BYTES
from xpuperf.calibrate.nccltests import (
    NcclTestsResult,
    TableInfo,
    _open_lines,
    build_result,
    strip_prefix,
)
from xpuperf.errors import InputError
from xpuperf.readers.launch import Launch

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_RANK_PREFIX = re.compile(r"^\s*\[\s*[Rr]ank\s*\d+\s*\]:?\s*|^\s*\[rank\d+\]:\s*")
_WELCOME = re.compile(r"Welcome to HCCL demo", re.IGNORECASE)
_HEADLINE = re.compile(r"^\[BENCHMARK\]\s+(?:hccl_demo_|hccl)?([A-Za-z_0-9]+?)\s*\(([^)]*)\)")
_VALUE = re.compile(
    r"^\[BENCHMARK\]\s+(NW Bandwidth|Algo Bandwidth|Bandwidth|Host Latency|Device Latency)"
    r"\s*:\s*([-+0-9.eE]+|nan|inf)\s*(GB/s|MB/s|ms|us|s)?",
    re.IGNORECASE,
)
_SUMMARY = re.compile(r"^\[(?:BANDWIDTH |LATENCY )?SUMMARY REPORT\]")
_SUMMARY_OF = re.compile(r"collective=(\w+)")
_ATTR = re.compile(r"^(nranks|ranks_per_node|test|data_type|custom_comm)\s+=\s+(\S.*)$")
_ENV = re.compile(r"\b(HCCL_NRANKS|HCCL_RANKS_PER_NODE|HCCL_DEMO_TEST)=(\w+)")
_UNIT_TOKENS = {"ms", "us", "s", "GB/s", "MB/s"}
_TO_US = {"us": 1.0, "ms": 1e3, "s": 1e6}
NAMES = {
    "allreduce": "all_reduce",
    "allgather": "all_gather",
    "reducescatter": "reduce_scatter",
    "alltoall": "alltoall",
    "all2all": "alltoall",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "sendrecv": "sendrecv",
}
"""hccl_demo test / call names (``all_reduce``, ``hcclAllReduce``, ``all2all``…) → ours."""

SNIFF = re.compile(
    r"Welcome to HCCL demo|\[BENCHMARK\]\s+hccl|\[(?:BANDWIDTH )?SUMMARY REPORT\]"
    r"|\bnw_bw\b|NW Bandwidth\s*:"
)


def sniff(text: str) -> bool:
    """True when ``text`` (a file's head) is hccl_demo output."""
    return bool(SNIFF.search(ANSI.sub("", text)))


def is_hccl_demo(path: str | Path, head_lines: int = 400) -> bool:
    """True when the first ``head_lines`` lines of ``path`` are hccl_demo output and hold no
    nccl-tests header (``# nThread``); False for unreadable files."""
    text = []
    try:
        for i, line in enumerate(_open_lines(Path(path))):
            if i >= head_lines:
                break
            text.append(line)
    except InputError:
        return False
    head = "".join(text)
    return sniff(head) and "# nThread" not in head


def canonical(name: str) -> str | None:
    """Our collective name for an hccl_demo test or call name, None if unknown."""
    return NAMES.get(name.lower().replace("_", "").removeprefix("hccl"))


def hccl_factor(collective: str, n: int) -> float:
    """hccl_demo's nw_bw / algo_bw on ``n`` ranks (``hccl_demo.cpp`` ``stats.factor``)."""
    if collective == "all_reduce":
        return 2.0 * (n - 1) / n
    if collective == "all_gather":
        return float(n - 1)
    if collective in ("reduce_scatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def _ranks_from_factor(collective: str, f: float) -> int | None:
    """Invert :func:`hccl_factor`; None when it cannot tell."""
    if collective == "all_gather":
        n = f + 1.0
    elif collective == "all_reduce" and f < 1.97:
        n = 2.0 / (2.0 - f)
    elif collective in ("reduce_scatter", "alltoall") and f < 0.985:
        n = 1.0 / (1.0 - f)
    else:
        return None
    ni = round(n)
    return ni if ni >= 2 and abs(hccl_factor(collective, ni) - f) < 0.01 * max(1.0, f) else None


@dataclass
class _Run:
    """What one run (``Welcome`` banner to the next) said about itself."""

    nranks: int | None = None
    nranks_source: str = ""
    per_node: int | None = None
    test: str | None = None
    custom_comm: str = ""
    launch: Launch = field(default_factory=Launch)

    def key(self) -> tuple:
        """The configuration: runs with equal keys and new sizes continue one sweep."""
        la = self.launch
        return (self.nranks, self.per_node, self.test, la.ranks, tuple(la.hosts), self.custom_comm)

    def attr(self, key: str, value: str) -> None:
        value = value.strip()
        if key in ("nranks", "HCCL_NRANKS") and value.isdigit() and int(value) > 0:
            if self.nranks is None:
                self.nranks, self.nranks_source = int(value), key
        elif key in ("ranks_per_node", "HCCL_RANKS_PER_NODE") and value.isdigit():
            self.per_node = self.per_node or int(value) or None
        elif key in ("test", "HCCL_DEMO_TEST"):
            self.test = self.test or value
        elif key == "custom_comm" and value not in ("", "None", "''"):
            self.custom_comm = value


@dataclass
class _Table:
    info: TableInfo
    run: _Run
    rows: list[dict] = field(default_factory=list)
    time_label: str | None = None  # unit printed for the time column


class _Reader:
    def __init__(self, path: str, collective: str | None):
        self.path, self.forced = path, collective
        self.run = _Run()
        self.tables: list[_Table] = []
        self.single: _Table | None = None  # the table single-size blocks go to
        self.block: dict | None = None  # the [BENCHMARK] block being read
        self.summary: _Table | None = None
        self.columns: list[tuple[str, str]] | None = None  # (name, unit) of the summary table
        self.skipped: list[int] = []
        self.warnings: list[str] = []

    # -- line dispatch ---------------------------------------------------------------
    def feed(self, lineno: int, raw: str) -> None:
        text = _RANK_PREFIX.sub("", strip_prefix(ANSI.sub("", raw)))
        s = text.strip()
        if _WELCOME.search(s):
            self.flush_block()
            self.summary = self.columns = None
            self.run = _Run()  # self.single stays: a shell loop over sizes is one sweep
            return
        if m := _ATTR.match(s):
            self.run.attr(*m.groups())
            return
        for key, value in _ENV.findall(s):
            self.run.attr(key, value)
        self.run.launch.update(s, lineno)
        if s.startswith("[BENCHMARK]"):
            self.benchmark_line(lineno, s)
        elif _SUMMARY.match(s):
            self.flush_block()
            self.summary = self.new_table(lineno, self.run.test)
            self.columns = None
        elif self.summary is not None:
            self.summary_line(lineno, s)
        elif s.startswith("####"):
            self.flush_block()

    def new_table(self, lineno: int, name: str | None) -> _Table:
        info = TableInfo(header_line=lineno, tool="hccl_demo", check_kind="")
        if name and (c := canonical(name)):
            info.collective, info.collective_source = c, "banner"
        t = _Table(info, self.run)
        self.tables.append(t)
        return t

    # -- single-size blocks ----------------------------------------------------------
    def benchmark_line(self, lineno: int, s: str) -> None:
        if m := _VALUE.match(s):
            if self.block is not None:
                unit = (m.group(3) or "").lower()
                v = float(m.group(2)) * (1e-3 if unit == "mb/s" else 1.0)
                self.block[m.group(1).lower()] = (v, unit)
            return
        if m := _HEADLINE.match(s):
            self.flush_block()
            args = dict(re.findall(r"(\w+)\s*=\s*([^,\s)]+)", m.group(2)))
            self.block = {"name": m.group(1), "args": args, "line": lineno}

    def flush_block(self) -> None:
        b, self.block = self.block, None
        if b is None or len(b) <= 3:
            return
        coll = canonical(b["name"]) or canonical(self.run.test or "") or ""
        args = b["args"]
        dtype = args.get("dtype", "float")
        count = int(args["count"]) if args.get("count", "").isdigit() else None
        size_s = args.get("data_size") or args.get("dataSize") or args.get("size") or ""
        size = int(size_s) if size_s.isdigit() else None
        if size is None and count is not None and dtype in DTYPE_BYTES:
            size = count * DTYPE_BYTES[dtype]
        if size is None:
            self.skipped.append(b["line"])
            return
        t = self.single
        if (
            t is None
            or t.info.collective != coll
            or t.run.key() != self.run.key()
            or any(r["_size"] == size for r in t.rows)
        ):
            t = self.single = self.new_table(b["line"], coll)
        nw = b.get("nw bandwidth", b.get("bandwidth", (math.nan, "")))[0]
        algo = b.get("algo bandwidth", (math.nan, ""))[0]
        lat, unit = b.get("host latency", (math.nan, "ms"))
        t_us = lat * _TO_US.get(unit or "ms", 1e3)
        t.rows.append(_raw(size, count, dtype, "", t_us, algo, nw, b["line"]) | {"_us": 1})

    # -- summary tables --------------------------------------------------------------
    def summary_line(self, lineno: int, s: str) -> None:
        t = self.summary
        assert t is not None
        if m := _SUMMARY_OF.search(s):
            if not t.info.collective and (c := canonical(m.group(1))):
                t.info.collective, t.info.collective_source = c, "banner"
            return
        if self.columns is None:
            if s.lower().startswith("size") and "count" in s.lower():
                self.columns = _columns(s)
                t.info.header_line = lineno
                t.time_label = next((u for n, u in self.columns if n == "time" and u), None)
            return
        if s.startswith("(") and not t.rows:  # the units line under the header
            units = re.findall(r"\((\w+)\)", s)
            t.time_label = t.time_label or next((u for u in units if u in _TO_US), None)
            return
        toks = [x for x in s.split() if x not in _UNIT_TOKENS]
        if not (len(toks) >= 2 and toks[0].isdigit() and toks[1].isdigit()):
            if t.rows or not s:
                self.summary = self.columns = None  # the table is over
            return
        vals = dict(zip([n for n, _ in self.columns], toks, strict=False))
        try:
            size, count = int(vals["size"]), int(vals.get("count", "0"))
            row = _raw(size, count, vals.get("type", ""), vals.get("redop", ""),
                       _f(vals.get("time")), _f(vals.get("algbw")), _f(vals.get("busbw")),
                       lineno)  # fmt: skip
        except (KeyError, ValueError):
            self.skipped.append(lineno)
            return
        if "host_latency" in vals:
            row["_t"] = _f(vals["host_latency"])
        t.rows.append(row)

    # -- per table: units, ranks, conversions ----------------------------------------
    def finish(self) -> tuple[list[dict], list[TableInfo]]:
        self.flush_block()
        rows: list[dict] = []
        infos: list[TableInfo] = []
        for t in self.tables:
            if not t.rows:
                continue
            self.settle(t)
            for r in t.rows:
                r["table"] = len(infos)
                rows.append({k: v for k, v in r.items() if not k.startswith("_")})
            t.info.rows = len(t.rows)
            infos.append(t.info)
        return rows, infos

    def settle(self, t: _Table) -> None:
        info, run = t.info, t.run
        if self.forced:
            info.collective, info.collective_source = self.forced, "argument"
        coll = info.collective or canonical(run.test or "") or "all_reduce"
        if not info.collective:
            info.collective, info.collective_source = coll, "test" if run.test else "default"
        self.time_unit(t)
        n, src = run.nranks, run.nranks_source
        if n is None and (n := run.launch.ranks) is not None:
            src = f"launcher (line {run.launch.line})"
        ratios = [r["_nw"] / r["_algo"] for r in t.rows if r["_algo"] >= 0.05 and r["_nw"] > 0]
        if n is None and ratios:
            n, src = _ranks_from_factor(coll, float(np.median(ratios))), "nw_bw/algo_bw"
        info.ranks, info.ranks_source = n, src if n is not None else ""
        if n is not None:
            if run.launch.hosts:
                info.hosts = list(run.launch.hosts)
            info.nodes, info.nodes_source = run.launch.node_count(n)
            if info.nodes is None and run.per_node:
                info.nodes, info.nodes_source = -(-n // run.per_node), "ranks per node"
        if run.custom_comm:
            self.warnings.append(
                f"{self.path}:{info.header_line}: custom_comm = {run.custom_comm}: hccl_demo "
                f"still computes nw_bw with the world size ({n} ranks); read with that count"
            )
        f = hccl_factor(coll, n) if n is not None else None
        gather = n if coll == "all_gather" and n is not None else 1
        for r in t.rows:
            t_us, algo, nw = r["_t"], r["_algo"], r["_nw"]
            if math.isnan(algo) and f and not math.isnan(nw):
                algo = nw / f
            if math.isnan(t_us) and algo > 0:
                t_us = r["_size"] / (algo * 1e3)  # GB/s = 1e3 bytes per µs
            if math.isnan(algo) and t_us > 0:
                algo = r["_size"] / (t_us * 1e3)
            if math.isnan(nw) and f is not None:
                nw = algo * f
            r.update(size_bytes=r["_size"] * gather, time_us=t_us, algbw_GBps=algo * gather,
                     busbw_GBps=nw)  # fmt: skip

    def time_unit(self, t: _Table) -> None:
        """Scale printed times to µs: the unit that makes time agree with size / algbw."""
        label = (t.time_label or "").lower()
        ok = [r for r in t.rows if r["_algo"] >= 0.01 and r["_t"] > 0 and "_us" not in r]
        scale = _TO_US.get(label)
        if ok:
            implied = np.array([r["_size"] / (r["_algo"] * 1e3) for r in ok])
            printed = np.array([r["_t"] for r in ok])
            best = min(_TO_US, key=lambda u: abs(np.median(np.log(printed * _TO_US[u] / implied))))
            if abs(float(np.median(np.log(printed * _TO_US[best] / implied)))) < 0.2:
                if label and best != label:
                    self.warnings.append(
                        f"{self.path}:{t.info.header_line}: the time column is labelled "
                        f"({label}) but holds {best}: size / algo_bw agrees with {best} "
                        "(hccl_demo before January 2025 printed milliseconds under '(us)'); "
                        f"read as {best}"
                    )
                scale = _TO_US[best]
        for r in t.rows:
            if "_us" not in r:  # single-size latencies are converted when read
                r["_t"] = r["_t"] * (scale if scale is not None else 1e3)


def _raw(size, count, dtype, redop, t, algo, nw, line) -> dict:
    return {"_size": size, "_t": t, "_algo": algo, "_nw": nw, "count": count, "dtype": dtype,
            "redop": redop, "root": -1, "check": math.nan, "inplace_time_us": math.nan,
            "inplace_algbw_GBps": math.nan, "inplace_busbw_GBps": math.nan,
            "inplace_check": math.nan, "line": line}  # fmt: skip


def _f(tok: str | None) -> float:
    try:
        return float(tok) if tok is not None else math.nan
    except ValueError:
        return math.nan


def _columns(header: str) -> list[tuple[str, str]]:
    """Header cells (split on 2+ spaces) → (canonical name, inline unit or "")."""
    out = []
    for cell in re.split(r"\s{2,}", header.strip()):
        unit = m.group(1) if (m := re.search(r"\(([^)]*)\)", cell)) else ""
        name = re.sub(r"\([^)]*\)", "", cell).strip().lower().replace(" ", "_")
        name = {"algo_bw": "algbw", "algobw": "algbw", "nw_bw": "busbw", "nwbw": "busbw",
                "time": "time"}.get(name, name)  # fmt: skip
        out.append((name, unit.lower()))
    return out


def read_hccl_demo(
    path: str | Path, collective: str | None = None, lines: Iterable[str] | None = None
) -> NcclTestsResult:
    """Parse one hccl_demo output file (``.gz`` accepted) into the nccl-tests row table.

    Args:
        path: the file (also ``source`` and in messages); collective: force the collective;
        lines: text lines to parse instead of reading ``path``.

    Returns:
        :class:`~.nccltests.NcclTestsResult` (columns of :mod:`.nccltests`; no in-place half,
        ``check`` NaN; ``TableInfo.tool`` = ``"hccl_demo"``).

    Raises:
        InputError: unreadable file, unknown ``collective``, or no result (``file:line``).
    """
    if collective is not None and collective not in COLLECTIVES:
        raise InputError(f"unknown collective {collective!r}; known: {', '.join(COLLECTIVES)}")
    reader = _Reader(str(path), collective)
    lineno = 0
    for lineno, raw in enumerate(lines if lines is not None else _open_lines(Path(path)), 1):
        reader.feed(lineno, raw)
    rows, infos = reader.finish()
    if not rows:
        raise InputError(
            f"no hccl_demo result in {lineno} lines (a '[BENCHMARK] hcclAllReduce(…)' block with "
            "'NW Bandwidth', or a '[SUMMARY REPORT]' table from --size_range)",
            path,
            lineno,
        )
    warnings = reader.warnings
    if reader.skipped:
        warnings.append(
            f"{path}: skipped {len(reader.skipped)} hccl_demo result(s) without a size "
            f"(first at line {reader.skipped[0]})"
        )
    for r in rows:
        r["source"] = str(path)
    return build_result(rows, infos, warnings, str(path), None)
