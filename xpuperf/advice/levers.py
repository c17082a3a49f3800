"""Search each lever of the cost model at the target card count and rank the fixes by gain.

Levers (background.md "The levers"): bucket size (sweep 1–512 MiB), collective algorithm
(including NCCL's own default choice when the plan assumes the best), hierarchical allreduce on/off,
ring order (node-contiguous vs the order in effect), NIC per card (a hardware what-if), the input
levers when an input pipeline is modelled (loader workers, prefetch depth, pinned memory, NUMA
binding, a faster pipeline: :mod:`xpuperf.advice.input_levers`), a deterministic slow card
(measured by ``--from-log``), and fp16 gradient allreduce —
the only lever that changes the math of training, flagged ``changes_math`` and said in its
reason (background.md rule 1). Every speedup comes from
:meth:`~xpuperf.costmodel.estimate.Planner.point`; a fix's ``gain`` = speedup_after −
speedup_before (speedup points, 0.05 = 5 points); speedups are today's one card alone / step at
N, so input fixes (which change one card's step too) rank on the same scale as the others.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xpuperf.advice import settings as st
from xpuperf.advice.input_levers import TIE, input_fixes
from xpuperf.costmodel import comm
from xpuperf.costmodel.estimate import Planner, Point, Settings

BUCKET_SWEEP_MB: tuple[float, ...] = (1, 2, 4, 8, 16, 25, 32, 64, 128, 256, 512)
"""Bucket sizes tried, MiB (25 = DDP's default)."""
MIN_GAIN = 5e-4
"""Fixes that gain less than this (0.05 speedup points) are not listed."""
DEFAULT_BUCKET_MB = {"ddp": 25.0, "horovod": 128.0, "deepspeed": None, "tensor": None}


@dataclass(frozen=True)
class Fix:
    """One ranked fix.

    Attributes:
        name: short title (``"bucket size"``, ``"collective algorithm"``, …).
        lever: the lever searched (``bucket``, ``algorithm``, ``hierarchical``, ``ring-order``,
            ``nic-per-card``, ``workers``, ``prefetch``, ``pinned``, ``numa-binding``, ``input``,
            ``straggler``, ``fp16-allreduce``).
        setting: what to write in the user's framework.
        speedup_before, speedup_after: at ``cards``; gain = after − before.
        reason: one sentence.
        changes_math: True when the fix changes the numerics of training.
        value: the lever's chosen value (bucket MiB, algorithm name, …).
        applied: the plan's settings with this fix applied (None: not recorded).
    """

    name: str
    lever: str
    setting: str
    cards: int
    speedup_before: float
    speedup_after: float
    reason: str
    changes_math: bool = False
    value: object = None
    applied: Settings | None = None

    @property
    def gain(self) -> float:
        """speedup_after − speedup_before."""
        return self.speedup_after - self.speedup_before


def _best(planner: Planner, cards: int, variants: list[tuple[object, Settings]]):
    scored = [(planner.point(cards, s), v, s) for v, s in variants]
    return max(scored, key=lambda x: x[0].speedup)


def _bucket(planner: Planner, cards: int, s: Settings, base: Point) -> Fix | None:
    variants = [(mb, replace(s, bucket_mb=mb)) for mb in BUCKET_SWEEP_MB]
    pt, mb, applied = _best(planner, cards, variants)
    current = s.bucket_mb or DEFAULT_BUCKET_MB.get(s.framework)
    now = f"{current:g} MiB" if current else "the framework default"
    if s.framework == "tensor":
        now = "one allreduce per tensor"
    why = (
        f"{mb:g} MiB buckets balance per-call latency ({pt.n_buckets} calls instead of "
        f"{base.n_buckets}) against overlap with backward; today: {now}"
    )
    return Fix("bucket size", "bucket", st.bucket_setting(s.framework, float(mb), s.dtype), cards,
               base.speedup, pt.speedup, why, value=mb, applied=applied)  # fmt: skip


def _algorithm(planner: Planner, cards: int, s: Settings, base: Point) -> list[Fix]:
    """Flat algorithms (lever ``algorithm``) and 2D forms (lever ``hierarchical``) separately."""
    algos = comm.candidates(planner.cluster)
    flat = [a for a in algos if not a.startswith("2d")]
    two_d = [a for a in algos if a.startswith("2d")]
    # the plan turns "auto" into NCCL's pick (advice/plan.py); a direct caller may not have
    before = planner.point(cards, replace(s, algorithm="nccl")) if s.algorithm == "auto" else base
    if before.algorithm.startswith("nccl:"):
        now = f"NCCL's own tuning picks {before.algorithm.removeprefix('nccl:')} for these buckets"
    else:
        now = f"today: {s.algorithm}"
    current_2d = (s.algorithm if s.algorithm != "auto" else base.algorithm).startswith("2d")
    fixes = []
    pf, af, sf = _best(planner, cards, [(a, replace(s, algorithm=a)) for a in flat])
    if not current_2d:
        why = f"{now}; the model ranks {af} first among flat algorithms at {cards} cards"
        fixes.append(Fix("collective algorithm", "algorithm", st.algorithm_setting(af), cards,
                         before.speedup, pf.speedup, why, value=af, applied=sf))  # fmt: skip
    if cards > planner.g and two_d:
        ph, ah, sh = _best(planner, cards, [(a, replace(s, algorithm=a)) for a in two_d])
        on = not current_2d
        pick, a_pick, s_pick = (ph, ah, sh) if on else (pf, af, sf)
        why = (
            f"hierarchical {'on' if on else 'off'}: {ah} reaches speedup {ph.speedup:.3f}, the "
            f"best flat algorithm ({af}) {pf.speedup:.3f}; {now}"
        )
        fixes.append(Fix(f"hierarchical allreduce {'on' if on else 'off'}", "hierarchical",
                         st.algorithm_setting(a_pick), cards, before.speedup, pick.speedup, why,
                         value=a_pick, applied=s_pick))  # fmt: skip
    return fixes


def _ring_order(planner: Planner, cards: int, s: Settings, base: Point) -> Fix | None:
    if s.ring_order == "node-contiguous" or cards <= planner.g:
        return None
    applied = replace(s, ring_order="node-contiguous")
    pt = planner.point(cards, applied)
    why = (
        f"with the {s.ring_order} order every ring step crosses a NIC; node-contiguous order "
        "crosses nodes only 2(M−1) times and gives each ring edge all of a node's NICs"
    )
    return Fix("ring order", "ring-order", st.ring_order_setting(), cards, base.speedup,
               pt.speedup, why, value="node-contiguous", applied=applied)  # fmt: skip


def _nic(planner: Planner, cards: int, s: Settings, base: Point) -> Fix | None:
    lv = planner.levels(cards, s)
    if s.nic_per_card or cards <= planner.g or lv.card_net_bw_GBps >= lv.leader_net_bw_GBps:
        return None
    applied = replace(s, nic_per_card=True)
    pt = planner.point(cards, applied)
    why = (
        f"cards share NICs ({lv.card_net_bw_GBps:g} GB/s per card when all send); one NIC per "
        f"card gives each {lv.leader_net_bw_GBps:g} GB/s (EFLOPS design) — a hardware change"
    )
    return Fix("NIC per card", "nic-per-card", st.nic_setting(planner.g), cards, base.speedup,
               pt.speedup, why, value=planner.g, applied=applied)  # fmt: skip


def _straggler(planner: Planner, cards: int, s: Settings, base: Point) -> Fix | None:
    if s.slowest_factor <= 1.0:
        return None
    applied = replace(s, slowest_factor=1.0)
    pt = planner.point(cards, applied)
    why = (
        f"every step waits for the slowest card, {s.slowest_factor - 1:.1%} slower than the "
        "median one (a deterministic straggler: step ≥ slowest card's compute, formulas.md §6)"
    )
    setting = (
        "find the slow rank (xpuperf analyze on the run's logs) and repair or exclude its card "
        "(clocks/thermals, PCIe link width, CPU affinity, a noisy neighbour)"
    )
    return Fix("slow card", "straggler", setting, cards, base.speedup, pt.speedup, why,
               value=1.0, applied=applied)  # fmt: skip


def _fp16(planner: Planner, cards: int, s: Settings, base: Point) -> Fix | None:
    if s.dtype != "fp32" or cards == 1:
        return None
    applied = replace(s, dtype="fp16")
    pt = planner.point(cards, applied)
    why = (
        "allreducing gradients in fp16 halves the bytes — CHANGES THE MATH of training "
        "(gradient precision); check convergence before adopting it"
    )
    return Fix("fp16 gradient allreduce", "fp16-allreduce", st.fp16_setting(s.framework), cards,
               base.speedup, pt.speedup, why, changes_math=True, value="fp16",
               applied=applied)  # fmt: skip


def rank_fixes(planner: Planner, cards: int, settings: Settings | None = None) -> list[Fix]:
    """Every lever searched at ``cards`` (at one card only the input levers); fixes that gain at
    least :data:`MIN_GAIN` and do not end below today's speedup, best first (fixes that change
    the math of training after the others at equal gain)."""
    s = settings or Settings()
    base = planner.point(cards, s)
    found: list[Fix | None] = []
    if cards > 1:  # one card: no communication, only the input pipeline can be fixed
        found.append(_bucket(planner, cards, s, base))
        found += _algorithm(planner, cards, s, base)
        found += [f(planner, cards, s, base) for f in (_ring_order, _nic, _straggler, _fp16)]
    found += _keep_input(input_fixes(planner, cards, s, base))
    # a fix must gain against its own "before" and must not end below the plan's current
    # speedup (with algorithm auto, "before" is NCCL's choice while the plan already assumes
    # the best algorithm: that fix ends AT the current speedup; a 2D form ending below it is
    # worse than what the plan assumes)
    fixes = [f for f in found if f is not None and f.gain >= MIN_GAIN
             and f.speedup_after >= base.speedup - TIE]  # fmt: skip
    return sorted(fixes, key=lambda f: (-round(f.gain, 6), f.changes_math, f.name))


def _keep_input(fixes: list[Fix]) -> list[Fix]:
    """Drop the "faster input pipeline" what-if when a setting already gains as much."""
    best = max((f.gain for f in fixes if f.lever != "input"), default=float("-inf"))
    return [f for f in fixes if f.lever != "input" or f.gain > best + TIE]
