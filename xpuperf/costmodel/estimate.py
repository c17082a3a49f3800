"""Step time, its breakdown and speedup at each card count: the cost model put together.

For N cards (G per node; N < G is one partial node, otherwise G must divide N):

    step(N) = T_compute + exposed_comm + other + input_stall + straggler

- T_compute: the single-card step time given (``step_time_s``); backward is
  ``backward_fraction`` of it (default 2/3: backward ≈ 2 × forward).
- exposed_comm and other: gradients bucketed by the framework's rules, each bucket allreduced in
  FIFO order as soon as it is ready, overlapping backward (formulas.md §4, MG-WFBP recurrence;
  :mod:`.overlap`). Bucket allreduce times from :mod:`.comm` (formulas.md §1–2). ``other`` is the
  compute slowdown while communication runs (Calculon: 15 % with NVLink-class intra traffic, 2 %
  otherwise).
- input_stall: the wait for the next batch (:mod:`.input`): loader workers, prefetch depth,
  pinned or pageable host→device copy over the card's PCIe, NUMA placement; steady state
  max(0, P/W − C) for a per-batch time P, W workers and C = the rest of the step (formulas.md §5:
  prefetch depth cannot hide a deficit), a queue simulation over measured input times.
- straggler: E[max over N ranks] − mean of the per-rank compute for a coefficient of variation
  ``compute_cv`` (normal, formulas.md §6; default :data:`JITTER_CV` = 1.2 %, the published
  spread of same-model GPUs — the synchronisation tax that grows with N) plus a deterministic
  slowest-card factor.
- gradient accumulation K (``accumulation``, or ``global_batch`` B: K(N) = B / (batch × N)):
  times are per micro-step; exposed_comm, other and the random straggler wait are paid once per
  K micro-steps (the wait shrinks as 1/√K); the optimizer step F (memory-bound,
  :mod:`.accumulation`) is in the single-card step amortised over the reference K, and ``other``
  carries F/K(N) − F/K_ref.

speedup(N) = step_ref(1) / step(N): per-card throughput at N relative to ONE card alone at the
same per-card batch (background.md rule 2, analyze's definition), where step_ref(1) is the
modelled one-card step under the REFERENCE settings — today's, the ones the user runs
(:attr:`Planner.reference`): T_compute plus the input stall one card alone has. So the
single-card row is 1.0 by definition, and = T_compute / step(N) when there is no input stall.
A fix is priced on the same denominator (today's one card), so its "after" is the per-card
throughput it brings relative to today's one card alone: ranking fixes by it is ranking them
by throughput at N; it exceeds 1.0 only when the fix also makes one card faster than today
(an input fix on a loader-bound card).
Seconds throughout.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from xpuperf.costmodel import accumulation as acc
from xpuperf.costmodel import calibrated, comm, scale
from xpuperf.costmodel import input as inp
from xpuperf.costmodel import overlap as ov
from xpuperf.costmodel.checks import CostModelError, positive, positive_int
from xpuperf.costmodel.levels import NVLINK_LIKE, LinkLevels
from xpuperf.costmodel.step_settings import (
    BACKWARD_FRACTION,
    FRAMEWORKS,
    JITTER_CV,
    MAX_ACCUMULATION,
    RING_ORDERS,
    Settings,
)
from xpuperf.costmodel.workloads import Workload, dtype_bytes
from xpuperf.topology.model import Cluster

__all__ = [
    "BACKWARD_FRACTION", "DEFAULT_CARDS", "FRAMEWORKS", "JITTER_CV", "MAX_ACCUMULATION",
    "MAX_CARDS", "RING_ORDERS", "Estimate", "Planner", "Point", "Settings", "estimate",
]  # fmt: skip
DEFAULT_CARDS: tuple[int, ...] = (1, 8, 16, 32, 64, 128, 256, 512, 1024)
MAX_CARDS = 100_000


@dataclass(frozen=True)
class Point:
    """The estimate at one card count (seconds; ``speedup`` relative to one card alone)."""

    cards: int
    nodes: int
    step_time_s: float
    speedup: float
    compute_s: float
    exposed_comm_s: float
    input_stall_s: float
    straggler_s: float
    other_s: float
    comm_s: float
    algorithm: str
    n_buckets: int
    throughput_samples_per_s: float | None = None

    @property
    def breakdown(self) -> dict[str, float]:
        """Seconds per part: compute, exposed_comm, input_stall, straggler, other."""
        return {
            "compute_s": self.compute_s,
            "exposed_comm_s": self.exposed_comm_s,
            "input_stall_s": self.input_stall_s,
            "straggler_s": self.straggler_s,
            "other_s": self.other_s,
        }


@dataclass(frozen=True)
class Estimate:
    """Result of :func:`estimate`: one :class:`Point` per card count, and what was assumed;
    ``one_card_step_s`` is the speedup denominator (one card alone under today's settings, s)."""

    cluster: str
    cards_per_node: int
    workload: str
    n_params: int
    grad_bytes: int
    step_time_s: float
    batch_size: float | None
    settings: Settings
    points: tuple[Point, ...]
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    one_card_step_s: float = float("nan")

    def at(self, cards: int) -> Point:
        """The point for ``cards``; KeyError if it was not estimated."""
        for p in self.points:
            if p.cards == cards:
                return p
        raise KeyError(cards)


class Planner:
    """A cluster and a workload, prepared once, evaluated for any card count and settings.

    Args:
        cluster: the topology (its first node stands for every node; ``cluster`` capacity =
            nodes × cards is the largest card count accepted).
        workload: gradient tensors (:func:`~xpuperf.costmodel.workloads.model`).
        step_time_s: single-card step time, seconds (> 0).
        batch_size: samples per card per step (for throughput), optional.
        calibration: an ``xpuperf.calibration/1`` file's α/β and exact fits
            (:mod:`~xpuperf.costmodel.calibrated`), or None.
        reference: today's settings, whose one-card step is every speedup's denominator
            (module docstring); None = the settings of the first :meth:`estimate` call, or
            :class:`Settings` defaults for a :meth:`point` before any.
    """

    def __init__(self, cluster: Cluster, workload: Workload, step_time_s: float,
                 batch_size: float | None = None,
                 calibration: calibrated.Calibration | None = None,
                 reference: Settings | None = None) -> None:  # fmt: skip
        if not cluster.nodes or not cluster.nodes[0].devices:
            raise CostModelError("the topology has no nodes or no cards")
        self.cluster = cluster
        self.workload = workload
        self.step_time_s = positive("single-card step time (s)", step_time_s)
        if not math.isfinite(self.step_time_s):
            raise CostModelError("single-card step time must be finite")
        self.batch_size = None if batch_size is None else positive("batch size", batch_size)
        self.g = len(cluster.nodes[0].devices)
        self.capacity = sum(len(n.devices) for n in cluster.nodes)
        self.cc = comm.comp_cap(cluster)
        npl = cluster.network.nodes_per_leaf
        self.ranks_per_leaf = npl * self.g if npl else None
        self.calibration = calibration
        if calibration is not None:
            calibrated.check(calibration, cluster)
        self._levels: dict[int, LinkLevels] = {}
        self._curves: dict[tuple, comm.Curve] = {}
        self._buckets: dict[tuple, tuple[np.ndarray, list[float]]] = {}
        self._points: dict[tuple[int, Settings], Point] = {}
        self.reference = reference

    @cached_property
    def reference_step_s(self) -> float:
        """One card alone under :attr:`reference` (today's settings), seconds: T_compute + the
        input stall one card has (no communication, no wait for other ranks); the denominator of
        every speedup. Fixed at first use."""
        ref = self.reference if self.reference is not None else Settings()
        self.reference = ref
        return self.step_time_s + self.input_stall_s(ref, self.step_time_s)

    @cached_property
    def full_levels(self) -> LinkLevels:
        """Link levels of a whole node."""
        return comm.cluster_levels(self.cluster, calibration=self.calibration)

    def levels(self, cards: int, settings: Settings) -> LinkLevels:
        """Levels for ``cards`` (a partial node below G), with the NIC-per-card what-if."""
        g = min(cards, self.g)
        if g not in self._levels:
            self._levels[g] = (
                self.full_levels
                if g == self.g
                else comm.cluster_levels(self.cluster, g, self.calibration)
            )
        lv = self._levels[g]
        if settings.nic_per_card and math.isfinite(lv.leader_net_bw_GBps):
            lv = replace(lv, card_net_bw_GBps=lv.leader_net_bw_GBps,
                         node_net_bw_GBps=lv.leader_net_bw_GBps * lv.cards_per_node)  # fmt: skip
        if settings.ring_order == "interleaved" and cards > self.g:
            # every ring edge leaves its node: G edges share the node's NICs (ringorder.py)
            lv = replace(lv, intra_latency_us=lv.net_latency_us,
                         node_net_bw_GBps=lv.node_net_bw_GBps / lv.cards_per_node,
                         intra_bw_GBps=min(lv.intra_bw_GBps, lv.node_net_bw_GBps / lv.cards_per_node))  # fmt: skip  # noqa: E501
        return lv

    def check_cards(self, cards: int) -> int:
        """Number of nodes for ``cards``; raises :class:`CostModelError` when it does not fit."""
        n = positive_int("cards", cards)
        if n > MAX_CARDS:
            raise CostModelError(f"{n} cards is beyond the supported {MAX_CARDS}")
        if n > self.capacity:
            raise CostModelError(
                f"{n} cards is more than the topology's {self.capacity} "
                f"({len(self.cluster.nodes)} nodes × {self.g}); give more nodes (--nodes)"
            )
        if n > self.g and n % self.g:
            raise CostModelError(
                f"{n} cards do not fill nodes of {self.g} cards; use a multiple of {self.g} "
                f"(or fewer than {self.g} cards: one partial node)"
            )
        return max(1, n // self.g)

    def curve(self, algorithm: str, cards: int, settings: Settings) -> comm.Curve:
        """Allreduce curve of a concrete algorithm (user name) at ``cards``."""
        key = (algorithm, cards, settings.nic_per_card, settings.ring_order)
        if key not in self._curves:
            lv = self.levels(cards, settings)
            algo = comm.resolve(algorithm, self.cluster) if cards > 1 else "ring"
            self._curves[key] = comm.curve(algo, cards, lv, compute_capability=self.cc,
                                           ranks_per_leaf=self.ranks_per_leaf)  # fmt: skip
        return self._curves[key]

    def buckets(self, settings: Settings) -> tuple[np.ndarray, list[float]]:
        """(bucket bytes, ready times in backward-seconds) for the framework's rules."""
        key = (settings.framework, settings.bucket_mb, settings.dtype, settings.backward_fraction)
        if key not in self._buckets:
            sizes = self.workload.backward_sizes_B(settings.dtype)
            fw, mb = settings.framework, settings.bucket_mb
            if fw == "ddp":
                b = ov.ddp_buckets(sizes, mb or ov.DDP_BUCKET_CAP_MB)
            elif fw == "horovod":
                b = ov.horovod_buckets(sizes, mb or ov.HOROVOD_FUSION_MB)
            elif fw == "deepspeed":
                eb = dtype_bytes(settings.dtype)
                elems = mb * ov.MiB / eb if mb else ov.DEEPSPEED_REDUCE_BUCKET_ELEMENTS
                b = ov.deepspeed_buckets(sizes, eb, elems)
            else:
                b = [[i] for i in range(len(sizes))]
            t_bwd = self.step_time_s * settings.backward_fraction
            ready = ov.ready_times(sizes, b, t_bwd, self.workload.backward_compute_s(t_bwd))
            self._buckets[key] = (np.asarray(ov.bucket_bytes(sizes, b)), ready)
        return self._buckets[key]

    def _comm(self, algorithm: str, cards: int, settings: Settings, sizes: np.ndarray):
        if algorithm == calibrated.MEASURED:
            fit = self.calibration.exact_fit(cards, max(1, cards // self.g))
            return fit.time_s(sizes), algorithm
        if algorithm != "nccl":
            return self.curve(algorithm, cards, settings).time_s(sizes), algorithm
        lv = self.levels(cards, settings)
        picks = comm.nccl_algorithms(sizes, cards, lv, self.cc)
        times = np.empty_like(sizes)
        for a in set(picks):
            mask = np.array([p == a for p in picks])
            times[mask] = self.curve(a, cards, settings).time_s(sizes[mask])
        return times, "nccl:" + "+".join(sorted(set(picks)))

    def point(self, cards: int, settings: Settings | None = None) -> Point:
        """The :class:`Point` at ``cards`` (module docstring: the formula), computed once per
        (cards, settings) and planner: the plan's sweeps and fix curves revisit many."""
        key = (cards, settings or Settings())
        if key not in self._points:
            self._points[key] = self._point(*key)
        return self._points[key]

    def _point(self, cards: int, s: Settings) -> Point:
        nodes = self.check_cards(cards)
        t_c = self.step_time_s
        self.reference_micro_steps(s)  # a global batch that does not divide is refused at once
        stall1 = self.input_stall_s(s, t_c)
        if cards == 1:
            return self._make(1, 1, t_c, 0.0, stall1, 0.0, 0.0, 0.0, "none", 0)
        sizes, ready = self.buckets(s)
        t_bwd = t_c * s.backward_fraction
        if not s.overlap:
            ready = [t_bwd] * len(ready)
        algos = comm.candidates(self.cluster) if s.algorithm == "auto" else (s.algorithm,)
        fit = self.calibration.exact_fit(cards, nodes) if self.calibration else None
        if fit is not None and s.algorithm in ("auto", "nccl"):
            algos = (calibrated.MEASURED,)  # the measured allreduce of NCCL on this count
        best = None
        for algo in algos:
            times, name = self._comm(algo, cards, s, sizes)
            sigma = self._slowdown(cards, s)
            res = ov.overlap(ready, times, t_bwd, sigma)
            total = res.exposed_s + res.slowdown_s
            if best is None or total < best[0] - 1e-15:
                best = (total, res, float(times.sum()), name)
        _, res, comm_s, name = best
        k, k_ref = self.micro_steps(cards, s), self.reference_micro_steps(s)
        strag = scale.random_straggler_s(t_c, s.compute_cv, cards, s.straggler_tail, k)
        strag += scale.deterministic_straggler_s(t_c, s.slowest_factor)
        # per micro-step; the optimizer step is amortised over k instead of k_ref
        opt = self.optimizer_s(s)
        exposed, other = res.exposed_s / k, res.slowdown_s / k + max(0.0, opt / k - opt / k_ref)
        stall = self.input_stall_s(s, t_c + exposed + other + strag)
        return self._make(cards, nodes, t_c, exposed, stall, strag, other, comm_s / k,
                          name, len(sizes))  # fmt: skip

    def micro_steps(self, cards: int, s: Settings) -> int:
        """K at ``cards``: ``s.accumulation``, or B / (batch × cards) with ``s.global_batch``."""
        if s.global_batch is None:
            return s.accumulation
        if self.batch_size is None:
            raise CostModelError("a global batch needs the per-card batch size (--batch-size)")
        return acc.micro_steps(s.global_batch, self.batch_size, cards)

    def reference_micro_steps(self, s: Settings) -> int:
        """The K the single-card step was measured with (``Settings.reference_accumulation``)."""
        if s.reference_accumulation is not None:
            return s.reference_accumulation
        return self.micro_steps(1, s)

    def optimizer_s(self, s: Settings) -> float:
        """One optimizer step, seconds (``s.optimizer_s`` or the memory-bound estimate)."""
        if s.optimizer_s is not None:
            return s.optimizer_s
        return acc.optimizer_step_s(self.workload.n_params, self.cluster.nodes[0].devices[0].model)

    @cached_property
    def host(self) -> inp.Host:
        """PCIe, inter-socket and NUMA figures of the first node (for the input model)."""
        return inp.Host.of(self.cluster.nodes[0])

    def input_stall_s(self, s: Settings, consumer_s: float) -> float:
        """Input stall per step for a step of ``consumer_s`` without it (:func:`.input.stall_s`;
        ``input_time_s`` alone = one background worker, pinned, local)."""
        loader = s.loader
        if loader is None and s.input_time_s is not None:
            loader = inp.Loader(s.input_time_s)
        return 0.0 if loader is None else inp.stall_s(loader, consumer_s, self.host)

    def _slowdown(self, cards: int, s: Settings) -> float:
        if s.slowdown is not None:
            return s.slowdown
        lv = self.levels(cards, s)
        nvl = lv.intra_kind in NVLINK_LIKE and min(cards, self.g) > 1
        return ov.CALCULON_SLOWDOWN["nvlink" if nvl else "ib"]

    def _make(self, cards, nodes, t_c, exposed, stall, strag, other, comm_s, algo,
              nb) -> Point:  # fmt: skip
        step = t_c + exposed + stall + strag + other
        thr = None if self.batch_size is None else self.batch_size * cards / step
        return Point(cards, nodes, step, self.reference_step_s / step, t_c, exposed,
                     stall, strag, other, comm_s, algo, nb, thr)  # fmt: skip

    def estimate(self, cards: Sequence[int] = DEFAULT_CARDS,
                 settings: Settings | None = None) -> Estimate:  # fmt: skip
        """Points for every card count (sorted, duplicates dropped)."""
        s = settings or Settings()
        if self.reference is None:
            self.reference = s  # the first estimate's settings are today's
        counts = sorted({positive_int("cards", c) for c in cards})
        if not counts:
            raise CostModelError("give at least one card count")
        for c in counts:
            self.check_cards(c)
        pts = tuple(self.point(c, s) for c in counts)
        lv = self.full_levels
        return Estimate(
            self.cluster.name or self.cluster.nodes[0].name, self.g, self.workload.name,
            self.workload.n_params, self.workload.grad_bytes(s.dtype), self.step_time_s,
            self.batch_size, s, pts, self.assumptions(lv, s), self.reference_step_s,
        )  # fmt: skip

    def assumptions(self, lv: LinkLevels, s: Settings) -> tuple[str, ...]:
        """What the estimate assumed, one sentence each (for reports)."""
        slow = "15 % (NVLink) / 2 %" if s.slowdown is None else f"by {s.slowdown:g}"
        return (
            f"all nodes like the first: intra ring {lv.intra_bw_GBps:g} GB/s, network "
            f"{lv.card_net_bw_GBps:g} GB/s per card / {lv.node_net_bw_GBps:g} GB/s per node",
            f"backward = {s.backward_fraction:.2f} of the single-card step; gradients ready "
            + (
                "as their layers' backward MACs are done"
                if self.workload.macs is not None
                else "in proportion to their size"
            ),
            "NCCL latencies and protocol shares (formulas.md §2); compute slowed "
            f"{slow} while communicating (Calculon)",
            *acc.describe(s, self.optimizer_s(s), JITTER_CV),
            *(calibrated.describe(self.calibration, lv) if self.calibration else ()),
        )


def estimate(
    cluster: Cluster,
    workload: Workload,
    *,
    step_time_s: float,
    cards: Sequence[int] = DEFAULT_CARDS,
    batch_size: float | None = None,
    **settings: object,
) -> Estimate:
    """Step time, breakdown and speedup of ``workload`` on ``cluster`` for each card count.

    Keyword settings: see :class:`Settings` (``algorithm="auto"``, ``framework="ddp"``,
    ``bucket_mb=None``, ``dtype="fp32"``, ``backward_fraction=2/3``, …). Raises
    :class:`CostModelError` for bad or contradictory inputs (cards beyond the topology, not a
    multiple of the node size, unknown algorithm, …).
    """
    try:
        s = Settings(**settings)  # type: ignore[arg-type]
    except TypeError as e:
        raise CostModelError(f"unknown setting: {e}") from None
    return Planner(cluster, workload, step_time_s, batch_size).estimate(cards, s)
