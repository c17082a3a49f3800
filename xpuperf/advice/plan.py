"""The whole plan: estimate at every card count, then ranked fixes at the target count."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from xpuperf.advice.combined import Combined, combine_fixes
from xpuperf.advice.curves import FixCurves, fix_curves
from xpuperf.advice.forecast import LadderForecast, calibrated_speedup, forecast_ladder
from xpuperf.advice.ladder import Ladder
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
    forecast: LadderForecast | None = None
    calibrated_fixes: tuple[CalibratedFix, ...] = ()


@dataclass(frozen=True)
class CalibratedFix:
    """A ranked fix re-scored on the model calibrated by a measured ladder: speedups at the
    target with the fitted sync and residual terms kept (:func:`~xpuperf.advice.forecast
    .calibrated_speedup`)."""

    name: str
    speedup_before: float
    speedup_after: float

    @property
    def gain(self) -> float:
        """speedup_after − speedup_before."""
        return self.speedup_after - self.speedup_before


LIBRARY_ALGORITHM = "nccl"
"""What ``--algorithm auto`` means for the headline: the algorithm the user's library picks.
NCCL (behind DDP, Horovod and DeepSpeed on GPUs) runs ring or tree, never halving-doubling, so
the table shows NCCL's own choice and hd/hdrm are fixes that need another library (issue 17,
scope 4)."""


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
    ladder: Ladder | None = None,
) -> PlanResult:
    """Estimate ``workload`` on ``cluster`` for ``cards`` and rank fixes at ``target_cards``
    (default the largest count); with a measured ``ladder`` also the calibrated forecast
    (:mod:`xpuperf.advice.forecast`) and the fixes re-scored on it. ``algorithm="auto"`` is the
    library's own choice (:data:`LIBRARY_ALGORITHM`): the headline is what the job runs today;
    other algorithms are fixes. Raises
    :class:`~xpuperf.costmodel.checks.CostModelError` for bad inputs and
    :class:`~xpuperf.errors.InputError` for a ladder that cannot support the forecast."""
    s = settings or Settings()
    if s.algorithm == "auto":
        s = replace(s, algorithm=LIBRARY_ALGORITHM)  # what the library runs today
    planner = Planner(cluster, workload, step_time_s, batch_size, calibration, reference=s)
    est = planner.estimate(cards, s)
    target = max(p.cards for p in est.points) if target_cards is None else target_cards
    planner.check_cards(target)
    fixes = tuple(rank_fixes(planner, target, s))
    curves = fix_curves(planner, [p.cards for p in est.points], target, fixes, s)
    together = combine_fixes(planner, target, fixes, s)
    fc, cal = None, ()
    if ladder is not None:
        fc, cal = _calibrated(planner, ladder, [p.cards for p in est.points], target, fixes, s)
    first = speedup_note(est.one_card_step_s, fixes, together)
    return PlanResult(est, target, fixes, (first, *notes), curves, together, fc, cal)


def speedup_note(one_card_s: float, fixes: Sequence[Fix], together: Combined | None) -> str:
    """What "speedup" means in the table and the fixes (the first note of every plan): per-card
    throughput over one card alone as it runs today, kept for every fix so that a fix's "after"
    is its throughput; above 1.0 is explained when a fix or the fixes together get there."""
    text = (
        f"speedup = per-card throughput / one card alone today ({one_card_s * 1e3:.1f} ms per "
        "step); the fixes keep that denominator, so their gain is throughput gained"
    )
    afters = [f.speedup_after for f in fixes]
    if together is not None:
        afters.append(together.speedup_after)
    if any(a > 1.0 for a in afters):
        text += "; above 1.0: the fix also makes one card faster than it is today"
    return text


def _calibrated(planner: Planner, ladder: Ladder, counts: list[int], target: int,
                fixes: Sequence[Fix], s: Settings) -> tuple[LadderForecast, tuple]:  # fmt: skip
    """The ladder's forecast at ``counts`` (+ target) and the fixes re-scored on it. The cost
    model runs without its own straggler terms: the sync wait comes from the ladder's jitter."""
    from xpuperf.costmodel.tail import TailDist

    quiet = replace(s, compute_cv=0.0, slowest_factor=1.0, straggler_tail=None)
    one = planner.point(1, quiet).step_time_s
    x = ladder.jitter
    tail = TailDist(x) if x is not None else None
    fc = forecast_ladder(ladder, sorted({*counts, target}), planner.g,
                         lambda n: planner.point(n, quiet).step_time_s - one,
                         (lambda n: max(0.0, tail.excess(n))) if tail else None)  # fmt: skip
    before = next(p.speedup for p in fc.points if p.cards == target)
    cal = []
    for f in fixes:
        if f.applied is None:
            continue
        a = replace(f.applied, compute_cv=0.0, slowest_factor=1.0, straggler_tail=None)
        d_n = planner.point(target, a).step_time_s - one
        d_1 = planner.point(1, a).step_time_s - one
        cal.append(CalibratedFix(f.name, before, calibrated_speedup(fc, target, d_n, d_1)))
    return fc, tuple(cal)
