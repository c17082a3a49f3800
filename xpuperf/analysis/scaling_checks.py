"""Findings XP310–XP316 and the ``scaling.*`` checks of a scaling table (docs/diagnosis.md).

Each message states the value, the threshold and the remedy. Causes named:

- inside one node (XP311, XP313): host contention (cores, memory bandwidth, PCIe), thread
  oversubscription — PyTorch / MKL / OpenMP start one thread per core in every process unless
  ``OMP_NUM_THREADS`` is set (torchrun sets it to 1 only when unset and warns; PyTorch docs
  "torchrun"), so N processes × all cores oversubscribe the host — data-loader workers, load
  imbalance between ranks, framework overhead; not the network;
- across nodes (XP312): the network — NCCL over TCP sockets instead of RDMA, no GPUDirect RDMA,
  too few NICs (NCCL_DEBUG=INFO prints the transport: ``via NET/IB`` vs ``NET/Socket``).
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

from xpuperf.analysis.scaling_superlinear import SUPERLINEAR, _c, _f, _list, superlinear
from xpuperf.findings import Check, CheckStatus, Finding, Severity

if TYPE_CHECKING:
    from xpuperf.analysis.scaling_model import Baseline, ScalingResult
    from xpuperf.readers.scaling import ScalingTable

REPORTED_TOL = 0.02
"""Absolute tolerance between a table's own efficiency and the recomputed one (speedups: 2 %
relative); the table's values are rounded to about two digits."""
HOST_CAUSES = (
    "host contention (CPU cores, memory bandwidth, PCIe), thread oversubscription, "
    "data-loader workers, load imbalance between ranks or framework overhead — not the network"
)
HOST_REMEDY = (
    "set OMP_NUM_THREADS so that threads × processes per node ≤ physical cores, bind each rank "
    "to the cores of its card's NUMA node, check DataLoader num_workers × processes ≤ cores; "
    "per-rank step logs (xpuperf analyze LOGS) show stragglers and the data/compute split"
)
NET_REMEDY = (
    "check that NCCL uses RDMA between nodes (NCCL_DEBUG=INFO: 'via NET/IB' or a net plugin, "
    "not 'NET/Socket'; NCCL_SOCKET_IFNAME / NCCL_IB_HCA), GPUDirect RDMA and one NIC per card "
    "or two; measure all_reduce_perf across nodes (xpuperf calibrate)"
)
NODE_HINT = (
    "add a 'nodes' column, write counts as 2x8 (nodes × cards), or state 'N GPUs per node' "
    "next to the table"
)


def _conf(res: ScalingResult, shows: int) -> str:
    n = len(res.rows)
    if n <= 4 or shows < 2:
        return "suspicion"
    return "likely"


def _conf_text(conf: str, res: ScalingResult, shows: int) -> str:
    if conf == "likely":
        return f"likely: {shows} rows agree"
    return f"a suspicion, not a certainty: {len(res.rows)} rows, {shows} showing it"


def judge(res: ScalingResult, table: ScalingTable, baseline: Baseline | None) -> None:
    """Fill ``location``, ``confidence``, ``findings`` and ``checks`` of ``res``."""
    f: list[Finding] = []
    checks: list[Check] = []
    thr = res.threshold
    big = res.largest
    r = res.rows

    intra_bad = res.intra is not None and res.intra.efficiency < thr
    bad_inter = [s for s in res.inter if s.factor < thr]
    if intra_bad and bad_inter:
        res.location = "both"
    elif intra_bad:
        res.location = "inside one node"
    elif bad_inter:
        res.location = "across nodes"
    elif res.intra is not None and (res.inter or r["nodes_used"].max() <= 1):
        res.location = "none"
    else:
        res.location = "unknown"
    shows = max(res.intra.rows if intra_bad and res.intra else 0, len(bad_inter))
    res.confidence = _conf(res, shows)

    # XP310: efficiency of every row (one below the threshold is a finding, wherever it is)
    where = {
        "inside one node": "the loss is already inside one node (XP311)",
        "across nodes": "the loss appears when nodes are added (XP312)",
        "both": "the loss is inside one node (XP311) and grows across nodes (XP312)",
    }.get(res.location)
    judged = r[r["efficiency"].notna() & (r["cards"] > 1)]
    below = judged[judged["efficiency"] < thr].sort_values(["cards", "line"])
    over = judged[judged["efficiency"] > SUPERLINEAR]
    if not below.empty:
        if where is None:
            growth = _single_growth(r)
            where = (
                "where it is lost cannot be told: the table does not place its rows on nodes; "
                + NODE_HINT
                + (
                    "; if these runs were on one node the loss is not the network: " + HOST_REMEDY
                    if growth
                    else ""
                )
            )
        worst = below.loc[below["efficiency"].idxmin()]
        f.append(Finding("XP310", Severity.WARNING, (
            f"scaling efficiency below {thr:.2f} in {len(below)} of {len(judged)} row(s) with "
            f"more than one card: {_rows_text(below, big)}: {where}{_over_text(over)}"
        ), {"cards": worst["cards"], "efficiency": worst["efficiency"], "threshold": thr,
            "rows": [{"cards": float(x["cards"]), "efficiency": float(x["efficiency"]),
                      "line": int(x["line"])} for _, x in below.iterrows()]}))  # fmt: skip
    checks.append(_efficiency_check(res, judged, below, over))

    # XP311: inside one node
    if res.intra is None:
        why = (
            "the table does not place its rows on nodes; " + NODE_HINT
            if res.node_info is None
            else "no row with several cards on one node"
        )
        checks.append(Check("scaling.intra_node", "loss inside one node",
                            CheckStatus.NOT_CHECKED, f"not checked — {why}"))  # fmt: skip
    else:
        s = res.intra
        text = (
            f"efficiency {_f(s.efficiency)} at {_c(s.to_cards)} cards on one node vs one card "
            f"(line {s.line}; threshold {thr:.2f}; nodes from {res.node_info})"
        )
        if intra_bad:
            conf = _conf(res, s.rows)
            f.append(Finding("XP311", Severity.WARNING, (
                f"loss already inside one node ({_conf_text(conf, res, s.rows)}): {text} — "
                f"{HOST_CAUSES}; remedy: {HOST_REMEDY}"
            ), {"cards": s.to_cards, "efficiency": s.efficiency, "threshold": thr,
                "confidence": conf}))  # fmt: skip
        checks.append(Check("scaling.intra_node", "loss inside one node",
                            CheckStatus.PROBLEM if intra_bad else CheckStatus.CLEAN, text,
                            ("XP311",) if intra_bad else ()))  # fmt: skip

    # XP312: across nodes
    multi = r[(r["nodes_used"] > 1) & r["efficiency"].notna()]
    if not res.inter:
        if res.node_info is None:
            why = "the table does not place its rows on nodes; " + NODE_HINT
        elif multi.empty:
            why = "the table has no multi-node row"
        else:
            why = "no single-node row with several cards to compare the multi-node rows with"
        checks.append(Check("scaling.inter_node", "loss across nodes (network)",
                            CheckStatus.NOT_CHECKED, f"not checked — {why}"))  # fmt: skip
    else:
        worst = min(res.inter, key=lambda s: s.factor)
        text = (
            f"{_c(worst.to_cards)} cards on {_c(worst.to_nodes)} nodes keep {_f(worst.factor)} "
            f"of the single-node efficiency ({_f(worst.efficiency)} vs "
            f"{_f(worst.efficiency / worst.factor)} at {_c(worst.from_cards)} cards on one node, "
            f"line {worst.line}; threshold {thr:.2f})"
        )
        if bad_inter:
            conf = _conf(res, len(bad_inter))
            f.append(Finding("XP312", Severity.WARNING, (
                f"loss across nodes ({_conf_text(conf, res, len(bad_inter))}): {text} — the "
                f"network; remedy: {NET_REMEDY}"
            ), {"cards": worst.to_cards, "nodes": worst.to_nodes, "factor": worst.factor,
                "threshold": thr, "confidence": conf}))  # fmt: skip
        checks.append(Check("scaling.inter_node", "loss across nodes (network)",
                            CheckStatus.PROBLEM if bad_inter else CheckStatus.CLEAN, text,
                            ("XP312",) if bad_inter else ()))  # fmt: skip

    _oversubscription(res, f, checks)
    _reported(res, f, checks)
    _batch(res, f, checks, baseline)
    superlinear(res, f, checks)
    res.findings = sorted(f, key=lambda x: -x.severity.rank)
    res.checks = checks


def _rows_text(rows, big: dict[str, float]) -> str:
    """``0.875 at 16 cards (job throughput 14.00× one card's, line 4)`` per row, ``; ``-joined;
    the largest run is marked."""
    out = []
    for _, x in rows.iterrows():
        mark = ", the largest run" if x["cards"] == big["cards"] else ""
        out.append(
            f"{_f(x['efficiency'])} at {_c(x['cards'])} cards (job throughput "
            f"{x['throughput_ratio']:.2f}× one card's, line {int(x['line'])}{mark})"
        )
    return "; ".join(out)


def _over_text(over) -> str:
    if over.empty:
        return ""
    top = over.loc[over["efficiency"].idxmax()]
    return (
        f". {_f(top['efficiency'])} at {_c(top['cards'])} cards (line {int(top['line'])}) is "
        f"above {SUPERLINEAR:.2f} (XP316): it does not offset the rows below"
    )


def _efficiency_check(res: ScalingResult, judged, below, over) -> Check:
    """``scaling.efficiency``: problem when a row is below the threshold; not checked when none is
    but a row is superlinear (the one-card denominator is in doubt); clean otherwise."""
    thr, big, r = res.threshold, res.largest, res.rows
    name, title = "scaling.efficiency", "scaling efficiency of every run"
    basis = (
        f"{len(judged)} row(s) with more than one card, {res.mode} scaling, from "
        f"{res.measure_column!r}; threshold {thr:.2f}"
    )
    if not below.empty:
        worst = below.loc[below["efficiency"].idxmin()]
        return Check(name, title, CheckStatus.PROBLEM, (
            f"{len(below)} row(s) below the threshold, lowest {_f(worst['efficiency'])} at "
            f"{_c(worst['cards'])} cards (line {int(worst['line'])}); the largest run: "
            f"{_f(big['efficiency'])} at {_c(big['cards'])} cards ({basis})"
        ), ("XP310",))  # fmt: skip
    rest = judged[judged["efficiency"] <= SUPERLINEAR]
    if not over.empty and rest.empty:  # every multi-card row superlinear: one card looks slow
        top = over.loc[over["efficiency"].idxmax()]
        return Check(name, title, CheckStatus.NOT_CHECKED, (
            f"no verdict: {_f(top['efficiency'])} at {_c(top['cards'])} cards (line "
            f"{int(top['line'])}) is above {SUPERLINEAR:.2f} (XP316): the one-card row looks "
            "slow, which would overstate every row's efficiency; remeasure the one-card row "
            f"the same way ({basis})"
        ))  # fmt: skip
    low = rest.loc[rest["efficiency"].idxmin()]
    lowest = f"lowest {_f(low['efficiency'])} at {_c(low['cards'])} cards"
    if low["cards"] == big["cards"]:
        lowest += ", the largest run"
    elif big["efficiency"] <= SUPERLINEAR:
        lowest += f"; the largest run: {_f(big['efficiency'])} at {_c(big['cards'])} cards"
    every, left = "every row", ""
    if not over.empty:  # some rows superlinear, the others not: those rows are the outliers
        every = "every other row"
        left = f"; left out, inconsistent with the other rows (XP316): {_list(over)}"
    return Check(name, title, CheckStatus.CLEAN, (
        f"{every} at or above the threshold: {lowest} ({basis}; {len(r)} rows in all){left}"
    ))  # fmt: skip


def _single_growth(r) -> list[tuple[float, float]] | None:
    """(cards, per-card time ratio) on one node (or of every row, when nodes are unknown) when
    the ratio grows at every step; None otherwise."""
    ok = r[r["efficiency"].notna()]
    on_node = ok[(ok["nodes_used"] == 1) | ok["nodes_used"].isna()]
    ladder = on_node.groupby("cards")["per_card_time_ratio"].median().sort_index()
    if len(ladder) < 2 or ladder.index[0] != 1:
        return None
    values = list(ladder.items())
    if all(b[1] > a[1] for a, b in itertools.pairwise(values)):
        return values
    return None


def _oversubscription(res: ScalingResult, f: list[Finding], checks: list[Check]) -> None:
    title = "per-card time growing with processes on one node"
    if res.intra is None:
        why = "no row with several cards on one node" if res.node_info else (
            "the table does not place its rows on nodes; " + NODE_HINT)  # fmt: skip
        checks.append(Check("scaling.oversubscription", title, CheckStatus.NOT_CHECKED,
                            f"not checked — {why}"))  # fmt: skip
        return
    growth = _single_growth(res.rows[res.rows["nodes_used"] == 1])
    series = " → ".join(f"{t:.2f}" for _, t in growth) if growth else ""
    cards = "/".join(_c(c) for c, _ in growth) if growth else ""
    fires = bool(growth) and res.intra.efficiency < res.threshold
    if fires:
        text = (
            f"per-card time {series} × the one-card time at {cards} cards on one node "
            f"(efficiency {_f(res.intra.efficiency)} at {_c(res.intra.to_cards)}, threshold "
            f"{res.threshold:.2f})"
        )
        conf = _conf(res, len(growth or []) - 1)
        f.append(Finding("XP313", Severity.WARNING, (
            f"{text}: grows with every process added ({_conf_text(conf, res, len(growth) - 1)}) "
            "— typical of CPU oversubscription: each process starts one thread per core unless "
            "OMP_NUM_THREADS is set; check OMP_NUM_THREADS × processes per node ≤ physical "
            "cores (e.g. 32 cores, 8 processes: OMP_NUM_THREADS=4) and DataLoader workers"
        ), {"per_card_time_ratio": [t for _, t in growth or []], "confidence": conf}))  # fmt: skip
    else:
        text = (
            "per-card time does not grow with every process added on one node"
            if not growth
            else f"per-card time {series} × at {cards} cards: within the threshold"
        )
    checks.append(Check("scaling.oversubscription", title,
                        CheckStatus.PROBLEM if fires else CheckStatus.CLEAN, text,
                        ("XP313",) if fires else ()))  # fmt: skip


def _reported(res: ScalingResult, f: list[Finding], checks: list[Check]) -> None:
    r = res.rows
    title = "the table's own efficiency / speedup"
    has = r["reported_efficiency"].notna() | r["reported_throughput_ratio"].notna()
    if not has.any():
        checks.append(Check("scaling.reported", title, CheckStatus.NOT_CHECKED,
                            "not checked — the table states no efficiency or speedup of its own "
                            "(nothing to cross-check; xpuperf computes them)"))  # fmt: skip
        return
    bad = []
    for _, row in r[has & r["efficiency"].notna()].iterrows():
        e, s = row["reported_efficiency"], row["reported_throughput_ratio"]
        if not math.isnan(e) and abs(e - row["efficiency"]) > REPORTED_TOL:
            bad.append(f"efficiency {e:.2f} at {_c(row['cards'])} cards (line {int(row['line'])}"
                       f") vs {_f(row['efficiency'])} recomputed")  # fmt: skip
        ratio = row["throughput_ratio"]
        if not math.isnan(s) and abs(s - ratio) > REPORTED_TOL * ratio:
            bad.append(f"{s:.2f}× one card at {_c(row['cards'])} cards (line {int(row['line'])}"
                       f") vs {ratio:.2f}× recomputed")  # fmt: skip
    if bad:
        f.append(Finding("XP314", Severity.WARNING, (
            f"the table's own numbers disagree with its {res.measure_column!r} column: "
            + "; ".join(bad[:4]) + (f" (+{len(bad) - 4} more)" if len(bad) > 4 else "")
            + f" (tolerance {REPORTED_TOL:.2f}, speedups 2 %): xpuperf uses the recomputed "
            "values; fix the column or its formula (efficiency = per-card throughput at N / "
            "the one-card throughput)"
        ), {"disagreements": len(bad)}))  # fmt: skip
    n = int(has.sum())
    checks.append(Check(title=title, name="scaling.reported",
                        status=CheckStatus.PROBLEM if bad else CheckStatus.CLEAN,
                        evidence=f"{len(bad)} of {n} stated value(s) disagree" if bad else
                        f"{n} row(s) state an efficiency or speedup; all agree within "
                        f"{REPORTED_TOL:.2f}", codes=("XP314",) if bad else ()))  # fmt: skip


def _batch(res: ScalingResult, f: list[Finding], checks: list[Check], baseline) -> None:
    r = res.rows
    title = "same per-card batch as the one-card row"
    if res.mode == "fixed work":
        checks.append(Check("scaling.batch", title, CheckStatus.NOT_CHECKED,
                            "not checked — a time for a fixed amount of work does not depend "
                            "on the per-card batch being equal"))  # fmt: skip
        return
    if r["batch_per_card"].isna().all():
        checks.append(Check("scaling.batch", title, CheckStatus.NOT_CHECKED,
                            "not checked — the table has no per-card batch column: the same "
                            "per-card batch is assumed in every row (weak scaling); add a "
                            "'batch per GPU' column"))  # fmt: skip
        return
    odd = r[r["batch_note"] != ""]
    if odd.empty:
        checks.append(Check("scaling.batch", title, CheckStatus.CLEAN,
                            f"every row has a one-card row at its per-card batch ({res.mode} "
                            "scaling)"))  # fmt: skip
        return
    first = odd.iloc[0]
    strong = " (strong scaling: the global batch is kept, so the per-card batch shrinks)" if (
        res.mode == "strong") else ""  # fmt: skip
    refused = odd[odd["efficiency"].isna()]
    f.append(Finding("XP315", Severity.WARNING, (
        f"{len(odd)} row(s) have a per-card batch without a one-card row at that batch, first "
        f"{first['batch_per_card']:g} at {_c(first['cards'])} cards (line {int(first['line'])})"
        f"{strong}: "
        + (f"{len(odd) - len(refused)} compared per card with the nearest one-card batch — "
           "their efficiency includes the batch-size effect; " if len(odd) > len(refused) else "")
        + (f"{len(refused)} refused (a time per step cannot be compared across batches); "
           if len(refused) else "")
        + "remedy: measure one card alone at the same per-card batch"
    ), {"rows": len(odd), "refused": len(refused)}))  # fmt: skip
    checks.append(Check("scaling.batch", title, CheckStatus.PROBLEM,
                        f"{len(odd)} row(s) without a one-card row at their per-card batch",
                        ("XP315",)))  # fmt: skip
