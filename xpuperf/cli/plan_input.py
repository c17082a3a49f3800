"""``xpuperf plan`` options for a measured run (``--from-log``), the input pipeline
(``--workers``, ``--prefetch``, ``--pinned/--no-pinned``, ``--input-time``, ``--input-mb``,
``--loader-numa``) and the step (``--jitter-cv``, ``--accumulation``, ``--global-batch``,
``--overlap/--no-overlap``, ``--optimizer-step``):
checked here (bad or contradictory combinations raise :class:`~xpuperf.errors.UsageError`, exit 2)
and turned into :class:`~xpuperf.costmodel.estimate.Settings` keywords.
"""

from __future__ import annotations

import math

from xpuperf.advice.ladder import Ladder, read_ladder
from xpuperf.advice.measured import Measured, from_log
from xpuperf.costmodel import input as inp
from xpuperf.costmodel.estimate import MAX_ACCUMULATION
from xpuperf.errors import UsageError
from xpuperf.topology.model import Cluster

MAX_SECONDS = 1e6
"""Largest --step-time / --input-time accepted (≈ 11.6 days): beyond it step times in ms
overflow the model's sums (a break-it pass found inf rows and a ZeroDivisionError)."""
MAX_INPUT_MB = 1e6
"""Largest ``--input-mb`` taken (1 TB copied host→device per batch)."""
EXAMPLE_BUCKET_MB = 4.0
"""Bundled example: DDP buckets of 4 MiB (smaller than DDP's 25 MiB default)."""
EXAMPLE_INPUT = {"input_time": 0.12, "workers": 0, "pinned": False, "input_mb": 0.524288,
                 "loader_numa": "unbound"}  # fmt: skip
"""Bundled example: PyTorch DataLoader defaults (``num_workers=0``, ``pin_memory=False``, no NUMA
binding) with on-the-fly tokenisation and masking costing 0.12 s of one core per batch of 32
sequences (≈ 3.75 ms per 512-token sequence: an assumption for a Python tokenizer, not a
measurement); the batch is 4 int64 tensors of 32 × 512 = 0.52 MB."""


def read_measured(path: str | None, step_time: float | None, has_workload: bool,
                  batch_size: float | None, fmt: str | None = None) -> Measured | None:  # fmt: skip
    """The measured run of ``--from-log PATH`` (None without it); contradictions exit 2."""
    if path is None:
        if fmt is not None:
            raise UsageError("--format applies to --from-log PATH; give the log too")
        return None
    if step_time is not None:
        raise UsageError("give --step-time S or --from-log PATH, not both")
    if not has_workload:
        raise UsageError("--from-log gives the step time; also give --model NAME, --params N or "
                         "--layers FILE (the gradients to allreduce)")  # fmt: skip
    return from_log(path, batch_size, fmt=fmt)


def _check(workers: int | None, prefetch: int | None, input_time: float | None,
           input_mb: float | None, loader_numa: str | None) -> None:  # fmt: skip
    if workers is not None and workers < 0:
        raise UsageError(f"--workers must be >= 0, got {workers}")
    if prefetch is not None and prefetch < 1:
        raise UsageError(f"--prefetch must be >= 1 (batches per worker), got {prefetch}")
    if input_time is not None and not (0 < input_time <= MAX_SECONDS):
        raise UsageError(f"--input-time must be a positive number of seconds up to "
                         f"{MAX_SECONDS:g}, got {input_time}")  # fmt: skip
    if input_mb is not None and not (math.isfinite(input_mb) and 0 <= input_mb <= MAX_INPUT_MB):
        raise UsageError(f"--input-mb must be a number of MB between 0 and {MAX_INPUT_MB:g} "
                         f"(host-to-device bytes per batch), got {input_mb:g}")  # fmt: skip
    if loader_numa is not None and loader_numa not in inp.NUMA_PLACEMENTS:
        raise UsageError(f"--loader-numa must be one of {'|'.join(inp.NUMA_PLACEMENTS)}, "
                         f"got {loader_numa!r}")  # fmt: skip


def input_settings(cluster: Cluster, measured: Measured | None, *, example: bool,
                   workers: int | None, prefetch: int | None, pinned: bool | None,
                   input_time: float | None, input_mb: float | None,
                   loader_numa: str | None) -> tuple[dict, list[str]]:  # fmt: skip
    """Settings keywords (``loader``, stragglers, ``backward_fraction``) and notes."""
    _check(workers, prefetch, input_time, input_mb, loader_numa)
    given = [n for n, v in (("--workers", workers), ("--prefetch", prefetch),
                            ("--pinned/--no-pinned", pinned), ("--input-mb", input_mb),
                            ("--loader-numa", loader_numa)) if v is not None]  # fmt: skip
    notes: list[str] = []
    kw: dict = {}
    if measured is not None:
        kw.update(compute_cv=measured.compute_cv, slowest_factor=measured.slowest_factor,
                  straggler_tail=measured.tail)  # fmt: skip
        if measured.backward_fraction is not None:
            kw["backward_fraction"] = measured.backward_fraction
        if measured.tail is not None:
            notes.append(f"random stragglers: E[max over N ranks] of the measured per-rank "
                         f"compute ({measured.tail})")  # fmt: skip
    if example and input_time is None and not given:
        ex = EXAMPLE_INPUT
        input_time, workers, pinned = ex["input_time"], ex["workers"], ex["pinned"]
        input_mb, loader_numa = ex["input_mb"], ex["loader_numa"]
        notes.append("example input: 0.12 s of one core per batch, PyTorch DataLoader defaults "
                     "(num_workers=0, pin_memory=False, no NUMA binding)")  # fmt: skip
    data = measured.data if measured is not None else None
    if input_time is None and data is None:
        if given:
            verb = "needs" if len(given) == 1 else "need"
            raise UsageError(f"{', '.join(given)} {verb} an input time: give --input-time S "
                             "(or --from-log with a data-time column)")  # fmt: skip
        return kw, notes
    if workers is None:
        workers = 1 if input_time is not None else 0
        if workers == 0:
            notes.append("the log's data time is taken as loaded in the training process "
                         "(num_workers=0); give --workers N if the run used workers")  # fmt: skip
    if prefetch is not None and workers == 0:
        raise UsageError("--prefetch needs --workers >= 1 (PyTorch: prefetch_factor only with "
                         "worker processes)")  # fmt: skip
    numa = loader_numa or "unbound"
    t = input_time if input_time is not None else data.mean_s
    host = inp.Host.of(cluster.nodes[0])
    lo = inp.Loader(
        t / inp.cpu_factor(numa, host), workers,
        prefetch or inp.DEFAULT_PREFETCH_FACTOR, True if pinned is None else pinned,
        (input_mb or 0.0) * 1e6, numa, data,
    )  # fmt: skip
    kw["loader"] = lo
    depth = f", prefetch {lo.depth} batches" if workers else ""
    notes.append(f"input: {t * 1e3:.3g} ms of one core per batch ({numa} NUMA), {workers} "
                 f"workers{depth}, {'pinned' if lo.pinned else 'pageable'} H2D copy of "
                 f"{lo.batch_bytes / 1e6:.3g} MB")  # fmt: skip
    return kw, notes


MAX_JITTER_CV = 1.0
"""Largest ``--jitter-cv`` taken (a spread of 100 % of the step)."""


def step_settings(measured: Measured | None, *, jitter_cv: float | None,
                  accumulation: int | None, global_batch: float | None,
                  batch_size: float | None, overlap: bool,
                  optimizer_step: float | None) -> tuple[dict, list[str]]:  # fmt: skip
    """Settings keywords for the synchronisation tax, gradient accumulation, a fixed global
    batch, overlap and the optimizer step, and notes; contradictions exit 2."""
    kw: dict = {"overlap": overlap}
    notes: list[str] = []
    if jitter_cv is not None:
        if not (math.isfinite(jitter_cv) and 0 <= jitter_cv <= MAX_JITTER_CV):
            raise UsageError(f"--jitter-cv must be a spread between 0 and {MAX_JITTER_CV:g} "
                             f"(e.g. 0.02 for 2 %), got {jitter_cv:g}")  # fmt: skip
        kw.update(compute_cv=jitter_cv, straggler_tail=None)
        if measured is not None and measured.tail is not None:
            notes.append(f"--jitter-cv {jitter_cv:g} replaces the log's per-rank spread "
                         f"(cv {measured.compute_cv:.2%})")  # fmt: skip
    if accumulation is not None and global_batch is not None:
        raise UsageError("give --accumulation K or --global-batch B (which sets K at each card "
                         "count), not both")  # fmt: skip
    if accumulation is not None:
        if not 1 <= accumulation <= MAX_ACCUMULATION:
            raise UsageError(f"--accumulation must be a whole number of micro-steps between 1 "
                             f"and {MAX_ACCUMULATION:,}, got {accumulation}")  # fmt: skip
        kw["accumulation"] = accumulation
    if global_batch is not None:
        if batch_size is None:
            raise UsageError("--global-batch needs --batch-size (samples per card per "
                             "micro-step)")  # fmt: skip
        if not (math.isfinite(global_batch) and batch_size <= global_batch <= 1e12):
            raise UsageError(f"--global-batch must be at least the per-card batch "
                             f"({batch_size:g}), got {global_batch:g}")  # fmt: skip
        kw["global_batch"] = global_batch
        notes.append(f"fixed global batch {global_batch:g}: accumulation = {global_batch:g} / "
                     f"({batch_size:g} × cards) micro-steps per allreduce")  # fmt: skip
    if optimizer_step is not None:
        if not (math.isfinite(optimizer_step) and 0 <= optimizer_step <= MAX_SECONDS):
            raise UsageError(f"--optimizer-step must be seconds between 0 and {MAX_SECONDS:g}, "
                             f"got {optimizer_step:g}")  # fmt: skip
        kw["optimizer_s"] = optimizer_step
    return kw, notes


def read_measured_ladder(sources: list[str] | None, *, baseline: float | None,
                         step_time: float | None, batch_size: float | None,
                         from_log_path: str | None, has_workload: bool,
                         fmt: str | None) -> Ladder | None:  # fmt: skip
    """The ladder of ``--measured`` (None without it); contradictory options exit 2
    (:class:`~xpuperf.errors.UsageError`), unreadable or too short ladders too
    (:class:`~xpuperf.errors.InputError`)."""
    if not sources:
        if baseline is not None:
            raise UsageError("--baseline (one card's items/s) applies to --measured; give the "
                             "ladder too")  # fmt: skip
        return None
    if from_log_path is not None:
        raise UsageError("give --measured (a scaling ladder) or --from-log (one run), not both")
    if not has_workload:
        raise UsageError("--measured needs the gradients the cost model prices: give --model "
                         "NAME, --params N or --layers FILE")  # fmt: skip
    if baseline is not None and not (0 < baseline <= 1e12):
        raise UsageError(f"--baseline must be one card's throughput in items/s (> 0), got "
                         f"{baseline:g}")  # fmt: skip
    ladder = read_ladder(list(sources), baseline_tput=baseline, step_time_s=step_time,
                         batch_size=batch_size, fmt=fmt)  # fmt: skip
    if ladder.one_card_step_s is None:
        raise UsageError("the ladder gives speedups but not one card's step time (the cost "
                         "model needs seconds): give --batch-size (samples per card per step) "
                         "or --step-time")  # fmt: skip
    return ladder
