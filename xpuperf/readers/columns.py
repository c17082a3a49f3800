"""Column names and units: which column of a log feeds which field of the step table.

A column name is first *normalised*: camelCase split, lower-cased, ``µ``/``μ`` → ``u``, every run
of non-alphanumeric characters → ``_``, leading/trailing ``_`` stripped. So ``Step Time (ms)``,
``step_time(ms)``, ``stepTimeMs`` and ``step-time [ms]`` all become ``step_time_ms``.

The normalised name is looked up in :data:`ALIASES`. Time fields (``step_time_s``, ``t_end_s`` and
the phases) also accept a unit suffix after the alias, optionally preceded by ``in``
(``data_time_ms``, ``fwd_us``, ``time_in_ms``); without a suffix a time is in seconds:

======================================  ========
suffix                                  unit
======================================  ========
s, sec, secs, second, seconds           s
ms, msec, msecs, millis, milliseconds   ms
us, usec, usecs, micros, microseconds   µs
ns, nsec, nsecs, nanos, nanoseconds     ns
======================================  ========

When several columns match one field the alias listed first wins, then the column seen first.
``time`` is ambiguous: it is a timestamp (``t_end_s``) when its values are ISO 8601 strings or
exceed 1e8 seconds, else a step time. Columns matching no alias are ignored.

Accepted names (normalised), in priority order:

.. alias-table-start

=============  =================================================================================
field          accepted column names
=============  =================================================================================
step           step, steps, iteration, iter, it, global_step, step_id, step_num, step_idx,
               step_index, iter_num, iter_id, iteration_num, iteration_id, iteration_index,
               batch_idx, batch_id, batch_index
rank           rank, global_rank, rank_id, world_rank, process_rank, proc_rank, worker,
               worker_id, worker_rank
local_rank     local_rank, local_rank_id, localrank, local_id, lrank, device_id, gpu_id, npu_id,
               card_id
node           node, host, hostname, host_name, node_id, node_name, nodename, server, machine,
               ip, host_ip, node_rank, node_index, node_idx
step_time_s    step_time, steptime, batch_time, iter_time, iteration_time, step_duration,
               iter_duration, iteration_duration, duration, elapsed_time_per_iteration,
               time_per_iteration, time_per_iter, time_per_step, batch_cost, train_step_time,
               step_latency, iteration_latency, elapsed, elapsed_time, time
t_end_s        timestamp, time_stamp, t_end, ts, wall_time, walltime, wallclock, wall_clock,
               end_time, time_end, step_end, end_ts, unix_time, epoch_time, datetime, date_time,
               time
step_rate      it_s, its, iter_per_sec, iters_per_sec, iterations_per_sec,
               iterations_per_second, steps_per_sec, steps_per_second, step_per_sec
samples        samples, num_samples, n_samples, nsamples, sample_count, batch_size, bs,
               local_batch_size, local_bs, per_device_batch_size, per_gpu_batch_size,
               samples_per_step, batch_samples, num_images
throughput     fps, throughput, samples_per_sec, samples_per_second, samples_per_s, samples_sec,
               samples_s, sample_per_sec, throughput_samples_s, throughput_samples_per_sec, ips,
               images_per_sec, images_per_second, images_s, img_per_sec, img_s, imgs_per_sec,
               imgs_s, examples_per_sec, examples_per_second, examples_s
tokens         tokens, num_tokens, n_tokens, ntokens, tokens_per_step, step_tokens, batch_tokens
mfu            mfu, model_flops_utilization, model_flop_utilization
data_s         data, data_time, data_wait, data_wait_time, reader_cost, data_cost, reader_time,
               dataloader, dataloader_time, data_load, data_load_time, data_loading, input_time,
               input_wait, load_time, io_time, batch_generator, batch_generator_time
forward_s      forward, fwd, forward_time, fwd_time, forward_pass, forward_compute
backward_s     backward, bwd, backward_time, bwd_time, backward_pass, backward_compute
comm_s         comm, communication, allreduce, all_reduce, comm_time, communication_time,
               allreduce_time, all_reduce_time, collective, collectives, comm_wait, nccl_time,
               hccl_time, grad_sync
optimizer_s    optimizer, optim, optimizer_step, opt_step, optimizer_time, optim_time, opt,
               opt_time, optimizer_step_time
compute_s      compute, compute_time, computing, computation, compute_only, fwd_bwd,
               fwd_bwd_time, forward_backward, fwdbwd
=============  =================================================================================

.. alias-table-end

``tokens`` are tokens of one rank in one step and ``mfu`` a fraction 0…1 (not percent), as in
:mod:`xpuperf.steps`. ``step_rate`` (steps per second, e.g. tqdm's ``it/s``), ``throughput``
(samples per second of one rank) and ``local_rank`` are not step-table columns: they are used to
derive ``step_time_s`` (``1 / step_rate``, ``samples / throughput``) and ``rank``. The canonical
column names themselves (``step_time_s``, ``data_s``, …) match through the unit rule.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

ALIASES: dict[str, tuple[str, ...]] = {
    "step": (
        "step", "steps", "iteration", "iter", "it", "global_step", "step_id", "step_num",
        "step_idx", "step_index", "iter_num", "iter_id", "iteration_num", "iteration_id",
        "iteration_index", "batch_idx", "batch_id", "batch_index",
    ),
    "rank": (
        "rank", "global_rank", "rank_id", "world_rank", "process_rank", "proc_rank", "worker",
        "worker_id", "worker_rank",
    ),
    "local_rank": (
        "local_rank", "local_rank_id", "localrank", "local_id", "lrank", "device_id", "gpu_id",
        "npu_id", "card_id",
    ),
    "node": (
        "node", "host", "hostname", "host_name", "node_id", "node_name", "nodename", "server",
        "machine", "ip", "host_ip", "node_rank", "node_index", "node_idx",
    ),
    "step_time_s": (
        "step_time", "steptime", "batch_time", "iter_time", "iteration_time", "step_duration",
        "iter_duration", "iteration_duration", "duration", "elapsed_time_per_iteration",
        "time_per_iteration", "time_per_iter", "time_per_step",
        "batch_cost",  # PaddlePaddle suites 'batch_cost: 0.5 s' (s per iteration, interval mean)
        "train_step_time",
        "step_latency", "iteration_latency", "elapsed", "elapsed_time", "time",
    ),
    "t_end_s": (
        "timestamp", "time_stamp", "t_end", "ts", "wall_time", "walltime", "wallclock",
        "wall_clock", "end_time", "time_end", "step_end", "end_ts", "unix_time", "epoch_time",
        "datetime", "date_time", "time",
    ),
    "step_rate": (
        "it_s", "its", "iter_per_sec", "iters_per_sec", "iterations_per_sec",
        "iterations_per_second", "steps_per_sec", "steps_per_second", "step_per_sec",
    ),
    "samples": (
        "samples", "num_samples", "n_samples", "nsamples", "sample_count", "batch_size", "bs",
        "local_batch_size", "local_bs", "per_device_batch_size", "per_gpu_batch_size",
        "samples_per_step", "batch_samples", "num_images",
    ),
    "throughput": (
        "fps", "throughput", "samples_per_sec", "samples_per_second", "samples_per_s",
        "samples_sec", "samples_s", "sample_per_sec", "throughput_samples_s",
        "throughput_samples_per_sec",
        "ips",  # PaddlePaddle suites 'ips: 16.06 samples/s' (instances per second, one rank)
        "images_per_sec", "images_per_second", "images_s",
        "img_per_sec", "img_s", "imgs_per_sec", "imgs_s", "examples_per_sec",
        "examples_per_second", "examples_s",
    ),
    "tokens": (
        "tokens", "num_tokens", "n_tokens", "ntokens", "tokens_per_step", "step_tokens",
        "batch_tokens",
    ),
    "mfu": ("mfu", "model_flops_utilization", "model_flop_utilization"),
    "data_s": (
        "data",  # timm train.py 'Data: cur (avg)', maskrcnn-benchmark 'data: cur (avg)'
        "data_time",  # MMEngine / MMCV, Detectron2, timm (data_time_m)
        "data_wait", "data_wait_time",
        "reader_cost",  # PaddleClas / PaddleOCR / PaddleSeg 'reader_cost: 0.0012 s'
        "data_cost",  # PaddleDetection / PaddleVideo callbacks 'data_cost: 0.0101'
        "reader_time", "dataloader", "dataloader_time", "data_load", "data_load_time",
        "data_loading", "input_time", "input_wait", "load_time", "io_time",
        # Megatron-LM / GPT-NeoX timer 'batch-generator' (get_batch: the wait for the data
        # iterator) and its TensorBoard scalar 'batch-generator-time' (Timers.write, seconds)
        "batch_generator", "batch_generator_time",
    ),
    "forward_s": (
        "forward", "fwd", "forward_time", "fwd_time", "forward_pass", "forward_compute",
    ),
    "backward_s": (
        "backward", "bwd", "backward_time", "bwd_time", "backward_pass", "backward_compute",
    ),
    "comm_s": (
        "comm", "communication", "allreduce", "all_reduce", "comm_time", "communication_time",
        "allreduce_time", "all_reduce_time", "collective", "collectives", "comm_wait",
        "nccl_time", "hccl_time", "grad_sync",
    ),
    "optimizer_s": (
        "optimizer", "optim", "optimizer_step", "opt_step", "optimizer_time", "optim_time", "opt",
        "opt_time", "optimizer_step_time",
    ),
    "compute_s": (
        "compute", "compute_time", "computing", "computation", "compute_only", "fwd_bwd",
        "fwd_bwd_time", "forward_backward", "fwdbwd",
    ),
}  # fmt: skip
"""Field → accepted normalised column names, highest priority first (see the module docstring)."""

TIMED: frozenset[str] = frozenset(
    {"step_time_s", "t_end_s", "data_s", "forward_s", "backward_s", "comm_s", "optimizer_s"}
    | {"compute_s"}
)
"""Fields that are times and accept a unit suffix."""
NUMERIC: tuple[str, ...] = (
    "step", "rank", "local_rank", "step_time_s", "step_rate", "samples", "tokens", "mfu",
    "throughput", "data_s", "forward_s", "backward_s", "comm_s", "optimizer_s", "compute_s",
)  # fmt: skip
"""Fields whose values must be numbers (``t_end_s`` also takes ISO 8601 strings)."""
AMBIGUOUS = "time"
"""The one alias shared by ``step_time_s`` and ``t_end_s``; resolved by its values."""

UNITS: dict[str, float] = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1.0),
    **dict.fromkeys(("ms", "msec", "msecs", "millis", "millisecond", "milliseconds"), 1e-3),
    **dict.fromkeys(("us", "usec", "usecs", "micros", "microsecond", "microseconds"), 1e-6),
    **dict.fromkeys(("ns", "nsec", "nsecs", "nanos", "nanosecond", "nanoseconds"), 1e-9),
}
"""Unit suffix → factor to seconds."""

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
_PRIORITY: dict[str, dict[str, int]] = {
    role: {alias: i for i, alias in enumerate(names)} for role, names in ALIASES.items()
}


def normalise(name: str) -> str:
    """Normalised form of a column name: ``"Step Time (ms)"`` → ``"step_time_ms"``."""
    s = _CAMEL.sub("_", str(name).strip().removeprefix("\ufeff"))
    s = s.lower().replace("µ", "u").replace("μ", "u")
    return _NON_ALNUM.sub("_", s).strip("_")


@dataclass(frozen=True)
class Match:
    """One column matched to a field.

    Attributes:
        column: the column name as in the file.
        role: the field (a key of :data:`ALIASES`).
        alias: the accepted name it matched (normalised, unit suffix removed).
        factor: multiply values by this to get seconds (1.0 for non-time fields).
        unit: the unit suffix as written (``"ms"``), or None when there was none.
        priority: position of the alias in :data:`ALIASES` (lower wins).
        order: position of the column in the file (breaks ties).
    """

    column: str
    role: str
    alias: str
    factor: float
    unit: str | None
    priority: int
    order: int

    @property
    def ambiguous(self) -> bool:
        """True for a column named ``time`` (step time or timestamp, decided by its values)."""
        return self.alias == AMBIGUOUS


def match(name: str, order: int = 0) -> list[Match]:
    """All fields a column name can feed (one, or two for the ambiguous ``time``)."""
    norm = normalise(name)
    out = [
        Match(str(name), role, norm, 1.0, None, pri[norm], order)
        for role, pri in _PRIORITY.items()
        if norm in pri
    ]
    if out:
        return out
    head, _, suffix = norm.rpartition("_")
    if not head or suffix not in UNITS:
        return []
    base = head.removesuffix("_in") or head
    return [
        Match(str(name), role, base, UNITS[suffix], suffix, _PRIORITY[role][base], order)
        for role in sorted(TIMED)
        if base in _PRIORITY[role]
    ]


def resolve(columns: Iterable[str]) -> dict[str, list[Match]]:
    """Field → matching columns, best first. Columns that match nothing are left out."""
    found: dict[str, list[Match]] = {}
    for i, col in enumerate(columns):
        for m in match(col, i):
            found.setdefault(m.role, []).append(m)
    for ms in found.values():
        ms.sort(key=lambda m: (m.priority, m.order))
    return found


def select(columns: Sequence[str]) -> list[str]:
    """The columns worth loading (those matching any field), in file order."""
    return [c for c in columns if match(c)]


def accepted(role: str) -> str:
    """Comma-separated accepted names of a field, for error messages."""
    return ", ".join(ALIASES[role])


def alias_table(width: int = 100) -> str:
    """The reStructuredText table of :data:`ALIASES` quoted in this module's docstring."""
    first = 13
    rest = width - first - 2
    rule = "=" * first + "  " + "=" * rest
    lines = [rule, f"{'field':<{first}}  accepted column names", rule]
    for role, names in ALIASES.items():
        wrapped = textwrap.wrap(", ".join(names), rest, break_on_hyphens=False)
        for j, chunk in enumerate(wrapped):
            lines.append(f"{role if j == 0 else '':<{first}}  {chunk}".rstrip())
    lines.append(rule)
    return "\n".join(lines)
