"""Time and peak memory of ``xpuperf compare`` on long runs (issue 19: 50k vs 200k steps).

Run: ``python benchmarks/compare.py [--base-steps 50000 --current-steps 200000 --ranks 1]``.
Writes two seeded synthetic step tables as CSV (BASE healthy, CURRENT with a 4.5x stall every
100 steps) into a temporary directory, then runs ``compare_paths`` on them in a fresh process
and prints its wall time, the time spent in the comparison itself (after both analyses), and the
process's peak resident memory (``ru_maxrss``). Figures are recorded in docs/performance.md
("compare on long runs"). No assertions: times depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
from xpuperf import compare as c
from xpuperf.pipeline import analyze_logs
t1 = time.perf_counter()
base = c.run_from_result(analyze_logs([sys.argv[1]]), "base", sys.argv[1])
cur = c.run_from_result(analyze_logs([sys.argv[2]]), "current", sys.argv[2])
t2 = time.perf_counter()
res = c.compare_runs(base, cur)
doc = c.to_dict(res)
t3 = time.perf_counter()
print(json.dumps({
    "import_s": t1 - t0, "analyze_s": t2 - t1, "compare_s": t3 - t2, "total_s": t3 - t0,
    "peak_rss_MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "regressions": doc["regressions"],
}))
"""


def write_run(path: Path, steps: int, ranks: int, stall_every: int | None, seed: int) -> None:
    """A step table: ~0.25 s steps (2 % log-normal noise), 32 samples per rank per step."""
    rng = np.random.default_rng(seed)
    t = 0.25 * np.exp(rng.normal(0.0, 0.02, size=steps))
    if stall_every:
        t[stall_every - 1 :: stall_every] *= 4.5
    frame = pd.DataFrame(
        {
            "rank": np.repeat(np.arange(ranks), steps),
            "step": np.tile(np.arange(1, steps + 1), ranks),
            "step_time_s": np.tile(t, ranks),
            "samples": 32.0,
        }
    )
    frame.to_csv(path, index=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-steps", type=int, default=50_000)
    ap.add_argument("--current-steps", type=int, default=200_000)
    ap.add_argument("--ranks", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        base, cur = Path(d) / "base.csv", Path(d) / "current.csv"
        write_run(base, args.base_steps, args.ranks, None, 0)
        write_run(cur, args.current_steps, args.ranks, 100, 1)
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(base), str(cur)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    r = json.loads(out.strip().splitlines()[-1])
    print(
        f"{args.base_steps:,} vs {args.current_steps:,} steps × {args.ranks} rank(s): "
        f"total {r['total_s']:.1f} s (import {r['import_s']:.1f} s, both analyses "
        f"{r['analyze_s']:.1f} s, compare {r['compare_s']:.2f} s), peak RSS "
        f"{r['peak_rss_MiB']:,.0f} MiB; regressions: {', '.join(r['regressions']) or 'none'}"
    )


if __name__ == "__main__":
    main()
