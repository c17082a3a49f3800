"""Settle what a nccl-tests table does not say outright: the collective and the rank count.

- :func:`bus_factor`: busbw/algbw per collective (nccl-tests doc/PERFORMANCE.md, formulas.md §3).
- :func:`finish_table`: collective from the ``--collective`` argument, the banner or command line
  (set by the reader), the file name, or the columns (``root`` ≥ 0: broadcast/reduce;
  size/(count·dtype bytes) = n > 1: all_gather/reduce_scatter, as in nccl-tests ``src/*.cu``;
  a reduction op: all_reduce); ranks from the preamble, else from size/count (gather-like) or by
  inverting :func:`bus_factor` on the measured busbw/algbw. Cross-checks busbw/algbw against
  the rank count and warns (value, expected, tolerance, remedy) when they disagree.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from xpuperf.calibrate.nccltests import TableInfo

COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "alltoall",
    "broadcast",
    "reduce",
    "sendrecv",
    "gather",
    "scatter",
    "hypercube",
)
"""Canonical collective names (the ``*_perf`` binary names without ``_perf``)."""

DTYPE_BYTES = {
    "int8": 1,
    "uint8": 1,
    "char": 1,
    "int32": 4,
    "uint32": 4,
    "int": 4,
    "int64": 8,
    "uint64": 8,
    "half": 2,
    "float16": 2,
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
    "bfloat16": 2,
    "f8e4m3": 1,
    "f8e5m2": 1,
}

PERF_RE = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(COLLECTIVES) + r")_perf(?![A-Za-z0-9])")


def bus_factor(collective: str, n: int) -> float:
    """busbw / algbw for ``collective`` on ``n`` ranks (nccl-tests doc/PERFORMANCE.md, §3).

    all_reduce 2(n−1)/n; all_gather, reduce_scatter, alltoall, gather, scatter, hypercube
    (n−1)/n; broadcast, reduce, sendrecv 1. ValueError for an unknown collective or n < 1.
    """
    if n < 1:
        raise ValueError(f"rank count must be >= 1, got {n}")
    if collective == "all_reduce":
        return 2.0 * (n - 1) / n
    if collective in ("broadcast", "reduce", "sendrecv"):
        return 1.0
    if collective in COLLECTIVES:
        return (n - 1) / n
    raise ValueError(f"unknown collective {collective!r}")


def finish_table(
    t: TableInfo,
    rows: pd.DataFrame,
    forced: str | None,
    filename: str,
    warnings: list[str],
    path: str,
) -> None:
    """Settle the collective and rank count of a table, and cross-check busbw/algbw."""
    ratio = _busbw_ratio(rows)
    if forced:
        t.collective, t.collective_source = forced, "argument"
    if not t.collective and (m := PERF_RE.search(filename)):
        t.collective, t.collective_source = m.group(1), "filename"
    q = _count_ratio(rows)  # size / (count · dtype bytes): n for gather-like tests, 1 otherwise
    if not t.collective:
        t.collective, t.collective_source = _infer_collective(rows, q, ratio, t.ranks), "columns"
    if t.ranks is None:
        if q is not None and q > 1 and t.collective in ("all_gather", "reduce_scatter"):
            t.ranks, t.ranks_source = q, "count"
        elif ratio is not None:
            n = _ranks_from_ratio(t.collective, ratio)
            if n is not None:
                t.ranks, t.ranks_source = n, "busbw/algbw"
    if t.ranks is not None and ratio is not None:
        want = bus_factor(t.collective, t.ranks)
        if abs(ratio - want) > 0.02 * want + 0.005:
            warnings.append(
                f"{path}:{t.header_line}: busbw/algbw = {ratio:.3f} but {t.collective} on "
                f"{t.ranks} ranks should give {want:.3f} (tolerance 2%); the rank count or the "
                "collective may be wrong — pass --collective, or check the preamble"
            )
    if t.avg_busbw_GBps is None and t.tool == "nccl-tests":
        warnings.append(
            f"{path}:{t.header_line}: no '# Avg bus bandwidth' line after the table: "
            "the output may be cut"
        )


def _busbw_ratio(rows: pd.DataFrame) -> float | None:
    """busbw/algbw from the rows with the largest algbw (least rounding), None if all zero."""
    ok = rows[(rows["algbw_GBps"] >= 0.5) & (rows["busbw_GBps"] > 0)]
    if ok.empty:
        return None
    top = ok.nlargest(3, "algbw_GBps")
    return float((top["busbw_GBps"] / top["algbw_GBps"]).median())


def _count_ratio(rows: pd.DataFrame) -> int | None:
    nb = rows["dtype"].map(DTYPE_BYTES)
    ok = rows[(rows["count"].notna()) & nb.notna() & (rows["size_bytes"] > 0)]
    if ok.empty:
        return None
    counts = ok["count"].astype(float) * nb[ok.index]
    q = (ok["size_bytes"] / counts.where(counts > 0)).dropna()
    if q.empty:
        return None
    qi = round(float(q.median()))
    return qi if qi >= 1 and (q - qi).abs().max() < 0.01 * qi else None


def _ranks_from_ratio(collective: str, ratio: float) -> int | None:
    """Invert :func:`bus_factor`; None when it cannot tell (factor 1, or ill-conditioned)."""
    if collective == "all_reduce":
        if ratio >= 1.97:  # n > ~64: two-decimal rounding makes n unreliable
            return None
        n = 2.0 / (2.0 - ratio)
    elif collective in ("broadcast", "reduce", "sendrecv"):
        return None
    else:
        if ratio >= 0.985:
            return None
        n = 1.0 / (1.0 - ratio)
    ni = round(n)
    return ni if ni >= 2 and abs(bus_factor(collective, ni) - ratio) < 0.01 else None


def _infer_collective(rows: pd.DataFrame, q: int | None, ratio: float | None, n: int | None) -> str:
    """Guess the collective from the columns (see module docstring); all_reduce if unsure."""
    redop = str(rows["redop"].iloc[0])
    root = int(rows["root"].iloc[0])
    reduces = redop not in ("", "none")
    if root >= 0:
        return "reduce" if reduces else "broadcast"
    if q is not None and q > 1:
        return "reduce_scatter" if reduces else "all_gather"
    if reduces or redop == "":
        return "all_reduce"
    if ratio is not None and n is not None and abs(ratio - 1.0) < 0.01 and n > 2:
        return "sendrecv"
    return "alltoall"
