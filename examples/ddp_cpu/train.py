"""Real DistributedDataParallel training on CPU (gloo), instrumented with the xpuperf step probe.

A small MLP on synthetic data; every rank writes ``<out>/rank<R>.jsonl``. Distributed run (4
processes, one torch thread each, two per core on a 2-core machine with ``--pin``)::

    torchrun --standalone --nproc_per_node 4 examples/ddp_cpu/train.py --out runs/ddp \\
        --pin --slow-rank 2 --slow-factor 1.3

Single-card baseline (one process, no DDP, same per-card batch)::

    python examples/ddp_cpu/train.py --baseline --out runs/base

Then ``xpuperf analyze runs/ddp --baseline runs/base/rank0.jsonl``.

``--slow-rank R --slow-factor F``: at the end of its backward compute (in DDP's communication
hook of the last gradient bucket, before it joins the allreduce) rank R runs extra real compute
(a loop of 128×128 matmuls) for (F − 1) × the median of its own recent work (step time − comm
time − injected time, last 5 steps), so its work per step takes about F times as long: a
deterministic straggler, slower by F − 1. The injected time is logged per step as
``injected_s`` and shows up in its ``backward_s``.
``--slow-mode sleep`` injects a blocking wait instead. ``--data-stall-ms MS`` sleeps MS
milliseconds in the data phase (of ``--data-stall-rank``, or of every rank), like a data loader
that cannot keep up. ``--pin`` binds each process to one core (local rank × cores / local world
size): with more ranks than cores this keeps the placement fixed, as each rank owns its device on
a real node (tests/probe/test_ddp_e2e.py explains why it matters for the measurement).
"""

# No ``from __future__ import annotations``: DDP checks a comm hook's annotations as objects.
import argparse
import os
import statistics
import time
from collections import deque
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from xpuperf.probe import StepProbe
from xpuperf.probe.pytorch import ProbeCommHook, attach_ddp


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for rank<R>.jsonl")
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--batch", type=int, default=1024, help="per-card batch (samples per step)")
    ap.add_argument("--hidden", type=int, default=256, help="MLP width")
    ap.add_argument("--slow-rank", type=int, default=None)
    ap.add_argument("--slow-factor", type=float, default=1.0)
    ap.add_argument(
        "--slow-mode",
        choices=("compute", "sleep"),
        default="compute",
        help="extra work of the slow rank: real compute (default) or a blocking wait",
    )
    ap.add_argument(
        "--pin",
        action="store_true",
        help="pin each process to one core: local rank × cores / local world size",
    )
    ap.add_argument("--data-stall-ms", type=float, default=0.0)
    ap.add_argument("--data-stall-rank", type=int, default=None, help="default: every rank")
    ap.add_argument("--baseline", action="store_true", help="one process, no DDP")
    ap.add_argument("--flush-every", type=int, default=20)
    return ap.parse_args(argv)


def make_model(width: int, features: int = 256, classes: int = 10) -> nn.Module:
    """A 4-layer MLP (no buffers, so DDP's forward does no communication)."""
    return nn.Sequential(
        nn.Linear(features, width),
        nn.ReLU(),
        nn.Linear(width, width),
        nn.ReLU(),
        nn.Linear(width, width),
        nn.ReLU(),
        nn.Linear(width, classes),
    )


def batches(rank: int, batch: int, n: int = 8) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """A small pool of synthetic batches, different per rank (each rank sees its own shard)."""
    g = torch.Generator().manual_seed(1000 + rank)
    return [
        (torch.randn(batch, 256, generator=g), torch.randint(0, 10, (batch,), generator=g))
        for _ in range(n)
    ]


def burn(seconds: float) -> float:
    """Real compute (128×128 matmuls) until ``seconds`` have passed; returns the time spent."""
    t0 = time.perf_counter()
    if seconds <= 0:
        return 0.0
    a = torch.randn(128, 128)
    b = torch.randn(128, 128)
    while time.perf_counter() - t0 < seconds:
        a = torch.tanh(a @ b)
    return time.perf_counter() - t0


def wait(seconds: float) -> float:
    """Block (sleep) for ``seconds``, like a host waiting for a slow device; returns the time."""
    t0 = time.perf_counter()
    if seconds > 0:
        time.sleep(seconds)
    return time.perf_counter() - t0


class Straggle:
    """Extra work for the slow rank, run inside DDP's communication hook of the last gradient
    bucket: after this rank's backward compute, before it joins the allreduce.

    At that moment the other ranks have finished their own compute and wait in the collective,
    so the extra work does not steal CPU from them (4 ranks share 2 cores here); injected at the
    start of the step it would, and the others would look slow too.
    """

    def __init__(self, probe: StepProbe, factor: float, mode: str = "compute") -> None:
        self.probe, self.factor, self.mode = probe, factor, mode
        self.recent: deque[float] = deque(maxlen=5)  # own work of recent steps, seconds
        self.injected = 0.0
        self.inner = ProbeCommHook(probe)

    def new_step(self) -> None:
        """Remember the previous step's own work (without its injected time)."""
        last = self.probe.last_record
        if last is not None:
            own = last["step_time_s"] - last.get("comm_s", 0.0) - last.get("injected_s", 0.0)
            self.recent.append(own)
        self.injected = 0.0

    def hook(self, state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        """DDP communication hook: extra work on the last bucket, then the probe's hook."""
        if bucket.is_last() and self.recent:
            extra = (self.factor - 1.0) * statistics.median(self.recent)
            self.injected = burn(extra) if self.mode == "compute" else wait(extra)
        return self.inner.hook(state, bucket)


def main(argv: list[str] | None = None) -> None:
    """Train for ``--steps`` steps and write the probe's per-rank JSON Lines."""
    args = parse_args(argv)
    if args.pin and hasattr(os, "sched_setaffinity"):
        local, local_world = (
            int(os.environ.get("LOCAL_RANK", "0")),
            int(os.environ.get("LOCAL_WORLD_SIZE", "1")),
        )
        os.sched_setaffinity(0, {local * (os.cpu_count() or 1) // max(local_world, 1)})
    torch.set_num_threads(1)  # 2 cores shared by 4 ranks: one compute thread per process
    torch.set_num_interop_threads(1)
    torch.manual_seed(0)
    distributed = not args.baseline
    if distributed:
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    model = make_model(args.hidden)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    probe = StepProbe(
        args.out,
        rank=rank,
        world_size=world,
        samples_per_step=args.batch,
        flush_every=args.flush_every,
        truncate=True,
    )
    straggle = None
    if distributed and args.slow_rank == rank and args.slow_factor > 1.0:
        straggle = Straggle(probe, args.slow_factor, args.slow_mode)
        model.register_comm_hook(None, straggle.hook)
    elif distributed:
        attach_ddp(probe, model)  # splits backward into backward_s and comm_s (exposed wait)
    stall = args.data_stall_ms / 1e3
    if args.data_stall_rank is not None and args.data_stall_rank != rank:
        stall = 0.0
    pool = batches(rank, args.batch)
    data = (pool[i % len(pool)] for i in range(args.steps))

    for x, y in probe.iterate(data):
        if straggle is not None:
            straggle.new_step()
        if stall:
            with probe.phase("data"):
                time.sleep(stall)
        with probe.phase("forward"):
            loss = loss_fn(model(x), y)
        with probe.phase("backward"):
            loss.backward()
        with probe.phase("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
        if straggle is not None:
            probe.add_fields(injected_s=straggle.injected)
    probe.close()
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        print(f"wrote {args.steps} steps per rank to {Path(args.out).resolve()}", flush=True)


if __name__ == "__main__":
    main()
