"""Checks and findings (XP701–XP719) from the framework warnings a scan collected.

Every check is ``problem``, ``clean`` or ``not_checked``. A check is ``clean`` only when a text
log (framework output) was scanned **and** it shows the thing the check is about in use, so that
the warning would have been printed had the fault been there (rules in
:mod:`xpuperf.events.evidence`: PyTorch DDP, a PyTorch DataLoader, a loss scaler that reports its
skips, PyTorch's NCCL backend). A Parquet/CSV step table cannot show a warning, so the checks are
``not_checked`` for it, and for text that is only NCCL's own output (NCCL_DEBUG lines and
banners, :data:`xpuperf.events.patterns.OTHER_LINE`) or blank lines. Thresholds:

- skipped steps (loss-scale overflow) above :data:`SKIP_FRACTION` of the steps: each skipped
  step did the forward and backward work and no update, so the fraction is wasted wall time;
- an inter-epoch stall above :data:`STALL_FRACTION` of the summed step time (Lightning docs,
  "persistent_workers": workers are re-created at each epoch when it is False).
"""

from __future__ import annotations

import pandas as pd

from xpuperf.events import costs, evidence
from xpuperf.events.scan import Facts
from xpuperf.findings import Check, CheckStatus, Finding, Severity

SKIP_FRACTION = 0.01
STALL_FRACTION = 0.01
NO_TEXT = "no framework output in the input; pass the job's stdout/stderr log"
NCCL_ONLY = "only NCCL debug lines were scanned: pass the job's stdout/stderr"
EMPTY = "the scanned text files hold no line of text: pass the job's stdout/stderr"
STDERR = " (warnings go to stderr: the log must hold it, e.g. 2>&1)"
OVERFLOW_KINDS = ("apex_overflow", "deepspeed_overflow", "fairseq_overflow", "grad_overflow")


def _ranks(ranks: set[int]) -> str:
    return ", ".join(str(r) for r in sorted(ranks)[:16]) + (" …" if len(ranks) > 16 else "")


def _rank_list(ranks: set[int]) -> str:
    """``rank 2`` or ``ranks 0, 1``."""
    return f"rank{'s' if len(ranks) > 1 else ''} {_ranks(ranks)}"


def no_evidence(facts: Facts) -> str | None:
    """Why the scanned text cannot show a framework warning (no text file, blank files, NCCL
    debug lines only), or None when some job output was scanned."""
    if not facts.text_files:
        return NO_TEXT
    if not facts.other_text:
        return NCCL_ONLY if facts.nccl_text else EMPTY
    return None


def in_play(facts: Facts, rule) -> tuple[str, str | None]:
    """(``"; <evidence>"`` to end a clean verdict with, or ""; the ``not_checked`` reason or
    None) for one check's evidence ``rule`` (a function of :mod:`xpuperf.events.evidence`)."""
    missing = no_evidence(facts)
    if missing is not None:
        return "", missing
    seen, why = rule(facts.signs)
    return (f"; {seen}" if seen else ""), why


def _where(facts: Facts, kind: str) -> str:
    ev = facts.events[kind]
    return f"{ev.file}:{ev.line}"


def _check(name: str, title: str, found: list[Finding], clean: str, not_checked: str | None):
    """A Check from the findings of one check: problem if any is above info."""
    bad = [f for f in found if f.severity is not Severity.INFO]
    if bad:
        return Check(name, title, CheckStatus.PROBLEM, bad[0].message, tuple(f.code for f in bad))
    if not_checked is not None:
        return Check(name, title, CheckStatus.NOT_CHECKED, not_checked)
    return Check(name, title, CheckStatus.CLEAN, clean)


def _few_rule(facts: Facts, kinds: list[str]) -> str:
    """Lightning's threshold for the few-workers warnings seen, by the wording's version (the
    version ranges are in :mod:`xpuperf.events.patterns`)."""
    rules = []
    if "<= 2" in facts.few_workers_forms:
        rules.append("num_workers <= 2 on a machine with more than 2 CPUs (Lightning <= 2.0)")
    if "< 2" in facts.few_workers_forms:
        rules.append("num_workers < 2 (Lightning >= 2.1)")
    if "spawn_no_workers" in kinds:
        rules.append("num_workers=0 with ddp_spawn")
    return "; ".join(rules)


def ddp(facts: Facts, table: pd.DataFrame | None) -> tuple[list[Finding], Check]:
    """XP701 find_unused_parameters=True with nothing unused; XP702 unused parameters error."""
    out: list[Finding] = []
    ev = facts.events
    if "ddp_no_unused" in ev:
        ranks = facts.ranks["ddp_no_unused"]
        out.append(
            Finding(
                "XP701",
                Severity.WARNING,
                f"DDP warned {ev['ddp_no_unused'].count}× ({_where(facts, 'ddp_no_unused')}"
                f"{', ' + _rank_list(ranks) if ranks else ''}) that find_unused_parameters=True "
                "found no unused parameter (threshold: any): every step pays an extra traversal "
                "of the autograd graph (PyTorch reducer.cpp warning). The traversal runs inside "
                "backward, so the step breakdown counts it in compute time: its cost is not "
                "measured (time a few steps with find_unused_parameters=False and compare). Set "
                "find_unused_parameters=False (Lightning: strategy='ddp'), or static_graph=True "
                "if some branches are unused on some steps only.",
                {"count": ev["ddp_no_unused"].count, "ranks": sorted(ranks)},
            )
        )
    if "ddp_unused_error" in ev:
        ranks = facts.ranks["ddp_unused_error"] | set(facts.unused_params)
        n = ", ".join(f"rank {r}: {k}" for r, k in sorted(facts.unused_params.items()))
        out.append(
            Finding(
                "XP702",
                Severity.ERROR,
                f"DDP stopped: parameters got no gradient ({_where(facts, 'ddp_unused_error')}"
                f"{', ' + _rank_list(ranks) if ranks else ''}"
                f"{'; parameter indices listed — ' + n if n else ''}); threshold: any. Make every "
                "parameter take part in the loss or freeze it (requires_grad=False); only if the "
                "unused set changes from step to step pass find_unused_parameters=True (costs an "
                "autograd traversal a step). TORCH_DISTRIBUTED_DEBUG=INFO names the parameters.",
                {"ranks": sorted(ranks), "unused_indices": facts.unused_params},
            )
        )
    seen, why = in_play(facts, evidence.ddp)
    return out, _check(
        "events.ddp_unused_parameters",
        "DDP find_unused_parameters setting",
        out,
        f"no DDP unused-parameter warning or error in {facts.lines} lines{STDERR}{seen}",
        why,
    )


def workers(facts: Facts, table: pd.DataFrame | None) -> tuple[list[Finding], Check]:
    """XP703 workers re-created each epoch (ddp_spawn), XP704 too few workers, XP712 measured
    inter-epoch stall."""
    out: list[Finding] = []
    ev = facts.events
    stall = costs.epoch_stall(table, facts.steps_per_epoch) if table is not None else None
    measured = (
        f"measured stall {stall.stall_s:.2f} s at each of {stall.boundaries} epoch starts "
        f"({stall.fraction:.1%} of the summed step time)"
        if stall is not None
        else "stall not measured (needs every step and the epoch length in the log)"
    )
    spawn = [
        k
        for k in ("spawn_not_persistent", "spawn_do_not_mix", "spawn_method_not_persistent")
        if k in ev
    ]
    if spawn:
        if spawn == ["spawn_method_not_persistent"]:  # Lightning >= 2.1 names the loader
            loaders = sorted(facts.spawn_loaders)
            what = (
                f"{', '.join(repr(n) for n in loaders)} "
                f"{'starts its' if len(loaders) == 1 else 'start their'} DataLoader workers with "
                "the spawn start method (strategy='ddp_spawn' or multiprocessing_context="
                "'spawn') and persistent_workers=False, so the workers are re-created at every "
                "epoch"
            )
        else:
            what = "DataLoader workers are re-created at every epoch with ddp_spawn"
        out.append(
            Finding(
                "XP703",
                Severity.WARNING,
                f"Lightning warned that {what} ({_where(facts, spawn[0])}); threshold: any. "
                "Each epoch starts with an inter-epoch stall while workers start and re-load "
                f"the dataset; {measured}. Set persistent_workers=True in the DataLoader, or "
                "use strategy='ddp'.",
                {
                    "kinds": spawn,
                    "loaders": sorted(facts.spawn_loaders),
                    "stall_s": stall.stall_s if stall else None,
                },
            )
        )
    few = [k for k in ("few_workers", "spawn_no_workers") if k in ev]
    if few:
        names = ", ".join(sorted(facts.few_workers_loaders)) or "a dataloader"
        hint = (
            f"num_workers={facts.suggested_workers}"
            if facts.suggested_workers
            else (
                f"up to {facts.cpus} (CPUs on the machine) / ranks per node" if facts.cpus else ""
            )
        )
        out.append(
            Finding(
                "XP704",
                Severity.WARNING,
                f"Lightning warned that {names} has too few DataLoader workers "
                f"({_where(facts, few[0])}; threshold: Lightning's own, {_few_rule(facts, few)})"
                ": data loading may bottleneck the step. Raise num_workers"
                f"{' (' + hint + ')' if hint else ''} and check data_s in the step breakdown.",
                {
                    "loaders": sorted(facts.few_workers_loaders),
                    "cpus": facts.cpus,
                    "rules": sorted(facts.few_workers_forms),
                },
            )
        )
    if "loader_too_many_workers" in ev:
        out.append(_too_many_workers(facts))
    if stall is not None and stall.fraction > STALL_FRACTION and not spawn:
        out.append(
            Finding(
                "XP712",
                Severity.WARNING,
                f"Inter-epoch stall of {stall.stall_s:.2f} s at each of {stall.boundaries} epoch "
                f"starts ({stall.median_step_s:.3f} s median step), {stall.fraction:.1%} of the "
                f"summed step time (threshold {STALL_FRACTION:.0%}): DataLoader workers are "
                "re-created at each epoch. Set persistent_workers=True in the DataLoader.",
                {"stall_s": stall.stall_s, "epochs": stall.boundaries, "fraction": stall.fraction},
            )
        )
    seen, why = in_play(facts, evidence.loader)
    clean = f"no DataLoader worker warning in {facts.lines} lines{STDERR}; {measured}{seen}"
    if why is not None and stall is not None:
        why += f"; {measured}"
    return out, _check(
        "events.dataloader_workers",
        "DataLoader workers (kept between epochs, neither too few nor more than the CPUs)",
        out,
        clean,
        why,
    )


def _too_many_workers(facts: Facts) -> Finding:
    """XP713: PyTorch's DataLoader warned that num_workers exceeds the CPUs the process may use
    (torch/utils/data/dataloader.py, check_worker_number_rationality: num_workers > the
    suggested max, len(os.sched_getaffinity(0)) or os.cpu_count())."""
    n, cap, procs = facts.loader_workers or 0, facts.loader_suggested or 1, facts.nproc
    ranks = facts.ranks["loader_too_many_workers"]
    src = (
        "os.cpu_count(): the cpuset was not taken into account, fewer CPUs may be usable"
        if facts.loader_cpuset_unchecked
        else "the CPUs the process may run on"
    )
    per = max(cap // procs, 1) if procs else None
    limit = (
        f"{cap} CPUs / {procs} processes per node = {per}, when the processes share these CPUs"
        if per is not None
        else f"{cap} CPUs / the processes per node"
    )
    return Finding(
        "XP713",
        Severity.WARNING,
        f"PyTorch's DataLoader warned that it starts {n} worker processes (num_workers={n} in "
        f"one process) while its suggested max is {cap} ({src}; "
        f"{_where(facts, 'loader_too_many_workers')}{', ' + _rank_list(ranks) if ranks else ''}"
        f"); threshold: the suggested max, {cap}. Workers beyond the CPUs contend with each other "
        "and the training processes, and can slow or freeze data loading. Set num_workers per "
        f"process ≤ CPUs / processes per node ({limit}), and persistent_workers=True so the "
        "workers start once instead of at every epoch.",
        {"workers": n, "suggested_max": cap, "procs": procs, "per_process_max": per},
    )


def worker_crash(facts: Facts) -> tuple[list[Finding], Check]:
    """XP711 a DataLoader worker was killed."""
    out: list[Finding] = []
    if "worker_killed" in facts.events:
        sig = ", ".join(sorted(facts.worker_signals)) or "unknown signal"
        shm = "Bus error" in facts.worker_signals
        fix = (
            "shared memory (/dev/shm) is too small: raise it (docker --shm-size, a larger "
            "tmpfs) or lower num_workers / prefetch_factor"
            if shm
            else "a worker died (out of host memory is the usual cause: check dmesg for the "
            "OOM killer); lower num_workers or the per-worker memory"
        )
        out.append(
            Finding(
                "XP711",
                Severity.ERROR,
                f"A DataLoader worker was killed ({sig}; {facts.events['worker_killed'].count} "
                f"lines, first {_where(facts, 'worker_killed')}); threshold: any. {fix}.",
                {"signals": sorted(facts.worker_signals), "pids": sorted(facts.worker_pids)},
            )
        )
    seen, why = in_play(facts, evidence.loader)
    return out, _check(
        "events.dataloader_worker_crash",
        "DataLoader worker crashes",
        out,
        f"no DataLoader worker crash in {facts.lines} lines{STDERR}{seen}",
        why,
    )
