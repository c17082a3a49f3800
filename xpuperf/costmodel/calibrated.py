"""Calibrated α/β for the cost model: an ``xpuperf.calibration/1`` file (``xpuperf calibrate -o``)
overriding the topology's link levels, and exact nccl-tests fits used where they apply.

Two uses of a calibration (docs/calibrate.md "Calibrated plan"):

1. **Exact fit.** When the plan asks for N cards on M nodes and the file holds an ``all_reduce``
   fit on exactly N ranks / M nodes, the allreduce time of a bucket of S bytes is the fit itself,
   t(S) = min_k (α_k + f·S / B_k) (µs; f = 2(N−1)/N, B_k bus bandwidths, GB/s) — what NCCL did on
   that cluster, protocol and algorithm switches included. Only for ``--algorithm auto|nccl``
   (the measurement is NCCL's own choice); an explicit algorithm uses the levels below.
2. **Levels.** Every other count uses the topology's :class:`~.levels.LinkLevels` with the
   calibrated floor and plateau of each level (``levels.intra`` from a one-node fit,
   ``levels.net`` from a multi-node fit):

   - **Net bandwidth.** A node-contiguous flat ring on R ranks / M nodes (R = M·G) moves
     2(R−1)/R·S over its slowest edge, so its busbw = S·2(R−1)/R / t equals the bottleneck edge
     bandwidth B = min(intra ring, one node's NICs) (``collectives.allreduce_s``; nccl-tests
     doc/PERFORMANCE.md). The network is that bottleneck on every multi-node cluster, so the
     measured plateau B_net *is* ``node_net_bw_GBps``; the tree's 2S/B with B = min(intra, node
     NICs) reads the same bandwidth. One card's NIC share and the leader's NIC are scaled by the
     same achieved fraction k = B_net / (topology's node NICs) (e.g. EFA 45.0 / 50 = 0.90), and
     the intra ring is raised to B_net if the topology claims less (a ring cannot beat its
     slowest edge).
   - **Intra bandwidth.** A one-node ring's busbw is the slowest intra edge; the plateau on R
     cards scales every intra ring bandwidth by B_intra / (topology's ring on R cards).
   - **Latency.** NCCL's small-message time at S → 0 is min over algorithms and protocols of
     base + c_i·α_i + c_e·α_e (formulas.md §2; c_i, c_e = intra / network steps of the ring or
     tree on R ranks, read off :func:`~.comm._coefficients`). We keep NCCL's per-protocol
     figures and add one extra Δ per level to every per-step latency: the measured floor L then
     fixes Δ = max_k (L − a_k)/c_k (the min of increasing lines equals L exactly there), a_k the
     default latency of candidate k. Intra first (one-node fit, c = c_i), then net (c = c_e, with
     the intra Δ in place). A floor the fit only extrapolated (no latency-dominated size) is not
     used. Δ never takes a per-step latency below zero.

The mid-size regimes of a multi-line fit (protocol / algorithm switches of that cluster) are in
the exact fit only; the levels carry the floor and the plateau, as docs/calibrate.md says.
Raises :class:`~xpuperf.errors.InputError` for an unreadable file and
:class:`~.checks.CostModelError` (exit 2) for a calibration that contradicts the topology.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from xpuperf.costmodel.checks import CostModelError
from xpuperf.costmodel.levels import NVLINK_LIKE, PROTOCOLS, LinkLevels, nccl_latencies_us
from xpuperf.errors import InputError, UsageError
from xpuperf.topology.model import Cluster

MAX_FILE_BYTES = 16 << 20
"""Largest calibration file read (real ones are a few kB; the YAML is parsed whole)."""
SCHEMA = "xpuperf.calibration/1"
MEASURED = "calibrated"
"""Algorithm label of a point priced by an exact fit."""


@dataclass(frozen=True)
class FitCurve:
    """One (collective, ranks, nodes) fit of the file: t(S) = min_k α_k + f·S/B_k.

    Attributes: ``lines`` = ((alpha_us, busbw_GBps), …) in µs and GB/s; ``bus_factor`` = f
    (dimensionless, 2(N−1)/N for all_reduce); ``latency_us`` the floor (observed or not),
    ``busbw_GBps`` the plateau; ``accuracy`` as in the file. Source: the fit ``xpuperf
    calibrate`` writes (docs/calibrate.md); busbw and f as nccl-tests doc/PERFORMANCE.md
    (formulas.md §3).
    """

    collective: str
    ranks: int | None
    nodes: int | None
    bus_factor: float
    latency_us: float
    busbw_GBps: float  # noqa: N815 (unit in the name)
    latency_floor_observed: bool
    lines: tuple[tuple[float, float], ...]
    accuracy: dict[str, Any]

    def time_s(self, sizes_B: np.ndarray | list[float]) -> np.ndarray:
        """Allreduce seconds for each size in bytes (the fit's fastest line per size).

        (k,) bytes → (k,) seconds: min over lines of α·1e-6 + f·S / (B·1e9). Raises nothing.
        """
        s = np.asarray(sizes_B, dtype=float)
        best = np.full_like(s, np.inf)
        for alpha_us, bw in self.lines:
            best = np.minimum(best, alpha_us * 1e-6 + self.bus_factor * s / (bw * 1e9))
        return best

    @property
    def label(self) -> str:
        """e.g. ``all_reduce 16 ranks / 2 nodes``."""
        return f"{self.collective} {self.ranks} ranks / {self.nodes} nodes"


@dataclass(frozen=True)
class Calibration:
    """An ``xpuperf.calibration/1`` file.

    Attributes:
        path: the file; topology: its ``topology`` key (preset name or path relative to the
            file), or None; intra / net: the fit each level summary comes from, or None;
        fits: every fit in the file.
    """

    path: str
    topology: str | None
    intra: FitCurve | None
    net: FitCurve | None
    fits: tuple[FitCurve, ...]

    def exact_fit(self, cards: int, nodes: int) -> FitCurve | None:
        """The ``all_reduce`` fit on exactly ``cards`` ranks / ``nodes`` nodes, if any."""
        for f in self.fits:
            if f.collective == "all_reduce" and f.ranks == cards and f.nodes == nodes:
                return f
        return None

    def topology_ref(self) -> str | None:
        """The recorded topology as ``plan`` loads it: a preset name, or the path joined to the
        calibration file's folder; :class:`InputError` when that file does not exist."""
        if self.topology is None:
            return None
        joined = Path(self.path).parent / self.topology
        if joined.exists():
            return str(joined)
        if "/" in self.topology or Path(self.topology).suffix in (".yaml", ".yml", ".json"):
            raise InputError(
                f"its topology {self.topology!r} (relative to this file) does not exist; give "
                f"--topology FILE|PRESET --calibration {self.path}",
                self.path,
            )
        return self.topology


def is_calibration_file(path: str | Path) -> bool:
    """True when ``path`` is a readable YAML file whose ``schema`` is ``xpuperf.calibration/1``."""
    p = Path(path)
    if not p.is_file():
        return False
    try:
        head = p.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return False
    return any(ln.strip().startswith("schema:") and SCHEMA in ln for ln in head.splitlines())


def _float(doc: Any, key: str, path: str, where: str) -> float:
    try:
        v = float(doc[key])
    except (KeyError, TypeError, ValueError):
        raise InputError(
            f"{where}.{key} is missing or not a number; regenerate the file with "
            "`xpuperf calibrate … -o`",
            path,
        ) from None
    if not math.isfinite(v) or v <= 0:
        raise InputError(f"{where}.{key} must be a positive number, got {doc[key]!r}", path)
    return v


def _int_or_none(v: Any) -> int | None:
    return None if v is None else int(v)


def _typed(v: Any, kind: type, path: str, where: str) -> Any:
    """``v`` (None → an empty ``kind``) when it is a ``kind``; else an :class:`InputError`."""
    if v is None:
        return kind()
    if not isinstance(v, kind):
        name = "a list" if kind is list else "a mapping"
        raise InputError(f"{where} must be {name}; regenerate the file with `xpuperf calibrate "
                         "… -o`", path)  # fmt: skip
    return v


def _fit(d: Any, path: str, where: str) -> FitCurve:
    if not isinstance(d, dict):
        raise InputError(f"{where} must be a mapping", path)
    raw = _typed(d.get("lines"), list, path, f"{where}.lines") or [
        {"alpha_us": d.get("latency_us"), "busbw_GBps": d.get("busbw_GBps")}
    ]
    lines = tuple(
        (_float(ln, "alpha_us", path, f"{where}.lines[{i}]"),
         _float(ln, "busbw_GBps", path, f"{where}.lines[{i}]"))
        for i, ln in enumerate(raw)
    )  # fmt: skip
    try:
        ranks, nodes = _int_or_none(d.get("ranks")), _int_or_none(d.get("nodes"))
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{where}: ranks and nodes must be integers", path) from None
    if any(v is not None and v < 1 for v in (ranks, nodes)):
        raise InputError(f"{where}: ranks and nodes must be >= 1", path)
    return FitCurve(
        str(d.get("collective", "")), ranks, nodes, _float(d, "bus_factor", path, where),
        _float(d, "latency_us", path, where), _float(d, "busbw_GBps", path, where),
        bool(d.get("latency_floor_observed", False)), lines,
        dict(_typed(d.get("accuracy"), dict, path, f"{where}.accuracy")),
    )  # fmt: skip


def load(path: str | Path) -> Calibration:
    """Read an ``xpuperf.calibration/1`` file.

    Raises :class:`InputError` (exit 2) when it is unreadable, not that schema, or malformed.
    """
    p = str(path)
    if not Path(path).is_file():
        raise InputError("no such calibration file; make one with `xpuperf calibrate … -o FILE`", p)
    try:
        with Path(path).open("rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            raise InputError(
                f"file is larger than {MAX_FILE_BYTES >> 20} MiB: not a calibration file (they "
                "are a few kB); give the file `xpuperf calibrate -o` wrote",
                p,
            )
        doc = yaml.safe_load(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the calibration: {e.__class__.__name__}", p) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError("not valid YAML; give the file `xpuperf calibrate -o` wrote", p,
                         None if mark is None else mark.line + 1) from None  # fmt: skip
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InputError(
            f"not a calibration file (schema: {SCHEMA}); make one with "
            "`xpuperf calibrate NCCL_TESTS_OUTPUT --topology T -o FILE`",
            p,
        )
    fits = tuple(
        _fit(f, p, f"fits[{i}]") for i, f in enumerate(_typed(doc.get("fits"), list, p, "fits"))
    )
    if not fits:
        raise InputError("the calibration has no fits; rerun `xpuperf calibrate`", p)
    levels = _typed(doc.get("levels"), dict, p, "levels")

    def level(name: str) -> FitCurve | None:
        lv = _typed(levels.get(name), dict, p, f"levels.{name}")
        if not lv:
            return None
        src = _typed(lv.get("from"), dict, p, f"levels.{name}.from")
        for f in fits:
            if (f.collective, f.ranks, f.nodes) == (src.get("collective"), src.get("ranks"),
                                                   src.get("nodes")):  # fmt: skip
                return f
        raise InputError(f"levels.{name}.from names no fit in the file", p)

    topo = doc.get("topology")
    return Calibration(p, None if topo is None else str(topo), level("intra"), level("net"), fits)


def plan_inputs(
    topology: str | None, calibration: str | None, need_topology: bool = True
) -> tuple[str | None, Calibration | None]:
    """Resolve ``plan --topology`` / ``--calibration`` into (topology to load, calibration).

    ``--topology FILE`` may itself be a calibration: its recorded ``topology`` is loaded (a
    preset name, or a path relative to the calibration file). With ``--calibration`` and no
    ``--topology`` the recorded one is used (unless ``need_topology`` is false: a generic
    cluster from ``--cards-per-node``). Raises :class:`UsageError` when both name a calibration
    or no topology is known, :class:`InputError` for a bad calibration file.
    """
    if topology is not None and is_calibration_file(topology):
        if calibration is not None:
            raise UsageError(f"--topology {topology} is a calibration file and --calibration "
                             "gives another; give the topology with --topology")  # fmt: skip
        cal = load(topology)
        ref = cal.topology_ref()
        if ref is None:
            raise UsageError(
                f"{topology} is a calibration made without `xpuperf calibrate --topology`, so it "
                f"names no topology; give --topology FILE|PRESET --calibration {topology}"
            )
        return ref, cal
    if calibration is None:
        return topology, None
    cal = load(calibration)
    if topology is None and need_topology:
        topology = cal.topology_ref()
        if topology is None:
            raise UsageError(
                f"--calibration {calibration} names no topology (made without "
                "`xpuperf calibrate --topology`); give --topology FILE|PRESET"
            )
    return topology, cal


def check(cal: Calibration, cluster: Cluster) -> None:
    """Refuse a calibration whose fits do not fit ``cluster``'s nodes (:class:`CostModelError`).

    Every fit with known ranks and nodes must put ranks/nodes ≤ G cards on each node, and the
    multi-node fit behind ``levels.net`` must use whole nodes (ranks = nodes × G): the plan's
    nodes use all G cards, a measurement on fewer cards per node does not describe them.
    """
    g = len(cluster.nodes[0].devices)
    for f in cal.fits:
        if f.ranks is None or f.nodes is None:
            continue
        if f.ranks % f.nodes or f.ranks // f.nodes > g:
            raise CostModelError(
                f"{cal.path}: the {f.label} fit puts {f.ranks / f.nodes:g} ranks on each node, "
                f"but the topology has {g} cards per node; calibrate against this topology or "
                "give the topology the measurement was made on"
            )
    if cal.net is not None and cal.net.ranks != (cal.net.nodes or 0) * g:
        raise CostModelError(
            f"{cal.path}: levels.net comes from the {cal.net.label} fit, "
            f"{cal.net.ranks // max(cal.net.nodes or 1, 1)} of the {g} cards per node; run "
            f"nccl-tests on whole nodes ({g} GPUs per node) to calibrate the network"
        )


def _extra_us(floor_us: float, n: int, lv: LinkLevels, level: str) -> float:
    """Δ (µs per step of ``level``) making NCCL's smallest latency on ``n`` ranks equal
    ``floor_us`` (module docstring); clamped so no per-step latency goes below zero."""
    from xpuperf.costmodel.comm import _coefficients  # comm imports this module

    protocols = PROTOCOLS if lv.intra_kind in NVLINK_LIKE else ("ll", "simple")
    deltas, hw = [], []
    for algo in ("ring", "tree"):
        c_base, c_i, c_e, _ = _coefficients(algo, n, lv, None)
        for p in protocols:
            intra, net, base = nccl_latencies_us(algo, p, lv.intra_kind)
            intra += lv.intra_latency_extra_us
            net += lv.net_latency_extra_us
            a = c_base * base + c_i * intra + c_e * net
            c = c_i if level == "intra" else c_e
            hw.append(intra if level == "intra" else net)
            if c > 1e-9:
                deltas.append((floor_us - a) / c)
    if not deltas:
        return 0.0
    return max(max(deltas), -min(hw))


def apply(cal: Calibration, cluster: Cluster, lv: LinkLevels, topology_levels) -> LinkLevels:
    """``lv`` (levels of ``lv.cards_per_node`` cards of ``cluster``) with the calibration's
    bandwidths and latencies (module docstring). ``topology_levels(cards)`` gives the
    uncalibrated levels of ``cards`` cards of one node (for the intra reference).

    Net: ``node_net_bw_GBps`` = B_net, card and leader NIC × B_net / topology's node NICs;
    intra: × B_intra / topology's ring on the fit's cards; latency: Δ per step from the floor
    (module docstring). Sources: nccl-tests doc/PERFORMANCE.md (busbw, formulas.md §3) and
    NCCL's latency model (formulas.md §2). Raises nothing for a calibration :func:`check`
    accepted (a net fit not on whole nodes may raise :class:`CostModelError`).
    """
    big_g, g = len(cluster.nodes[0].devices), lv.cards_per_node
    src = []
    if cal.intra is not None and g >= 2 and (cal.intra.ranks or 0) >= 2:
        r = min(cal.intra.ranks or g, big_g)
        ref = lv if r == g else topology_levels(r)
        k = cal.intra.busbw_GBps / ref.intra_bw_GBps
        lv = replace(lv, intra_bw_GBps=lv.intra_bw_GBps * k)
        src.append(f"intra busbw {cal.intra.busbw_GBps:.4g} GB/s ({k:.2f} × topology)")
        if cal.intra.latency_floor_observed:
            ref_k = replace(ref, intra_bw_GBps=ref.intra_bw_GBps * k)
            d = _extra_us(cal.intra.latency_us, r, ref_k, "intra")
            lv = replace(lv, intra_latency_extra_us=d,
                         intra_latency_us=max(0.0, lv.intra_latency_us + d))  # fmt: skip
            src.append(f"intra latency +{d:.3g} µs/step")
    if cal.net is not None and g == big_g and math.isfinite(lv.node_net_bw_GBps):
        b = cal.net.busbw_GBps
        k = b / lv.node_net_bw_GBps
        lv = replace(lv, node_net_bw_GBps=b, card_net_bw_GBps=lv.card_net_bw_GBps * k,
                     leader_net_bw_GBps=lv.leader_net_bw_GBps * k,
                     intra_bw_GBps=max(lv.intra_bw_GBps, b))  # fmt: skip
        src.append(f"net busbw {b:.4g} GB/s ({k:.2f} × topology NICs)")
        if cal.net.latency_floor_observed and cal.net.ranks:
            d = _extra_us(cal.net.latency_us, cal.net.ranks, lv, "net")
            lv = replace(lv, net_latency_extra_us=d, net_latency_us=max(0.0, lv.net_latency_us + d))
            src.append(f"net latency +{d:.3g} µs/step")
    if not src:
        return lv
    return replace(lv, source=f"{lv.source}; calibration {cal.path}: {', '.join(src)}")


def describe(cal: Calibration, lv: LinkLevels) -> list[str]:
    """Sentences for a plan's assumptions: which α/β came from the calibration."""
    out = []
    if cal.net is not None:
        lat = (
            f"latency floor {cal.net.latency_us:.4g} µs → +{lv.net_latency_extra_us:.3g} µs "
            "per network step on NCCL's figures"
            if cal.net.latency_floor_observed
            else "latency floor extrapolated in the fit: NCCL's network latencies kept"
        )
        out.append(
            f"calibrated from {cal.path} ({cal.net.label}): fitted busbw "
            f"{cal.net.busbw_GBps:.4g} GB/s → {lv.node_net_bw_GBps:.4g} GB/s per node, "
            f"{lv.card_net_bw_GBps:.4g} GB/s per card; {lat}"
        )
    if cal.intra is not None:
        lat = (
            f"latency floor {cal.intra.latency_us:.4g} µs → +{lv.intra_latency_extra_us:.3g} µs"
            " per intra step"
            if cal.intra.latency_floor_observed
            else "intra latency: NCCL's"
        )
        out.append(
            f"calibrated from {cal.path} ({cal.intra.label}): fitted intra busbw "
            f"{cal.intra.busbw_GBps:.4g} GB/s → intra ring {lv.intra_bw_GBps:.4g} GB/s; {lat}"
        )
    exact = [f for f in cal.fits if f.collective == "all_reduce" and f.ranks and f.nodes]
    if exact:
        out.append(
            "at "
            + ", ".join(f"{f.ranks} cards / {f.nodes} nodes" for f in exact)
            + f" with --algorithm auto|nccl the allreduce time is the measured fit itself "
            f"(algorithm '{MEASURED}'), from {cal.path}"
        )
    if not out:
        out.append(
            f"calibration {cal.path}: no fit with known ranks and nodes (nccl-tests output "
            "without the '# Rank … on HOST' lines): nothing applied, topology α/β kept"
        )
    return out
