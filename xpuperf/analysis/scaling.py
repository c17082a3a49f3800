"""Scaling tables: efficiency per row against one card, and where the loss happens.

Input: a :class:`~xpuperf.readers.scaling.ScalingTable`. Output: :class:`ScalingResult`.

Definitions (the usual data-parallel ones, e.g. NVIDIA DeepLearningExamples "weak scaling" =
throughput at N / throughput at 1 GPU):

- throughput ratio(N) = job throughput at N cards / the one-card throughput (the "7.69x" the
  field often calls speedup);
- efficiency(N) = ratio(N) / N = per-card throughput at N / the one-card throughput — what
  xpuperf calls **speedup** everywhere (docs/background.md rule 2: the denominator is ONE card
  alone, so speedup is 1.0 at one card and below 1 when scaling loses throughput). With a
  time per step and no batch, the same per-card batch is assumed in every row (weak scaling)
  and efficiency = t(1) / t(N); with a time for a fixed amount of work (per epoch, to train),
  efficiency = t(1) / (N · t(N)).

The one-card row is the denominator: each row is compared with the one-card row at the same
per-card batch; a row whose per-card batch has no one-card row is compared per card with the
nearest one-card batch (said in XP315) when it has a throughput, else refused. A table without
a one-card row is refused unless a baseline is passed; so is a table whose one-card rows at one
batch differ by more than 5 % (:data:`ONE_CARD_RTOL`: not repeats but other models or settings),
and a table mixing models in a ``Model``/``Config`` column (:func:`analyze_scaling_groups`
reports each on its own).

Where the loss happens needs the node of each row (a ``nodes`` column, ``2x8`` counts, ``N
GPUs per node`` in the text, or ``cards_per_node``): the step from one card to the largest
single-node row is the loss inside one node (host contention, thread oversubscription, load
imbalance, framework overhead — not the network); the step from there to the multi-node rows is
the loss across nodes (the network). A table is a handful of medians without spread, so a
verdict is a ``suspicion`` (four rows or fewer, or one row showing it) or ``likely`` (two rows
or more agree, more than four rows), never certain. Texts and checks:
:mod:`xpuperf.analysis.scaling_checks`.
"""

from __future__ import annotations

import math
import shlex

import numpy as np
import pandas as pd

from xpuperf.analysis.scaling_checks import judge
from xpuperf.analysis.scaling_model import (
    BATCH_RTOL,
    ONE_CARD_RTOL,
    THRESHOLD,
    Baseline,
    LossStep,
    ScalingResult,
)
from xpuperf.errors import InputError
from xpuperf.readers.scaling import ScalingTable, split_by_group


def _mode(table: ScalingTable) -> str:
    r = table.rows
    if table.measure == "run_time":
        return "fixed work"
    b = r["batch_per_card"]
    if b.isna().all():
        return "assumed weak"
    known = r[b.notna()]
    if np.allclose(known["batch_per_card"], known["batch_per_card"].iloc[0], rtol=BATCH_RTOL):
        return "weak"
    glob = known["batch_per_card"] * known["cards"]
    if np.allclose(glob, glob.iloc[0], rtol=BATCH_RTOL):
        return "strong"
    return "mixed"


def _same_batch(a: float, b: float) -> bool:
    """Equal per-card batches; an unknown batch is assumed equal (weak scaling)."""
    return math.isnan(a) or math.isnan(b) or abs(a - b) <= BATCH_RTOL * max(a, b)


def _value(row: pd.Series, measure: str) -> tuple[float, str]:
    """(per-card value where larger is better, kind) of a row."""
    pc = row["throughput_per_card_samples_per_s"]
    if not math.isnan(pc):
        return pc, "throughput"
    if measure == "run_time":
        return 1.0 / (row["run_time_s"] * row["cards"]), "run_time"
    return 1.0 / row["step_time_s"], "step_time"


def _efficiencies(table: ScalingTable, baseline: Baseline | None, notes: list[str]) -> pd.DataFrame:
    r = table.rows.copy()
    ones = r[r["cards"] == 1]
    where = None if table.source == "<text>" else table.source
    if ones.empty and baseline is None:
        smallest = int(r["cards"].min())
        name = "TABLE" if where is None else shlex.quote(where)
        raise InputError(
            f"no one-card row (the smallest has {smallest} cards): efficiency is measured "
            "against one card alone at the same per-card batch; add the one-card run to the "
            "table as a row (1 card, same per-card batch), or, knowing one card's throughput, "
            f"forecast from this ladder with `xpuperf plan --measured {name} --baseline "
            "ITEMS_PER_S --model NAME --batch-size N`",
            where,
            table.header_line,
        )
    _one_card_agrees(table, ones, notes)
    eff, note, base_line = [], [], []
    for _, row in r.iterrows():
        value, kind = _value(row, table.measure)
        if baseline is not None and ones.empty:
            base = baseline.throughput_per_card_samples_per_s if kind == "throughput" else None
            if base is None and baseline.step_time_s and kind == "step_time":
                base = 1.0 / baseline.step_time_s
            b_batch = baseline.batch_per_card
            e = value / base if base else float("nan")
            eff.append(e)
            base_line.append(0)
            differs = b_batch is not None and not _same_batch(row["batch_per_card"], b_batch)
            note.append("normalised" if differs and kind == "throughput" else "")
            continue
        same = ones[[_same_batch(row["batch_per_card"], b) for b in ones["batch_per_card"]]]
        exact = not same.empty
        pool = same if exact else ones
        if not exact and kind != "throughput":
            eff.append(float("nan"))
            base_line.append(int(pool["line"].iloc[0]))
            note.append("refused: per-card batch differs and the row has no throughput")
            continue
        if not exact:  # nearest one-card batch
            dist = (pool["batch_per_card"] - row["batch_per_card"]).abs()
            pool = pool.loc[[dist.idxmin()]]
        vals = [_value(p, table.measure)[0] for _, p in pool.iterrows()]
        eff.append(value / float(np.median(vals)))
        base_line.append(int(pool["line"].iloc[0]))
        note.append("" if exact else "normalised")
    r["efficiency"] = eff
    r["throughput_ratio"] = r["efficiency"] * r["cards"]
    r["speedup"] = r["efficiency"]  # xpuperf's speedup: per card vs one card alone
    r["per_card_time_ratio"] = 1.0 / r["efficiency"]
    r["baseline_line"] = base_line
    r["batch_note"] = note
    return r


def _shown(row: pd.Series, table: ScalingTable) -> str:
    """A one-card row's value as the table gives it (``400 images/s``, ``0.25 s/step``)."""
    if table.measure == "run_time":
        return f"{row['run_time_s']:g} s"
    if table.measure in ("step_time", "step_rate"):
        return f"{row['step_time_s']:g} s/step"
    return f"{row['throughput_samples_per_s']:g} {table.throughput_unit}/s"


def _one_card_agrees(table: ScalingTable, ones: pd.DataFrame, notes: list[str]) -> None:
    """Refuse (InputError) one-card rows at one per-card batch more than ONE_CARD_RTOL apart, or
    a table holding several configurations (``group_column``); note agreeing repeats."""
    where = None if table.source == "<text>" else table.source
    if table.group_column is not None and table.group is None:
        values = list(dict.fromkeys(table.rows["group"]))
        raise InputError(
            f"the table holds {len(values)} configurations in column {table.group_column!r} "
            f"({', '.join(values[:4])}{', …' if len(values) > 4 else ''}): each is a ladder of "
            f"its own; `xpuperf analyze {shlex.quote(where or 'FILE')}` reports each, other uses "
            "need one configuration per file",
            where,
            table.header_line,
        )
    if len(ones) < 2:
        return
    value = ones.apply(lambda p: _value(p, table.measure)[0], axis=1)
    for _, same in ones.groupby(ones["batch_per_card"].round(6).fillna(-1.0)):
        if len(same) < 2:
            continue
        v = value.loc[same.index]
        spread = float(v.max() / v.min() - 1)
        if spread > ONE_CARD_RTOL:
            hi, lo = same.loc[v.idxmax()], same.loc[v.idxmin()]
            raise InputError(
                f"the one-card rows disagree: line {int(hi['line'])} gives {_shown(hi, table)}, "
                f"line {int(lo['line'])} {_shown(lo, table)} ({spread:.0%} apart at the same "
                f"per-card batch; repeats agree within {ONE_CARD_RTOL:.0%}), so the baseline is "
                "ambiguous: if the rows are different models or settings, add a column naming "
                "them ('Model', 'Config': each is reported on its own) or put each in a file of "
                "its own; if they are repeats, keep the one measured like the other rows",
                where,
                int(lo["line"]),
            )
        notes.append(f"{len(same)} one-card rows at the same batch ({spread:.1%} apart, within "
                     f"{ONE_CARD_RTOL:.0%}): their median is the baseline")  # fmt: skip


def _place(table: ScalingTable, r: pd.DataFrame, cards_per_node: int | None) -> str | None:
    """Fill ``nodes_used`` and ``scope``; return where the placement came from."""
    cpn = cards_per_node or table.cards_per_node
    nodes = r["nodes"].copy()
    info = "the table's nodes column" if nodes.notna().any() else None
    if cpn:
        fill = np.ceil(r["cards"] / cpn)
        nodes = nodes.fillna(fill)
        info = info or f"{cpn} cards per node" + (
            " (given)" if cards_per_node else " (stated in the input)"
        )
    elif table.single_node:
        nodes = nodes.fillna(1.0)
        info = "a 'one node' statement in the text"
    nodes[r["cards"] == 1] = 1.0
    r["nodes_used"] = nodes
    r["scope"] = [
        "one card" if c == 1 else "unknown" if math.isnan(n) else "one node" if n == 1
        else f"{int(n)} nodes"
        for c, n in zip(r["cards"], nodes, strict=True)
    ]  # fmt: skip
    return info if r.loc[r["cards"] > 1, "nodes_used"].notna().any() else None


def _ladder(r: pd.DataFrame, threshold: float) -> tuple[LossStep | None, list[LossStep]]:
    ok = r[r["efficiency"].notna()]
    single = ok[(ok["nodes_used"] == 1) & (ok["cards"] > 1)]
    intra = None
    if not single.empty:
        top = single[single["cards"] == single["cards"].max()]
        worst = top.loc[top["efficiency"].idxmin()]
        shows = int((single["efficiency"] < threshold).sum())
        intra = LossStep(1.0, worst["cards"], 1.0, worst["efficiency"], worst["efficiency"],
                         shows, int(worst["line"]))  # fmt: skip
    inter: list[LossStep] = []
    multi = ok[ok["nodes_used"] > 1]
    if intra is not None:
        ref = single[single["cards"] == intra.to_cards]
        for _, row in multi.iterrows():
            same = ref[[_same_batch(row["batch_per_card"], b) for b in ref["batch_per_card"]]]
            base = float((same if not same.empty else ref)["efficiency"].median())
            inter.append(LossStep(intra.to_cards, row["cards"], row["nodes_used"],
                                  row["efficiency"], row["efficiency"] / base, 0,
                                  int(row["line"])))  # fmt: skip
        shows = sum(s.factor < threshold for s in inter)
        inter = [LossStep(**{**s.__dict__, "rows": shows}) for s in inter]
    return intra, inter


def analyze_scaling(
    table: ScalingTable,
    *,
    cards_per_node: int | None = None,
    baseline: Baseline | None = None,
    threshold: float = THRESHOLD,
) -> ScalingResult:
    """Efficiency of every row of ``table`` and where the loss happens (module docstring).

    Args:
        table: from :func:`xpuperf.readers.scaling.read_scaling_table`.
        cards_per_node: cards in one node, when the table does not say (places rows on nodes).
        baseline: the one-card measurement, when the table has no one-card row.
        threshold: efficiency below which a step is reported (default 0.90).

    Raises:
        InputError: no one-card row and no baseline (``file:line`` of the header).
    """

    notes = list(table.notes)
    r = _efficiencies(table, baseline, notes)
    info = _place(table, r, cards_per_node)
    ok = r[r["efficiency"].notna()]
    if ok.empty:
        raise InputError(
            "no row can be compared with one card (per-card batches differ and no throughput)",
            None if table.source == "<text>" else table.source,
            table.header_line,
        )
    top = ok[ok["cards"] == ok["cards"].max()]
    worst = top.loc[top["efficiency"].idxmin()]
    intra, inter = _ladder(r, threshold)
    res = ScalingResult(
        group_column=table.group_column,
        group=table.group,
        source=table.source,
        measure=table.measure,
        measure_column=table.measure_column,
        throughput_unit=table.throughput_unit,
        mode=_mode(table),
        rows=r,
        cards_per_node=cards_per_node or table.cards_per_node,
        node_info=info,
        threshold=threshold,
        largest={k: float(worst[k]) for k in ("cards", "efficiency", "throughput_ratio", "line")},
        intra=intra,
        inter=inter,
        notes=notes,
    )
    judge(res, table, baseline)
    return res


def analyze_scaling_groups(table: ScalingTable, **kw) -> list[ScalingResult]:
    """:func:`analyze_scaling` of each configuration of ``table`` (rows grouped by its
    ``Model``/``Config`` column, :func:`xpuperf.readers.scaling.split_by_group`; one result when
    it has none). A configuration that cannot be analysed (no one-card row…) is named in a note
    of the first result; the keyword arguments are :func:`analyze_scaling`'s.

    Raises:
        InputError: no configuration can be analysed (the first one's reason).
    """
    parts = split_by_group(table)
    if len(parts) == 1:
        return [analyze_scaling(table, **kw)]
    results: list[ScalingResult] = []
    failed: list[InputError] = []
    for part in parts:
        try:
            results.append(analyze_scaling(part, **kw))
        except InputError as exc:
            exc.message = f"{table.group_column} {part.group!r}: {exc.message}"
            failed.append(exc)
    if not results:
        raise failed[0]
    results[0].notes += [f"not analysed — {exc.message}" for exc in failed]
    return results
