"""The result records of :mod:`xpuperf.calibrate.fit`: one α–β line (:class:`Line`) and the
calibrated model of one (collective, ranks, nodes) group (:class:`Fit`), with its held-out
accuracy and whether the sweep measured a bandwidth at all. Split out of ``fit`` to keep modules
small; ``fit`` re-exports every name."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

MIB = 1 << 20
BW_TARGET = 0.15  # Done-when of issue 10: held-out busbw within 15 % for S ≥ 1 MiB
LAT_TARGET = 0.25  # … and the latency floor within 25 %
MEASURED_SHARE = 0.10
"""The largest size must reach this share of the fitted plateau for the bandwidth to count as
measured (its transfer is then ≥ 10 % of its time); below, the plateau is a guess."""
PLATEAU_SIZES = 3
PLATEAU_FLAT = 0.02
"""The plateau counts as reached when the busbw of the :data:`PLATEAU_SIZES` largest sizes lies
within this fraction of their largest value (the noise of one row: the in-place and out-of-place
busbw of one size differ by less than 0.4 % from 1 GiB up in corpus 17 and 19); otherwise busbw
is still rising and the fitted asymptote is an extrapolation."""


@dataclass
class Line:
    """One α–β regime: latency ``alpha_us`` (µs), bus bandwidth ``busbw_GBps``, and the sizes
    (bytes, inclusive) where it is the fastest line among the measured sizes."""

    alpha_us: float
    busbw_GBps: float  # noqa: N815 (unit in the name)
    from_bytes: int
    to_bytes: int


@dataclass
class Fit:
    """Calibrated model of one (collective, ranks, nodes) group; see module docstring.

    ``points`` columns: size_bytes, measured_time_us, measured_busbw_GBps, fitted_busbw_GBps,
    predicted_busbw_GBps (leave-one-out), residual (fitted/measured − 1), loo_error
    (predicted/measured − 1; NaN when the size could not be left out).

    ``table``: the run (result table, numbered over all files) the fit comes from, None when
    runs were pooled (``--pool``); ``tool``, ``run`` (``file:line`` of the table) and ``hosts``
    are filled in by :func:`~.run.calibrate_files`. ``excluded``: sizes left out of the fit
    because their busbw collapsed (:mod:`.sweep`; columns size_bytes, measured_busbw_GBps,
    neighbour_busbw_GBps, fitted_busbw_GBps), None when none were.

    ``busbw_GBps`` is the fitted asymptote β of the last line (the model :mod:`plan` uses), not a
    measurement; ``peak_busbw_GBps`` / ``peak_size_bytes`` / ``peak_line`` the largest busbw the
    input printed among the fitted rows (in the column of the chosen timing), its size and line
    (None when the fit was built without them; :meth:`peak` then falls back to ``points``).
    """

    collective: str
    ranks: int | None
    nodes: int | None
    bus_factor: float
    latency_us: float
    busbw_GBps: float  # noqa: N815 (unit in the name)
    latency_ci95_us: tuple[float, float] | None
    busbw_ci95_GBps: tuple[float, float] | None  # noqa: N815 (unit in the name)
    lines: list[Line]
    points: pd.DataFrame
    latency_floor_observed: bool
    sources: list[str] = field(default_factory=list)
    table: int | None = None
    tool: str = "nccl-tests"
    run: str = ""
    hosts: list[str] = field(default_factory=list)
    excluded: pd.DataFrame | None = None
    peak_busbw_GBps: float | None = None  # noqa: N815 (unit in the name)
    peak_size_bytes: int | None = None
    peak_line: int | None = None

    def peak(self) -> tuple[float, int]:
        """(largest measured busbw GB/s, its size in bytes): as printed when known, else the
        largest ``measured_busbw_GBps`` of ``points`` (recomputed from the timing)."""
        if self.peak_busbw_GBps is not None and self.peak_size_bytes is not None:
            return self.peak_busbw_GBps, self.peak_size_bytes
        row = self.points.loc[self.points["measured_busbw_GBps"].idxmax()]
        return float(row["measured_busbw_GBps"]), int(row["size_bytes"])

    def plateau(self) -> tuple[bool, float, pd.DataFrame]:
        """(reached, spread, the rows judged): the :data:`PLATEAU_SIZES` largest sizes' busbw
        within :data:`PLATEAU_FLAT` of their maximum (spread = 1 − min/max). Fewer sizes than
        that: not reached (spread NaN)."""
        tail = self.points.tail(PLATEAU_SIZES)
        bw = tail["measured_busbw_GBps"]
        if len(tail) < PLATEAU_SIZES or not (bw > 0).all():
            return False, math.nan, tail
        spread = 1.0 - float(bw.min()) / float(bw.max())
        return spread <= PLATEAU_FLAT, spread, tail

    @property
    def bandwidth_measured(self) -> bool:
        """Whether the sweep reached the bandwidth regime: busbw at the largest size is at least
        :data:`MEASURED_SHARE` of the fitted plateau. A sweep of latency-bound sizes only (8 to
        128 B all at 20 µs) fits any plateau (1.6e13 GB/s): not a measurement."""
        p = self.points
        if p.empty or not math.isfinite(self.busbw_GBps) or self.busbw_GBps <= 0:
            return False
        return float(p["measured_busbw_GBps"].iloc[-1]) >= MEASURED_SHARE * self.busbw_GBps

    def accuracy(self) -> dict[str, float | bool | None]:
        """Held-out accuracy against the issue-10 bar (errors as fractions, None: not measured).

        ``busbw_max_err_ge_1MiB`` max |LOO error| of busbw over sizes ≥ 1 MiB;
        ``latency_floor_err`` |LOO error| of the time at the smallest size, only when that size
        is latency-dominated (transfer ≤ 10 % of the modelled time there); ``meets_target``
        both within 15 % / 25 % (None when neither could be measured).
        """
        p = self.points
        big = p[(p["size_bytes"] >= MIB) & p["loo_error"].notna()]
        bw = float(big["loo_error"].abs().max()) if not big.empty else None
        med = float(big["loo_error"].abs().median()) if not big.empty else None
        lat = None
        if self.latency_floor_observed and not p.empty and pd.notna(p["loo_error"].iloc[0]):
            # time error = busbw error inverted: t_pred/t_meas − 1 = 1/(1+e) − 1
            e = float(p["loo_error"].iloc[0])
            lat = abs(1.0 / (1.0 + e) - 1.0)
        checks = [x for x in ((bw, BW_TARGET), (lat, LAT_TARGET)) if x[0] is not None]
        meets = all(v <= t for v, t in checks) if checks else None
        return {
            "busbw_max_err_ge_1MiB": bw,
            "busbw_median_err_ge_1MiB": med,
            "latency_floor_err": lat,
            "meets_target": meets,
        }
