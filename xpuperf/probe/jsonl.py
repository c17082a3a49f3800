"""One step record → one JSON Lines line, fast (standard library only).

Floats get 9 significant digits (1 ns at 1 s) and ``t_end_s`` 6 decimals (1 µs of Unix time):
several times cheaper than ``json.dumps``' shortest round-trip repr, which dominated the probe's
cost per step. Other values, non-finite floats and unknown keys go through :func:`json.dumps`,
so every line is valid JSON (NaN as ``json.dumps`` writes it).
"""

from __future__ import annotations

import json
import math
from typing import Any

COLUMNS: tuple[str, ...] = (
    *("rank", "step", "step_time_s", "t_end_s", "samples", "node", "data_s", "forward_s"),
    *("backward_s", "comm_s", "optimizer_s", "compute_s", "tokens", "mfu"),
)
"""The canonical step-table columns (:data:`xpuperf.steps.COLUMNS`, repeated here because that
module imports pandas); their names need no JSON escaping."""
_PLAIN = frozenset(COLUMNS)


def format_record(rec: dict[str, Any]) -> str:
    """``rec`` as one JSON object followed by a newline."""
    parts = []
    isfinite, dumps = math.isfinite, json.dumps
    for k, v in rec.items():
        key = k if k in _PLAIN else dumps(k)[1:-1]
        t = type(v)
        if t is float and isfinite(v):
            parts.append(f'"{key}":{v:.6f}' if k == "t_end_s" else f'"{key}":{v:.9g}')
        elif t is int:
            parts.append(f'"{key}":{v}')
        else:
            parts.append(f'"{key}":{dumps(v)}')
    return "{" + ",".join(parts) + "}\n"
