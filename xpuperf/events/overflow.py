"""Loss-scale overflow: steps skipped by dynamic loss scaling (XP705–XP707).

A skipped step ran forward and backward and applied no update, so the fraction of skipped steps
is the fraction of compute wasted (NVIDIA mixed-precision guide: dynamic loss scaling skips the
update when gradients overflow). A few skips at the start are the scaler searching for its scale
(2^16 or 2^32 down to a workable value); many, or skips late in training, mean the loss or the
gradients blow up.

Where the count and the number of steps come from, best first:

1. DeepSpeed's cumulative ``step=N, skipped=M`` progress line (``M / N``);
2. Megatron-LM's ``number of skipped iterations`` per log interval (only non-zero counts are
   read), summed, against the steps the step table covers (Megatron's own step lines);
3. overflow lines (apex, DeepSpeed, fairseq, ``Grad overflow on iteration``) against the steps the
   step table covers: distinct iteration numbers when printed, else the largest count of one rank.
"""

from __future__ import annotations

import pandas as pd

from xpuperf.events import costs, evidence
from xpuperf.events.checks import SKIP_FRACTION, _check, _where, in_play
from xpuperf.events.scan import Facts, distinct_iters
from xpuperf.findings import Check, Finding, Severity

START_SKIPS = 16
"""Skips allowed as the scaler's start-up search: an initial scale of 2^16 (apex amp, torch
GradScaler init_scale=65536, DeepSpeed initial_scale_power=16) halves at most 16 times to 1."""
KINDS = ("apex_overflow", "deepspeed_overflow", "fairseq_overflow", "grad_overflow")


def skipped_and_total(facts: Facts, table: pd.DataFrame | None) -> tuple[int, int | None, str]:
    """(skipped steps, steps they are out of or None, where the numbers come from): of the
    sources in the module docstring, the one that counts most skips (counters first on a tie)."""
    found: list[tuple[int, int | None, str]] = []
    if facts.ds_step is not None and facts.ds_step[0] > 0:
        step, skipped = facts.ds_step
        found.append((skipped, step, "DeepSpeed 'step=…, skipped=…' counters"))
    span = costs.step_span(table) if table is not None and not table.empty else None
    if facts.megatron:
        by_iter: dict[int, int] = {}
        for it, sk, _nan in facts.megatron:
            by_iter[it] = max(by_iter.get(it, 0), sk)
        found.append(
            (sum(by_iter.values()), span, "Megatron 'number of skipped iterations' counters")
        )
    if facts.overflow_iters:
        skipped = len(distinct_iters(facts.overflow_iters))
        how = "distinct iterations in overflow lines"
    else:
        per = facts.overflow_per_rank
        known = [v for r, v in per.items() if r is not None]
        skipped = max(known) if known else per.get(None, 0)
        how = "overflow lines of the rank that printed most" if known else "overflow lines"
    found.append((skipped, span, f"{how} over the steps the step table covers"))
    return max(found, key=lambda f: f[0])


def _reported(facts: Facts, seen: list[str], signs) -> tuple[str | None, str | None]:
    """Evidence that the log reports skipped steps: the scaler's own counters or overflow
    lines, else the signs of :func:`xpuperf.events.evidence.scaler`."""
    if facts.ds_step is not None:
        return "DeepSpeed counts its skipped steps ('step=…, skipped=…')", None
    if seen:
        return f"the loss scaler reports its skips ({_where(facts, seen[0])})", None
    return evidence.scaler(signs)


def check(facts: Facts, table: pd.DataFrame | None) -> tuple[list[Finding], Check]:
    """XP705 skipped fraction above threshold, XP706 skips without a step count (info), XP707
    loss scale at its minimum."""
    out: list[Finding] = []
    seen = [k for k in KINDS if k in facts.events]
    if "megatron_skipped" in facts.events:
        seen.append("megatron_skipped")
    skipped, total, how = skipped_and_total(facts, table)
    seen_txt, not_checked = in_play(facts, lambda signs: _reported(facts, seen, signs))
    scales = facts.loss_scales
    scale_txt = f"; loss scale went down to {min(scales):g}" if scales else ""
    extra = max(skipped - START_SKIPS, 0)
    allow = f"the first {START_SKIPS} are the scaler's start-up search"
    if extra and total:
        frac = extra / total
        step_s = costs.median_step_s(table)
        wasted = f", about {extra * step_s:.0f} s of step time" if step_s else ""
        if frac > SKIP_FRACTION:
            first = f" (first {_where(facts, seen[0])})" if seen else ""
            out.append(
                Finding(
                    "XP705",
                    Severity.WARNING,
                    f"{skipped} of {total} steps skipped on loss-scale overflow ({how}){first}"
                    f"{scale_txt}; {allow}, the other {extra} are {frac:.1%} of the steps "
                    f"(threshold {SKIP_FRACTION:.0%}): that fraction of the compute made no "
                    f"update{wasted}. Lower the learning rate or clip gradients; train in bf16 "
                    "(no loss scaling); raise the loss-scale hysteresis (DeepSpeed 'hysteresis', "
                    "Megatron --hysteresis) if skips are isolated spikes.",
                    {
                        "skipped": skipped,
                        "steps": total,
                        "beyond_start": extra,
                        "fraction": frac,
                        "source": how,
                    },
                )
            )
        clean = (
            f"{skipped} of {total} steps skipped, {extra} beyond the start-up search "
            f"({frac:.2%}, threshold {SKIP_FRACTION:.0%})"
        )
    elif extra:
        out.append(
            Finding(
                "XP706",
                Severity.INFO,
                f"{skipped} steps skipped on loss-scale overflow (first "
                f"{_where(facts, seen[0])}){scale_txt}; {allow}, but the number of steps is "
                f"unknown, so the wasted fraction of the other {extra} is not measured "
                f"(threshold {SKIP_FRACTION:.0%}). Pass the log with its step lines (or the step "
                "table) with it.",
                {"skipped": skipped, "beyond_start": extra, "source": how},
            )
        )
        not_checked = not_checked or (
            f"{skipped} overflow skips but no step count; pass the step log with the warnings"
        )
        clean = ""
    elif skipped:
        of = f" of {total}" if total else ""
        clean = (
            f"{skipped}{of} steps skipped on overflow, within the {START_SKIPS} of the start-up "
            "search"
        )
    else:
        total_txt = f" of {total}" if total else ""
        clean = f"no step{total_txt} skipped on loss-scale overflow ({facts.lines} lines)"
    clean += seen_txt
    if "min_loss_scale" in facts.events:
        out.append(
            Finding(
                "XP707",
                Severity.ERROR,
                f"The loss scale reached its minimum ({_where(facts, 'min_loss_scale')}); "
                "threshold: any. Gradients overflow at every scale: the run diverged (inf/NaN "
                "loss). Lower the learning rate, add gradient clipping or warm-up, or train in "
                "bf16.",
                {},
            )
        )
    return out, _check(
        "events.loss_scale_overflow",
        "steps skipped on loss-scale overflow",
        out,
        clean,
        not_checked,
    )
