"""busbw that collapses at some sizes in the middle of a sweep and recovers after (XP611).

A healthy busbw curve rises with the message size to a plateau; protocol and algorithm switches
(LL → LL128 → Simple, tree → ring) bend it by tens of percent at most. A dip of ×4 or more at
sizes the run already carried at full speed, with larger sizes fast again, is not noise that
more iterations average away (each row is already a mean over ``-n`` iterations): the fabric or
the path chosen at those sizes misbehaves — adaptive routing / congestion on the inter-node
fabric (another job, a flapping link), an algorithm switch that lands on a broken path (tree,
NVLS or CollNet at those sizes), or peer-to-peer traffic bounced through the root complex (PCIe
ACS on, IOMMU).

Rule, per run (one fit's sizes, median time per size, busbw = f·S/t):

- a size is *collapsed* when its busbw is below ``1/COLLAPSE_FACTOR`` of both the best busbw
  at smaller sizes and the best busbw at larger sizes (it fell and it recovers);
- only sizes where the curve already carries bandwidth count: the best busbw at smaller sizes
  is at least ``BANDWIDTH_REGIME`` of the run's best (latency-bound sizes whose time doubles
  from a hiccup are left alone).

Collapsed sizes are left out of the α–β fit (they would bend the lines; :func:`.fit.fit_frame`
calls :func:`collapsed`) and listed in ``Fit.excluded`` with the busbw they dipped from and the
busbw the fit gives there. :func:`findings` words XP611, :func:`check` the
``calibrate.sweep_collapse`` check.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from xpuperf.findings import Check, CheckStatus, Finding, Severity

COLLAPSE_FACTOR = 4.0  # busbw below 1/4 of both sides: collapsed
BANDWIDTH_REGIME = 0.10  # the smaller sizes already reached 10 % of the run's best busbw
EXCLUDED_COLUMNS = ["size_bytes", "measured_busbw_GBps", "neighbour_busbw_GBps"]

RERUN = {
    "nccl-tests": "(-b {lo} -e {hi}) and with NCCL_ALGO=Ring and NCCL_ALGO=Tree (and "
    "NCCL_NVLS_ENABLE=0 / NCCL_COLLNET_ENABLE=0)",
    "hccl_demo": "(--size_range {lo} {hi})",
}
"""How to rerun the collapsed sizes alone, per tool that printed the table."""
REMEDY = (
    "This is the fabric or the path the library takes at those sizes, not noise — rerunning "
    "with more iterations will not remove it. Rerun just those sizes a few times {rerun} to "
    "see whether one algorithm or protocol switch lands there; on the inter-node fabric check "
    "adaptive routing and congestion (switch port counters: PortXmitWait, PortXmitDiscards; "
    "other jobs on the same leaf/spine), link errors (ibstat, perfquery -x: SymbolErrorCounter, "
    "LinkDownedCounter); inside a node check PCIe ACS and the IOMMU (lspci -vvv | grep ACSCtl: "
    "SrcValid+ sends peer-to-peer traffic through the root complex), and NCCL_DEBUG=INFO for "
    "transport changes."
)


def collapsed(sizes: np.ndarray, busbw: np.ndarray) -> pd.DataFrame:
    """The collapsed sizes of one run.

    Args:
        sizes: distinct message sizes (bytes), ascending.
        busbw: measured busbw (GB/s) per size, same length.

    Returns:
        DataFrame with :data:`EXCLUDED_COLUMNS` (``neighbour_busbw_GBps``: the smaller of the
        best busbw before and after the size — the level it fell from), one row per collapsed
        size; empty when none.
    """
    b = np.asarray(busbw, dtype=float)
    n = len(b)
    if n < 3 or not np.isfinite(b).any():
        return pd.DataFrame(columns=EXCLUDED_COLUMNS)
    clean = np.where(np.isfinite(b), b, 0.0)
    before = np.maximum.accumulate(np.concatenate([[0.0], clean[:-1]]))
    after = np.maximum.accumulate(np.concatenate([clean[1:], [0.0]])[::-1])[::-1]
    ref = np.minimum(before, after)
    best = float(clean.max())
    hit = (
        np.isfinite(b)
        & (before >= BANDWIDTH_REGIME * best)
        & (b * COLLAPSE_FACTOR < ref)
        & (best > 0)
    )
    return pd.DataFrame(
        {
            "size_bytes": np.asarray(sizes)[hit].astype(np.int64),
            "measured_busbw_GBps": b[hit],
            "neighbour_busbw_GBps": ref[hit],
        }
    )


def below_fit(sizes: np.ndarray, busbw: np.ndarray, fitted: np.ndarray) -> pd.DataFrame:
    """Second pass of :func:`collapsed`, against the α–β fit of the other sizes: a size whose
    busbw is below ``1/COLLAPSE_FACTOR`` of the fit's there, where the fit already carries
    bandwidth (≥ ``BANDWIDTH_REGIME`` of its best) and a larger size is back within 2× of its
    fit. Catches a collapse on the rising part of the curve, where the best busbw at smaller
    sizes is itself low (2, 4 and 8 MiB at a tenth: only 2 and 4 MiB fell below ¼ of what came
    before). Same columns as :func:`collapsed` (``neighbour_busbw_GBps``: the fit's busbw)."""
    b, f = np.asarray(busbw, dtype=float), np.asarray(fitted, dtype=float)
    ok = np.isfinite(b) & np.isfinite(f) & (f > 0)
    if ok.sum() < 3:
        return pd.DataFrame(columns=EXCLUDED_COLUMNS)
    back = ok & (b * 2 >= f)  # sizes at (nearly) the fit's speed
    later = np.concatenate([np.maximum.accumulate(back[::-1])[::-1][1:], [False]])
    hit = ok & (b * COLLAPSE_FACTOR < f) & (f >= BANDWIDTH_REGIME * f[ok].max()) & later
    return pd.DataFrame(
        {
            "size_bytes": np.asarray(sizes)[hit].astype(np.int64),
            "measured_busbw_GBps": b[hit],
            "neighbour_busbw_GBps": f[hit],
        }
    )


def collapsed_times(sizes: np.ndarray, times_us: np.ndarray, factor: float) -> pd.DataFrame:
    """:func:`collapsed` on per-row ``sizes`` (bytes, may repeat) and times (µs): busbw =
    ``factor``·S/t on the median time per size."""
    uniq = np.unique(sizes)
    med = np.array([np.median(times_us[sizes == s]) for s in uniq])
    return collapsed(uniq, factor * uniq / (med * 1e3))


def _size(n: int) -> str:
    for unit, k in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << k and n % (1 << k) == 0:
            return f"{n >> k}{unit}"
    return str(n)


def findings(fit) -> list[Finding]:
    """XP611 for one fit (:class:`.fit.Fit`) whose ``excluded`` holds collapsed sizes."""
    ex = fit.excluded
    if ex is None or ex.empty:
        return []
    worst = ex.loc[(ex["neighbour_busbw_GBps"] / ex["measured_busbw_GBps"]).idxmax()]
    drop = float(worst["neighbour_busbw_GBps"] / worst["measured_busbw_GBps"])
    sizes = [int(s) for s in ex["size_bytes"]]
    where = fit.run or ", ".join(Path(s).name for s in fit.sources)
    rows = "; ".join(
        f"{s:,} B: {m:.3g} GB/s (neighbours {r:.3g}, fit {f:.3g})"
        for s, m, r, f in zip(
            sizes,
            ex["measured_busbw_GBps"],
            ex["neighbour_busbw_GBps"],
            ex["fitted_busbw_GBps"],
            strict=True,
        )
    )
    ranks = "?" if fit.ranks is None else fit.ranks
    nodes = "?" if fit.nodes is None else fit.nodes
    how = RERUN.get(fit.tool, RERUN["nccl-tests"])
    remedy = REMEDY.format(rerun=how.format(lo=_size(sizes[0]), hi=_size(sizes[-1])))
    return [
        Finding(
            "XP611",
            Severity.WARNING,
            f"{fit.collective} on {ranks} ranks / {nodes} nodes ({where}): busbw collapses at "
            f"{len(sizes)} size(s) in the middle of the sweep and recovers after — {rows}; "
            f"worst ×{drop:.3g} below its neighbours (threshold ×{COLLAPSE_FACTOR:g} below the "
            "best busbw at both smaller and larger sizes). These sizes are left out of the α–β "
            f"fit. {remedy}",
            {
                "collective": fit.collective,
                "ranks": fit.ranks,
                "nodes": fit.nodes,
                "run": fit.run or None,
                "sizes_bytes": sizes,
                "worst_drop": drop,
            },
        )
    ]


def check(fits: list, found: list[Finding]) -> Check:
    """``calibrate.sweep_collapse``: no run's busbw collapses mid-sweep (XP611)."""
    bad = [f for f in found if f.code == "XP611"]
    looked = [f for f in fits if _bandwidth_sizes(f) >= 3]
    if bad:
        status, ev = CheckStatus.PROBLEM, f"{len(bad)} run(s) whose busbw collapses mid-sweep"
    elif looked:
        n = sum(_bandwidth_sizes(f) for f in looked)
        status = CheckStatus.CLEAN
        ev = (
            f"{n} sizes in the bandwidth regime of {len(looked)} run(s), none "
            f"×{COLLAPSE_FACTOR:g} below its neighbours"
        )
    else:
        status = CheckStatus.NOT_CHECKED
        ev = "fewer than 3 sizes carry bandwidth in every run; sweep from -b 8 to -e 1G or more"
    codes = ("XP611",) if bad else ()
    return Check("calibrate.sweep_collapse", "busbw holds across the sweep", status, ev, codes)


def _bandwidth_sizes(fit) -> int:
    p = fit.points
    if p.empty or not getattr(fit, "bandwidth_measured", True):
        return 0
    b = p["measured_busbw_GBps"].to_numpy(float)
    return int((b >= BANDWIDTH_REGIME * np.nanmax(b)).sum()) if np.isfinite(b).any() else 0
