"""Overhead of the step probe (xpuperf.probe): cost per mark, per phase block and per step.

Standard library only; writes to a temporary folder. Run::

    python benchmarks/probe_overhead.py            # table
    python benchmarks/probe_overhead.py --json     # machine-readable

Each figure is the best (minimum) of ``--repeat`` rounds of ``--n`` operations, divided by ``n``,
minus the cost of the bare Python loop: the probe's own cost, as a training loop would pay it.
The per-step figures include the buffered JSON Lines write (``flush_every`` = 50), amortised.
With ``torch`` installed, the per-parameter grad-ready hook and the DDP comm hook (against DDP's
built-in allreduce, per backward with one bucket) are measured too. Results are recorded in
docs/probe.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from xpuperf.probe import StepProbe


def best_ns(fn: Callable[[int], None], n: int, repeat: int) -> float:
    """Best time of ``fn(n)`` over ``repeat`` rounds, in ns per operation."""
    out = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        fn(n)
        out = min(out, (time.perf_counter_ns() - t0) / n)
    return out


def measure(n: int, repeat: int, folder: Path) -> dict[str, float]:
    """Nanoseconds per operation, loop overhead subtracted."""
    probe = StepProbe(folder, rank=0, node="bench", samples_per_step=32, flush_every=50)

    def empty(k: int) -> None:
        for _ in range(k):
            pass

    def marks(k: int) -> None:
        mark = probe.mark
        probe.begin_step()
        for _ in range(k):
            mark("forward")
        probe.abandon_step()

    def phases(k: int) -> None:
        phase = probe.phase
        probe.begin_step()
        for _ in range(k):
            with phase("forward"):
                pass
        probe.abandon_step()

    def notes(k: int) -> None:
        note = probe.note_comm_start
        probe.begin_step()
        for _ in range(k):
            note()
        probe.abandon_step()

    def steps_marks(k: int) -> None:
        mark = probe.mark
        for _ in range(k):
            probe.begin_step()
            mark("data")
            mark("forward")
            mark("backward")
            mark("comm")
            mark("optimizer")
            probe.end_step()

    def steps_phases(k: int) -> None:
        phase = probe.phase
        for _ in range(k):
            with probe.step():
                with phase("data"):
                    pass
                with phase("forward"):
                    pass
                with phase("backward"):
                    pass
                with phase("comm"):
                    pass
                with phase("optimizer"):
                    pass

    def iterate(k: int) -> None:
        for _ in probe.iterate(range(k)):
            with probe.phase("forward"):
                pass

    loop = best_ns(empty, n, repeat)
    steps_n = max(n // 10, 1000)
    out = {
        "mark_ns": best_ns(marks, n, repeat) - loop,
        "phase_block_ns": best_ns(phases, n, repeat) - loop,
        "note_comm_start_ns": best_ns(notes, n, repeat) - loop,
        "step_5_marks_ns": best_ns(steps_marks, steps_n, repeat) - loop,
        "step_5_phase_blocks_ns": best_ns(steps_phases, steps_n, repeat) - loop,
        "iterate_step_1_phase_ns": best_ns(iterate, steps_n, repeat) - loop,
    }
    probe.close()
    out.update(measure_torch(n, repeat, folder))
    return out


def measure_torch(n: int, repeat: int, folder: Path) -> dict[str, float]:
    """Costs of the PyTorch helpers (empty without torch): per parameter of the grad-ready
    hooks, and per backward of the DDP comm hook vs DDP's built-in allreduce (one-rank gloo
    group, one bucket)."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        return {}
    from xpuperf.probe.pytorch import attach_ddp, attach_grad_ready

    torch.set_num_threads(1)
    probe = StepProbe(folder / "torch", rank=0, node="bench")
    rounds = max(n // 500, 100)
    model = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(50)])
    x = torch.randn(2, 4)

    def backward_of(m: torch.nn.Module) -> Callable[[int], None]:
        def run(k: int) -> None:
            probe.begin_step()
            for _ in range(k):
                m(x).sum().backward()
            probe.abandon_step()

        return run

    out: dict[str, float] = {}
    bare = best_ns(backward_of(model), rounds, repeat)
    handles = attach_grad_ready(probe, model)
    out["grad_ready_hook_per_param_ns"] = (
        best_ns(backward_of(model), rounds, repeat) - bare
    ) / len(handles)
    for h in handles:
        h.remove()

    dist.init_process_group("gloo", init_method=f"file://{folder / 'store'}", rank=0, world_size=1)
    try:
        plain = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 64))
        hooked = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 64))
        attach_ddp(probe, hooked)
        t_plain = best_ns(backward_of(plain), rounds, repeat)
        t_hooked = best_ns(backward_of(hooked), rounds, repeat)
        out["ddp_hook_vs_builtin_per_backward_ns"] = t_hooked - t_plain
    finally:
        dist.destroy_process_group()
    probe.close()
    return out


def main(argv: list[str] | None = None) -> None:
    """Print the overhead table (or JSON)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=200_000, help="operations per round")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        res = measure(args.n, args.repeat, Path(tmp))
    if args.json:
        meta = {"python": platform.python_version(), "machine": platform.machine()}
        json.dump({**meta, **res}, sys.stdout, indent=2)
        print()
        return
    print(f"xpuperf.probe overhead (Python {platform.python_version()}, {platform.machine()})")
    for key, ns in res.items():
        print(f"  {key.removesuffix('_ns'):<32} {ns / 1000:8.2f} µs")


if __name__ == "__main__":
    main()
