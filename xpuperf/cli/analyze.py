"""``xpuperf analyze``: parse options, call :func:`xpuperf.pipeline.analyze_logs`, render."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from xpuperf.report.output import check_not_input, write_text_atomic
from xpuperf.samples import DEFAULT_BASELINE, DEFAULT_RUN, samples_dir

EPILOG = (
    "Columns read (case-insensitive, unit suffix _s/_ms/_us): step|iteration|iter, "
    "rank (or local_rank + node, or a rank number in the file name), step_time|batch_time|time, "
    "or fps|throughput|samples_per_sec|ips with samples|batch_size, or timestamps; optional "
    "data_time, forward, backward, comm|allreduce, optimizer, compute, node|host. "
    "Full list: docs/analyze.md."
)


def analyze(
    logs: Annotated[
        list[str] | None,
        typer.Argument(help="Log files, directories or globs. None: the bundled sample."),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(help="Log of ONE card alone at the same per-card batch (for speedup)."),
    ] = None,
    fmt: Annotated[
        str | None, typer.Option("--format", "-f", help="Force a reader format (csv, jsonl, …).")
    ] = None,
    batch_size: Annotated[
        float | None,
        typer.Option(min=0.0, help="Samples per rank per step, when the logs do not say."),
    ] = None,
    warmup: Annotated[
        int | None, typer.Option(min=0, help="Exclude this many leading steps (default: detect).")
    ] = None,
    straggler_threshold: Annotated[
        float, typer.Option(min=0.0, help="Slowdown fraction above which a rank is a straggler.")
    ] = 0.05,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write the JSON result to PATH, or - for stdout.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No terminal summary.")] = False,
    debug: Annotated[bool, typer.Option(help="Show tracebacks of internal errors.")] = False,
) -> None:
    """Find stragglers, FPS jitter and the compute/non-compute split in per-rank step logs."""
    # imported here so that `xpuperf --help` and other subcommands skip pandas/scipy start-up
    from xpuperf.pipeline import analyze_logs
    from xpuperf.report.json_report import render_json
    from xpuperf.report.terminal import render_terminal

    err = Console(stderr=True, highlight=False)
    if not logs:
        root = samples_dir()
        logs = [str(root / DEFAULT_RUN)]
        if baseline is None:
            baseline = str(root / DEFAULT_BASELINE)
        err.print(
            f"no LOGS given: analysing the bundled sample {logs[0]} with baseline {baseline}",
            style="dim",
            markup=False,
        )
    inputs = [*logs, *([baseline] if baseline else [])]
    if json_out and json_out != "-":
        check_not_input(json_out, [p for p in inputs if Path(p).exists()])
    result = analyze_logs(
        logs,
        baseline=baseline,
        fmt=fmt,
        batch_size=batch_size,
        warmup=warmup,
        straggler_threshold=straggler_threshold,
    )
    for w in result.read_warnings:
        err.print(f"warning: {w}", markup=False)
    if json_out == "-":
        sys.stdout.write(render_json(result))
    elif json_out:
        write_text_atomic(json_out, render_json(result))
    if not quiet and json_out != "-":
        render_terminal(result, Console(highlight=False))


analyze.__doc__ = f"{analyze.__doc__}\n\n{EPILOG}"
