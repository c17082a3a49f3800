"""Renderers of ``xpuperf plan``: the JSON document (schema ``xpuperf.plan/1``) and the terminal.

Keys CI jobs may rely on (a contract; additions only within /1): ``scaling[]`` with ``cards``,
``speedup``, ``step_time_s``, ``breakdown`` (``compute_s``, ``exposed_comm_s``,
``input_stall_s``, ``straggler_s``, ``other_s``); ``fixes[]`` with ``name``, ``setting``,
``speedup_before``, ``speedup_after``, ``gain`` (best first); ``target_cards``; ``fix_curves``
with ``cards`` (the plan's counts plus the target, ascending), ``current`` (speedup at each) and
``fixes[]`` (``name``, ``lever``, ``setting``, ``speedup[]``, ``step_time_s[]`` at each count; at
the target ``speedup`` equals the fix's ``speedup_after``) and ``notes``; ``combined`` (null with
fewer than two configuration fixes) with ``cards``, ``fixes`` (names kept, rank order),
``skipped``, ``speedup_before``, ``speedup_after``, ``gain``: the configuration fixes applied
together (:mod:`xpuperf.advice.combined`). Seconds throughout; NaN and infinities become null.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from xpuperf import __version__
from xpuperf.advice.plan import PlanResult
from xpuperf.report.figures_plan import combined_line
from xpuperf.report.json_report import _clean

SCHEMA = "xpuperf.plan/1"


def to_dict(result: PlanResult) -> dict[str, Any]:
    """The ``xpuperf.plan/1`` document of a plan."""
    e = result.estimate
    return _clean(
        {
            "schema": SCHEMA,
            "xpuperf_version": __version__,
            "cluster": {"name": e.cluster, "cards_per_node": e.cards_per_node},
            "workload": {
                "name": e.workload,
                "n_params": e.n_params,
                "grad_bytes": e.grad_bytes,
                "step_time_s": e.step_time_s,
                "batch_size": e.batch_size,
            },
            "settings": dataclasses.asdict(e.settings),
            "target_cards": result.target_cards,
            "scaling": [
                {
                    "cards": p.cards,
                    "nodes": p.nodes,
                    "speedup": p.speedup,
                    "step_time_s": p.step_time_s,
                    "breakdown": p.breakdown,
                    "algorithm": p.algorithm,
                    "n_buckets": p.n_buckets,
                    "comm_s": p.comm_s,
                    "throughput_samples_per_s": p.throughput_samples_per_s,
                }
                for p in e.points
            ],
            "fixes": [
                {
                    "name": f.name,
                    "lever": f.lever,
                    "setting": f.setting,
                    "cards": f.cards,
                    "speedup_before": f.speedup_before,
                    "speedup_after": f.speedup_after,
                    "gain": f.gain,
                    "reason": f.reason,
                    "changes_math": f.changes_math,
                }
                for f in result.fixes
            ],
            "fix_curves": _curves(result),
            "combined": _combined(result),
            "assumptions": list(e.assumptions),
            "notes": list(result.notes),
        }
    )


def _curves(result: PlanResult) -> dict[str, Any] | None:
    c = result.fix_curves
    if c is None:
        return None
    return {
        "cards": list(c.cards),
        "current": list(c.current),
        "fixes": [dataclasses.asdict(f) for f in c.fixes],
        "notes": list(c.notes),
    }


def _combined(result: PlanResult) -> dict[str, Any] | None:
    c = result.combined
    if c is None:
        return None
    return {
        "cards": c.cards,
        "fixes": list(c.fixes),
        "skipped": list(c.skipped),
        "speedup_before": c.speedup_before,
        "speedup_after": c.speedup_after,
        "gain": c.gain,
    }


def render_json(result: PlanResult) -> str:
    """:func:`to_dict` as indented JSON text with a final newline."""
    return json.dumps(to_dict(result), indent=2, ensure_ascii=False) + "\n"


def _ms(x: float) -> str:
    return f"{x * 1e3:.1f}"


def render_terminal(result: PlanResult, console: Console) -> None:
    """Scaling table, ranked fixes and assumptions."""
    e = result.estimate
    gb = e.grad_bytes / 1e9
    console.print(
        f"{e.workload}: {e.n_params:,} parameters ({gb:.3g} GB of {e.settings.dtype} gradients), "
        f"single-card step {e.step_time_s:g} s; {e.cluster}, {e.cards_per_node} cards per node; "
        f"{e.settings.framework}, algorithm {e.settings.algorithm}",
        markup=False,
    )
    table = Table(title="Scaling (times in ms)", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, padding=0)  # fmt: skip
    cols = ("cards", "speedup", "step", "compute", "comm", "stall", "strag", "other", "algorithm",
            "samples/s")  # fmt: skip
    rows = []
    for p in e.points:
        b = p.breakdown
        thr = "" if p.throughput_samples_per_s is None else f"{p.throughput_samples_per_s:,.0f}"
        rows.append((
            str(p.cards), f"{p.speedup:.3f}", _ms(p.step_time_s), _ms(b["compute_s"]),
            _ms(b["exposed_comm_s"]), _ms(b["input_stall_s"]), _ms(b["straggler_s"]),
            _ms(b["other_s"]), p.algorithm, thr,
        ))  # fmt: skip
    for i, col in enumerate(cols):
        # never cut a number: each column is at least as wide as its widest cell (a narrow
        # terminal wraps the line instead of printing "51,8" for 51,834)
        width = max([len(col), *(len(r[i]) for r in rows)])
        table.add_column(col, justify="left" if col == "algorithm" else "right", no_wrap=True,
                         min_width=width)  # fmt: skip
    for r in rows:
        table.add_row(*r)
    console.print(table)
    console.print("comm = exposed communication; other = compute slowed by overlapping comm",
                  style="dim", markup=False)  # fmt: skip
    if not result.fixes:
        console.print(f"No fix gains 0.05 speedup points or more at {result.target_cards} cards.")
    else:
        console.print(f"Ranked fixes at {result.target_cards} cards:")
        for i, f in enumerate(result.fixes, 1):
            name = f.name + (" (CHANGES THE MATH)" if f.changes_math else "")
            console.print(f"{i}. {name}: speedup {f.speedup_before:.3f} → {f.speedup_after:.3f} "
                          f"(+{f.gain:.3f})", markup=False)  # fmt: skip
            console.print(f"   set: {f.setting}", markup=False)
            console.print(f"   why: {f.reason}", markup=False, style="dim")
        together = combined_line(_combined(result))
        if together:
            console.print(together[0].upper() + together[1:], markup=False)
    for line in (*e.assumptions, *result.notes):
        console.print(f"  · {line}", style="dim", markup=False)
