"""Ranked fixes: search each lever of the cost model and list what would gain the most.

Entry points: :func:`~xpuperf.advice.plan.make_plan` (estimate + fixes) and
:func:`~xpuperf.advice.levers.rank_fixes` (a prepared
:class:`~xpuperf.costmodel.estimate.Planner`, the target card count, the settings in effect) →
list of :class:`~xpuperf.advice.levers.Fix`, best first;
:func:`~xpuperf.advice.combined.combine_fixes` (the configuration fixes applied together). Uses
the cost model only; nothing here prints or renders.
"""

from xpuperf.advice.combined import Combined, combine_fixes
from xpuperf.advice.levers import BUCKET_SWEEP_MB, Fix, rank_fixes
from xpuperf.advice.plan import PlanResult, make_plan

__all__ = [
    "BUCKET_SWEEP_MB",
    "Combined",
    "Fix",
    "PlanResult",
    "combine_fixes",
    "make_plan",
    "rank_fixes",
]
