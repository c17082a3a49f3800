"""Data input: how long a step waits for its batch (formulas.md §5; background.md "Data input").

The loader (PyTorch ``DataLoader`` semantics) on one card:

- ``workers`` processes each produce whole batches; one batch costs one worker
  ``batch_time_s`` of CPU (read + decode/augment + collate), × :func:`cpu_factor` when the
  worker runs on a NUMA node remote from the card. ``workers = 0`` (PyTorch's default) loads in
  the training process itself: nothing overlaps, every step waits the whole batch time.
- Prefetch depth d = ``prefetch_factor`` × ``workers`` batches outstanding (PyTorch default
  ``prefetch_factor=2``): index i+d is dispatched to worker (i+d) mod W when batch i is taken,
  batches are returned in order.
- Host→device copy of ``batch_bytes`` over the card's PCIe slot (topology ``pcie_bw_GBps``);
  from a remote NUMA node the copy also crosses the inter-socket link, so it runs at
  min(PCIe, ``sys_bw_GBps``) (formulas.md §5: "a worker or pinned buffer on the socket remote
  from the card crosses UPI"). Pinned memory: an asynchronous copy that overlaps compute (a
  pipeline stage of its own). Pageable memory: the driver stages the copy through a pinned
  buffer (NVIDIA, "How to Optimize Data Transfers in CUDA C/C++", 2012) and it cannot overlap
  compute (CUDA C++ Best Practices Guide, "Data Transfer Between Host and Device"); modelled as
  synchronous, at :data:`PAGEABLE_COPY_FACTOR` × the pinned time.

Stall per step for a consumer that needs C seconds per batch (the step without its stall):

- steady state, constant times: t_sync + max(0, max(P / W, t_copy) − (C + t_sync)) with
  t_sync = the pageable copy (0 when pinned); whatever the depth (depth absorbs jitter, not a
  deficit — formulas.md §5).
- measured per-batch times (a log's data-time column): :func:`queue_stall_s` runs the in-order
  W-worker queue with the finite prefetch buffer over a seeded bootstrap of the samples — a
  Lindley-type recursion, stall_i = max(0, F_i − (R_{i−1} + C)).

Times in seconds, bytes, GB/s = 1e9 bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from xpuperf.costmodel.checks import CostModelError, nonneg, positive

PAGEABLE_COPY_FACTOR = 2.0
"""Pageable H2D time ÷ pinned H2D time: the staging copy into the driver's pinned buffer, then
the DMA, in series, the staging copy assumed as fast as PCIe (assumption; mechanism: NVIDIA,
"How to Optimize Data Transfers in CUDA C/C++", 2012)."""
REMOTE_CPU_FACTOR = 1.10
"""CPU time of a loader worker on a NUMA node remote from its card ÷ local: the upper end of the
"typically 1–10 %" gain PyTorch documents for NUMA binding (docs.pytorch.org, elastic/numa)."""
NUMA_PLACEMENTS: tuple[str, ...] = ("local", "remote", "unbound")
"""Where the loader's CPUs and memory sit: the card's NUMA node, another one, or unbound (the OS
places it: a fraction (k − 1)/k of k NUMA nodes with CPUs is remote on average)."""
DEFAULT_PREFETCH_FACTOR = 2
"""PyTorch DataLoader's default ``prefetch_factor`` (batches per worker)."""
SIM_STEPS = 4000
"""Steps simulated over a bootstrap of measured input times (seed :data:`SIM_SEED`)."""
SIM_SEED = 0


class Samples:
    """Measured per-batch input times, seconds (immutable; hashed and compared by identity).

    Shape: 1-D, finite, ≥ 0. ``str()`` summarises them (the plan's JSON shows that, not every
    sample)."""

    __slots__ = ("values",)

    def __init__(self, values: np.ndarray | list[float] | tuple[float, ...]) -> None:
        v = np.asarray(values, dtype=float).ravel()
        if v.size == 0 or not np.all(np.isfinite(v)) or np.any(v < 0):
            raise CostModelError("input time samples must be finite, >= 0 and not empty")
        v.setflags(write=False)
        self.values = v

    @property
    def mean_s(self) -> float:
        """Mean of the samples, seconds."""
        return float(self.values.mean())

    def __str__(self) -> str:
        v = self.values
        return (f"{v.size} measured input times: mean {v.mean() * 1e3:.3g} ms, p99 "
                f"{np.quantile(v, 0.99) * 1e3:.3g} ms")  # fmt: skip

    __repr__ = __str__


@dataclass(frozen=True)
class Loader:
    """The input pipeline of one card.

    Attributes:
        batch_time_s: CPU seconds one worker on the card's own NUMA node needs to produce one
            batch (read + decode/augment + collate) — per step, per card, not per sample.
        workers: DataLoader ``num_workers`` (0 = load in the training process).
        prefetch_factor: batches outstanding per worker (depth = factor × workers).
        pinned: ``pin_memory=True`` (asynchronous H2D copy) or pageable.
        batch_bytes: bytes copied host→device per step (0: not modelled).
        numa: ``local``, ``remote`` or ``unbound`` (:data:`NUMA_PLACEMENTS`).
        samples: measured per-batch times whose jitter drives the queue simulation; they are
            rescaled to mean ``batch_time_s``.
    """

    batch_time_s: float
    workers: int = 1
    prefetch_factor: int = DEFAULT_PREFETCH_FACTOR
    pinned: bool = True
    batch_bytes: float = 0.0
    numa: str = "local"
    samples: Samples | None = None

    def __post_init__(self) -> None:
        t = nonneg("input time per batch (s)", self.batch_time_s)
        if not np.isfinite(t):
            raise CostModelError("input time per batch must be finite")
        if not isinstance(self.workers, int) or self.workers < 0:
            raise CostModelError(f"workers must be an integer >= 0, got {self.workers!r}")
        if not isinstance(self.prefetch_factor, int) or self.prefetch_factor < 1:
            raise CostModelError(f"prefetch factor must be an integer >= 1, got "
                                 f"{self.prefetch_factor!r}")  # fmt: skip
        nonneg("bytes per batch", self.batch_bytes)
        if self.numa not in NUMA_PLACEMENTS:
            raise CostModelError(f"loader NUMA placement must be one of "
                                 f"{', '.join(NUMA_PLACEMENTS)}, got {self.numa!r}")  # fmt: skip

    @property
    def depth(self) -> int:
        """Batches outstanding: prefetch_factor × workers (1 for workers = 0)."""
        return self.prefetch_factor * max(1, self.workers)


@dataclass(frozen=True)
class Host:
    """What the input model needs from a node: card PCIe and inter-socket GB/s, NUMA nodes with
    CPUs and CPUs per card (None when the topology does not say)."""

    pcie_GBps: float  # noqa: N815 (unit in the name, style.md rule 8)
    sys_GBps: float  # noqa: N815
    numa_nodes: int = 1
    cpus_per_card: int | None = None

    @classmethod
    def of(cls, node) -> Host:
        """From a topology :class:`~xpuperf.topology.model.Node`."""
        with_cpus = [n for n in node.numa_nodes if n.cpus]
        cpus = sum(len(n.cpus) for n in with_cpus)
        per_card = cpus // len(node.devices) if cpus and node.devices else None
        return cls(node.pcie_bw_GBps, node.sys_bw_GBps, max(1, len(with_cpus)), per_card or None)


def remote_fraction(numa: str, host: Host) -> float:
    """Share of the loader's work on a remote NUMA node: local 0, remote 1, unbound (k−1)/k.
    Source: formulas.md §5 (NUMA); an unbound worker lands on each of k nodes alike.
    """
    if numa == "local":
        return 0.0
    if numa == "remote":
        return 1.0
    return (host.numa_nodes - 1) / host.numa_nodes


def cpu_factor(numa: str, host: Host) -> float:
    """CPU time multiplier of the placement: 1 + f_remote × (:data:`REMOTE_CPU_FACTOR` − 1).
    Source: formulas.md §5 (NUMA; PyTorch docs: binding gains 1–10 %).
    """
    return 1.0 + remote_fraction(numa, host) * (REMOTE_CPU_FACTOR - 1.0)


def h2d_s(nbytes: float, host: Host, numa: str = "local", pinned: bool = True) -> float:
    """Host→device copy of ``nbytes``, seconds: local at the card's PCIe GB/s, remote at
    min(PCIe, inter-socket); pageable × :data:`PAGEABLE_COPY_FACTOR`. Example: 154 MB (256 fp32
    images of 3×224×224) on PCIe Gen3 (12 GB/s), pinned, local: 12.8 ms.
    Source: formulas.md §5; NVIDIA, "How to Optimize Data Transfers in CUDA C/C++" (2012).
    """
    b = nonneg("bytes", nbytes)
    f = remote_fraction(numa, host)
    local = b / (positive("PCIe GB/s", host.pcie_GBps) * 1e9)
    remote = b / (min(host.pcie_GBps, positive("inter-socket GB/s", host.sys_GBps)) * 1e9)
    t = (1 - f) * local + f * remote
    return t if pinned else PAGEABLE_COPY_FACTOR * t


def queue_stall_s(service_s: np.ndarray, consumer_s: float | np.ndarray, workers: int,
                  depth: int, skip: int = 0) -> float:  # fmt: skip
    """Mean wait per step of an in-order consumer fed by ``workers`` round-robin producers with at
    most ``depth`` batches outstanding (PyTorch DataLoader semantics).

    Recursion over batches i (d = depth, W = workers, batch i on worker i mod W):
    dispatch_i = R_{i−d} (0 for i < d); F_i = max(dispatch_i, F_{i−W}) + S_i;
    R_i = max(R_{i−1} + C_{i−1}, F_i); stall_i = R_i − (R_{i−1} + C_{i−1}) (Lindley's recursion
    for the consumer's wait, with blocking after d outstanding batches). For W = 1 and
    exponential S and C this is the M/M/1/K queue with K = d + 1.

    Args:
        service_s: per-batch worker times S_i, seconds, shape (n,).
        consumer_s: consumer time per batch C (scalar or shape (n,)), seconds.
        workers: W ≥ 1; depth: d ≥ W.
        skip: leading steps left out of the mean (start-up with an empty buffer).
    Source: formulas.md §5 (Lindley 1952, "The theory of queues with a single server").
    """
    s = np.asarray(service_s, dtype=float)
    n = s.size
    c = np.broadcast_to(np.asarray(consumer_s, dtype=float), (n,))
    if workers < 1 or depth < workers:
        raise CostModelError(f"need workers >= 1 and depth >= workers, got {workers}, {depth}")
    if n <= skip:
        raise CostModelError(f"need more than {skip} steps to simulate, got {n}")
    take = [0.0] * n
    free = [0.0] * workers
    ready = 0.0
    total = 0.0
    sl, cl = s.tolist(), c.tolist()
    for i in range(n):
        dispatch = take[i - depth] if i >= depth else 0.0
        w = i % workers
        fin = (dispatch if dispatch > free[w] else free[w]) + sl[i]
        free[w] = fin
        r = fin if fin > ready else ready
        if i >= skip:
            total += r - ready
        take[i] = r
        ready = r + cl[i]
    return total / (n - skip)


@lru_cache(maxsize=4096)
def _simulated(samples: Samples, scale: float, consumer_s: float, workers: int,
               depth: int) -> float:  # fmt: skip
    rng = np.random.default_rng(SIM_SEED)
    draw = rng.choice(samples.values, size=SIM_STEPS, replace=True) * scale
    return queue_stall_s(draw, consumer_s, workers, depth, skip=SIM_STEPS // 10 + depth)


def stall_s(loader: Loader, consumer_s: float, host: Host) -> float:
    """Input stall per step, seconds, for a consumer needing ``consumer_s`` per batch (see the
    module docstring). Raises :class:`CostModelError` for a negative consumer time.
    Source: formulas.md §5.
    """
    c = nonneg("consumer time per step (s)", consumer_s)
    per_batch = loader.batch_time_s * cpu_factor(loader.numa, host)
    copy = h2d_s(loader.batch_bytes, host, loader.numa, pinned=True)
    sync = 0.0 if loader.pinned else h2d_s(loader.batch_bytes, host, loader.numa, pinned=False)
    copy_stall = max(0.0, copy - (c + sync)) if loader.pinned else 0.0
    if loader.workers == 0:  # the training process loads: nothing overlaps
        return per_batch + sync + copy_stall
    c_eff = c + sync
    smp = loader.samples
    if smp is None or smp.mean_s == 0.0:
        producer = max(0.0, per_batch / loader.workers - c_eff)
    else:
        scale = per_batch / smp.mean_s
        producer = _simulated(smp, scale, c_eff, loader.workers, loader.depth)
    return sync + max(producer, copy_stall)
