"""NCCL collective timeouts (XP708) and OpenMP thread counts (XP709, XP710).

NCCL: PyTorch's ProcessGroupNCCL watchdog aborts a collective that ran longer than the process
group's timeout (default 10 min for NCCL since torch 2.x, 30 min before) and prints the work:
``WorkNCCL(SeqNum=…, OpType=…, NumelIn=…, Timeout(ms)=…) ran for … milliseconds``. Ranks that
time out in the *same* SeqNum and OpType waited for a peer that never joined (a rank that died or
hangs elsewhere: data loading, I/O, a checkpoint on rank 0; or the network); ranks that time out
in *different* collectives took different code paths (a rank-dependent branch, uneven data).

Threads: torchrun sets OMP_NUM_THREADS=1 when it is unset and prints so (torch/distributed/run.py).
OMP_NUM_THREADS × processes per node above the node's CPUs oversubscribes the cores.
"""

from __future__ import annotations

import pandas as pd

from xpuperf.events import evidence
from xpuperf.events.checks import STDERR, _check, _ranks, _where, in_play, no_evidence
from xpuperf.events.scan import Facts
from xpuperf.findings import Check, Finding, Severity


def nccl(facts: Facts, table: pd.DataFrame | None) -> tuple[list[Finding], Check]:
    """XP708: collectives the NCCL watchdog timed out, grouped by (OpType, SeqNum)."""
    out: list[Finding] = []
    if facts.timeouts:
        groups: dict[tuple[str, str], list[int]] = {}
        for (rank, seq, op), _w in facts.timeouts.items():
            groups.setdefault((op, seq), []).append(rank)
        works = list(facts.timeouts.values())
        timeout_ms = max(int(w.get("Timeout(ms)", "0") or 0) for w in works)
        ran_ms = max(int(w["ran_ms"]) for w in works)
        numel = {w.get("NumelIn") for w in works if w.get("NumelIn")}
        desc = "; ".join(
            f"{op} SeqNum={seq} on rank{'s' if len(r) > 1 else ''} {_ranks(set(r))}"
            for (op, seq), r in sorted(groups.items(), key=lambda kv: -len(kv[1]))
        )
        ranks = {r for r, _s, _o in facts.timeouts}
        missing = ""
        if table is not None and not table.empty:
            world = {int(r) for r in table["rank"].unique()}
            silent = world - ranks
            if silent and len(world) > 1:
                one = len(silent) == 1
                missing = (
                    f" {'Rank' if one else 'Ranks'} {_ranks(silent)} of the step table printed "
                    f"no timeout: look at {'its log' if one else 'their logs'} first (died or "
                    "stuck before the collective)."
                )
        if len(groups) > 1:
            cause = (
                "the ranks waited in different collectives, so they took different code paths "
                "(a rank-dependent branch, uneven data per rank, a collective on one rank only)"
            )
        else:
            cause = (
                "every rank that timed out waited in the same collective for a peer that never "
                "joined: a rank that died or hangs elsewhere (data loading, I/O, checkpoint "
                "saving on one rank), or the network"
            )
        out.append(
            Finding(
                "XP708",
                Severity.ERROR,
                f"NCCL collective timed out ({desc}; ran {ran_ms / 1000:.0f} s against "
                f"Timeout(ms)={timeout_ms}{', NumelIn=' + '/'.join(sorted(numel)) if numel else ''}"
                f"; first {_where(facts, 'nccl_timeout')}); threshold: any. The job hung for the "
                f"whole timeout: {cause}.{missing} Set TORCH_NCCL_ASYNC_ERROR_HANDLING=1 (older "
                "NCCL_ASYNC_ERROR_HANDLING) to fail fast, NCCL_DEBUG=INFO to see the transport, "
                "TORCH_DISTRIBUTED_DEBUG=DETAIL to catch mismatched collectives; raise timeout= "
                "in init_process_group only for a legitimate long wait.",
                {
                    "ranks": sorted(ranks),
                    "collectives": [
                        {"op": op, "seq": seq, "ranks": sorted(r)}
                        for (op, seq), r in groups.items()
                    ],
                    "timeout_ms": timeout_ms,
                    "ran_ms": ran_ms,
                },
            )
        )
    seen, why = in_play(facts, evidence.nccl)
    return out, _check(
        "events.nccl_timeout",
        "NCCL collective timeouts (watchdog)",
        out,
        f"no NCCL watchdog timeout in {facts.lines} lines{STDERR}{seen}",
        why,
    )


def omp(facts: Facts) -> tuple[list[Finding], Check]:
    """XP710 OMP threads × processes per node above the CPUs; XP709 launcher default of 1."""
    out: list[Finding] = []
    threads = max(facts.omp_values) if facts.omp_values else facts.omp_default
    procs, cpus = facts.nproc, facts.cpus
    known = threads is not None and procs is not None and cpus is not None
    if known and threads * procs > cpus:  # type: ignore[operator]
        out.append(
            Finding(
                "XP710",
                Severity.WARNING,
                f"OMP_NUM_THREADS={threads} × {procs} processes per node = {threads * procs} "
                f"threads on {cpus} CPUs (threshold: the CPU count): the cores are "
                f"oversubscribed. Set OMP_NUM_THREADS={max(cpus // procs, 1)} (CPUs / processes).",
                {"threads": threads, "procs": procs, "cpus": cpus},
            )
        )
    if facts.omp_default is not None and not facts.omp_values:
        per = (
            f"; {cpus} CPUs / {procs} processes allow up to {max(cpus // procs, 1)}"
            if cpus and procs
            else ""
        )
        out.append(
            Finding(
                "XP709",
                Severity.INFO,
                f"The launcher set OMP_NUM_THREADS={facts.omp_default} for each process "
                f"({_where(facts, 'omp_default')}){per}. If CPU-side work (transforms in the "
                "main process, CPU optimizer, tokenization) is slow, set OMP_NUM_THREADS to CPUs "
                "/ processes per node.",
                {"threads": facts.omp_default, "procs": procs, "cpus": cpus},
            )
        )
    not_checked = no_evidence(facts)
    if not_checked is None and not known:
        have = {"OMP_NUM_THREADS": threads, "processes per node": procs, "CPUs": cpus}
        lack = ", ".join(k for k, v in have.items() if v is None)
        not_checked = (
            f"the log does not show {lack}; print them (env | grep OMP, nproc, lscpu) or "
            "compare OMP_NUM_THREADS × processes per node with the node's CPUs by hand"
        )
    clean = f"OMP_NUM_THREADS={threads} × {procs} processes = {(threads or 0) * (procs or 0)} "
    clean += f"threads on {cpus} CPUs"
    return out, _check(
        "events.omp_threads",
        "OpenMP threads vs CPUs",
        out,
        clean,
        not_checked,
    )
