"""Several runs of a collective benchmark: reported one by one, compared, never pooled.

A file may hold several runs (nccl-tests: each ``# nThread …`` header, or a ``# Rank`` preamble
after a finished table; hccl_demo: each summary table or sweep): on other rank counts, other
hosts, or the same test twice. Each run is fitted on its own (:func:`.fit.fit_frame` groups by
table). This module says what the runs were and how they differ:

- XP612 (info) per file with more than one run: each run's collective, ranks, nodes, hosts,
  sizes and fitted plateau / latency, and what differs from the first run.
- XP610 (warning) when runs of the same configuration (collective, ranks, nodes — from any
  file) reach plateaus more than 10 % apart: same setup, different fabric result.
  Runs whose plateau is extrapolated (largest size < 90 % of it, XP605) are not compared.
- :func:`run_check`: ``calibrate.run_consistency`` (problem / clean / not_checked).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from xpuperf.calibrate.fit import Fit
from xpuperf.calibrate.nccltests import TableInfo
from xpuperf.findings import Check, CheckStatus, Finding, Severity

PLATEAU_SPREAD = 0.10  # runs of one configuration whose plateaus differ by more: XP610
RISING_FRACTION = 0.90  # as checks.RISING_FRACTION: below it the plateau is extrapolated


def _hosts(t: TableInfo | None, fit: Fit | None) -> list[str]:
    return list((fit.hosts if fit is not None and fit.hosts else None) or (t.hosts if t else []))


def _where(fit: Fit) -> str:
    return fit.run or ", ".join(Path(s).name for s in fit.sources)


def _config(t: TableInfo) -> str:
    n = "?" if t.ranks is None else t.ranks
    nodes = "?" if t.nodes is None else t.nodes
    hosts = f" ({', '.join(t.hosts)})" if t.hosts else ""
    return f"{t.collective} on {n} ranks / {nodes} nodes{hosts}"


def _reached(fit: Fit) -> bool:
    p = fit.points
    return not p.empty and p["measured_busbw_GBps"].iloc[-1] >= RISING_FRACTION * fit.busbw_GBps


def _differences(first: TableInfo, t: TableInfo) -> list[str]:
    out = []
    for name in ("collective", "ranks", "nodes"):
        a, b = getattr(first, name), getattr(t, name)
        if a != b:
            out.append(f"{name} {a if a is not None else '?'} → {b if b is not None else '?'}")
    if first.hosts and t.hosts and first.hosts != t.hosts:
        added = [h for h in t.hosts if h not in first.hosts]
        gone = [h for h in first.hosts if h not in t.hosts]
        parts = [f"+{', +'.join(added)}" if added else "", f"−{', −'.join(gone)}" if gone else ""]
        out.append("hosts " + " ".join(p for p in parts if p) if added or gone else "host order")
    return out


def run_findings(tables: list[tuple[str, TableInfo]], fits: list[Fit]) -> list[Finding]:
    """XP612 per file with several runs and XP610 per configuration whose runs disagree."""
    by_table = {f.table: f for f in fits if f.table is not None}
    per_file: dict[str, list[int]] = defaultdict(list)
    for i, (path, _) in enumerate(tables):
        per_file[path].append(i)
    out: list[Finding] = []
    for path, idx in per_file.items():
        if len(idx) < 2:
            continue
        first = tables[idx[0]][1]
        parts = []
        for k, i in enumerate(idx, start=1):
            t, fit = tables[i][1], by_table.get(i)
            got = (
                f"plateau {fit.busbw_GBps:.3g} GB/s, latency {fit.latency_us:.3g} µs"
                if fit is not None
                else "too few sizes to fit"
            )
            diff = _differences(first, t) if k > 1 else []
            parts.append(
                f"run {k} (line {t.header_line}): {_config(t)}, {t.rows} sizes, {got}"
                + (f" [differs from run 1: {'; '.join(diff)}]" if diff else "")
                + (" [same configuration as run 1]" if k > 1 and not diff else "")
            )
        out.append(
            Finding(
                "XP612",
                Severity.INFO,
                f"{Path(path).name} holds {len(idx)} runs, each fitted on its own (never pooled; "
                f"--pool fits runs of one configuration together): " + "; ".join(parts) + ".",
                {"file": path, "runs": [tables[i][1].header_line for i in idx]},
            )
        )
    return out + _spread_findings(fits, tables)


def _groups(fits: list[Fit]) -> dict[tuple, list[Fit]]:
    groups: dict[tuple, list[Fit]] = defaultdict(list)
    for f in fits:
        if f.table is not None:
            groups[(f.collective, f.ranks, f.nodes)].append(f)
    return {k: v for k, v in groups.items() if len(v) > 1}


def _spread_findings(fits: list[Fit], tables: list[tuple[str, TableInfo]]) -> list[Finding]:
    out = []
    for (coll, ranks, nodes), group in _groups(fits).items():
        ok = [f for f in group if _reached(f)]
        if len(ok) < 2:
            continue
        hi, lo = max(ok, key=lambda f: f.busbw_GBps), min(ok, key=lambda f: f.busbw_GBps)
        spread = 1.0 - lo.busbw_GBps / hi.busbw_GBps
        if spread <= PLATEAU_SPREAD:
            continue
        runs = "; ".join(
            f"{f.busbw_GBps:.3g} GB/s ({_where(f)}"
            + (f", hosts {', '.join(_hosts(None, f))}" if _hosts(None, f) else "")
            + ")"
            for f in sorted(ok, key=lambda f: -f.busbw_GBps)
        )
        only_slow = [h for h in _hosts(None, lo) if h not in _hosts(None, hi)]
        suspect = (
            f"the hosts only in the slower run ({', '.join(only_slow)})"
            if only_slow
            else "the hosts of the slower run"
        )
        out.append(
            Finding(
                "XP610",
                Severity.WARNING,
                f"{coll} on {ranks if ranks is not None else '?'} ranks / "
                f"{nodes if nodes is not None else '?'} nodes: {len(ok)} runs of the same "
                f"configuration reach different busbw plateaus: {runs}; the slowest is "
                f"{spread:.0%} below the fastest (threshold {PLATEAU_SPREAD:.0%}). The fabric "
                "did not deliver the same bandwidth twice: check "
                f"{suspect} for link errors (ibstat, perfquery -x: SymbolErrorCounter, "
                "LinkDownedCounter; PCIe AER in dmesg), other jobs sharing the switches, and "
                "clocks/power states; do not average the runs — rerun both back to back.",
                {
                    "collective": coll,
                    "ranks": ranks,
                    "nodes": nodes,
                    "plateaus_GBps": [f.busbw_GBps for f in ok],
                    "runs": [_where(f) for f in ok],
                    "spread": spread,
                },
            )
        )
    return out


def run_check(fits: list[Fit], findings: list[Finding]) -> Check:
    """``calibrate.run_consistency``: runs of one configuration agree (XP610)."""
    groups = _groups(fits)
    bad = [f for f in findings if f.code == "XP610"]
    if bad:
        status, ev = CheckStatus.PROBLEM, f"{len(bad)} configuration(s) with plateaus > 10 % apart"
    elif any(sum(_reached(f) for f in g) >= 2 for g in groups.values()):
        n = sum(len(g) for g in groups.values())
        ev = f"{n} runs in {len(groups)} configuration(s) agree within 10 %"
        status = CheckStatus.CLEAN
    elif groups:
        status, ev = CheckStatus.NOT_CHECKED, "the repeated runs have extrapolated plateaus"
    else:
        status, ev = (
            CheckStatus.NOT_CHECKED,
            "one run per (collective, ranks, nodes): nothing to compare; run the same test "
            "twice to see whether the fabric gives the same bandwidth",
        )
    codes = ("XP610",) if bad else ()
    return Check("calibrate.run_consistency", "repeated runs agree", status, ev, codes)
