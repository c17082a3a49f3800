"""A measured scaling ladder for ``xpuperf plan --measured``: the rungs read from scaling tables
and ``N=LOGS`` runs, each reduced to its speedup against ONE card alone.

Sources (``--measured`` is repeatable, the rungs of all sources are pooled):

- a scaling table (CSV/TSV/Markdown/one result per line, :func:`xpuperf.readers.scaling
  .read_scaling_table`); its speedups are :func:`xpuperf.analysis.scaling.analyze_scaling`'s
  ``efficiency`` (per-card throughput at N / one card alone at the same per-card batch; rows at
  another batch are normalised per card or refused there, with the reason in the notes);
- ``N=LOGS``: the logs of an N-card run (per-rank logs or one framework log; any format
  ``xpuperf analyze`` reads, :func:`xpuperf.pipeline.analyze_logs`): its per-card throughput
  (or, without samples, its median step time at the same per-card batch), and from per-rank logs
  the per-rank work relative to its rank and step medians (the synchronisation jitter sample).

Speedup(N) = per-card throughput at N / per-card throughput of one card alone (docs/plan.md §14;
1.0 at one card). The denominator is the one-card rung (a table's one-card row, ``1=LOGS``) or
the ``baseline`` (one card's throughput, items/s) or the one-card step time. Refused
(:class:`~xpuperf.errors.InputError`, exit 2, saying what to measure): no one-card figure, no rung
above one card, a rung whose speedup is not a positive finite number.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from xpuperf.errors import InputError

RUNG_RE = re.compile(r"^\s*(\d+)\s*=\s*(.+)$")
"""``N=LOGS``: a card count, ``=``, then a path, folder or glob."""


@dataclass(frozen=True)
class Rung:
    """One measured card count.

    Attributes:
        cards: N.
        nodes: nodes the run used (None: unknown, placed by cards per node).
        speedup: per-card throughput at N / one card alone (1.0 for the one-card rung).
        step_time_s: median step time of the run, seconds (None when the source has none).
        source: ``file:line`` (tables) or ``N=path`` (logs).
        jitter: per-rank work relative to its rank and step medians (≈ 1), steady steps of a run
            with several per-rank logs; None otherwise.
    """

    cards: int
    nodes: int | None
    speedup: float
    step_time_s: float | None
    source: str
    jitter: np.ndarray | None = None


@dataclass(frozen=True)
class Ladder:
    """The rungs (ascending cards, the one-card rung first) and the one-card step time.

    ``one_card_step_s``: seconds per step of one card alone (None when no source gives it and no
    batch turns the throughput into a step); ``batch_per_card``: samples per card per step when
    a source says; ``notes``: how each source was read.
    """

    rungs: tuple[Rung, ...]
    one_card_step_s: float | None
    batch_per_card: float | None
    notes: tuple[str, ...] = field(default=())

    @property
    def jitter(self) -> np.ndarray | None:
        """Pooled relative per-rank work of every rung with per-rank logs (None: none)."""
        parts = [r.jitter for r in self.rungs if r.jitter is not None and r.jitter.size > 1]
        return np.concatenate(parts) if parts else None


def _table_rungs(path: str, cards_per_node: int | None, baseline_tput: float | None,
                 step_time_s: float | None, batch_size: float | None,
                 notes: list[str]) -> tuple[list[Rung], float | None, float | None]:  # fmt: skip
    from xpuperf.analysis.scaling import Baseline, analyze_scaling
    from xpuperf.readers.scaling import read_scaling_table

    table = read_scaling_table(path)
    base = None
    if not (table.rows["cards"] == 1).any() and (baseline_tput or step_time_s):
        base = Baseline(throughput_per_card_samples_per_s=baseline_tput, step_time_s=step_time_s)
    res = analyze_scaling(table, cards_per_node=cards_per_node, baseline=base)
    notes += [f"{path}: {n}" for n in res.notes]
    rungs: list[Rung] = []
    t1 = batch = None
    for _, row in res.rows.iterrows():
        e = float(row["efficiency"])
        where = f"{path}:{int(row['line'])}"
        if row["cards"] != int(row["cards"]):
            raise InputError(f"card count {row['cards']:g} is not a whole number", path,
                             int(row["line"]))  # fmt: skip
        if not (math.isfinite(e) and e > 0):
            notes.append(f"{where}: not a rung ({row.get('batch_note') or 'no speedup'})")
            continue
        nodes = row["nodes_used"]
        step = float(row["step_time_s"]) if math.isfinite(row["step_time_s"]) else None
        b = float(row["batch_per_card"])
        b = b if math.isfinite(b) else (batch_size or math.nan)
        if math.isfinite(b):
            batch = batch or b
        if int(row["cards"]) == 1 and t1 is None:
            pc = float(row["throughput_per_card_samples_per_s"])
            t1 = step if step else (b / pc if math.isfinite(b) and math.isfinite(pc) else None)
        rungs.append(Rung(int(row["cards"]), None if math.isnan(nodes) else int(nodes), e, step,
                          where))  # fmt: skip
    return rungs, t1, batch


def _relative_work(rank_steps) -> np.ndarray | None:
    """Per-rank work / its rank median / the step's median ratio (steady steps, ≥ 2 ranks)."""
    t = rank_steps[~rank_steps["warmup"]].dropna(subset=["work_s"])
    t = t[t["work_s"] > 0]
    if t["rank"].nunique() < 2 or t.empty:
        return None
    rel = t["work_s"] / t["rank"].map(t.groupby("rank")["work_s"].median())
    rel = rel / rel.groupby(t["step"]).transform("median")
    x = rel.to_numpy(dtype=float)
    return x if x.size > 1 and np.ptp(x) > 0 else None


@dataclass(frozen=True)
class _LogRun:
    cards: int
    nodes: int | None
    per_card: float | None
    step_s: float
    batch: float | None
    source: str
    jitter: np.ndarray | None


def _log_run(cards: int, path: str, fmt: str | None, batch_size: float | None) -> _LogRun:
    from xpuperf.pipeline import analyze_logs

    res = analyze_logs([path], fmt=fmt, batch_size=batch_size, world_size=cards)
    s = res.summary
    if s.ranks > 1 and s.ranks != cards:
        raise InputError(f"{cards}={path}: the logs hold {s.ranks} ranks, not {cards}; name the "
                         f"rung by its card count ({s.ranks}=...)", path)  # fmt: skip
    step = float(s.step_time_s["median"])
    pc = s.throughput_per_card_samples_per_s
    batch = pc * step if pc else None
    jitter = _relative_work(res.rank_steps) if s.ranks > 1 else None
    return _LogRun(cards, s.nodes, pc, step, batch, f"{cards}={path}", jitter)


def read_ladder(sources: list[str], *, cards_per_node: int | None = None,
                baseline_tput: float | None = None, step_time_s: float | None = None,
                batch_size: float | None = None, fmt: str | None = None) -> Ladder:  # fmt: skip
    """Read ``--measured`` sources into a :class:`Ladder` (module docstring).

    Args:
        sources: table files, or ``N=LOGS`` (N cards, a file, folder or glob of its logs).
        cards_per_node: places rungs on nodes when a source does not say.
        baseline_tput: one card alone, items/s (denominator without a one-card rung).
        step_time_s: one card alone, seconds per step (the same per-card batch assumed).
        batch_size: samples per card per step when the sources do not say.
        fmt: force the reader of the ``N=LOGS`` sources.

    Raises:
        InputError: unreadable source; no one-card figure; nothing above one card.
    """
    notes: list[str] = []
    rungs: list[Rung] = []
    t1: float | None = None
    batch = batch_size
    runs: list[_LogRun] = []
    for src in sources:
        m = RUNG_RE.match(src)
        if m:
            runs.append(_log_run(int(m.group(1)), m.group(2).strip(), fmt, batch_size))
            continue
        got, t, b = _table_rungs(src, cards_per_node, baseline_tput, step_time_s, batch_size,
                                 notes)  # fmt: skip
        rungs += got
        t1, batch = t1 or t, batch or b
    if runs:
        rungs += _log_rungs(runs, rungs, baseline_tput, step_time_s, notes)
        one = [r for r in runs if r.cards == 1]
        t1 = t1 or (one[0].step_s if one else None)
        batch = batch or next((r.batch for r in runs if r.batch), None)
    t1 = step_time_s or t1
    if t1 is None and batch and baseline_tput:
        t1 = batch / baseline_tput
    if not any(r.cards == 1 for r in rungs) and (baseline_tput or step_time_s):
        rungs.append(Rung(1, 1, 1.0, t1, "--baseline" if baseline_tput else "--step-time"))
    rungs.sort(key=lambda r: (r.cards, r.source))
    if not any(r.cards > 1 for r in rungs):
        raise InputError("the measured ladder has no rung above one card: measure one full node "
                         "next (all its cards), then two nodes")  # fmt: skip
    return Ladder(tuple(rungs), t1, batch, tuple(notes))


def _log_rungs(runs: list[_LogRun], table_rungs: list[Rung], baseline_tput: float | None,
               step_time_s: float | None, notes: list[str]) -> list[Rung]:  # fmt: skip
    """Speedups of the ``N=LOGS`` runs against the one-card run (or the baseline)."""
    one = [r for r in runs if r.cards == 1]
    ref_pc = one[0].per_card if one else baseline_tput
    ref_step = one[0].step_s if one else step_time_s
    out = []
    for r in runs:
        if r.per_card and ref_pc:
            s = r.per_card / ref_pc
        elif ref_step:
            s = ref_step / r.step_s
            notes.append(f"{r.source}: no samples per step: speedup = one card's step time / "
                         "this run's (the same per-card batch assumed)")  # fmt: skip
        elif any(t.cards == 1 for t in table_rungs):
            raise InputError(f"{r.source}: a log rung needs a one-card log (1=LOGS), --baseline "
                             "(items/s) or --step-time; a table's one-card row is in the table's "
                             "own unit")  # fmt: skip
        else:
            raise InputError(f"{r.source}: no one-card figure: measure one card alone (1=LOGS) "
                             "or give --baseline (items/s of one card) or --step-time")  # fmt: skip
        if r.jitter is not None:
            notes.append(f"{r.source}: {r.jitter.size} per-rank step samples (synchronisation "
                         "jitter)")  # fmt: skip
        out.append(Rung(r.cards, r.nodes, 1.0 if r.cards == 1 else s, r.step_s, r.source,
                        r.jitter))  # fmt: skip
    return out
