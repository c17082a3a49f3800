"""Timer lines of Megatron-LM, GPT-NeoX and DeepSpeed → canonical phase times (seconds).

Shapes handled (times in milliseconds):

- ``time (ms) | forward-compute: 3048.48 | backward-compute: 5012.1 | …`` (Megatron-LM ≤ 2022);
- ``time (ms) | forward: 657.62 | backward: 2151.75 | backward-backward: 2151.71 |
  backward-allreduce: 0.00 | optimizer: 1011.44 | batch generator: 0.79`` (GPT-NeoX);
- ``[Rank 0] rank=0 time (ms) | forward: 648.91 | backward: 2154.28 | backward_inner: 1991.87 |
  backward_allreduce: 162.37 | step: 1706.23`` and the ``*_microstep`` variant (DeepSpeed
  ``wall_clock_breakdown``);
- ``(min, max) time across ranks (ms):`` followed by one ``    name ......: (min, max)`` line per
  timer (Megatron-LM ≥ 2023); the max (the slowest rank, which the step waits for) is used and the
  max/min spread is kept for a straggler note.
"""

from __future__ import annotations

import re

PAIR = re.compile(r"([A-Za-z][\w\- ]*+)(?::\s*(-?[\d.]+(?:[eE][-+]?\d+)?))?")
"""A name, then ``: value`` when there is one (group 2 is None otherwise). A run of name characters
is consumed whole even without a value: retried from each of its letters, a long run was
quadratic."""
MINMAX = re.compile(
    r"^\s+([A-Za-z](?:[\w\- ]*[\w\-])?)\s*\.{2,}:\s*(?:\(([\d.]+),\s*([\d.]+)\)|([\d.]+))\s*$"
)  # the name ends at a non-blank: a lazy name before `\s*` was quadratic on a blank run
"""A timer line of a ``(min, max) time across ranks (ms):`` block (``name ....: (min, max)``) or
of a ``max time across ranks (ms):`` block (``--timing-log-option max``: ``name ....: max``);
Megatron-LM ``megatron/core/timers.py`` ``_get_global_min_max_time_string``."""
MINMAX_HEAD = "time across ranks (ms)"

FORWARD = ("forward-compute", "forward_microstep", "forward")
BACKWARD_COMPUTE = (
    "backward-compute",
    "backward_inner",
    "backward_inner_microstep",
    "backward-backward",
)
BACKWARD_TOTAL = ("backward", "backward_microstep")
COMM = (
    "all-grads-sync", "grads-all-reduce", "backward-allreduce", "backward_allreduce",
    "backward_allreduce_microstep",
)  # fmt: skip
OPTIMIZER = ("optimizer", "step", "step_microstep")
DATA = ("batch-generator", "batch generator")


def pairs(text: str) -> dict[str, float]:
    """``name: value`` pairs after ``time (ms) |`` → name → milliseconds."""
    _, _, rest = text.partition("time (ms)")
    out = {}
    for m in PAIR.finditer(rest):
        if m.group(2) is None:
            continue
        try:
            out[m.group(1).strip()] = float(m.group(2))
        except ValueError:  # "." or "1.2.3" matched by the pattern: not a number
            continue
    return out


def minmax(text: str) -> tuple[str, float, float] | None:
    """One ``    name .....: (min, max)`` line → ``(name, min_ms, max_ms)``, a max-only line
    ``    name .....: max`` → ``(name, nan, max_ms)``, else None (also when a value is digits
    and dots but no number, e.g. ``1.2.3``: not a timer line)."""
    m = MINMAX.match(text)
    if m is None:
        return None
    try:
        if m.group(4) is not None:
            return m.group(1).strip(), float("nan"), float(m.group(4))
        return m.group(1).strip(), float(m.group(2)), float(m.group(3))
    except ValueError:  # "." or "1.2.3" matched by the pattern
        return None


def _first(t: dict[str, float], names: tuple[str, ...]) -> float | None:
    for n in names:
        if n in t:
            return t[n]
    return None


def phases(t: dict[str, float]) -> dict[str, float]:
    """Timer name → ms to canonical phases in seconds: ``forward_s``, ``backward_s`` (compute
    only: backward minus its allreduce when no inner timer exists), ``comm_s``, ``optimizer_s``,
    ``data_s``. Missing timers are left out."""
    out: dict[str, float] = {}
    fwd = _first(t, FORWARD)
    comm = _first(t, COMM)
    bwd = _first(t, BACKWARD_COMPUTE)
    if bwd is None:
        total = _first(t, BACKWARD_TOTAL)
        if total is not None:
            bwd = max(total - (comm or 0.0), 0.0)
    opt = _first(t, OPTIMIZER)
    data = _first(t, DATA)
    for col, v in (
        ("forward_s", fwd), ("backward_s", bwd), ("comm_s", comm), ("optimizer_s", opt),
        ("data_s", data),
    ):  # fmt: skip
        if v is not None:
            out[col] = v / 1000.0
    return out


def kind(t: dict[str, float]) -> str:
    """``"deepspeed"`` (underscored names), ``"megatron"`` (``*-compute`` names) or ``"neox"``."""
    if any("_" in k or k == "step" for k in t):
        return "deepspeed"
    if any(k.endswith("-compute") for k in t):
        return "megatron"
    return "neox"
