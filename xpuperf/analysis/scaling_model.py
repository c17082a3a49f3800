"""Records of the scaling-table analysis (:mod:`xpuperf.analysis.scaling`) and its thresholds.

A leaf module: :mod:`~xpuperf.analysis.scaling` (the ladder) and
:mod:`~xpuperf.analysis.scaling_checks` (findings and checks) both import it, one way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from xpuperf.findings import Check, Finding

THRESHOLD = 0.90
"""Efficiency below which a step loses too much (per-card throughput vs one card)."""
FEW_ROWS = 4
"""Tables with at most this many rows give a suspicion only."""
BATCH_RTOL = 0.01
ONE_CARD_RTOL = 0.05
"""One-card rows at one per-card batch that differ by more than this (max / min - 1) are not
repeats of one run (a throughput median varies by a few percent run to run) but other models or
settings: the baseline is ambiguous and the table is refused."""


@dataclass(frozen=True)
class Baseline:
    """One card alone, when the table has no one-card row: per-card throughput (items/s) or
    step time (s), at ``batch_per_card`` (None: assumed the table's)."""

    throughput_per_card_samples_per_s: float | None = None
    step_time_s: float | None = None
    batch_per_card: float | None = None


@dataclass
class LossStep:
    """One step of the ladder.

    Attributes:
        from_cards, to_cards: cards at both ends.
        to_nodes: nodes of the ``to`` row (1 for the single-node step).
        efficiency: efficiency of the ``to`` row against one card.
        factor: efficiency kept by this step (to-row efficiency / from-row efficiency).
        rows: rows on this side of the ladder that show the same thing.
        line: source line of the ``to`` row.
    """

    from_cards: float
    to_cards: float
    to_nodes: float
    efficiency: float
    factor: float
    rows: int
    line: int


@dataclass
class ScalingResult:
    """Efficiency of every row and where the loss is.

    Attributes:
        source, measure, measure_column, throughput_unit: from the table.
        mode: ``weak`` (same per-card batch), ``assumed weak`` (batch not given), ``strong``
            (global batch constant), ``mixed`` or ``fixed work`` (time per epoch / to train).
        rows: the table's rows plus ``nodes_used`` (nodes of the row, NaN unknown),
            ``throughput_ratio`` (× one card), ``efficiency`` and ``speedup`` (the same number:
            per-card throughput / one card alone; NaN when refused), ``per_card_time_ratio`` (1 /
            efficiency), ``baseline_line`` (0 for a given baseline), ``batch_note`` ('' or
            ``normalised``/``refused: …``), ``scope`` (``one card``, ``one node``,
            ``N nodes``, ``unknown``).
        cards_per_node: used to place rows on nodes, or None; ``node_info``: where the node
            placement came from (None: unknown).
        threshold: efficiency threshold.
        largest: the row with most cards (worst efficiency among those), as a dict.
        intra: the step from one card to the largest single-node row, or None.
        inter: steps from that row to each multi-node row.
        location: ``inside one node``, ``across nodes``, ``both``, ``none`` or ``unknown``.
        confidence: ``suspicion`` or ``likely``.
        findings, checks: XP310–XP316 and the ``scaling.*`` checks.
        notes: how the table was read and compared.
        group_column, group: the column naming the model / configuration and this result's
            value in it, when the table held several (else None).
    """

    source: str
    measure: str
    measure_column: str
    throughput_unit: str
    mode: str
    rows: pd.DataFrame
    cards_per_node: int | None
    node_info: str | None
    threshold: float
    largest: dict[str, float]
    intra: LossStep | None = None
    inter: list[LossStep] = field(default_factory=list)
    location: str = "unknown"
    confidence: str = "suspicion"
    findings: list[Finding] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    group_column: str | None = None
    group: str | None = None
