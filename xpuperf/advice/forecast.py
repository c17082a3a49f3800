"""Forecast the speedup at N cards from a measured ladder (``xpuperf plan --measured``).

Model (docs/plan.md §14). With t₁ the one-card step (s) and s_N the measured speedup, the step
of rung N is t_N = t₁ / s_N and its loss t_N − t₁ is split into

    t_N − t₁ = C_N + J_N + a·[n > 1] + h·(n − 1) + b·[M > 1] + c·log₂ M + ε_N

- C_N: what the cost model predicts for this topology and workload (``model_loss_s(N)``: step
  at N minus step at one card, :class:`~xpuperf.costmodel.estimate.Planner`), not fitted;
- J_N: synchronisation wait, t₁ × (E[max over N ranks] − mean) of the per-rank relative work
  measured in per-rank logs, with a GPD tail beyond the data (:class:`~xpuperf.costmodel.tail
  .TailDist`; formulas.md §6); 0 without per-rank logs (then it is inside the residual);
- the residual per hierarchy level, n = cards per node used, M = nodes: intra-node a (a fixed
  host/framework cost per step once several cards of a node train together) and h (per further
  card of a node); inter-node b (a fixed cost once the job spans nodes) and c (per doubling of
  the node count). A parameter is fitted only when the ladder carries its signal: a needs a
  single-node rung above one card, h two distinct single-node counts, b a multi-node rung, c two
  distinct node counts; so there are always fewer free parameters than rungs. a and b are free
  in sign (the cost model may over-price), h and c are ≥ 0 (a loss that shrinks with scale is
  noise). Weighted least squares (``scipy.optimize.lsq_linear``), each rung with a standard
  deviation of :data:`SIGMA_REL` × t_N (run-to-run noise of a published ladder).

Uncertainty: parameter covariance s²(XᵀWX)⁻¹ over the free parameters (s² = max(1, χ²/dof));
a forecast's variance = xᵀ Cov x + (:data:`SIGMA_REL` · t)²; the interval is ± :data:`Z` standard
deviations widened to every leave-one-rung-out forecast (each rung above one card dropped in turn,
when the rest still supports the forecast). Speedup = t₁ / t.

Refusals (:class:`~xpuperf.errors.InputError`, exit 2, naming the rung to measure next): no
one-card step time; a forecast on more cards of a node than measured without h; a multi-node
forecast without a multi-node rung; more nodes than measured with a single multi-node count;
multi-node rungs without a single-node rung above one card (the fixed costs of the two levels
cannot be told apart); two measurements of one card count more than :data:`CONTRADICTION` σ
apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from xpuperf.advice.forecast_text import meaning
from xpuperf.advice.ladder import Ladder
from xpuperf.errors import InputError

SIGMA_REL = 0.02
"""Standard deviation of one rung's step time, relative: published ladders move by 1–2 % between
neighbouring rungs for no modelled reason (TensorFlow benchmarks 2017: ResNet-50 on DGX-1 at
0.963 / 0.973 / 0.990 for 2 / 4 / 8 GPUs). One global default."""
Z = 1.645
"""Half-width of the prediction interval in standard deviations (90 % two-sided, normal)."""
CONTRADICTION = 4.0
"""Two measurements of one card count further apart than this many σ contradict each other, as
does a rung this many σ from the fit of the whole ladder."""
SUPERLINEAR = 1.0 + CONTRADICTION * SIGMA_REL
"""A rung's speedup above this (1.08) is not noise at the same per-card batch (data parallelism:
each card does the same work as one card alone, plus communication)."""
PARAMS = ("intra_fixed_s", "intra_per_card_s", "inter_fixed_s", "inter_per_doubling_s")
LEVEL = {"intra_fixed_s": "intra-node", "intra_per_card_s": "intra-node",
         "inter_fixed_s": "inter-node", "inter_per_doubling_s": "inter-node"}  # fmt: skip
NONNEG = {"intra_per_card_s", "inter_per_doubling_s"}
PRIOR_SD = {"intra_per_card_s": 0.02, "inter_per_doubling_s": 0.03}
"""Prior standard deviation of the growth terms, relative to the smallest rung's step: a
ladder of a few noisy rungs must show growth clearly before it is extrapolated (ridge)."""


@dataclass(frozen=True)
class Fitted:
    """A fitted parameter: ``value`` and ``stderr`` in ``unit`` (seconds per step), ``level``
    (intra-node / inter-node) and what it means in words."""

    name: str
    value: float
    unit: str
    stderr: float
    level: str
    meaning: str


@dataclass(frozen=True)
class ForecastPoint:
    """The forecast at ``cards``: speedup with its interval [low, high] and the step (s) split
    into ``breakdown`` (compute_s, comm_s, sync_s, intra_node_s, inter_node_s)."""

    cards: int
    nodes: int
    speedup: float
    low: float
    high: float
    step_time_s: float
    breakdown: dict[str, float]


@dataclass(frozen=True)
class MeasuredRung:
    """A rung as read and as fitted: measured speedup, the model's speedup after the fit, and its
    measured loss (s) split into the cost model's comm, sync and the rest (``residual_s``)."""

    cards: int
    nodes: int
    speedup: float
    fitted_speedup: float
    step_time_s: float
    loss_s: float
    comm_s: float
    sync_s: float
    residual_s: float
    source: str


@dataclass(frozen=True)
class LadderForecast:
    """What ``plan --measured`` adds: forecast points, fitted parameters, measured rungs."""

    points: tuple[ForecastPoint, ...]
    fitted: tuple[Fitted, ...]
    measured: tuple[MeasuredRung, ...]
    one_card_step_s: float
    sigma_rel: float
    notes: tuple[str, ...] = field(default=())


def _place(cards: int, nodes: int | None, g: int) -> tuple[int, float]:
    m = nodes if nodes else max(1, math.ceil(cards / g))
    return m, cards / m


def _row(n_local: float, m: int) -> np.ndarray:
    return np.array([float(n_local > 1), max(0.0, n_local - 1), float(m > 1),
                     math.log2(m) if m > 1 else 0.0])  # fmt: skip


@dataclass
class _Fit:
    free: list[int]
    theta: np.ndarray
    cov: np.ndarray
    counts: dict[str, set]


def _fit(rows: list[tuple[int, int, float, float]], y: np.ndarray, sd: np.ndarray) -> _Fit:
    """rows: (cards, nodes, n_local, t_N); y: loss to explain (s); sd: its σ (s)."""
    from scipy.optimize import lsq_linear  # on use: keeps scipy out of start-up

    intra = {n for _, m, n, _ in rows if m == 1 and n > 1}
    inter = {m for _, m, _, _ in rows if m > 1}
    free = []
    if intra:
        free.append(0)
    if len(intra) >= 2:
        free.append(1)
    if inter:
        free.append(2)
    if len(inter) >= 2:
        free.append(3)
    x = np.array([_row(n, m) for _, m, n, _ in rows]).reshape(len(rows), 4)[:, free]
    prior = [j for j in free if PRIOR_SD.get(PARAMS[j])]
    if prior and rows:  # pseudo-observations: growth terms shrink towards 0 (ridge)
        t_ref = min(r[3] for r in rows)
        extra = np.zeros((len(prior), len(free)))
        for i, j in enumerate(prior):
            extra[i, free.index(j)] = 1.0
        x = np.vstack([x, extra])
        y = np.concatenate([y, np.zeros(len(prior))])
        sd = np.concatenate([sd, [PRIOR_SD[PARAMS[j]] * t_ref for j in prior]])
    theta = np.zeros(4)
    cov = np.zeros((4, 4))
    if free:
        lo = [0.0 if PARAMS[j] in NONNEG else -np.inf for j in free]
        xw, yw = x / sd[:, None], y / sd
        res = lsq_linear(xw, yw, bounds=(lo, [np.inf] * len(free)), method="bvls")
        theta[free] = res.x
        dof = len(y) - len(prior) - len(free)
        chi2 = float(np.sum((yw - xw @ res.x) ** 2))
        s2 = max(1.0, chi2 / dof) if dof > 0 else 1.0
        active = [i for i, j in enumerate(free) if not (PARAMS[j] in NONNEG and res.x[i] <= 1e-12)]
        if active:
            sub = xw[:, active]
            c = s2 * np.linalg.pinv(sub.T @ sub)
            idx = [free[i] for i in active]
            cov[np.ix_(idx, idx)] = c
    return _Fit(free, theta, cov, {"intra": intra, "inter": inter})


def _support(fit: _Fit, cards: int, m: int, n: float, g: int) -> str | None:
    """None when ``fit`` supports a forecast at (cards, m nodes, n per node), else what to
    measure next."""
    intra, inter = fit.counts["intra"], fit.counts["inter"]
    if cards == 1:
        return None
    if n > 1 and not intra and not inter:
        return f"measure one node with {min(g, cards)} cards next"
    if inter and not intra and g > 1:
        return (
            f"measure one full node ({g} cards) next: without a single-node rung the fixed "
            "costs inside a node and across nodes cannot be told apart"
        )
    locals_ = set(intra) | ({g} if inter else set())
    if n > max(locals_, default=1) and 1 not in fit.free:
        return (
            f"measure {int(n)} cards on one node next: one single-node count does not show "
            "how the loss grows with the cards of a node"
        )
    if m > 1 and not inter:
        return (
            f"measure 2 nodes ({2 * g} cards) next: the ladder has no multi-node rung, so "
            "the inter-node loss is unknown"
        )
    if m > max(inter, default=1) and 3 not in fit.free:
        k = 2 * max(inter)
        return (
            f"measure {k} nodes ({k * g} cards) next: one multi-node count cannot tell a "
            "fixed inter-node cost from one that grows with the node count"
        )
    return None


def _pool(ladder: Ladder, g: int) -> list[tuple[int, int, float]]:
    """(cards, nodes, speedup) per card count (medians of repeats); contradictions refused."""
    by: dict[tuple[int, int], list] = {}
    for r in ladder.rungs:
        m, _ = _place(r.cards, r.nodes, g)
        by.setdefault((r.cards, m), []).append(r)
    out = []
    for (cards, m), rs in sorted(by.items()):
        s = [r.speedup for r in rs]
        if len(s) > 1 and (max(s) - min(s)) / float(np.median(s)) > CONTRADICTION * SIGMA_REL:
            srcs = ", ".join(f"{r.source} ({r.speedup:.3f})" for r in rs)
            raise InputError(f"contradictory ladder: {cards} cards measured at {srcs}, more than "
                             f"{CONTRADICTION:g} x {SIGMA_REL:.0%} apart; re-measure {cards} cards "
                             "(same batch, steady steps) and keep one")  # fmt: skip
        out.append((cards, m, float(np.median(s))))
    return out


def forecast_ladder(ladder: Ladder, cards: Sequence[int], cards_per_node: int,
                    model_loss_s: Callable[[int], float],
                    sync_excess: Callable[[int], float] | None = None,
                    ) -> LadderForecast:  # fmt: skip
    """Fit the ladder and forecast at ``cards`` (module docstring).

    Args:
        ladder: from :func:`xpuperf.advice.ladder.read_ladder`.
        cards: card counts to forecast.
        cards_per_node: G of the cluster (places rungs without a node count).
        model_loss_s: N → the cost model's step at N minus its step at one card, seconds.
        sync_excess: N → E[max over N] − mean of per-rank relative work (None: no jitter data).

    Raises:
        InputError: refusals of the module docstring.
    """
    t1 = ladder.one_card_step_s
    if not t1:
        raise InputError("the ladder gives speedups but no one-card step time: give "
                         "--batch-size (samples per card per step) or --step-time (one card, "
                         "seconds)")  # fmt: skip
    g = cards_per_node
    pooled = _pool(ladder, g)
    sync = sync_excess or (lambda n: 0.0)
    rows, comm, jit = [], [], []
    for c, m, s in pooled:
        if c == 1:
            continue
        _, n = _place(c, m, g)
        rows.append((c, m, n, t1 / s))
        comm.append(model_loss_s(c))
        jit.append(t1 * sync(c))
    t = np.array([r[3] for r in rows])
    y = t - t1 - np.array(comm) - np.array(jit)
    sd = SIGMA_REL * t
    fit = _fit(rows, y, sd)
    _refuse_misfit(fit, rows, y, sd, t1, ladder)
    points = [_point(fit, rows, y, sd, t1, c, g, model_loss_s, sync) for c in cards]
    measured = tuple(
        MeasuredRung(c, m, t1 / tn, t1 / (t1 + cc + jj + float(_row(n, m) @ fit.theta)), tn,
                     tn - t1, cc, jj, tn - t1 - cc - jj, _sources(ladder, c))
        for (c, m, n, tn), cc, jj in zip(rows, comm, jit, strict=True)
    )  # fmt: skip
    one = MeasuredRung(1, 1, 1.0, 1.0, t1, 0.0, 0.0, 0.0, 0.0, _sources(ladder, 1))
    fitted = tuple(_fitted(fit, rows, g, model_loss_s))
    notes = (
        []
        if sync_excess
        else ["no per-rank logs: the synchronisation wait is not measured and sits in the residual"]
    )
    return LadderForecast(tuple(points), fitted, (one, *measured), t1, SIGMA_REL, tuple(notes))


def _refuse_misfit(fit: _Fit, rows, y: np.ndarray, sd: np.ndarray, t1: float,
                   ladder: Ladder) -> None:  # fmt: skip
    """Refuse a ladder the model cannot describe instead of forecasting from it with an
    interval that does not show it (with as many rungs as free parameters nothing widens it):

    - a rung above :data:`SUPERLINEAR` (per-card throughput above one card alone at the same
      per-card batch beyond noise: a different batch, a wrong one-card figure or a job total
      read as per card);
    - a rung more than :data:`CONTRADICTION` σ from the fit of the whole ladder (a loss that
      jumps at one rung, or one rung measured differently from the rest).

    Raises:
        InputError: naming the rung, its measured and fitted speedup and what to do.
    """
    for c, _, _, tn in rows:
        s = t1 / tn
        if s > SUPERLINEAR:
            raise InputError(
                f"contradictory ladder: {c} cards measured at speedup {s:.3f} "
                f"({_sources(ladder, c)}), per-card throughput {s - 1:.0%} above one card "
                f"alone (more than {SUPERLINEAR - 1:.0%}): check that every rung has the same "
                "per-card batch, that the one-card figure is one card alone and that job "
                f"totals are not read as per-card figures; re-measure {c} cards"
            )
    x = np.array([_row(n, m) for _, m, n, _ in rows]).reshape(len(rows), 4)
    z = (y - x @ fit.theta) / sd
    worst = int(np.argmax(np.abs(z))) if len(z) else -1
    if worst >= 0 and abs(z[worst]) > CONTRADICTION:
        c, _, _, tn = rows[worst]
        fitted = t1 / (tn - (y[worst] - float(x[worst] @ fit.theta)))
        others = ", ".join(str(r[0]) for i, r in enumerate(rows) if i != worst) or "none"
        raise InputError(
            f"contradictory ladder: {c} cards measured at speedup {t1 / tn:.3f} "
            f"({_sources(ladder, c)}), but the model fitted to the ladder (1, {others} cards "
            f"and the cost model) puts it at {fitted:.3f}, {abs(z[worst]):.1f} σ away (limit "
            f"{CONTRADICTION:g} σ of {SIGMA_REL:.0%}); re-measure {c} cards (same per-card "
            "batch, steady steps); if it holds, the loss jumps there: find why with `xpuperf "
            "analyze` on that run's per-rank logs before forecasting past it"
        )


def _sources(ladder: Ladder, cards: int) -> str:
    return ", ".join(r.source for r in ladder.rungs if r.cards == cards)


def _predict(fit: _Fit, t1: float, c: int, m: int, n: float, loss: float,
             sync: float) -> tuple[float, float]:  # fmt: skip
    x = _row(n, m)
    t = t1 + loss + t1 * sync + float(x @ fit.theta)
    var = float(x @ fit.cov @ x) + (SIGMA_REL * t) ** 2
    return t, math.sqrt(var)


def _point(fit: _Fit, rows, y, sd, t1: float, c: int, g: int, model_loss_s, sync) -> ForecastPoint:
    m, n = _place(c, None, g)
    if c == 1:
        return ForecastPoint(1, 1, 1.0, 1.0, 1.0, t1, _parts(t1, 0.0, 0.0, fit.theta, 1.0, 1))
    why = _support(fit, c, m, n, g)
    if why:
        got = ", ".join(str(r[0]) for r in rows)
        raise InputError(f"cannot forecast {c} cards from this ladder (1, {got} cards "
                         f"measured): {why}")  # fmt: skip
    loss, sx = model_loss_s(c), sync(c)
    t, sd_t = _predict(fit, t1, c, m, n, loss, sx)
    lo_t, hi_t = t - Z * sd_t, t + Z * sd_t
    for i in range(len(rows)):  # leave one rung out
        keep = [j for j in range(len(rows)) if j != i]
        sub = _fit([rows[j] for j in keep], y[keep], sd[keep])
        if _support(sub, c, m, n, g) is None:
            ti, _ = _predict(sub, t1, c, m, n, loss, sx)
            lo_t, hi_t = min(lo_t, ti), max(hi_t, ti)
    lo_t = max(lo_t, t1 * 1e-3)
    return ForecastPoint(c, m, t1 / t, t1 / hi_t, t1 / lo_t, t,
                         _parts(t1, loss, t1 * sx, fit.theta, n, m))  # fmt: skip


def _parts(t1: float, loss: float, sync: float, theta: np.ndarray, n: float,
           m: int) -> dict[str, float]:  # fmt: skip
    x = _row(n, m)
    return {"compute_s": t1, "comm_s": loss, "sync_s": sync,
            "intra_node_s": float(x[:2] @ theta[:2]),
            "inter_node_s": float(x[2:] @ theta[2:])}  # fmt: skip


def _fitted(fit: _Fit, rows, g: int, model_loss_s) -> list[Fitted]:
    out = []
    for j in fit.free:
        v, se = float(fit.theta[j]), float(math.sqrt(max(0.0, fit.cov[j, j])))
        text = meaning(j, v, se, rows, g, model_loss_s)
        out.append(Fitted(PARAMS[j], v, "s", se, LEVEL[PARAMS[j]], text))
    return out


def calibrated_speedup(fc: LadderForecast, cards: int, loss_n_s: float, loss_1_s: float) -> float:
    """Speedup at ``cards`` with the cost model's loss replaced (a fix): (t₁ + d₁) / (t₁ + d_N +
    J + residual), d = the fixed setting's model step minus today's one-card model step."""
    pt = next(p for p in fc.points if p.cards == cards)
    b = pt.breakdown
    t1 = fc.one_card_step_s
    return (t1 + loss_1_s) / (t1 + loss_n_s + b["sync_s"] + b["intra_node_s"] + b["inter_node_s"])
