"""Renderers of a :class:`~xpuperf.calibrate.run.CalibrationResult` (``xpuperf calibrate``).

Presentation lives in ``xpuperf/report/``; :mod:`xpuperf.calibrate.render` re-exports this module
for existing imports.

- :func:`to_json_dict` / :func:`render_json`: ``xpuperf.calibrate/1`` (``--json``);
- :func:`to_calibration_dict` / :func:`render_calibration_yaml`: ``xpuperf.calibration/1``
  (``-o``), the constants the cost model reads (format in docs/calibrate.md);
- :func:`render_terminal`: a rich summary.

Floats that are NaN or infinite become ``null``; numbers are rounded to 4 significant digits in
the YAML (it is read by people too), kept whole in the JSON.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from rich.console import Console
from rich.table import Table

from xpuperf import __version__

if TYPE_CHECKING:  # annotations only: report/ must not import calibrate/ at run time (cycle)
    from xpuperf.calibrate.fit import Fit
    from xpuperf.calibrate.run import CalibrationResult

JSON_SCHEMA = "xpuperf.calibrate/1"
CALIBRATION_SCHEMA = "xpuperf.calibration/1"


def _num(x: Any, sig: int | None = None) -> Any:
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return x
    if not math.isfinite(v):
        return None
    if sig is not None and v != 0:
        v = round(v, sig - 1 - math.floor(math.log10(abs(v))))
    return v


def _pair(p: tuple[float, float] | None, sig: int | None = None) -> list | None:
    return None if p is None else [_num(p[0], sig), _num(p[1], sig)]


def _level(fit: Fit) -> str | None:
    if fit.nodes is None:
        return None
    return "net" if fit.nodes > 1 else "intra"


def _fit_core(fit: Fit, sig: int | None) -> dict[str, Any]:
    peak_bw, peak_size = fit.peak()
    return {
        "collective": fit.collective,
        "ranks": fit.ranks,
        "nodes": fit.nodes,
        "level": _level(fit),
        "bus_factor": _num(fit.bus_factor, sig),
        "latency_us": _num(fit.latency_us, sig),
        "latency_ci95_us": _pair(fit.latency_ci95_us, sig),
        "latency_floor_observed": fit.latency_floor_observed,
        "busbw_GBps": _num(fit.busbw_GBps, sig) if fit.bandwidth_measured else None,
        "bandwidth_measured": fit.bandwidth_measured,
        "busbw_ci95_GBps": _pair(fit.busbw_ci95_GBps, sig) if fit.bandwidth_measured else None,
        "peak_busbw_GBps": _num(peak_bw),  # as printed: never rounded
        "peak_size_bytes": peak_size,
        "peak_line": fit.peak_line,
        "plateau_reached": bool(fit.bandwidth_measured and fit.plateau()[0]),
        "lines": [
            {
                "alpha_us": _num(ln.alpha_us, sig),
                "busbw_GBps": _num(ln.busbw_GBps, sig),
                "from_bytes": ln.from_bytes,
                "to_bytes": ln.to_bytes,
            }
            for ln in fit.lines
        ],
        "accuracy": {
            k: _num(v, sig) if not isinstance(v, bool) else v for k, v in fit.accuracy().items()
        },
        "sources": fit.sources,
        "run": fit.run or None,
        "tool": fit.tool,
        "hosts": fit.hosts,
        "excluded": _excluded(fit, sig),
    }


def _excluded(fit: Fit, sig: int | None) -> list[dict[str, Any]]:
    """Sizes left out of the fit because busbw collapsed there (XP611), [] when none."""
    ex = getattr(fit, "excluded", None)
    if ex is None:
        return []
    return [
        {
            "size_bytes": int(r.size_bytes),
            "measured_busbw_GBps": _num(r.measured_busbw_GBps, sig),
            "neighbour_busbw_GBps": _num(r.neighbour_busbw_GBps, sig),
            "fitted_busbw_GBps": _num(r.fitted_busbw_GBps, sig),
        }
        for r in ex.itertuples()
    ]


def to_json_dict(result: CalibrationResult) -> dict[str, Any]:
    """The ``xpuperf.calibrate/1`` document (see docs/calibrate.md)."""
    fits = []
    for fit in result.fits:
        d = _fit_core(fit, None)
        d["points"] = [
            {
                "size_bytes": int(r.size_bytes),
                "measured_busbw_GBps": _num(r.measured_busbw_GBps),
                "predicted_busbw_GBps": _num(r.predicted_busbw_GBps),
                "fitted_busbw_GBps": _num(r.fitted_busbw_GBps),
                "measured_time_us": _num(r.measured_time_us),
                "loo_error": _num(r.loo_error),
            }
            for r in fit.points.itertuples()
        ]
        fits.append(d)
    inputs = [
        {
            "path": path,
            "header_line": t.header_line,
            "collective": t.collective,
            "collective_source": t.collective_source,
            "ranks": t.ranks,
            "ranks_source": t.ranks_source or None,
            "abbreviated": t.abbreviated,
            "nodes_source": t.nodes_source or None,
            "nodes": t.nodes,
            "hosts": t.hosts,
            "devices": t.devices,
            "rows": t.rows,
            "avg_busbw_GBps": _num(t.avg_busbw_GBps),
            "out_of_bounds": t.out_of_bounds,
            "nccl_version": t.nccl_version,
            "nccl_tests_version": t.nccl_tests_version,
        }
        for path, t in result.tables
    ]
    return {
        "schema": JSON_SCHEMA,
        "xpuperf_version": __version__,
        "measurement": result.measurement,
        "topology": result.topology,
        "inputs": inputs,
        "fits": fits,
        "measurements": [m.to_dict() for m in result.measurements],
        "findings": [f.to_dict() for f in result.findings],
        "checks": [c.to_dict() for c in result.checks],
        "warnings": result.warnings,
    }


def render_json(result: CalibrationResult) -> str:
    """``to_json_dict`` as indented JSON text with a final newline."""
    return json.dumps(to_json_dict(result), indent=2, allow_nan=False) + "\n"


def topology_ref(topology: str | None, output_path: str | Path | None) -> str | None:
    """How the calibration file names the topology it was fitted against: a preset name as
    given, or an existing topology file's path relative to the folder of ``output_path`` (the
    calibration file), so that ``xpuperf plan --topology CALIBRATION`` finds it from anywhere.
    Without ``output_path`` the path is kept as given."""
    if topology is None:
        return None
    if output_path is None or not Path(topology).is_file():
        return topology
    base = Path(output_path).resolve().parent
    return Path(os.path.relpath(Path(topology).resolve(), base)).as_posix()


def to_calibration_dict(
    result: CalibrationResult, output_path: str | Path | None = None
) -> dict[str, Any]:
    """The ``xpuperf.calibration/1`` document: fits without points, plus ``levels``.

    ``topology`` (only when the calibration was made with ``--topology``): the preset name or
    the topology file's path relative to ``output_path`` (:func:`topology_ref`).
    ``levels.net`` / ``levels.intra``: latency and busbw of the all_reduce fit (else any
    collective) with the most ranks among multi-node / single-node groups.
    """
    measured = [f for f in result.fits if f.bandwidth_measured]  # XP605: no plateau, no fit
    fits = [_fit_core(f, 4) for f in measured]
    levels: dict[str, Any] = {}
    for level in ("intra", "net"):
        cands = [f for f in measured if _level(f) == level]
        if not cands:
            continue
        best = max(cands, key=lambda f: (f.collective == "all_reduce", f.ranks or 0))
        levels[level] = {
            "latency_us": _num(best.latency_us, 4),
            "busbw_GBps": _num(best.busbw_GBps, 4),
            "peak_busbw_GBps": _num(best.peak()[0]),
            "plateau_reached": bool(best.plateau()[0]),
            "from": {"collective": best.collective, "ranks": best.ranks, "nodes": best.nodes},
        }
    doc: dict[str, Any] = {
        "schema": CALIBRATION_SCHEMA,
        "xpuperf_version": __version__,
        "measurement": result.measurement,
    }
    if result.topology is not None:
        doc["topology"] = topology_ref(result.topology, output_path)
    doc.update(sources=sorted({p for p, _ in result.tables}), levels=levels, fits=fits)
    return doc


def render_calibration_yaml(
    result: CalibrationResult, output_path: str | Path | None = None
) -> str:
    """``to_calibration_dict`` as YAML (keys in document order); ``output_path``: where it is
    written (the topology path is made relative to its folder)."""
    header = (
        "# xpuperf calibration: α–β fits of nccl-tests measurements (docs/calibrate.md).\n"
        "# t(S) = min over lines of alpha_us + bus_factor·S / busbw_GBps (S bytes, t µs).\n"
        "# busbw_GBps is the fitted asymptote (model β, what plan uses), not a measurement;\n"
        "# peak_busbw_GBps is the largest busbw the input printed (size peak_size_bytes, line\n"
        "# peak_line); plateau_reached: the 3 largest sizes within 2 % of each other.\n"
    )
    return header + yaml.safe_dump(
        to_calibration_dict(result, output_path), sort_keys=False, allow_unicode=True, width=100
    )


def _fmt_bytes(n: float) -> str:
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            return f"{n / f:g} {unit}"
    return f"{int(n)} B"


def _pct(x: Any) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def render_terminal(result: CalibrationResult, console: Console) -> None:
    """Print the fits, their held-out accuracy, single measurements, findings and checks."""
    if result.fits:
        _fits_table(result, console)
    if result.measurements:
        _measurements_table(result, console)
    for fnd in result.findings:
        style = {"error": "bold red", "warning": "yellow", "info": "dim"}[fnd.severity.value]
        console.print(f"{fnd.code} {fnd.severity.value}: ", style=style, end="", markup=False)
        console.print(fnd.message, markup=False)
    if not result.findings:
        console.print("no findings", style="green")
    if result.checks:
        console.print("checks:", markup=False)
        for c in result.checks:
            codes = f" [{', '.join(c.codes)}]" if c.codes else ""
            console.print(f"  {c.status.value:<11} {c.name}{codes}: {c.evidence}", markup=False)


def _measurements_table(result: CalibrationResult, console: Console) -> None:
    table = Table(title="single measurements (too few sizes to fit)", title_justify="left")
    table.add_column("collective", no_wrap=True)
    for col in ("ranks", "size", "time µs", "algbw GB/s", "busbw GB/s", "link GB/s", "of link"):
        table.add_column(col, justify="right")
    for m in result.measurements:
        table.add_row(
            m.collective,
            str(m.ranks if m.ranks is not None else "?"),
            _fmt_bytes(m.size_bytes),
            f"{m.time_us:.0f}" if m.time_us >= 100 else f"{m.time_us:.3g}",
            f"{m.algbw_GBps:.3g}",
            f"{m.busbw_GBps:.3g}",
            "n/a" if m.link_GBps is None else f"{m.link_GBps:.3g}",
            "n/a" if m.fraction is None else f"{m.fraction:.0%}",
        )
    console.print(table)


def _fits_table(result: CalibrationResult, console: Console) -> None:
    table = Table(title=f"xpuperf calibrate ({result.measurement} timings)", title_justify="left")
    paths = [p for p, _ in result.tables]
    keys = [(f.collective, f.ranks, f.nodes) for f in result.fits]
    show_run = len(paths) != len(set(paths)) or len(keys) != len(set(keys))
    if show_run:  # several runs in a file, or one configuration twice: say which run
        table.add_column("run (file:line)", no_wrap=True)
    table.add_column("collective", no_wrap=True)
    cols = ("ranks", "nodes", "lat µs", "peak busbw GB/s", "fit GB/s", "lines", "LOO bw", "LOO lat",
            "ok")  # fmt: skip
    for col in cols:
        table.add_column(col, justify="right")
    for f in result.fits:
        acc = f.accuracy()
        lat = f"{f.latency_us:.3g}" + ("" if f.latency_floor_observed else "*")
        ok = acc["meets_target"]
        peak_bw, peak_size = f.peak()
        fit_bw = f"{f.busbw_GBps:.3g}" + ("" if f.plateau()[0] else "*")
        table.add_row(
            *([f.run or "pooled"] if show_run else []),
            f.collective,
            str(f.ranks if f.ranks is not None else "?"),
            str(f.nodes if f.nodes is not None else "?"),
            lat,
            f"{peak_bw:g} @ {_fmt_bytes(peak_size)}",
            fit_bw if f.bandwidth_measured else "not reached",
            str(len(f.lines)),
            _pct(acc["busbw_max_err_ge_1MiB"]),
            _pct(acc["latency_floor_err"]),
            "NO" if not f.bandwidth_measured else "n/a" if ok is None else ("yes" if ok else "NO"),
        )
    console.print(table)
    console.print(
        "peak busbw: the largest busbw in the input, at that size; fit: the α–β asymptote plan "
        "uses; LOO bw: max held-out busbw error for sizes ≥ 1 MiB (target 15 %); LOO lat: "
        "held-out error of the latency floor (target 25 %); * extrapolated (latency: no small "
        "sizes; fit: busbw still rising, the 3 largest sizes more than 2 % apart).",
        style="dim",
        markup=False,
    )
    for f in result.fits:
        if len(f.lines) > 1:
            parts = [
                f"{_fmt_bytes(ln.from_bytes)}–{_fmt_bytes(ln.to_bytes)}: "
                f"α {ln.alpha_us:.3g} µs, {ln.busbw_GBps:.3g} GB/s"
                for ln in f.lines
            ]
            console.print(f"  {f.collective} {f.ranks}r: " + "; ".join(parts), markup=False)
