"""``xpuperf analyze``: parse options, call :func:`xpuperf.pipeline.analyze_logs`, render."""

from __future__ import annotations

import glob
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from xpuperf.cli.console import err_console, out_console
from xpuperf.cli.options import (
    BatchSizeOption,
    FormatOption,
    PatternOption,
    WorldSizeOption,
    reader_format,
)
from xpuperf.cli.stdin import reads_stdin, relabel, with_stdin
from xpuperf.errors import UsageError
from xpuperf.report.output import check_not_input, stdout_outputs, write_output
from xpuperf.report.terminal import safe
from xpuperf.samples import DEFAULT_BASELINE, DEFAULT_RUN, samples_dir

if TYPE_CHECKING:
    from xpuperf.analysis.results import AnalyzeResult

EPILOG = (
    "Columns read (case-insensitive, unit suffix _s/_ms/_us): step|iteration|iter, "
    "rank (or local_rank + node, or a rank number in the file name), step_time|batch_time|time, "
    "or fps|throughput|samples_per_sec|ips with samples|batch_size, or timestamps; optional "
    "data_time, forward, backward, comm|allreduce, optimizer, compute, node|host. "
    "Full list: docs/analyze.md."
)


@reads_stdin("logs")
def analyze(
    logs: Annotated[
        list[str] | None,
        typer.Argument(
            help="Log files, directories or globs; - reads a log piped in. None: the bundled "
            "sample."
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(help="Log of ONE card alone at the same per-card batch (for speedup)."),
    ] = None,
    fmt: FormatOption = None,
    pattern: PatternOption = None,
    batch_size: BatchSizeOption = None,
    warmup: Annotated[
        int | None, typer.Option(min=0, help="Exclude this many leading steps (default: detect).")
    ] = None,
    world_size: WorldSizeOption = None,
    straggler_threshold: Annotated[
        float, typer.Option(min=0.0, help="Slowdown fraction above which a rank is a straggler.")
    ] = 0.05,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write the JSON result to PATH, or - for stdout.")
    ] = None,
    html_out: Annotated[
        str | None,
        typer.Option(
            "--html",
            help="Write a self-contained HTML report (opens offline) to PATH, - for stdout.",
        ),
    ] = None,
    md_out: Annotated[
        str | None,
        typer.Option(
            "--markdown",
            help="Write a Markdown summary to PATH or - (also appended to $GITHUB_STEP_SUMMARY "
            "when that is set).",
        ),
    ] = None,
    fail_on: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-on",
            help="Exit 1 when EXPR holds, e.g. 'speedup<0.9', 'jitter.cv>0.05', 'stragglers>0', "
            "'severity>=warning', 'code=XP101'. Repeatable or comma-separated. See docs/ci.md.",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No terminal summary.")] = False,
    engine: Annotated[
        str | None,
        typer.Option(
            help="pandas or dask: the engine reading a dataset written by `xpuperf ingest` "
            "(default pandas). See docs/scale.md."
        ),
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(help="Dask scheduler address (tcp://HOST:8786); default: a LocalCluster."),
    ] = None,
) -> None:
    """Find stragglers, FPS jitter and the compute/non-compute split in per-rank step logs; also
    reads NCCL debug logs, the job's stdout/stderr (framework warnings) and scaling tables."""
    # imported here so that `xpuperf --help` and other subcommands skip pandas/scipy start-up
    from xpuperf import gates as gt
    from xpuperf.cli.progress import read_progress
    from xpuperf.engine import analyze_dataset, dataset_input
    from xpuperf.pipeline import analyze_inputs
    from xpuperf.readers.scaling import all_scaling_tables
    from xpuperf.report.json_report import render_json, to_dict
    from xpuperf.report.terminal import render_terminal

    gates = gt.parse_gates(fail_on)  # a malformed expression stops here, before any work
    fmt = reader_format(fmt, pattern)  # a malformed --pattern too

    err = err_console()
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
    logs = with_stdin(logs)  # `-`: the log piped in (cli/stdin.py)
    inputs = [*logs, *([baseline] if baseline else [])]
    existing = [p for p in inputs if Path(p).exists() or glob.has_magic(p)]
    to_stdout = stdout_outputs(json=json_out, html=html_out, markdown=md_out)  # also blank paths
    for out in (json_out, html_out, md_out):
        if out and out != "-":
            check_not_input(out, existing)
    if fmt is None and baseline is None and all_scaling_tables(logs):  # cards vs throughput
        _scaling_only(logs, json_out, html_out, md_out, quiet or to_stdout, gates, err)
        return
    if fmt is None:
        _tables_alone(logs, baseline)  # a scaling table among other inputs: say so, exit 2
    dataset = dataset_input(logs, engine, scheduler)  # `xpuperf ingest` output: an engine reads it
    if dataset is not None and world_size is not None:
        raise UsageError(
            f"--world-size applies to job-level logs, not to the dataset {dataset}: "
            "analyse the log itself with --world-size N"
        )
    options = {"baseline": baseline, "fmt": fmt, "batch_size": batch_size, "warmup": warmup,
               "straggler_threshold": straggler_threshold}  # fmt: skip
    with read_progress(err, [] if dataset else logs, quiet):
        if dataset is not None:
            result = analyze_dataset(dataset, engine=engine or "pandas", scheduler=scheduler,
                                     **options)  # fmt: skip
        else:
            result, nosteps = analyze_inputs(logs, world_size=world_size, **options)
    if result is None:  # NCCL debug logs / job output without step records
        _no_steps(relabel(nosteps), json_out, html_out, md_out, quiet or to_stdout, gates, err)
        return
    result = relabel(result)  # a log piped in is named `<stdin>`, not its temporary copy
    for w in result.read_warnings:
        err.print("warning: " + safe(w))
    if json_out:
        write_output(json_out, render_json(result))
    if html_out:
        from xpuperf.report.html import render_html

        write_output(html_out, render_html(result))
    write_ci_outputs(result, md_out, err, [*existing, json_out or "", html_out or ""])
    if not quiet and not to_stdout:
        render_terminal(result, out_console())
    if gates:
        outcome = gt.evaluate(gates, to_dict(result))
        if not quiet:
            for r in outcome:
                err.print(
                    f"gate {'FAILED' if r.failed else 'passed'}: {r.describe()}", markup=False
                )
        gt.enforce(outcome)


def _no_steps(ns, json_out, html_out, md_out, quiet, gates, err: Console) -> None:
    """Inputs without step records (NCCL logs, job stdout/stderr): findings, checks, JSON,
    Markdown, HTML and gates (:mod:`xpuperf.report.nosteps`)."""
    from xpuperf import gates as gt
    from xpuperf.report import nosteps
    from xpuperf.report.output import write_markdown_outputs

    for w in ns.notes:
        err.print("warning: " + safe(w))
    doc = nosteps.document(ns)
    if json_out:
        write_output(json_out, json.dumps(doc, indent=2, allow_nan=False) + "\n")
    if md_out or os.environ.get("GITHUB_STEP_SUMMARY"):
        warning = write_markdown_outputs(nosteps.render_markdown(ns), md_out, ns.sources)
        if warning:
            err.print(f"warning: {warning}", markup=False)
    if not quiet and json_out != "-" and md_out != "-":
        nosteps.render_terminal(ns, out_console())
    if html_out:
        write_output(html_out, nosteps.render_html(ns))
    if gates:
        gt.enforce(gt.evaluate(gates, doc))


def _scaling_only(paths, json_out, html_out, md_out, quiet, gates, err: Console) -> None:
    """Inputs that are all scaling tables (cards vs throughput or time per step): the scaling
    report (docs/analyze.md "Scaling tables"), its JSON (``xpuperf.scaling/1``) and gates; one
    report per configuration when a ``Model``/``Config`` column splits a table."""
    from xpuperf import gates as gt
    from xpuperf.analysis.scaling import analyze_scaling_groups
    from xpuperf.readers.scaling import read_scaling_table
    from xpuperf.report import scaling_section as sc
    from xpuperf.report.output import write_markdown_outputs

    if html_out:  # before any work: an output asked for never goes missing
        raise UsageError(
            "--html: a scaling table has no HTML report; write --json PATH or --markdown PATH "
            "instead"
        )
    results = [r for p in paths for r in analyze_scaling_groups(read_scaling_table(Path(p)))]
    results = relabel(results)  # a table piped in is `<stdin>`
    doc = sc.scaling_document(results)
    if json_out:
        write_output(json_out, json.dumps(doc, indent=2, allow_nan=False) + "\n")
    if md_out or os.environ.get("GITHUB_STEP_SUMMARY"):
        text = sc.render_scaling_markdown(results)
        warning = write_markdown_outputs(text, md_out, [*paths, json_out or ""])
        if warning:
            err.print(f"warning: {warning}", markup=False)
    if not quiet:
        sc.render_scaling(results, out_console())
    if gates:
        gt.enforce(gt.evaluate(gates, doc))


TABLE_MAX_BYTES = 64 << 10
"""Files up to this size are sniffed for a scaling table mixed with other inputs."""


def _tables_alone(logs: list[str], baseline: str | None) -> None:
    """Refuse (InputError, exit 2) a scaling table given with other inputs or with --baseline,
    and a scaling table with a single card count, each with what to do; files that also hold a
    step log (a table pasted above a training log) are left to the step-log readers."""
    import shlex

    from xpuperf.errors import InputError
    from xpuperf.readers.scaling import sniff_scaling_table

    for p in dict.fromkeys([*logs, *([baseline] if baseline else [])]):
        try:  # a table someone posted is a few KiB: larger files are not sniffed (speed)
            small = Path(p).is_file() and Path(p).stat().st_size <= TABLE_MAX_BYTES
        except OSError:
            small = False
        table = sniff_scaling_table(p) if small else None
        if table is None or table.log_lines:
            continue
        cards = sorted({int(c) if float(c).is_integer() else c for c in table.rows["cards"]})
        if len(cards) < 2:
            raise InputError(
                f"a scaling table with {len(table.rows)} usable row(s), all at {cards[0]} "
                f"card(s){_skipped(table.skipped)}: efficiency compares each size with one card "
                "alone; add "
                + (
                    "a row with more cards"
                    if cards[0] == 1
                    else "the one-card run as a row (1 card, same per-card batch)"
                )
                + (" or fix the skipped rows" if table.skipped else "")
                + f", then analyse the table on its own: `xpuperf analyze {shlex.quote(p)}`",
                p,
            )
        if p == baseline:
            why = "--baseline takes the step log of one card alone, not a scaling table"
        elif baseline is not None:
            why = "a table needs no --baseline (its one-card row is the baseline)"
        else:
            why = "a scaling report does not mix with step logs or NCCL logs"
        raise InputError(
            f"this is a scaling table (cards vs throughput): analyse it on its own with "
            f"`xpuperf analyze {shlex.quote(p)}`; {why}",
            p,
        )


def _skipped(skipped: list[str]) -> str:
    """`` (2 more skipped, first t.md:4: value -2600 ≤ 0)`` or ``""``."""
    return f" ({len(skipped)} more skipped, first {skipped[0]})" if skipped else ""


def write_ci_outputs(
    result: AnalyzeResult, md_out: str | None, err: Console, protect: list[str] | None = None
) -> None:
    """Markdown to ``md_out`` and ``$GITHUB_STEP_SUMMARY`` (never onto ``protect``: the inputs
    and other outputs); annotations on stderr in Actions."""
    from xpuperf.report.markdown import github_annotations, render_markdown
    from xpuperf.report.output import write_markdown_outputs

    if md_out or os.environ.get("GITHUB_STEP_SUMMARY"):
        warning = write_markdown_outputs(render_markdown(result), md_out, protect or [])
        if warning:
            err.print(f"warning: {warning}", markup=False)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in github_annotations(result):
            print(line, file=sys.stderr)


analyze.__doc__ = f"{analyze.__doc__}\n\n{EPILOG}"
