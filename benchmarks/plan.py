"""Time a full ``xpuperf plan`` (estimate at every card count + every lever's sweep + the speedup
curve of every fix: :func:`~xpuperf.advice.make_plan`).

Run: ``python benchmarks/plan.py`` (add ``--repeats N``). Prints the first (cold: a new Planner,
cold caches) and the median time per case; results are recorded in docs/plan.md ("Speed"). The
first case is the bundled example of ``xpuperf plan`` with no arguments (1024 cards of
pcie-8gpu-2socket, BERT-large, DDP 4 MiB buckets = 146 buckets, algorithm auto, an input pipeline
on PyTorch's DataLoader defaults), built the way the CLI builds it. No assertions: timings depend
on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

from xpuperf.advice import make_plan
from xpuperf.cli import plan_input
from xpuperf.cli.plan import DEFAULT_CARDS, EXAMPLE
from xpuperf.costmodel.estimate import Settings
from xpuperf.costmodel.workloads import model
from xpuperf.topology import preset


def _example() -> tuple:
    topo, nodes, name, step_s, batch = EXAMPLE
    cluster = preset(topo, nodes)
    extra, _ = plan_input.input_settings(cluster, None, example=True, workers=None,
                                         prefetch=None, pinned=None, input_time=None,
                                         input_mb=None, loader_numa=None)  # fmt: skip
    s = Settings(bucket_mb=plan_input.EXAMPLE_BUCKET_MB, **extra)
    return "bundled example", cluster, name, step_s, batch, list(DEFAULT_CARDS), s


CASES = [
    ("dgx-a100", 128, "resnet50", [1, 8, 16, 32, 64, 128, 256, 512, 1024]),
    ("dgx-a100", 128, "bert_large", [1, 8, 16, 32, 64, 128, 256, 512, 1024]),
    ("pcie-8gpu", 12_500, "resnet50", [1, 8, 1024, 100_000]),
    ("dgx-a100", 12_500, "bert_large", [1, 8, 1024, 100_000]),
]
"""(preset, nodes, model, card counts), single-card step 0.2 s, algorithm ring."""


def main(repeats: int = 3) -> None:
    runs = [_example()]
    for topo, nodes, name, cards in CASES:
        runs.append((topo, preset(topo, nodes), name, 0.2, None, cards, Settings(algorithm="ring")))
    for label, cluster, name, step_s, batch, cards, s in runs:  # clusters built once, as the CLI
        work = model(name)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = make_plan(cluster, work, step_s, cards=cards, settings=s, batch_size=batch)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        print(f"{label:15s} {name:11s} up to {max(cards):>7,} cards: first {times[0]:.3f} s, "
              f"median {med:.3f} s of {repeats}; {len(r.fixes)} fixes")  # fmt: skip


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    main(ap.parse_args().repeats)
