"""Ranked fixes: search each lever of the cost model and list what would gain the most.

Entry points: :func:`~xpuperf.advice.plan.make_plan` (estimate + fixes) and
:func:`~xpuperf.advice.levers.rank_fixes` (a prepared
:class:`~xpuperf.costmodel.estimate.Planner`, the target card count, the settings in effect) →
list of :class:`~xpuperf.advice.levers.Fix`, best first. Uses the cost model only; nothing here
prints or renders.
"""

from xpuperf.advice.levers import BUCKET_SWEEP_MB, Fix, rank_fixes
from xpuperf.advice.plan import PlanResult, make_plan

__all__ = ["BUCKET_SWEEP_MB", "Fix", "PlanResult", "make_plan", "rank_fixes"]
