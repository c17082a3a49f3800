"""The whole plan: estimate at every card count, then ranked fixes at the target count."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xpuperf.advice.combined import Combined, combine_fixes
from xpuperf.advice.curves import FixCurves, fix_curves
from xpuperf.advice.levers import Fix, rank_fixes
from xpuperf.costmodel.calibrated import Calibration
from xpuperf.costmodel.estimate import DEFAULT_CARDS, Estimate, Planner, Settings
from xpuperf.costmodel.workloads import Workload
from xpuperf.topology.model import Cluster


@dataclass(frozen=True)
class PlanResult:
    """What ``xpuperf plan`` shows: the :class:`Estimate`, the target card count, the fixes
    (best first), notes about defaults that stood in for missing inputs, the speedup curves
    with each fix applied (:mod:`xpuperf.advice.curves`) and the configuration fixes applied
    together (:mod:`xpuperf.advice.combined`; None with fewer than two)."""

    estimate: Estimate
    target_cards: int
    fixes: tuple[Fix, ...]
    notes: tuple[str, ...] = ()
    fix_curves: FixCurves | None = None
    combined: Combined | None = None


def make_plan(
    cluster: Cluster,
    workload: Workload,
    step_time_s: float,
    *,
    cards: Sequence[int] = DEFAULT_CARDS,
    settings: Settings | None = None,
    batch_size: float | None = None,
    target_cards: int | None = None,
    notes: Sequence[str] = (),
    calibration: Calibration | None = None,
) -> PlanResult:
    """Estimate ``workload`` on ``cluster`` for ``cards`` and rank fixes at ``target_cards``
    (default the largest count). Raises :class:`~xpuperf.costmodel.checks.CostModelError` for
    bad inputs."""
    s = settings or Settings()
    planner = Planner(cluster, workload, step_time_s, batch_size, calibration)
    est = planner.estimate(cards, s)
    target = max(p.cards for p in est.points) if target_cards is None else target_cards
    planner.check_cards(target)
    fixes = tuple(rank_fixes(planner, target, s))
    curves = fix_curves(planner, [p.cards for p in est.points], target, fixes, s)
    together = combine_fixes(planner, target, fixes, s)
    return PlanResult(est, target, fixes, tuple(notes), curves, together)
