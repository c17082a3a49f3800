"""Options shared by the subcommands that read step logs (analyze, compare, ingest, plan)."""

from __future__ import annotations

from typing import Annotated

import typer

from xpuperf.errors import UsageError

FormatOption = Annotated[
    str | None, typer.Option("--format", "-f", help="Force a reader format (csv, jsonl, …).")
]
"""``--format NAME``: force a reader instead of sniffing (``xpuperf formats`` lists them)."""

PatternOption = Annotated[
    str | None,
    typer.Option(
        "--pattern",
        help="Read any text log by its step line, e.g. 'iter {step}: loss {_}, time "
        "{step_time_ms}ms' (fields: docs/formats.md; try it: xpuperf formats --explain FILE "
        "--pattern '…').",
    ),
]
"""``--pattern '…'``: a user-defined step line (:mod:`xpuperf.readers.formats.pattern`)."""


def reader_format(fmt: str | None, pattern: str | None) -> object:
    """What ``fmt=`` of the readers takes: the ``--format`` name, or the ``--pattern`` compiled
    into a format (UsageError, exit 2: a malformed pattern, or both options given). A pattern
    without literal text (``'{step_time_ms}'``, ``'{step} {step_time_ms}'``) is read as given,
    with a warning on stderr (:func:`bare_pattern_warning`)."""
    if pattern is None:
        return fmt
    if fmt is not None:
        raise UsageError("give --format NAME or --pattern '…', not both")
    from xpuperf.readers.formats.pattern import pattern_format  # pandas: not at start-up

    found = pattern_format(pattern)
    if warning := bare_pattern_warning(pattern):
        from xpuperf.cli.console import err_console

        err_console().print(f"warning: {warning}", markup=False)
    return found


def bare_pattern_warning(pattern: str) -> str | None:
    """One line when ``pattern`` has fields and blanks but no literal text: it then matches the
    first number(s) of any line (an epoch, a date, a loss), not the value meant; else None.

    Raises:
        UsageError: a malformed pattern (:func:`~xpuperf.readers.formats.pattern.compile_pattern`).
    """
    from xpuperf.readers.formats.pattern import compile_pattern

    if compile_pattern(pattern).needle:
        return None
    return (
        f"--pattern {pattern!r} has no literal text, so it matches the first number of any line "
        "(an epoch, a date, a loss): anchor it with the text the log prints around the value, "
        "e.g. 'time {step_time_ms}ms' (`xpuperf formats --explain FILE --pattern '…'` shows "
        "what it matches)"
    )


BatchSizeOption = Annotated[
    float | None,
    typer.Option(min=0.0, help="Samples per rank per step, when the logs do not say."),
]
"""``--batch-size N``: samples per rank per step for logs that print no sample count."""

WorldSizeOption = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Cards (ranks) of the job, for logs that print job-level throughput (Megatron-LM, "
        "trainer_state.json, …: per-card = global / N) or hold one rank's lines (job = N × "
        "that rank's); default: what the log states.",
    ),
]
"""``--world-size N``: the job's cards (ranks), for a job-level log or one rank's lines
(:mod:`xpuperf.readers.world`)."""

QuietOption = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="No terminal output; files (--json, -o) and the exit code still tell."
    ),
]
"""``-q/--quiet``: print nothing on the terminal (every subcommand has it)."""
