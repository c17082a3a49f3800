"""Search each lever of the cost model at the target card count and rank the fixes by gain.

Levers (background.md "The levers"): bucket size (sweep 1–512 MiB), collective algorithm
(including NCCL's own default choice when the plan assumes the best), hierarchical allreduce on/off,
ring order (node-contiguous vs the order in effect), NIC per card (a hardware what-if), input
pipeline (when an input time is modelled), and fp16 gradient allreduce — the only lever that
changes the math of training, flagged ``changes_math`` and said in its reason (background.md
rule 1). Every speedup comes from :meth:`~xpuperf.costmodel.estimate.Planner.point`; a fix's
``gain`` = speedup_after − speedup_before (speedup points, 0.05 = 5 points).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xpuperf.advice import settings as st
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
            ``nic-per-card``, ``input``, ``fp16-allreduce``).
        setting: what to write in the user's framework.
        speedup_before, speedup_after: at ``cards``; gain = after − before.
        reason: one sentence.
        changes_math: True when the fix changes the numerics of training.
        value: the lever's chosen value (bucket MiB, algorithm name, …).
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

    @property
    def gain(self) -> float:
        """speedup_after − speedup_before."""
        return self.speedup_after - self.speedup_before


def _best(planner: Planner, cards: int, variants: list[tuple[object, Settings]]):
    scored = [(planner.point(cards, s), v, s) for v, s in variants]
    return max(scored, key=lambda x: x[0].speedup)


def _bucket(planner: Planner, cards: int, s: Settings, base: Point) -> Fix | None:
    variants = [(mb, replace(s, bucket_mb=mb)) for mb in BUCKET_SWEEP_MB]
    pt, mb, _ = _best(planner, cards, variants)
    current = s.bucket_mb or DEFAULT_BUCKET_MB.get(s.framework)
    now = f"{current:g} MiB" if current else "the framework default"
    if s.framework == "tensor":
        now = "one allreduce per tensor"
    why = (
        f"{mb:g} MiB buckets balance per-call latency ({pt.n_buckets} calls instead of "
        f"{base.n_buckets}) against overlap with backward; today: {now}"
    )
    return Fix("bucket size", "bucket", st.bucket_setting(s.framework, float(mb), s.dtype), cards,
               base.speedup, pt.speedup, why, value=mb)  # fmt: skip


def _algorithm(planner: Planner, cards: int, s: Settings, base: Point) -> list[Fix]:
    """Flat algorithms (lever ``algorithm``) and 2D forms (lever ``hierarchical``) separately."""
    algos = comm.candidates(planner.cluster)
    flat = [a for a in algos if not a.startswith("2d")]
    two_d = [a for a in algos if a.startswith("2d")]
    if s.algorithm == "auto":  # the plan already assumes the best: compare with NCCL's default
        before = planner.point(cards, replace(s, algorithm="nccl"))
        now = f"NCCL's own tuning picks {before.algorithm.removeprefix('nccl:')} for these buckets"
    else:
        before, now = base, f"today: {s.algorithm}"
    current_2d = (s.algorithm if s.algorithm != "auto" else base.algorithm).startswith("2d")
    fixes = []
    pf, af, _ = _best(planner, cards, [(a, replace(s, algorithm=a)) for a in flat])
    if not current_2d:
        why = f"{now}; the model ranks {af} first among flat algorithms at {cards} cards"
        fixes.append(Fix("collective algorithm", "algorithm", st.algorithm_setting(af), cards,
                         before.speedup, pf.speedup, why, value=af))  # fmt: skip
    if cards > planner.g and two_d:
        ph, ah, _ = _best(planner, cards, [(a, replace(s, algorithm=a)) for a in two_d])
        on = not current_2d
        pick, a_pick = (ph, ah) if on else (pf, af)
        why = (
            f"hierarchical {'on' if on else 'off'}: {ah} reaches speedup {ph.speedup:.3f}, the "
            f"best flat algorithm ({af}) {pf.speedup:.3f}; {now}"
        )
        fixes.append(Fix(f"hierarchical allreduce {'on' if on else 'off'}", "hierarchical",
                         st.algorithm_setting(a_pick), cards, before.speedup, pick.speedup, why,
                         value=a_pick))  # fmt: skip
    return fixes


def _ring_order(planner: Planner, cards: int, s: Settings, base: Point) -> Fix | None:
    if s.ring_order == "node-contiguous" or cards <= planner.g:
        return None
    pt = planner.point(cards, replace(s, ring_order="node-contiguous"))
    why = (
        f"with the {s.ring_order} order every ring step crosses a NIC; node-contiguous order "
        "crosses nodes only 2(M−1) times and gives each ring edge all of a node's NICs"
    )
    return Fix("ring order", "ring-order", st.ring_order_setting(), cards, base.speedup,
               pt.speedup, why, value="node-contiguous")  # fmt: skip


def _nic(planner: Planner, cards: int, s: Settings, base: Point) -> Fix | None:
    lv = planner.levels(cards, s)
    if s.nic_per_card or cards <= planner.g or lv.card_net_bw_GBps >= lv.leader_net_bw_GBps:
        return None
    pt = planner.point(cards, replace(s, nic_per_card=True))
    why = (
        f"cards share NICs ({lv.card_net_bw_GBps:g} GB/s per card when all send); one NIC per "
        f"card gives each {lv.leader_net_bw_GBps:g} GB/s (EFLOPS design) — a hardware change"
    )
    return Fix("NIC per card", "nic-per-card", st.nic_setting(planner.g), cards, base.speedup,
               pt.speedup, why, value=planner.g)  # fmt: skip


def _input(planner: Planner, cards: int, s: Settings, base: Point) -> Fix | None:
    if s.input_time_s is None or base.input_stall_s <= 0:
        return None
    pt = planner.point(cards, replace(s, input_time_s=None))
    one = planner.step_time_s  # speedups here are against one card's compute without a stall
    before, after = one / base.step_time_s, one / pt.step_time_s
    why = (
        f"input takes {s.input_time_s:.3g} s per step against {one:.3g} s of compute: a deficit "
        f"of {base.input_stall_s:.3g} s that prefetching cannot hide (formulas.md §5; speedups "
        "against one card's compute alone, since one card stalls too)"
    )
    return Fix("input pipeline", "input", st.input_setting(s.input_time_s, one), cards, before,
               after, why, value=one)  # fmt: skip


def _fp16(planner: Planner, cards: int, s: Settings, base: Point) -> Fix | None:
    if s.dtype != "fp32" or cards == 1:
        return None
    pt = planner.point(cards, replace(s, dtype="fp16"))
    why = (
        "allreducing gradients in fp16 halves the bytes — CHANGES THE MATH of training "
        "(gradient precision); check convergence before adopting it"
    )
    return Fix("fp16 gradient allreduce", "fp16-allreduce", st.fp16_setting(s.framework), cards,
               base.speedup, pt.speedup, why, changes_math=True, value="fp16")  # fmt: skip


def rank_fixes(planner: Planner, cards: int, settings: Settings | None = None) -> list[Fix]:
    """Every lever searched at ``cards``; fixes that gain at least :data:`MIN_GAIN`, best first
    (fixes that change the math of training after the others at equal gain)."""
    s = settings or Settings()
    base = planner.point(cards, s)
    if cards == 1:
        return []
    found: list[Fix | None] = [_bucket(planner, cards, s, base)]
    found += _algorithm(planner, cards, s, base)
    found += [f(planner, cards, s, base) for f in (_ring_order, _nic, _input, _fp16)]
    fixes = [f for f in found if f is not None and f.gain >= MIN_GAIN]
    return sorted(fixes, key=lambda f: (-round(f.gain, 6), f.changes_math, f.name))
