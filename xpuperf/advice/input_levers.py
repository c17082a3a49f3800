"""Input-pipeline levers: loader workers, prefetch depth, pinned memory, NUMA binding, and a faster
pipeline when nothing else hides the stall (formulas.md §5; background.md "Data input",
"Host / NUMA").

Every speedup here is the cost model's (today's one card alone / step at N,
:mod:`xpuperf.costmodel.estimate`): input fixes and communication fixes rank on one scale —
throughput at N — and an input fix that also makes one card faster can pass 1.0.
"""

from __future__ import annotations

from dataclasses import replace

from xpuperf.costmodel import input as inp
from xpuperf.costmodel.estimate import Planner, Point, Settings
from xpuperf.topology.model import Node

WORKER_SWEEP: tuple[int, ...] = (1, 2, 4, 6, 8, 12, 16, 24, 32)
"""DataLoader ``num_workers`` tried (capped at the node's CPUs per card when the topology says)."""
PREFETCH_SWEEP: tuple[int, ...] = (1, 2, 4, 8)
"""``prefetch_factor`` values tried (only when measured input times give jitter to absorb)."""
TIE = 5e-4
"""The smallest setting within this much speedup of the best is the one recommended."""


def loader_of(s: Settings) -> inp.Loader | None:
    """The loader the settings model: ``s.loader``, or one background worker for
    ``input_time_s`` alone, or None (no input modelled)."""
    if s.loader is not None:
        return s.loader
    return None if s.input_time_s is None else inp.Loader(s.input_time_s)


def dataloader_setting(lo: inp.Loader) -> str:
    """``DataLoader(...)`` arguments for a loader (PyTorch names)."""
    if lo.workers == 0:
        return f"DataLoader(..., num_workers=0, pin_memory={lo.pinned})"
    return (f"DataLoader(..., num_workers={lo.workers}, prefetch_factor={lo.prefetch_factor}, "
            f"pin_memory={lo.pinned})")  # fmt: skip


def numa_setting(node: Node) -> str:
    """How to bind each rank's process, workers and pinned buffers to its card's NUMA node."""
    by_numa: dict[int, list[int]] = {}
    for d in node.devices:
        if d.numa_node is not None:
            by_numa.setdefault(d.numa_node, []).append(d.index)
    if not by_numa:
        per = (
            "numactl --cpunodebind=N --membind=N with N = the card's NUMA node (nvidia-smi topo -m)"
        )
    else:
        per = "; ".join(
            f"numactl --cpunodebind={n} --membind={n} for local ranks {_span(cards)}"
            for n, cards in sorted(by_numa.items())
        )
    return f"torchrun --numa-binding=node (PyTorch ≥ 2.9), or per rank: {per}"


def _span(cards: list[int]) -> str:
    c = sorted(cards)
    if c == list(range(c[0], c[-1] + 1)) and len(c) > 1:
        return f"{c[0]}–{c[-1]}"
    return ",".join(map(str, c))


def _fix(name: str, lever: str, setting: str, cards: int, before: float, pt: Point, why: str,
         value: object, applied: Settings):  # fmt: skip
    from xpuperf.advice.levers import Fix

    return Fix(name, lever, setting, cards, before, pt.speedup, why, value=value,
               applied=applied)  # fmt: skip


def _sweep(planner: Planner, cards: int, s: Settings, lo: inp.Loader, field: str,
           values: list[int]) -> tuple[Point, int, Settings] | None:  # fmt: skip
    tried = [(v, replace(s, loader=replace(lo, **{field: v}))) for v in values]
    if not tried:
        return None
    scored = [(planner.point(cards, t), v, t) for v, t in tried]
    best = min(p.step_time_s for p, _, _ in scored)
    return next(x for x in scored if x[0].step_time_s <= best * (1 + TIE))


def input_fixes(planner: Planner, cards: int, s: Settings, base: Point) -> list:
    """Fixes of the input levers at ``cards`` (any gain; the caller filters and ranks)."""
    lo = loader_of(s)
    if lo is None:
        return []
    host = planner.host
    sync = 0.0 if lo.pinned else inp.h2d_s(lo.batch_bytes, host, lo.numa, pinned=False)
    c_ms = (base.step_time_s - base.input_stall_s + sync) * 1e3  # the consumer's time per batch
    per_batch = lo.batch_time_s * inp.cpu_factor(lo.numa, host)
    out = []
    cap = host.cpus_per_card or max(WORKER_SWEEP)
    got = _sweep(planner, cards, s, lo, "workers",
                 [w for w in WORKER_SWEEP if w <= cap and w != lo.workers])  # fmt: skip
    if got is not None:
        pt, w, t = got
        now = "in the training process (num_workers=0)" if lo.workers == 0 else (
            f"by {lo.workers} worker{'s' if lo.workers > 1 else ''}")  # fmt: skip
        who = f"{w} workers deliver" if w > 1 else "1 worker delivers"
        why = (f"{who} a batch every {per_batch / w * 1e3:.3g} ms against a {c_ms:.3g} ms "
               f"step; today the batch ({per_batch * 1e3:.3g} ms of CPU) is made {now}; at "
               f"most {cap} CPUs per card")  # fmt: skip
        out.append(_fix("loader workers", "workers", dataloader_setting(t.loader), cards,
                        base.speedup, pt, why, w, t))  # fmt: skip
    if lo.workers >= 1 and lo.samples is not None:
        got = _sweep(planner, cards, s, lo, "prefetch_factor",
                     [k for k in PREFETCH_SWEEP if k != lo.prefetch_factor])  # fmt: skip
        if got is not None:
            pt, k, t = got
            why = (f"a queue of {k}×{lo.workers} batches absorbs the jitter of the measured "
                   f"input times ({lo.samples}); depth cannot hide a mean deficit")  # fmt: skip
            out.append(_fix("prefetch depth", "prefetch", dataloader_setting(t.loader), cards,
                            base.speedup, pt, why, k, t))  # fmt: skip
    if not lo.pinned and lo.batch_bytes > 0:
        t = replace(s, loader=replace(lo, pinned=True))
        sync = inp.h2d_s(lo.batch_bytes, host, lo.numa, pinned=False)
        why = (f"pageable copies of {lo.batch_bytes / 1e6:.3g} MB per step are staged through a "
               f"driver buffer and block the step ({sync * 1e3:.3g} ms); pinned copies overlap "
               "compute")  # fmt: skip
        out.append(_fix("pinned memory", "pinned", dataloader_setting(t.loader)
                        + " and batch.to(device, non_blocking=True)", cards, base.speedup,
                        planner.point(cards, t), why, True, t))  # fmt: skip
    if lo.numa != "local" and (lo.numa == "remote" or host.numa_nodes > 1):
        t = replace(s, loader=replace(lo, numa="local"))
        frac = inp.remote_fraction(lo.numa, host)
        extra = inp.cpu_factor(lo.numa, host) - 1
        why = (f"{frac:.0%} of the loader's work runs on a NUMA node remote from the card "
               f"({lo.numa}), at +{inp.REMOTE_CPU_FACTOR - 1:.0%} CPU time there (+{extra:.0%} "
               f"per batch; PyTorch: NUMA binding gains 1–10 %), and as much of the H2D "
               f"copying crosses the {host.sys_GBps:g} GB/s inter-socket link")  # fmt: skip
        setting = numa_setting(planner.cluster.nodes[0])
        out.append(_fix("NUMA binding", "numa-binding", setting, cards, base.speedup,
                        planner.point(cards, t), why, "local", t))  # fmt: skip
    if base.input_stall_s > 0:
        out += _faster_pipeline(planner, cards, s, lo, base, cap)
    return out


def _faster_pipeline(planner: Planner, cards: int, s: Settings, lo: inp.Loader, base: Point,
                     cap: int) -> list:  # fmt: skip
    """What-if "no stall", listed when even every setting at once (most workers within the CPUs
    per card, pinned, NUMA-bound, deepest prefetch) leaves a mean deficit: how much cheaper each
    batch must get."""
    w = max([x for x in WORKER_SWEEP if x <= cap] or [1])
    best = replace(lo, workers=max(w, lo.workers), pinned=True, numa="local",
                   prefetch_factor=max(*PREFETCH_SWEEP, lo.prefetch_factor))  # fmt: skip
    at_best = planner.point(cards, replace(s, loader=best))
    c_s = at_best.step_time_s - at_best.input_stall_s
    need = best.batch_time_s / best.workers / c_s
    if at_best.input_stall_s <= 0 or need <= 1:
        return []
    t = replace(s, loader=None, input_time_s=None)
    why = (f"the stall is {base.input_stall_s * 1e3:.3g} ms per step at {cards} cards; even "
           f"{best.workers} NUMA-bound workers with pinned memory need "
           f"{best.batch_time_s / best.workers * 1e3:.3g} ms per batch against a "
           f"{c_s * 1e3:.3g} ms step — prefetch depth cannot hide a deficit "
           "(formulas.md §5)")  # fmt: skip
    setting = (f"make each batch {need:.2f}× cheaper to produce (GPU decode, e.g. NVIDIA DALI; "
               "pre-processed/cached samples) or give each card more CPU cores")  # fmt: skip
    return [_fix("input pipeline", "input", setting, cards, base.speedup,
                 planner.point(cards, t), why, None, t)]  # fmt: skip
