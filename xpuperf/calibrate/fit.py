"""Fit the α–β (latency + size/bandwidth) model to nccl-tests rows, with leave-one-out checks.

Model (Hockney's α–β; NCCL ``src/graph/tuning.cc`` uses the same form per algorithm and protocol,
``time = latency + size / algBw``, and picks the fastest)::

    t(S) = min_k ( α_k + f·S / B_k )          k = 1 … K, K ∈ {1, 2, 3, 4}

``S`` message bytes, ``t`` µs, ``f`` = busbw/algbw of the collective on n ranks (nccl-tests
doc/PERFORMANCE.md: all_reduce 2(n−1)/n …), so ``B_k`` is a *bus* bandwidth in GB/s (comparable to
link peaks) and ``f·S / B_k`` the transfer time. K = 1 is the plain α–β model; K > 1 lets the fit
follow NCCL's switches between protocols (LL → LL128 → Simple) and algorithms (tree → ring),
which make the measured curve piecewise. K is chosen by BIC; each line covers ≥ 3 sizes.

Fitting: ``scipy.optimize.least_squares`` on relative time residuals t_model/t − 1 with the robust
``soft_l1`` loss (f_scale 5 %), started from the best contiguous split of the sizes into K
segments (each fitted by weighted linear least squares). Reported:

- ``latency_us`` = min α_k, the model's time as S → 0 (the latency floor);
- ``busbw_GBps`` = B of the line that is fastest at the largest size (the plateau);
- 95 % intervals from the Jacobian (``± 1.96·σ·sqrt(diag((JᵀJ)⁻¹))``, σ² = Σr²/(n−p));
- for every size, the busbw predicted by a fit that left that size out (leave-one-out), so
  errors measure prediction, not fit.

Sources: Hockney (1994) / Thakur, Rabenseifner & Gropp (2005) for α–β; NCCL tuning.cc for the
per-protocol form; nccl-tests doc/PERFORMANCE.md for busbw.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from xpuperf.calibrate.fit_model import (  # noqa: F401 (re-exported)
    BW_TARGET,
    LAT_TARGET,
    MEASURED_SHARE,
    MIB,
    Fit,
    Line,
)
from xpuperf.calibrate.nccltests import bus_factor
from xpuperf.calibrate.sweep import below_fit, collapsed_times

F_SCALE = 0.05  # relative residual treated as "inlier" by soft_l1
MIN_POINTS_PER_LINE = 3
MAX_LINES = 4
MAX_CUT_CANDIDATES = 30


class _Segments:
    """O(1) weighted least-squares fits of t = a + b·x on any contiguous run of sorted points.

    Minimises Σ((a + b·x)/t − 1)² (relative residuals) through prefix sums of the normal
    equations; a ≥ 0 and b > 0 are enforced by refitting the other coefficient alone.
    """

    def __init__(self, x: np.ndarray, t: np.ndarray):
        u, v = 1.0 / t, x / t
        z = np.zeros(1)
        self.c = [np.concatenate([z, np.cumsum(w)]) for w in (u * u, u * v, v * v, u, v)]

    def fit(self, i: int, j: int) -> tuple[float, float]:
        uu, uv, vv, su, sv = (c[j] - c[i] for c in self.c)
        det = uu * vv - uv * uv
        a = b = -1.0
        if det > 1e-12 * max(uu * vv, 1e-300):
            a, b = (vv * su - uv * sv) / det, (uu * sv - uv * su) / det
        if a < 0 or b <= 0:
            b_only = sv / vv if vv > 0 else 0.0
            if b_only > 0 and (b <= 0 or a < 0):
                a, b = 0.0, b_only
            if b <= 0:
                a, b = su / uu, 1e-12
        return float(a), float(b)


def _model(p: np.ndarray, x: np.ndarray) -> np.ndarray:
    """min over lines of α_k + b_k·x (p = [α_1, b_1, α_2, b_2, …], b in µs per bus byte)."""
    return np.min(p[0::2, None] + p[1::2, None] * x[None, :], axis=0)


def _soft_l1(r: np.ndarray) -> float:
    z = (r / F_SCALE) ** 2
    return float(np.sum(2.0 * (np.sqrt(1.0 + z) - 1.0)))


def _fit_lines(x: np.ndarray, t: np.ndarray, k: int):
    """Fit K lines; returns (params, least_squares result, scale) or None if too few points."""
    n = len(x)
    m = MIN_POINTS_PER_LINE
    if n < max(2, k * m if k > 1 else 2):
        return None
    cands = range(m, n - m + 1)
    if len(cands) > MAX_CUT_CANDIDATES:
        cands = sorted(set(np.linspace(m, n - m, MAX_CUT_CANDIDATES).astype(int)))
    seg = _Segments(x, t)
    best = None
    for cuts in itertools.combinations(cands, k - 1):
        b = [0, *cuts, n]
        if k > 1 and any(b[i + 1] - b[i] < m for i in range(k)):
            continue
        p = np.array([v for i in range(k) for v in seg.fit(b[i], b[i + 1])])
        c = _soft_l1(_model(p, x) / t - 1.0)
        if best is None or c < best[0]:
            best = (c, p)
    if best is None:
        return None
    p0 = best[1]
    scale = np.where(np.arange(len(p0)) % 2 == 0, max(float(np.min(t)), 1.0), np.maximum(p0, 1e-15))
    from scipy.optimize import least_squares  # on use: keeps scipy out of start-up

    res = least_squares(
        lambda q: _model(q * scale, x) / t - 1.0,
        p0 / scale,
        bounds=(0.0, np.inf),
        loss="soft_l1",
        f_scale=F_SCALE,
    )
    return res.x * scale, res, scale


def _bic(r: np.ndarray, k: int) -> float:
    n = len(r)
    return n * math.log(max(float(np.mean(r**2)), 1e-12)) + 2 * k * math.log(n)


def _choose(x: np.ndarray, t: np.ndarray, max_lines: int):
    best = None
    for k in range(1, max_lines + 1):
        got = _fit_lines(x, t, k)
        if got is None:
            break
        score = _bic(_model(got[0], x) / t - 1.0, k)
        if best is None or score < best[0] - 1e-9:
            best = (score, k, got)
    return best


def fit_group(
    sizes: np.ndarray,
    times_us: np.ndarray,
    factor: float,
    *,
    max_lines: int = MAX_LINES,
    loo: bool = True,
) -> tuple[np.ndarray, int, object, np.ndarray, np.ndarray]:
    """Fit one group. Arrays are per point (sizes may repeat); returns internal pieces.

    Returns (params, K, least_squares result, unique sizes, LOO-predicted time per unique size).
    Raises ValueError when fewer than 2 distinct sizes are usable.
    """
    order = np.argsort(sizes, kind="stable")
    s, t = sizes[order].astype(float), times_us[order].astype(float)
    x = factor * s
    uniq = np.unique(s)
    if len(uniq) < 2:
        raise ValueError("need at least 2 distinct message sizes with a time > 0")
    chosen = _choose(x, t, max_lines)
    if chosen is None:
        raise ValueError("too few points to fit")
    _, k, (p, res, scale) = chosen
    pred = np.full(len(uniq), np.nan)
    if loo and len(uniq) >= 3:
        for i, size in enumerate(uniq):
            keep = s != size
            got = _fit_lines(x[keep], t[keep], k) or _fit_lines(x[keep], t[keep], 1)
            if got is not None:
                pred[i] = _model(got[0], np.array([factor * size]))[0]
    return p, k, (res, scale), uniq, pred


def _ci(res, scale: np.ndarray, n: int, idx: int) -> float | None:
    """Half-width of the 95 % interval of parameter ``idx`` (unscaled), None if singular."""
    J = res.jac
    dof = n - J.shape[1]
    if dof <= 0:
        return None
    sigma2 = float(np.sum(res.fun**2)) / dof
    try:
        cov = np.linalg.pinv(J.T @ J) * sigma2
    except np.linalg.LinAlgError:
        return None
    var = cov[idx, idx]
    if not np.isfinite(var) or var < 0:
        return None
    return 1.96 * math.sqrt(var) * scale[idx]


def fit_frame(
    frame: pd.DataFrame,
    *,
    measurement: str = "out-of-place",
    max_lines: int = MAX_LINES,
    pool: bool = False,
) -> list[Fit]:
    """Fit every (collective, ranks, nodes) group of a :func:`read_nccl_tests` frame.

    Args:
        frame: rows with collective, size_bytes, time_us, algbw_GBps, busbw_GBps, inplace_*,
            ranks, nodes, source.
        measurement: ``"out-of-place"`` (default), ``"in-place"`` or ``"best"`` (the smaller
            time of the two per row: noise only ever adds time).
        max_lines: largest K tried (1 = plain α–β).
        pool: fit rows of different runs and files together when their (collective, ranks,
            nodes) agree (repeated runs on one cluster); by default each run (``table``: one
            result table of one file; the caller numbers tables over all files) is fitted on
            its own — two runs in one file are never pooled.

    Sizes of 0 bytes and rows without a time are left out, and so are sizes whose busbw
    collapsed mid-sweep (:mod:`.sweep`, XP611; kept in ``Fit.excluded``). Groups where fewer
    than 2 sizes remain are skipped (the caller reports them). ``bus_factor`` comes from §3
    when ranks are known, else from the measured busbw/algbw ratio.
    """
    if measurement not in ("out-of-place", "in-place", "best"):
        raise ValueError(f"measurement must be out-of-place, in-place or best, not {measurement!r}")
    fits: list[Fit] = []
    keys = ["collective", "ranks", "nodes"]
    keys = keys if pool else ["source", "table", *keys]
    if "table" not in frame:  # a frame built by hand: one run per source
        frame = frame.assign(table=0)
    for key, g in frame.groupby(keys, dropna=False, sort=False):
        coll, ranks, nodes = key[-3:]
        table = None if pool or pd.isna(key[1]) else int(key[1])
        ranks = None if pd.isna(ranks) else int(ranks)
        nodes = None if pd.isna(nodes) else int(nodes)
        t = _times(g, measurement)
        ok = (g["size_bytes"] > 0) & np.isfinite(t) & (t > 0)
        g, t = g[ok], t[ok]
        if g["size_bytes"].nunique() < 2:
            continue
        factor = _factor(coll, ranks, g)
        if factor <= 0:
            continue
        sizes = g["size_bytes"].to_numpy(dtype=float)
        ex = collapsed_times(sizes, t.to_numpy(dtype=float), factor)
        if not ex.empty and g["size_bytes"].nunique() - len(ex) >= 2:  # XP611: fit without them
            keep = ~g["size_bytes"].isin(ex["size_bytes"]).to_numpy()
            g, t, sizes = g[keep], t[keep], sizes[keep]
        else:
            ex = ex.iloc[:0]
        try:
            p, k, (res, scale), uniq, pred_t = fit_group(
                sizes, t.to_numpy(dtype=float), factor, max_lines=max_lines
            )
            more = _below_fit(sizes, t.to_numpy(float), factor, p)  # a collapse while rising
            if not more.empty and len(uniq) - len(more) >= 2:
                keep = ~g["size_bytes"].isin(more["size_bytes"]).to_numpy()
                g, t, sizes = g[keep], t[keep], sizes[keep]
                ex = pd.concat([ex, more], ignore_index=True).sort_values("size_bytes")
                p, k, (res, scale), uniq, pred_t = fit_group(
                    sizes, t.to_numpy(dtype=float), factor, max_lines=max_lines
                )
        except ValueError:  # times so large the residuals overflow: a mangled table, no fit
            continue
        fit = _build(
            coll,
            ranks,
            nodes,
            factor,
            sizes,
            t.to_numpy(float),
            p,
            k,
            res,
            scale,
            uniq,
            pred_t,
            sorted(set(g["source"].astype(str))),
        )
        fit.table = table
        fit.peak_busbw_GBps, fit.peak_size_bytes, fit.peak_line = _peak(g, measurement)
        if not ex.empty:
            x = factor * ex["size_bytes"].to_numpy(float)
            fit.excluded = ex.assign(fitted_busbw_GBps=x / (_model(p, x) * 1e3))
        fits.append(fit)
    return fits


def _below_fit(sizes: np.ndarray, t: np.ndarray, factor: float, p: np.ndarray) -> pd.DataFrame:
    """:func:`.sweep.below_fit` on the median time per size against the fit ``p``."""
    uniq = np.unique(sizes)
    med = np.array([np.median(t[sizes == s]) for s in uniq])
    x = factor * uniq
    return below_fit(uniq, x / (med * 1e3), x / (_model(p, x) * 1e3))


def _peak(g: pd.DataFrame, measurement: str) -> tuple[float | None, int | None, int | None]:
    """(largest printed busbw, its size, its line) among the fitted rows ``g``, in the column of
    the timing fitted (``best``: the half with the smaller time); Nones when there is none."""

    def col(name: str) -> pd.Series:  # a frame built by hand may lack the in-place half
        raw = g[name] if name in g else pd.Series(math.nan, index=g.index)
        return pd.to_numeric(raw, errors="coerce").astype(float)

    out, inp = col("busbw_GBps"), col("inplace_busbw_GBps")
    if measurement == "in-place":
        bw = inp
    elif measurement == "best":
        t_out, t_in = col("time_us"), col("inplace_time_us")
        bw = out.where(~(t_in < t_out) | inp.isna(), inp)  # NaN comparisons keep out-of-place
    else:
        bw = out
    bw = bw[np.isfinite(bw) & (bw > 0)]
    if bw.empty:
        return None, None, None
    top = bw[bw == bw.max()]  # a tie: the out-of-place value, then the larger size
    i = max(top.index, key=lambda k: (bool(out.get(k) == top[k]), g.at[k, "size_bytes"]))
    line = g.at[i, "line"] if "line" in g else None
    return float(bw[i]), int(g.at[i, "size_bytes"]), None if pd.isna(line) else int(line)


def _times(g: pd.DataFrame, measurement: str) -> pd.Series:
    # to_numeric: a missing in-place half may be pd.NA, which astype(float) refuses
    if measurement == "in-place":
        return pd.to_numeric(g["inplace_time_us"], errors="coerce").astype(float)
    if measurement == "best":
        both = g[["time_us", "inplace_time_us"]].apply(pd.to_numeric, errors="coerce")
        return both.astype(float).min(axis=1, skipna=True)
    return pd.to_numeric(g["time_us"], errors="coerce").astype(float)


def _factor(coll: str, ranks: int | None, g: pd.DataFrame) -> float:
    if ranks is not None:
        return bus_factor(coll, ranks)
    ratio = g["busbw_GBps"] / g["algbw_GBps"]
    ok = ratio[(g["algbw_GBps"] >= 0.5) & (ratio > 0) & (ratio <= 2)]  # 2(n−1)/n < 2 at most
    return float(ok.median()) if not ok.empty else 1.0


def _build(coll, ranks, nodes, factor, sizes, t, p, k, res, scale, uniq, pred_t, sources) -> Fit:
    x_u = factor * uniq
    fitted_t = _model(p, x_u)
    meas_t = np.array([np.median(t[sizes == s]) for s in uniq])
    to_bus = lambda tt: x_u / (tt * 1e3)  # noqa: E731 (bytes/µs → GB/s)
    meas_bus, fit_bus, pred_bus = to_bus(meas_t), to_bus(fitted_t), to_bus(pred_t)
    points = pd.DataFrame(
        {
            "size_bytes": uniq.astype(np.int64),
            "measured_time_us": meas_t,
            "measured_busbw_GBps": meas_bus,
            "fitted_busbw_GBps": fit_bus,
            "predicted_busbw_GBps": pred_bus,
            "residual": fit_bus / meas_bus - 1.0,
            "loo_error": pred_bus / meas_bus - 1.0,
        }
    )
    alphas, bs = p[0::2], p[1::2]
    active = np.argmin(alphas[:, None] + bs[:, None] * x_u[None, :], axis=0)
    lines = []
    for j in range(k):
        where = uniq[active == j]
        if len(where):
            lines.append(
                Line(float(alphas[j]), float(1.0 / (bs[j] * 1e3)), int(where[0]), int(where[-1]))
            )
    lines.sort(key=lambda ln: ln.from_bytes)
    i_lat = int(np.argmin(alphas))
    i_bw = int(active[-1])
    latency = float(alphas[i_lat])
    busbw = float(1.0 / (float(bs[i_bw]) * 1e3))
    n = len(sizes)
    h_lat = _ci(res, scale, n, 2 * i_lat)
    h_b = _ci(res, scale, n, 2 * i_bw + 1)
    lat_ci = (
        (float(max(0.0, latency - h_lat)), float(latency + h_lat)) if h_lat is not None else None
    )
    bw_ci = None
    if h_b is not None:  # b = 1/(B·1e3): map the interval of b to one of B
        b = float(bs[i_bw])
        lo_b, hi_b = b + h_b, max(b - h_b, 1e-300)
        bw_ci = (float(1.0 / (lo_b * 1e3)), float(1.0 / (hi_b * 1e3)))
    first = int(active[0])  # the floor is observed when the smallest size is ≥ 90 % latency
    observed = bool(bs[first] * x_u[0] <= 0.1 * (alphas[first] + bs[first] * x_u[0]))
    return Fit(
        coll, ranks, nodes, factor, latency, busbw, lat_ci, bw_ci, lines, points, observed, sources
    )
