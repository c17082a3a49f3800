"""Calibration findings (XP6xx): what the fitted model and the topology say about the cluster.

- XP601 measured busbw plateau < 70 % of what the topology allows (needs a topology, or
  ``--link``: then the link's figure of :mod:`.single` is the ceiling): for a
  multi-node group, the sum over the NICs used on one node of min(NIC line rate, PCIe slot)
  (ring busbw is bounded by the node's outbound bandwidth); for one node, the slowest link of
  the ring over the used cards in index order (:meth:`Cluster.path`). Likely causes are named
  from the topology (NIC on another NUMA node, shared NIC) plus the usual software ones. A fit
  above 110 % of the ceiling did not run over it (:func:`.single.above_link`): ``not_checked``.
- XP602 held-out (leave-one-out) busbw error above 15 % at ≥ 1 MiB, or latency floor above 25 %.
- XP603 nccl-tests counted wrong elements or out-of-bounds values: the timings are suspect.
- XP604 no latency-dominated size measured: ``latency_us`` is an extrapolation.
- XP605 busbw still rising at the largest sizes (the largest below 90 % of the fitted asymptote,
  or the 3 largest sizes more than 2 % apart): the fitted plateau is an extrapolation.

Headline figures are measured: the peak busbw the input printed, with its size; the fitted
asymptote (``Fit.busbw_GBps``, the model's β) is named "fit" wherever it is shown.

Every message states the value, the threshold and the remedy (docs/style.md rule 9).
"""

from __future__ import annotations

from pathlib import Path

from xpuperf.calibrate.fit import BW_TARGET, LAT_TARGET, MEASURED_SHARE, MIB, Fit
from xpuperf.calibrate.fit_model import PLATEAU_FLAT, PLATEAU_SIZES
from xpuperf.calibrate.nccltests import TableInfo
from xpuperf.calibrate.single import ABOVE_LINK, Link, above_link
from xpuperf.findings import Check, CheckStatus, Finding, Severity
from xpuperf.topology.model import Cluster

PLATEAU_FRACTION = 0.70  # issue 10: flag busbw below 70 % of the line rate
RISING_FRACTION = 0.90  # largest measured busbw below 90 % of the fitted plateau

SOFTWARE_CAUSES = (
    "inter-node traffic on TCP sockets instead of RDMA (NCCL_DEBUG=INFO shows 'via NET/Socket')",
    "GPUDirect RDMA off or unavailable (no '/GDRDMA' on NET lines)",
    "too few NCCL channels for the NICs (NCCL_MIN_NCHANNELS)",
    "oversubscribed or congested switch uplinks",
)
INTRA_CAUSES = (
    "peer-to-peer off or through host memory (NCCL_DEBUG=INFO shows 'via SHM' or P2P disabled: "
    "consumer cards, ACS/IOMMU in a VM, NCCL_P2P_DISABLE or NCCL_P2P_LEVEL set)",
    "fewer or slower links than assumed (nvidia-smi topo -m: NV# counts, PCIe generation)",
)


def _label(fit: Fit) -> str:
    nodes = "?" if fit.nodes is None else fit.nodes
    ranks = "?" if fit.ranks is None else fit.ranks
    files = fit.run or ", ".join(Path(s).name for s in fit.sources)  # run: file:line
    return f"{fit.collective} on {ranks} ranks / {nodes} nodes ({files})"


RERUN = {
    "nccl-tests": {"iters": "rerun nccl-tests with more iterations (-n 50 -w 10)",
                   "small": "rerun nccl-tests from -b 8",
                   "large": "rerun with a larger -e (max bytes)"},
    "hccl_demo": {"iters": "rerun hccl_demo with more iterations (--loop 1000)",
                  "small": "rerun hccl_demo with --size_range 32b …",
                  "large": "rerun hccl_demo with a larger --size_range maximum"},
}  # fmt: skip
"""How to get more evidence, per tool that printed the table."""


def rerun(fit: Fit, what: str) -> str:
    """The tool's own flags for ``what`` (``iters``, ``small``, ``large``): :data:`RERUN`."""
    return RERUN.get(fit.tool, RERUN["nccl-tests"])[what]


def _gb(x: float) -> str:
    return f"{x:.3g} GB/s"


def size_text(n: int) -> str:
    """``4294967296`` → ``4 GiB``; ``3000`` → ``3000 B``."""
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k:
            return f"{n / (1 << k):g} {unit}"
    return f"{n} B"


def peak_text(fit: Fit) -> str:
    """``measured peak 43.81 GB/s at 4 GiB (line 593), fit 45 GB/s``: the measured figure first,
    the fitted asymptote named as such."""
    bw, size = fit.peak()
    line = f", line {fit.peak_line}" if fit.peak_line else ""
    return f"measured peak {bw:g} GB/s ({size_text(size)}{line}), fit {_gb(fit.busbw_GBps)}"


def plateau_text(fit: Fit) -> str:
    """How the plateau criterion judged the largest sizes."""
    _, spread, tail = fit.plateau()
    crit = f"criterion: the {PLATEAU_SIZES} largest sizes within {PLATEAU_FLAT:.0%}"
    if len(tail) < PLATEAU_SIZES:
        return f"fewer than {PLATEAU_SIZES} sizes ({crit})"
    bws = " → ".join(f"{v:.4g}" for v in tail["measured_busbw_GBps"])
    lo, hi = (size_text(int(tail["size_bytes"].iloc[i])) for i in (0, -1))
    sizes = f"{lo}–{hi}"
    return f"{bws} GB/s over {sizes}, {spread:.1%} apart ({crit})"


def fit_findings(fit: Fit) -> list[Finding]:
    """XP602, XP604, XP605 for one fit."""
    out: list[Finding] = []
    acc = fit.accuracy()
    key = {"collective": fit.collective, "ranks": fit.ranks, "nodes": fit.nodes, "run": fit.run}
    bw_err, lat_err = acc["busbw_max_err_ge_1MiB"], acc["latency_floor_err"]
    bad = []
    if bw_err is not None and bw_err > BW_TARGET:
        worst = fit.points[fit.points["size_bytes"] >= MIB]
        row = worst.loc[worst["loo_error"].abs().idxmax()]
        bad.append(
            f"held-out busbw off by {bw_err:.0%} at {int(row['size_bytes']):,} B "
            f"(target {BW_TARGET:.0%} for sizes >= 1 MiB)"
        )
    if lat_err is not None and lat_err > LAT_TARGET:
        bad.append(f"latency floor off by {lat_err:.0%} (target {LAT_TARGET:.0%})")
    if bad:
        out.append(
            Finding(
                "XP602",
                Severity.WARNING,
                f"{_label(fit)}: {'; '.join(bad)}. The measured curve is irregular there "
                f"(a protocol or algorithm switch, or a noisy row); {rerun(fit, 'iters')}, "
                "and treat predictions "
                f"near these sizes as ±{max(bw_err or 0.0, lat_err or 0.0):.0%}.",
                {**key, **acc},
            )
        )
    if not fit.latency_floor_observed:
        smallest = int(fit.points["size_bytes"].iloc[0])
        out.append(
            Finding(
                "XP604",
                Severity.INFO,
                f"{_label(fit)}: the smallest size measured is {smallest:,} B, where transfer "
                f"is more than 10% of the time, so latency_us = {fit.latency_us:.3g} µs is an "
                "extrapolation of the large-message line, not the latency floor; "
                f"{rerun(fit, 'small')} to measure it.",
                {**key, "smallest_size_bytes": smallest},
            )
        )
    last = fit.points.iloc[-1]
    if not fit.bandwidth_measured:
        out.append(
            Finding(
                "XP605",
                Severity.WARNING,
                f"{_label(fit)}: busbw not measured — the largest size "
                f"({int(last['size_bytes']):,} B) carries {_gb(last['measured_busbw_GBps'])}, "
                f"below {MEASURED_SHARE:.0%} of any plateau the fit could give (it extrapolates "
                f"{_gb(fit.busbw_GBps)}): the sweep holds latency-bound sizes only, so no "
                "bandwidth is reported and this fit is left out of the calibration file; "
                f"{rerun(fit, 'large')}.",
                {**key, "largest_busbw_GBps": float(last["measured_busbw_GBps"])},
            )
        )
    elif last["measured_busbw_GBps"] < RISING_FRACTION * fit.busbw_GBps or not fit.plateau()[0]:
        far = last["measured_busbw_GBps"] < RISING_FRACTION * fit.busbw_GBps
        out.append(
            Finding(
                "XP605",
                Severity.INFO,
                f"{_label(fit)}: busbw still rising at the largest sizes: {plateau_text(fit)}"
                + (f"; the largest is below {RISING_FRACTION:.0%} of the fit" if far else "")
                + f"; {peak_text(fit)}: the fitted asymptote lies above anything measured (an "
                f"extrapolation); {rerun(fit, 'large')}.",
                {
                    **key,
                    "largest_busbw_GBps": float(last["measured_busbw_GBps"]),
                    "peak_busbw_GBps": fit.peak()[0],
                    "fit_busbw_GBps": fit.busbw_GBps,
                    "spread": fit.plateau()[1],
                    "threshold": PLATEAU_FLAT,
                },
            )
        )
    return out


def table_findings(path: str, table: TableInfo, wrong: float) -> list[Finding]:
    """XP603 for one parsed table (``wrong`` = total #wrong over its rows, new layout)."""
    bad = []
    if table.check_kind == "#wrong" and wrong > 0:
        bad.append(f"{wrong:,.0f} wrong elements")  # inf when a mangled cell overflowed
    if table.out_of_bounds:
        bad.append(f"{table.out_of_bounds} out-of-bounds values")
    if not bad:
        return []
    return [
        Finding(
            "XP603",
            Severity.ERROR,
            f"{path}:{table.header_line}: nccl-tests reported {' and '.join(bad)} (threshold 0): "
            "the collective returned corrupt data, so its timings do not describe a healthy "
            "cluster; find the faulty card or link (run per node, then per pair) before "
            "calibrating.",
            {"path": path, "line": table.header_line, "collective": table.collective},
        )
    ]


def ceiling(fit: Fit, cluster: Cluster) -> tuple[float, str, list[str]] | None:
    """(busbw ceiling GB/s, what it is, likely topology causes) or None when unknown; ``fit``
    is anything with ``nodes`` and ``ranks`` (a :class:`Fit` or a single measurement)."""
    if fit.nodes is None or fit.ranks is None or fit.nodes > len(cluster.nodes):
        return None
    per_node = max(1, fit.ranks // fit.nodes)
    causes: list[str] = []
    if fit.nodes == 1:
        node = cluster.nodes[0]
        idx = [d.index for d in node.devices][:per_node]
        if len(idx) < 2:
            return None
        paths = [node.path(a, b) for a, b in zip(idx, idx[1:] + idx[:1], strict=True)]
        worst = min(paths, key=lambda p: p.bw_GBps)
        return worst.bw_GBps, f"slowest intra-node ring link ({worst.via})", causes
    best = None
    for node in cluster.nodes[: fit.nodes]:
        devs = node.devices[:per_node]
        used = {d.nic for d in devs if d.nic} or {n.name for n in node.nics}
        total = 0.0
        for name in sorted(used):
            nic = node.nic(name)
            if nic is None or nic.bw_GBps is None:
                return None
            total += min(nic.bw_GBps, node.pcie_bw_GBps)
            if len(nic.cards) > 1:
                causes.append(f"NIC {name} on {node.name} is shared by {len(nic.cards)} cards")
        for d in devs:
            nic = node.nic(d.nic) if d.nic else None
            if (
                nic
                and nic.numa_node is not None
                and d.numa_node is not None
                and nic.numa_node != d.numa_node
            ):
                causes.append(
                    f"card {d.index} on {node.name} uses NIC {nic.name} on another NUMA node "
                    f"(NUMA {d.numa_node}→{nic.numa_node})"
                )
        if best is None or total < best[0]:
            best = (total, f"{len(used)} NIC(s) per node, {total:.3g} GB/s line rate")
    if best is None:
        return None
    return best[0], best[1], sorted(set(causes))


def topology_findings(fit: Fit, cluster: Cluster) -> list[Finding]:
    """XP601 for one fit against a topology."""
    got = ceiling(fit, cluster)
    if got is None:
        return []
    ceil, what, causes = got
    named = causes + (list(SOFTWARE_CAUSES) if fit.nodes and fit.nodes > 1 else [])
    return _plateau_findings(fit, ceil, f"the topology allows ({what}", named)


def link_findings(fit: Fit, link: Link) -> list[Finding]:
    """XP601 for one fit against ``--link`` (no topology): the plateau vs the link's figure."""
    multi = fit.nodes is None or fit.nodes > 1
    named = list(SOFTWARE_CAUSES if multi else ()) + list(INTRA_CAUSES)
    return _plateau_findings(fit, link.bw_GBps, f"--link gives ({link.label}", named)


def _plateau_findings(fit: Fit, ceil: float, what: str, named: list[str]) -> list[Finding]:
    frac = fit.busbw_GBps / ceil if ceil > 0 else float("inf")
    if frac >= PLATEAU_FRACTION:
        return []
    return [
        Finding(
            "XP601",
            Severity.WARNING,
            f"{_label(fit)}: busbw {peak_text(fit)}: the fit is {frac:.0%} of the "
            f"{_gb(ceil)} {what}; threshold {PLATEAU_FRACTION:.0%}). "
            f"Likely causes: {'; '.join(named) if named else 'links slower than described'}. "
            "Check with NCCL_DEBUG=INFO which transport each channel uses.",
            {
                "collective": fit.collective,
                "ranks": fit.ranks,
                "nodes": fit.nodes,
                "run": fit.run,
                "busbw_GBps": fit.busbw_GBps,
                "peak_busbw_GBps": fit.peak()[0],
                "ceiling_GBps": ceil,
                "fraction": frac,
                "causes": named,
            },
        )
    ]


def _merge(name: str, title: str, parts: list[tuple[CheckStatus, str]], codes: tuple) -> Check:
    """One check over several fits/tables: problem if any is, clean if all are."""
    if not parts:
        return Check(name, title, CheckStatus.NOT_CHECKED, "no fitted group", ())
    stats = [s for s, _ in parts]
    status = (
        CheckStatus.PROBLEM if CheckStatus.PROBLEM in stats
        else CheckStatus.CLEAN if all(s == CheckStatus.CLEAN for s in stats)
        else CheckStatus.NOT_CHECKED
    )  # fmt: skip
    return Check(name, title, status, "; ".join(e for _, e in parts), codes)


def fit_checks(
    fits: list[Fit], findings: list[Finding], cluster: Cluster | None, link: Link | None = None
) -> list[Check]:
    """``calibrate.*`` checks of XP601, XP602, XP604, XP605 over the fits (from ``findings``);
    the plateau is compared with ``cluster``, else with ``link`` (``--link``)."""

    def has(code: str, fit: Fit) -> bool:
        return any(f.code == code and f.data.get("collective") == fit.collective
                   and f.data.get("ranks") == fit.ranks and f.data.get("nodes") == fit.nodes
                   and f.data.get("run", fit.run) == fit.run  # two runs of one configuration
                   for f in findings)  # fmt: skip

    acc, lat, rise, topo = [], [], [], []
    for fit in fits:
        a, lab = fit.accuracy(), _label(fit)
        bw = a["busbw_max_err_ge_1MiB"]
        if has("XP602", fit):
            acc.append((CheckStatus.PROBLEM, f"{lab}: held-out error above target"))
        elif bw is None and a["latency_floor_err"] is None:
            acc.append((CheckStatus.NOT_CHECKED, f"{lab}: too few sizes to leave one out"))
        elif bw is None:
            acc.append((CheckStatus.NOT_CHECKED, f"{lab}: no size ≥ 1 MiB to hold out for busbw "
                        f"(latency floor within {a['latency_floor_err']:.0%})"))  # fmt: skip
        else:
            acc.append((CheckStatus.CLEAN, f"{lab}: held-out busbw error {bw or 0:.0%}"))
        lat.append(
            (CheckStatus.NOT_CHECKED, f"{lab}: smallest size not latency-bound")
            if has("XP604", fit)
            else (CheckStatus.CLEAN, f"{lab}: latency floor {fit.latency_us:.3g} µs measured")
        )
        rise.append(
            (CheckStatus.NOT_CHECKED, f"{lab}: busbw still rising: {plateau_text(fit)}; "
             f"{peak_text(fit)} (extrapolated)")
            if has("XP605", fit)
            else (CheckStatus.CLEAN, f"{lab}: plateau reached: {plateau_text(fit)}; "
                  f"{peak_text(fit)}")
        )  # fmt: skip
        got = ceiling(fit, cluster) if cluster is not None else None
        if cluster is None and link is not None:
            got = (link.bw_GBps, f"{link.label}, --link")
        if got is not None and fit.busbw_GBps > ABOVE_LINK * got[0]:
            topo.append(
                (
                    CheckStatus.NOT_CHECKED,
                    f"{lab}: {peak_text(fit)} vs {_gb(got[0])} ({got[1]}): "
                    + above_link(fit.nodes),
                )
            )
        elif cluster is None and link is None:
            topo.append(
                (
                    CheckStatus.NOT_CHECKED,
                    f"{lab}: no topology and no link; pass --topology FILE or --link (pcie4, "
                    "nvlink-h100, 400Gbps)",
                )
            )
        elif got is None:
            topo.append(
                (
                    CheckStatus.NOT_CHECKED,
                    f"{lab}: the topology gives no ceiling (NIC speed or node count unknown)",
                )
            )
        elif has("XP601", fit):
            topo.append(
                (
                    CheckStatus.PROBLEM,
                    f"{lab}: fit below {PLATEAU_FRACTION:.0%} of {_gb(got[0])} ({got[1]}); "
                    f"{peak_text(fit)}",
                )
            )
        else:
            topo.append(
                (
                    CheckStatus.CLEAN,
                    f"{lab}: {peak_text(fit)} vs {_gb(got[0])} ({got[1]})",
                )
            )
    hit = {f.code for f in findings}
    return [
        _merge("calibrate.busbw_vs_topology", "busbw plateau vs the topology", topo,
               ("XP601",) if "XP601" in hit else ()),
        _merge("calibrate.accuracy", "held-out accuracy of the fit", acc,
               ("XP602",) if "XP602" in hit else ()),
        _merge("calibrate.latency_floor", "latency floor measured", lat,
               ("XP604",) if "XP604" in hit else ()),
        _merge("calibrate.plateau", "busbw plateau reached", rise,
               ("XP605",) if "XP605" in hit else ()),
    ]  # fmt: skip


def wrong_check(tables: list[tuple[str, TableInfo]], wrong: list[float]) -> Check:
    """``calibrate.wrong_results`` (XP603) over every table; ``wrong`` per table."""
    parts = []
    for (path, t), w in zip(tables, wrong, strict=True):
        where = f"{Path(path).name}:{t.header_line}"
        if (t.check_kind == "#wrong" and w > 0) or t.out_of_bounds:
            parts.append((CheckStatus.PROBLEM, f"{where}: wrong results reported"))
        elif t.check_kind == "#wrong" or t.out_of_bounds is not None:
            parts.append((CheckStatus.CLEAN, f"{where}: 0 wrong elements in {t.rows} rows"))
        elif t.tool == "hccl_demo":
            parts.append((CheckStatus.NOT_CHECKED, f"{where}: hccl_demo prints no count of "
                          "wrong elements per size"))  # fmt: skip
        else:
            parts.append((CheckStatus.NOT_CHECKED, f"{where}: old layout prints a max error, "
                          "not a count, and no '# Out of bounds values' line"))  # fmt: skip
    codes = ("XP603",) if any(s == CheckStatus.PROBLEM for s, _ in parts) else ()
    return _merge("calibrate.wrong_results", "nccl-tests result validation", parts, codes)
