"""A log cut inside its last step: the trailing steps only some ranks reached are dropped.

An excerpt or a job killed mid-step ends with a step printed by some ranks and not others (16
Horovod ranks print step 10, the file stops after 7 of them). Counted as a step, it is a step
with 7/16 of the samples: the job throughput of that step falls by half and the FPS line looks
jittery. A rank that stopped long before the others (a dead rank, a truncated per-rank file) is
not a cut line: only a short tail — at most :data:`MAX_TAIL_FRACTION` of the steps, at least one
step — is dropped; anything longer stays for XP403 (ranks with fewer steps) to report.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MAX_TAIL_FRACTION = 0.05
"""Largest share of the distinct steps a dropped tail may hold (at least one step)."""


def drop_cut_tail(table: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """``table`` without the trailing steps that not every rank reached, and a warning naming
    them; ``(table, None)`` when every rank reached the last step, there is one rank, or the tail
    is longer than :data:`MAX_TAIL_FRACTION` of the steps.

    Args:
        table: step rows with ``rank`` and ``step`` columns (any order), one row per (rank, step).

    Returns:
        The kept rows (the same frame when nothing is dropped) and the warning, e.g.
        "the log ends inside step 10: 7 of 16 ranks printed it; dropped its 7 row(s) (an
        incomplete step, not a slow one)".
    """
    rank = table["rank"].to_numpy()
    step = table["step"].to_numpy()
    last = pd.Series(step).groupby(rank).max()  # hashed: one pass over a large table
    common = last.min()
    if len(last) < 2 or last.max() == common:
        return table, None
    tail = step > common
    tail_steps = np.unique(step[tail])
    if len(tail_steps) > max(1, MAX_TAIL_FRACTION * pd.Series(step).nunique()):
        return table, None
    shown = ", ".join(str(s) for s in tail_steps[:5]) + (" …" if len(tail_steps) > 5 else "")
    reached = len(np.unique(rank[tail]))
    which = f"step {shown}" if len(tail_steps) == 1 else f"steps {shown}"
    warning = (
        f"the log ends inside {which}: {reached} of {len(last)} ranks printed it; dropped "
        f"its {int(tail.sum())} row(s) (an incomplete step, not a slow one)"
    )
    return table.loc[~tail].reset_index(drop=True), warning
