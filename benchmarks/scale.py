"""Scale benchmark: generic CSV / per-rank CSV / Parquet, xpuperf vs pyarrow and pandas.

Two subcommands::

    python benchmarks/scale.py gen --ranks 1000 --steps 10000 --out /tmp/xpuperf-scale
    python benchmarks/scale.py run --data /tmp/xpuperf-scale [--repeat 3] [--write-docs]

``gen`` writes, seeded, into ``--out`` (never into the repository): ``single.csv`` (one file with a
rank column), ``per_rank/rank{r}.csv`` (one file per rank, no rank column) and ``single.parquet``;
with ``--single-only`` only ``single.csv`` (the 10^8-row file: ``--steps 100000``, 4.5 GiB).
Columns: rank, step, step_time_s, compute_s, data_s, comm_s, samples — the model of
:mod:`xpuperf.synth` (log-normal phases, synchronous step = slowest rank's ready time + allreduce,
comm = wait + allreduce) with one planted 10 % straggler, rank 3.

``run`` times, on the same files, in one run, best of ``--repeat`` with the contenders interleaved
(each repetition runs every contender once, in turn), each in a fresh interpreter started by a
small wrapper process, so that the wrapper's ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` is that
contender's own peak RSS (the lowest over the repetitions is reported):

1. ``pyarrow.csv.read_csv`` of single.csv (read only, multi-threaded);
2. ``pandas.read_csv`` + ``groupby("rank").median()`` — what a user would hand-write;
3. ``xpuperf.pipeline.analyze_logs`` (library call, end to end);
4. ``xpuperf analyze single.csv --json FILE --quiet`` (CLI, end to end, includes start-up:
   the only contender whose time includes interpreter start and imports);
5. xpuperf on the per-rank files and on the Parquet file (library call);
6. ``xpuperf.readers.read_logs`` alone on single.csv (the reader's share of the end-to-end time).

``--only TEXT…`` runs only the contenders whose name contains one of the texts (the pyarrow
reference always runs), e.g. ``--only 'single CSV' read_logs`` for a 3 × 10^7-row file.

``--write-docs`` replaces the ``scale.py`` section of docs/performance.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "performance.md"
BLOCK = 50  # ranks generated at a time (bounded memory)
LOADS: list[float] = []  # 1-minute load average after each timed child


def _block(rng_seed: int, r0: int, r1: int, steps: int) -> dict[str, np.ndarray]:
    """Phases of ranks r0..r1-1 (seconds), deterministic in (seed, r0)."""
    rng = np.random.default_rng([rng_seed, r0])
    n = r1 - r0
    slow = np.ones((n, 1))
    if r0 <= 3 < r1:
        slow[3 - r0] = 1.10
    ln = lambda cv: np.exp(rng.normal(0.0, cv, size=(n, steps)))  # noqa: E731
    compute = 0.200 * slow * ln(0.02)
    data = 0.010 * ln(0.05)
    other = 0.005 * ln(0.05)
    return {"compute_s": compute, "data_s": data, "ready": compute + data + other}


def generate(out: Path, ranks: int, steps: int, seed: int = 0, single_only: bool = False) -> None:
    """Write single.csv, per_rank/rank{r}.csv and single.parquet into ``out`` (only single.csv
    when ``single_only``: the 10^8-row run needs no other file)."""
    out.mkdir(parents=True, exist_ok=True)
    if not single_only:
        (out / "per_rank").mkdir(exist_ok=True)
    # pass 1: the slowest rank's ready time per step (synchronous step)
    ready_max = np.zeros(steps)
    for r0 in range(0, ranks, BLOCK):
        b = _block(seed, r0, min(r0 + BLOCK, ranks), steps)
        np.maximum(ready_max, b["ready"].max(axis=0), out=ready_max)
    rng = np.random.default_rng([seed, 2**31])
    allreduce = 0.030 * np.exp(rng.normal(0.0, 0.02, size=steps))
    warm = np.ones(steps)
    warm[:5] = np.linspace(3.0, 1.4, 5)
    step_time = (ready_max + allreduce) * warm
    step_ids = np.arange(1, steps + 1, dtype=np.int64)
    schema = pa.schema(
        [
            ("rank", pa.int32()),
            ("step", pa.int64()),
            ("step_time_s", pa.float64()),
            ("compute_s", pa.float64()),
            ("data_s", pa.float64()),
            ("comm_s", pa.float64()),
            ("samples", pa.float64()),
        ]
    )
    opts = pacsv.WriteOptions(include_header=True)
    with contextlib.ExitStack() as stack:
        csv_w = stack.enter_context(pacsv.CSVWriter(out / "single.csv", schema, write_options=opts))
        pq_w = (
            None
            if single_only
            else stack.enter_context(pq.ParquetWriter(out / "single.parquet", schema))
        )
        for r0 in range(0, ranks, BLOCK):
            r1 = min(r0 + BLOCK, ranks)
            b = _block(seed, r0, r1, steps)
            n = r1 - r0
            cols = {
                "rank": np.repeat(np.arange(r0, r1, dtype=np.int32), steps),
                "step": np.tile(step_ids, n),
                "step_time_s": np.tile(step_time, n),
                "compute_s": (b["compute_s"] * warm).ravel(),
                "data_s": b["data_s"].ravel(),
                "comm_s": (step_time[None, :] - b["ready"] * warm).ravel(),
                "samples": np.full(n * steps, 32.0),
            }
            # 6 significant digits, as training logs print them
            for c in ("step_time_s", "compute_s", "data_s", "comm_s"):
                cols[c] = np.round(cols[c], 6)
            table = pa.table(cols, schema=schema)
            csv_w.write_table(table)
            if pq_w is None:
                continue
            pq_w.write_table(table)
            for i, r in enumerate(range(r0, r1)):
                part = table.slice(i * steps, steps).drop_columns(["rank"])
                pacsv.write_csv(part, out / "per_rank" / f"rank{r}.csv")
    print(f"wrote {ranks} ranks × {steps} steps = {ranks * steps:,} rows to {out}")


# ---------------------------------------------------------------------------------------------
# contenders: each runs in a fresh interpreter; prints "seconds rows"

CONTENDERS: dict[str, str] = {
    "pyarrow.csv.read_csv (read only)": """
import pyarrow.csv as c
t = c.read_csv(P / "single.csv")
rows = t.num_rows
""",
    "pandas.read_csv + groupby median": """
import pandas as pd
df = pd.read_csv(P / "single.csv")
med = df.groupby("rank").median()
rows = len(df)
""",
    "xpuperf analyze_logs (library), single CSV": """
from xpuperf.pipeline import analyze_logs
r = analyze_logs([P / "single.csv"])
rows = len(r.rank_steps)
""",
    "xpuperf read_logs only (library), single CSV": """
from xpuperf.readers import read_logs
rows = len(read_logs([P / "single.csv"]).table)
""",
    "xpuperf analyze_logs (library), per-rank CSVs": """
from xpuperf.pipeline import analyze_logs
r = analyze_logs([P / "per_rank"])
rows = len(r.rank_steps)
""",
    "xpuperf analyze_logs (library), Parquet": """
from xpuperf.pipeline import analyze_logs
r = analyze_logs([P / "single.parquet"])
rows = len(r.rank_steps)
""",
}
CLI = "xpuperf analyze single.csv --json (CLI)"
HARNESS = """
import sys, time
from pathlib import Path
import pandas, pyarrow.csv, scipy.stats, xpuperf.pipeline  # imports are not timed
P = Path(sys.argv[1])
t0 = time.perf_counter()
{body}
print(time.perf_counter() - t0, rows)
"""


def _env() -> dict[str, str]:
    """Children import xpuperf from this checkout, not from an installed copy."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


WRAPPER = (
    "import resource, subprocess, sys, time; t0 = time.perf_counter(); "
    "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
    "wall = time.perf_counter() - t0; sys.stderr.write(r.stderr[-2000:]); "
    "print(r.stdout.strip().replace(chr(10), ' ')); print('WALL', wall); "
    "ru = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print('CPU', ru.ru_utime + ru.ru_stime); print('MAXRSS', ru.ru_maxrss); "
    "sys.exit(r.returncode)"
)
"""Runs one contender in a fresh wrapper process, so that ``RUSAGE_CHILDREN`` of the wrapper is
the peak RSS of that contender alone."""


def _child(cmd: list[str]) -> tuple[float, int, float, float]:
    """Run a contender; (seconds it reports, or wall seconds; rows; peak RSS MB; CPU seconds of
    the whole process, imports included)."""
    res = subprocess.run(
        [sys.executable, "-c", WRAPPER, *cmd],
        capture_output=True,
        text=True,
        check=False,
        env=_env(),
    )
    if res.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:4]} failed ({res.returncode}): {res.stderr.strip()[-500:]}")
    lines = res.stdout.strip().splitlines()
    wall = float(lines[-3].split()[1])
    cpu = float(lines[-2].split()[1])
    peak = int(lines[-1].split()[1]) / 1024
    out = lines[0].split() if len(lines) >= 4 else []
    if cmd[1] == "-c" and len(out) >= 2:
        return float(out[-2]), int(out[-1]), peak, cpu
    return wall, 0, peak, cpu


def run(data: Path, repeat: int, write_docs: bool, only: list[str] | None = None) -> None:
    if not (data / "single.csv").is_file():
        raise SystemExit(f"{data}/single.csv not found: run `gen` first")
    cmds: dict[str, list[str]] = {
        name: [sys.executable, "-c", HARNESS.format(body=body), str(data)]
        for name, body in CONTENDERS.items()
    }
    json_out = data / "out.json"
    cmds[CLI] = [
        sys.executable,
        "-m",
        "xpuperf",
        "analyze",
        str(data / "single.csv"),
        "--json",
        str(json_out),
        "--quiet",
    ]
    first = next(iter(CONTENDERS))  # the reference (pyarrow) always runs
    if only:
        cmds = {k: v for k, v in cmds.items() if k == first or any(o in k for o in only)}
    best: dict[str, float] = {}
    rows: dict[str, int] = {}
    peaks: dict[str, float] = {}
    cpus: dict[str, float] = {}
    for i in range(repeat):
        for name, cmd in cmds.items():
            secs, n, peak, cpu = _child(cmd)
            peaks[name] = min(peaks.get(name, float("inf")), peak)
            cpus[name] = min(cpus.get(name, float("inf")), cpu)
            best[name] = min(best.get(name, float("inf")), secs)
            rows[name] = max(rows.get(name, 0), n)
            LOADS.append(os.getloadavg()[0])
            print(f"[{i + 1}/{repeat}] {name}: {secs:.2f} s", flush=True)
    _, _, floor, floor_cpu = _child(
        [sys.executable, "-c", "import pandas, pyarrow, scipy, xpuperf.pipeline"]
    )
    size = (data / "single.csv").stat().st_size
    ref = best[next(iter(CONTENDERS))]
    n_rows = rows[next(iter(CONTENDERS))]
    lines = [
        f"| contender | seconds (best of {repeat}) | vs pyarrow read | CPU s of the process "
        "(incl. imports) | peak RSS MB |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in cmds:
        lines.append(
            f"| {name} | {best[name]:.2f} | {best[name] / ref:.2f}× | {cpus[name]:.2f} "
            f"| {peaks[name]:.0f} |"
        )
    lines.append(
        f"| (imports only: pandas, pyarrow, scipy, xpuperf) | | | {floor_cpu:.2f} | {floor:.0f} |"
    )
    table = "\n".join(lines)
    print(table)
    if write_docs:
        _write_docs(data, n_rows, size, repeat, table)


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = next(
            int(x.split()[1]) / 2**20
            for x in Path("/proc/meminfo").read_text().splitlines()
            if x.startswith("MemTotal")
        )
    except OSError:
        mem = float("nan")
    import pandas as pd

    return (
        f"{cpu}, `nproc` {os.cpu_count()}, {mem:.0f} GiB RAM, Linux {platform.release()}; "
        f"Python {platform.python_version()}, pandas {pd.__version__}, pyarrow {pa.__version__}"
    )


def _write_docs(data: Path, n_rows: int, size: int, repeat: int, table: str) -> None:
    text = DOCS.read_text(encoding="utf-8")
    # one section per input size, so that runs at 10^6 and 10^7 rows sit side by side
    begin, end = f"<!-- scale.py {n_rows}: begin -->", f"<!-- scale.py {n_rows}: end -->"
    intro = textwrap.fill(
        f"`python benchmarks/scale.py run --data DIR --repeat {repeat} --write-docs` "
        f"({time.strftime('%Y-%m-%d')}): {n_rows:,} rows (rank, step, step_time_s, compute_s, "
        f"data_s, comm_s, samples), single.csv {size / 2**20:.0f} MiB, generated by "
        "`benchmarks/scale.py gen` (seed 0). Each contender runs in a fresh interpreter, "
        f"interleaved, best of {repeat}; files in the page cache. Peak RSS: of that contender's "
        "process alone (`getrusage(RUSAGE_CHILDREN).ru_maxrss` of a wrapper), lowest of the "
        "repetitions. Seconds: the timed call alone, imports excluded, except the CLI row (the "
        "whole `xpuperf` process). The CPU column is user + system time of the whole process "
        "(all threads, interpreter start and imports included; the imports-only row is the "
        "floor).",
        100,
    )
    outro = textwrap.fill(
        f"Machine: {machine()}. The cores were shared with other work running at "
        f"the same time: the 1-minute load average during the run was {min(LOADS):.1f}–"
        f"{max(LOADS):.1f} (on {os.cpu_count()} cores), so absolute seconds are inflated and "
        "vary between runs; best-of-N with interleaving keeps the ratios fairer than the "
        "seconds.",
        100,
    )
    section = (
        f"{begin}\n## Generic CSV end to end, {n_rows:,} rows (scale.py)\n\n"
        f"{intro}\n\n{table}\n\n{outro}\n{end}"
    )
    if begin in text:
        text = re.sub(
            re.escape(begin) + ".*?" + re.escape(end), lambda _m: section, text, flags=re.S
        )
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    DOCS.write_text(text, encoding="utf-8")
    print(f"updated {DOCS}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen", help="write the input files")
    g.add_argument("--ranks", type=int, default=1000)
    g.add_argument("--steps", type=int, default=10000)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", type=Path, default=Path("/tmp/xpuperf-scale"))
    g.add_argument(
        "--single-only",
        action="store_true",
        help="write single.csv only (no per-rank files, no Parquet): for 10^8 rows",
    )
    r = sub.add_parser("run", help="time the contenders")
    r.add_argument("--data", type=Path, default=Path("/tmp/xpuperf-scale"))
    r.add_argument("--repeat", type=int, default=3)
    r.add_argument("--write-docs", action="store_true")
    r.add_argument(
        "--only",
        nargs="+",
        metavar="TEXT",
        help="run only the contenders whose name contains one of these (plus the pyarrow "
        "reference), e.g. --only 'single CSV' 'read_logs'",
    )
    a = ap.parse_args()
    if a.cmd == "gen":
        if ROOT in a.out.resolve().parents:
            raise SystemExit("--out must be outside the repository (e.g. /tmp/xpuperf-scale)")
        generate(a.out, a.ranks, a.steps, a.seed, a.single_only)
    else:
        run(a.data, a.repeat, a.write_docs, a.only)


if __name__ == "__main__":
    main()
