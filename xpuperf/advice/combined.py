"""The configuration fixes of a plan applied together: where the ranked fixes lead.

Each ranked fix (:mod:`xpuperf.advice.levers`) is scored alone against today's settings. Users
then ask what they get if they apply all of them. :func:`combine_fixes` answers for the fixes
that are configuration only — the levers in :data:`CONFIG_LEVERS`: no change to the math of
training (fp16 allreduce is left out), no hardware (NIC per card), no repair (a slow card) and no
what-if (a faster input pipeline). In rank order, each fix's change to the settings (the fields
of its ``applied`` settings that differ from today's, the loader field by field) is laid over
the settings reached so far and kept only if the cost model's speedup at the target rises by at
least :data:`MIN_STEP`; fixes of one lever can interact (buckets sized for one algorithm, two
settings of one loader), which is why each is re-scored on top of the ones before. The result
is the cost model's own speedup (today's one card alone / step), on the scale of every fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

from xpuperf.advice.levers import Fix
from xpuperf.costmodel.estimate import Planner, Settings

CONFIG_LEVERS = frozenset(
    {"bucket", "algorithm", "hierarchical", "ring-order", "workers", "prefetch", "pinned",
     "numa-binding"}
)  # fmt: skip
"""Levers whose fixes are settings of the user's framework or launcher."""
MIN_STEP = 1e-4
"""Smallest speedup rise (0.0001) for which a fix is kept on top of the ones before."""


@dataclass(frozen=True)
class Combined:
    """The configuration fixes applied together at ``cards``.

    Attributes:
        fixes: names of the fixes kept, in rank order.
        skipped: names of configuration fixes that no longer helped on top of the others.
        speedup_before: today's speedup at ``cards``; speedup_after: with the kept fixes.
        settings: the combined settings.
    """

    cards: int
    fixes: tuple[str, ...]
    skipped: tuple[str, ...]
    speedup_before: float
    speedup_after: float
    settings: Settings

    @property
    def gain(self) -> float:
        """speedup_after − speedup_before."""
        return self.speedup_after - self.speedup_before


def _changed(new: object, old: object) -> dict[str, object]:
    """Dataclass fields of ``new`` whose values differ from ``old``'s."""
    return {
        f.name: getattr(new, f.name)
        for f in fields(new)  # type: ignore[arg-type]
        if getattr(new, f.name) != getattr(old, f.name)
    }


def overlay(current: Settings, fix_settings: Settings, today: Settings) -> Settings:
    """``current`` with what ``fix_settings`` changed from ``today`` (a changed loader field by
    field, so that a workers fix and a pinned-memory fix both survive). Raises nothing new:
    the settings' own checks apply."""
    delta = _changed(fix_settings, today)
    loader = delta.pop("loader", None)
    out = replace(current, **delta)
    if loader is not None:
        if current.loader is None or today.loader is None:
            out = replace(out, loader=loader)
        else:
            out = replace(out, loader=replace(current.loader, **_changed(loader, today.loader)))
    return out


def combine_fixes(
    planner: Planner, cards: int, fixes: Sequence[Fix], settings: Settings
) -> Combined | None:
    """The configuration fixes among ``fixes`` applied together (module docstring).

    Returns None when fewer than two configuration fixes are kept (one fix together is the
    fix itself). Raises
    :class:`~xpuperf.costmodel.checks.CostModelError` only for counts the planner refuses.
    """
    usable = [f for f in fixes if f.lever in CONFIG_LEVERS and f.applied is not None]
    if len(usable) < 2:
        return None
    before = planner.point(cards, settings).speedup
    current, best = settings, before
    kept: list[str] = []
    skipped: list[str] = []
    for f in usable:
        trial = overlay(current, f.applied, settings)  # type: ignore[arg-type]
        speedup = planner.point(cards, trial).speedup
        if speedup >= best + MIN_STEP:
            current, best = trial, speedup
            kept.append(f.name)
        else:
            skipped.append(f.name)
    if len(kept) < 2:  # one fix kept: the fix itself, already listed
        return None
    return Combined(cards, tuple(kept), tuple(skipped), before, best, current)
