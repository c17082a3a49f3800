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
                "one_card_step_s": e.one_card_step_s,
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
            **_ladder(result),
        }
    )


def _ladder(result: PlanResult) -> dict[str, Any]:
    """``forecast``/``fitted``/``measured``/``calibrated_fixes`` of ``plan --measured`` (absent
    without a ladder): forecast = [{cards, speedup, low, high, breakdown}], fitted = [{name,
    value, unit, stderr, level, meaning}], measured = the rungs read and their loss split."""
    fc = result.forecast
    if fc is None:
        return {}
    return {
        "forecast": [dataclasses.asdict(p) for p in fc.points],
        "fitted": [dataclasses.asdict(f) for f in fc.fitted],
        "measured": [dataclasses.asdict(r) for r in fc.measured],
        "forecast_model": {
            "one_card_step_s": fc.one_card_step_s,
            "sigma_rel": fc.sigma_rel,
            "notes": list(fc.notes),
        },
        "calibrated_fixes": [
            {
                "name": f.name,
                "speedup_before": f.speedup_before,
                "speedup_after": f.speedup_after,
                "gain": f.gain,
            }
            for f in result.calibrated_fixes
        ],
    }


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
    title = "Scaling (times in ms)"
    if result.forecast is not None:  # measured beats modelled: the calibrated forecast first
        console.print(forecast_headline(result), markup=False)
        render_forecast(result, console)
        title = "Cost model alone, not calibrated on the measured rungs (times in ms)"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD,
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


def forecast_headline(result: PlanResult) -> str:
    """One line: the forecast at the target from the measured ladder, its 90 % interval and the
    uncalibrated cost model's figure beside it (the headline of ``plan --measured``)."""
    target = result.target_cards
    p = next((p for p in result.forecast.points if p.cards == target), result.forecast.points[-1])
    model = next((q.speedup for q in result.estimate.points if q.cards == p.cards), None)
    alone = "" if model is None else f"; the cost model alone says {model:.3f}"
    return (f"Forecast from the measured ladder: speedup {p.speedup:.3f} at {p.cards} cards "
            f"(90 % interval {p.low:.3f}–{p.high:.3f}){alone}")  # fmt: skip


def render_forecast(result: PlanResult, console: Console) -> None:
    """The measured rungs, the fitted parameters and the forecast with its interval."""
    fc = result.forecast
    console.print("Measured ladder (speedup = per-card throughput / one card alone; ms per step)",
                  markup=False)  # fmt: skip
    for r in fc.measured:
        console.print(f"  {r.cards:>6} cards  measured {r.speedup:.3f}  fitted "
                      f"{r.fitted_speedup:.3f}  loss {_ms(r.loss_s)} = comm {_ms(r.comm_s)} + "
                      f"sync {_ms(r.sync_s)} + residual {_ms(r.residual_s)}  [{r.source}]",
                      markup=False)  # fmt: skip
    console.print("Fitted:", markup=False)
    for f in fc.fitted:
        console.print(f"  {f.name} = {f.value * 1e3:.2f} ± {f.stderr * 1e3:.2f} ms ({f.level}): "
                      f"{f.meaning}", markup=False)  # fmt: skip
    table = Table(title="Forecast (90 % interval; times in ms)", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))  # fmt: skip
    for col in ("cards", "speedup", "low", "high", "step", "comm", "sync", "intra", "inter"):
        table.add_column(col, justify="right", no_wrap=True)
    for p in fc.points:
        b = p.breakdown
        table.add_row(str(p.cards), f"{p.speedup:.3f}", f"{p.low:.3f}", f"{p.high:.3f}",
                      _ms(p.step_time_s), _ms(b["comm_s"]), _ms(b["sync_s"]),
                      _ms(b["intra_node_s"]), _ms(b["inter_node_s"]))  # fmt: skip
    console.print(table)
    if result.calibrated_fixes:
        console.print(f"Fixes on the calibrated model at {result.target_cards} cards:",
                      markup=False)  # fmt: skip
        ranked = sorted(result.calibrated_fixes, key=lambda f: -f.gain)
        for i, f in enumerate(ranked, 1):
            console.print(f"  {i}. {f.name}: {f.speedup_before:.3f} → {f.speedup_after:.3f} "
                          f"({f.gain:+.3f})", markup=False)  # fmt: skip
    for line in fc.notes:
        console.print(f"  · {line}", style="dim", markup=False)
