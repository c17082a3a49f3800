"""Speedup vs cards with each ranked fix applied: one curve per fix, for the plan's reports.

Each fix is re-applied to the plan's :class:`~xpuperf.costmodel.estimate.Settings`
(:func:`fix_settings`: the fix's own ``applied`` settings when it records them, else its lever's
mapping) and the cost model's :meth:`~xpuperf.costmodel.estimate.Planner.point` is re-run at
every card count of the plan (plus the target count), so the curve at the target count equals
the fix's own ``speedup_after`` — checked here: a fix whose setting cannot be re-applied (an
unknown lever) or whose re-run disagrees gets no curve and a note says so.

A curve's speedup is the cost model's own (T_compute / step at N,
:mod:`xpuperf.costmodel.estimate`), so every fix is on one scale: communication fixes leave one
card's step alone (the curve starts where today's does), input fixes can lift it at N = 1 too;
none exceeds 1.0. Nothing here prints or renders.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from xpuperf.advice.levers import Fix
from xpuperf.costmodel.estimate import Planner, Settings

_APPLY: dict[str, Callable[[Settings, object], Settings]] = {
    "bucket": lambda s, v: replace(s, bucket_mb=float(v)),  # type: ignore[arg-type]
    "algorithm": lambda s, v: replace(s, algorithm=str(v)),
    "hierarchical": lambda s, v: replace(s, algorithm=str(v)),
    "ring-order": lambda s, v: replace(s, ring_order=str(v)),
    "nic-per-card": lambda s, v: replace(s, nic_per_card=True),
    "input": lambda s, v: replace(s, input_time_s=None),
    "fp16-allreduce": lambda s, v: replace(s, dtype="fp16"),
}
"""lever → how its fix changes the settings (``Fix.value`` is the lever's chosen value)."""
REL_TOL = 1e-9
"""Largest relative difference allowed between a curve at the target and ``speedup_after``."""


@dataclass(frozen=True)
class FixCurve:
    """One fix: ``speedup[i]`` and ``step_time_s[i]`` (seconds) at ``FixCurves.cards[i]``."""

    name: str
    lever: str
    setting: str
    speedup: tuple[float, ...]
    step_time_s: tuple[float, ...]


@dataclass(frozen=True)
class FixCurves:
    """Speedup vs cards for the plan's settings (``current``) and with each fix (``fixes``, in the
    plan's rank order). ``cards`` = the plan's card counts plus the target, ascending; ``notes``
    name the fixes left without a curve and why."""

    cards: tuple[int, ...]
    current: tuple[float, ...]
    fixes: tuple[FixCurve, ...]
    notes: tuple[str, ...] = ()


def fix_settings(fix: Fix, settings: Settings) -> Settings | None:
    """``settings`` with ``fix`` applied; None when the fix's lever is not known here."""
    if fix.applied is not None:
        return fix.applied
    apply = _APPLY.get(fix.lever)
    return None if apply is None else apply(settings, fix.value)


def fix_curves(
    planner: Planner,
    cards: Sequence[int],
    target: int,
    fixes: Sequence[Fix],
    settings: Settings,
) -> FixCurves:
    """Curves of the current settings and of each fix over ``cards`` ∪ {``target``}.

    Args:
        planner: the plan's prepared cluster and workload.
        cards: card counts of the plan (each already accepted by ``planner.check_cards``).
        target: the card count the fixes were ranked at.
        fixes: the ranked fixes (:func:`~xpuperf.advice.levers.rank_fixes`).
        settings: the settings the plan was estimated with.

    Raises :class:`~xpuperf.costmodel.checks.CostModelError` only for counts the planner refuses.
    """
    counts = tuple(sorted({*cards, target}))
    current = tuple(planner.point(c, settings).speedup for c in counts)
    out: list[FixCurve] = []
    notes: list[str] = []
    for f in fixes:
        s = fix_settings(f, settings)
        if s is None:
            notes.append(f"no curve for {f.name!r}: lever {f.lever!r} has no settings mapping")
            continue
        pts = [planner.point(c, s) for c in counts]
        sp = tuple(p.speedup for p in pts)
        at_target = sp[counts.index(target)]
        if not math.isclose(at_target, f.speedup_after, rel_tol=REL_TOL, abs_tol=1e-12):
            notes.append(
                f"no curve for {f.name!r}: re-running its setting gives {at_target:.4f} at "
                f"{target} cards, not its {f.speedup_after:.4f}"
            )
            continue
        out.append(FixCurve(f.name, f.lever, f.setting, sp, tuple(p.step_time_s for p in pts)))
    return FixCurves(counts, current, tuple(out), tuple(notes))
