"""``xpuperf ingest LOGS… -o DATASET/``: logs → the canonical step table as a Parquet dataset.

The dataset (:mod:`xpuperf.engine.dataset`) is partitioned by rank range and read back by
``xpuperf analyze DATASET/ [--engine pandas|dask] [--scheduler ADDRESS]``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from xpuperf.cli.console import err_console
from xpuperf.cli.options import (
    BatchSizeOption,
    FormatOption,
    PatternOption,
    WorldSizeOption,
    reader_format,
)
from xpuperf.cli.progress import read_progress
from xpuperf.errors import UsageError
from xpuperf.report.terminal import safe


def ingest(
    logs: Annotated[list[str], typer.Argument(help="Log files, directories or globs.")],
    out: Annotated[
        str,
        typer.Option("--out", "-o", help="New (or empty) folder to write the dataset into."),
    ],
    fmt: FormatOption = None,
    pattern: PatternOption = None,
    batch_size: BatchSizeOption = None,
    world_size: WorldSizeOption = None,
    ranks_per_partition: Annotated[
        int | None,
        typer.Option(
            min=1, help="Ranks per Parquet partition (default: about 4 million rows each)."
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress, no summary.")] = False,
) -> None:
    """Write per-rank step logs as a Parquet dataset partitioned by rank range, for
    `xpuperf analyze DATASET --engine dask`."""
    from xpuperf.engine.dataset import check_output_dir, write_dataset
    from xpuperf.readers import read_logs

    fmt = reader_format(fmt, pattern)
    if not out.strip():
        raise UsageError("-o path is empty; give a folder name")
    if out.strip() == "-":
        raise UsageError("-o needs a folder to write the dataset into; '-' (stdout) is not one")
    target = check_output_dir(out, [p for p in logs if "*" not in p])
    err = err_console()
    with read_progress(err, logs, quiet):
        run = read_logs(logs, fmt=fmt, batch_size=batch_size, world_size=world_size)
    check_output_dir(out, run.sources)  # a glob may have named a file inside the target
    for w in run.warnings:
        err.print("warning: " + safe(w))
    info = write_dataset(
        run.table,
        target,
        sources=run.sources,
        warnings=run.problems(),
        per_partition=ranks_per_partition,
        job_level_cards=run.job_level_cards,
        sampled_rows=run.sampled_rows,
        notes=run.notes,
        cards_unknown=run.cards_unknown,
        warmup_rows=run.warmup_rows,
    )
    if not quiet:
        parts = -(-info.ranks // info.ranks_per_partition) if info.ranks else 0
        err.print(
            f"wrote {info.rows:,} rows of {info.ranks} ranks from {len(run.sources)} file(s) to "
            f"{safe(out)} ({info.ranks_per_partition} ranks per partition, ≤ {parts} "
            "partitions); analyse it with: xpuperf analyze "
            f"{safe(out)} [--engine dask]",
            markup=False,
        )
