"""Options shared by the subcommands that read step logs (analyze, compare, ingest)."""

from __future__ import annotations

from typing import Annotated

import typer

FormatOption = Annotated[
    str | None, typer.Option("--format", "-f", help="Force a reader format (csv, jsonl, …).")
]
"""``--format NAME``: force a reader instead of sniffing (``xpuperf formats`` lists them)."""

BatchSizeOption = Annotated[
    float | None,
    typer.Option(min=0.0, help="Samples per rank per step, when the logs do not say."),
]
"""``--batch-size N``: samples per rank per step for logs that print no sample count."""

WorldSizeOption = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Data-parallel ranks of the job, for logs that print job-level throughput only "
        "(Megatron-LM, trainer_state.json, …): per-card = global / N.",
    ),
]
"""``--world-size N``: the job's data-parallel ranks, for a job-level log
(:mod:`xpuperf.readers.world`)."""

QuietOption = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="No terminal output; files (--json, -o) and the exit code still tell."
    ),
]
"""``-q/--quiet``: print nothing on the terminal (every subcommand has it)."""
