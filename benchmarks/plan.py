"""Time a full ``xpuperf plan`` (estimate at every card count + every lever's sweep).

Run: ``python benchmarks/plan.py``. Prints the first (cold: a new Planner, cold caches) and the
median time per case; results are recorded in docs/plan.md ("Speed"). No assertions: timings
depend on the machine.
"""

from __future__ import annotations

import statistics
import time

from xpuperf.advice import make_plan
from xpuperf.costmodel.estimate import Settings
from xpuperf.costmodel.workloads import model
from xpuperf.topology import preset

CASES = [
    ("dgx-a100", 128, "resnet50", [1, 8, 16, 32, 64, 128, 256, 512, 1024]),
    ("dgx-a100", 128, "bert_large", [1, 8, 16, 32, 64, 128, 256, 512, 1024]),
    ("pcie-8gpu", 12_500, "resnet50", [1, 8, 1024, 100_000]),
    ("dgx-a100", 12_500, "bert_large", [1, 8, 1024, 100_000]),
]


def main(repeats: int = 3) -> None:
    for topo, nodes, name, cards in CASES:
        cluster = preset(topo, nodes)  # built once, as the CLI does
        work = model(name)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = make_plan(cluster, work, 0.2, cards=cards, settings=Settings(algorithm="ring"))
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        print(f"{topo:10s} {name:11s} up to {max(cards):>7,} cards: first {times[0]:.3f} s, "
              f"median {med:.3f} s of {repeats}; {len(r.fixes)} fixes")  # fmt: skip


if __name__ == "__main__":
    main()
