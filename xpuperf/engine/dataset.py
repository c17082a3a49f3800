"""The xpuperf step-table dataset: a folder of Parquet files written by ``xpuperf ingest``.

Layout (Hive partitioning by rank range, :mod:`pyarrow.dataset`)::

    DATASET/
      _xpuperf_dataset.json          marker + metadata (schema, sources, reader warnings)
      ranks=000000-000063/part-0.parquet
      ranks=000064-000127/part-0.parquet
      …

Each Parquet file holds the canonical step table (:mod:`xpuperf.steps`, canonical dtypes) of one
range of ranks, sorted by (rank, step); every rank lives in exactly one partition, so per-rank
work never crosses partitions. Range labels are zero-padded so that name order is rank order.
``_xpuperf_dataset.json`` holds ``{"schema": "xpuperf.dataset/1", "ranks_per_partition", "rows",
"ranks", "columns", "sources", "warnings", "notes", "job_level_cards", "sampled_rows"}``: the
files the table was read from, the reader's warnings (skipped rows) and notes (how the logs were
read), and how its rows are to be read (a job-level log spread over N cards: copies; rows that
are single iterations), so that analysing the dataset reports the same as analysing the logs
(the last three are optional).
"""

from __future__ import annotations

import json
import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads

from xpuperf import steps as st
from xpuperf.errors import InputError, UsageError

MARKER = "_xpuperf_dataset.json"
SCHEMA = "xpuperf.dataset/1"
ROWS_PER_PARTITION = 4_000_000
"""Target rows per partition: ranks per partition = max(1, this // longest rank's rows)."""
PARTITION_FIELD = "ranks"


@dataclass
class DatasetInfo:
    """The metadata of a dataset (``_xpuperf_dataset.json``)."""

    path: str
    rows: int
    ranks: int
    ranks_per_partition: int
    columns: list[str]
    sources: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    job_level_cards: int | None = None
    sampled_rows: bool = False
    notes: list[str] = field(default_factory=list)
    cards_unknown: str | None = None
    warmup_rows: int = 0


def _is_url(path: str) -> bool:
    return "://" in path


def marker_path(path: str | os.PathLike) -> str:
    text = os.fspath(path)
    return posixpath.join(text, MARKER) if _is_url(text) else str(Path(text) / MARKER)


def is_dataset(path: str | os.PathLike) -> bool:
    """True when ``path`` is a local folder holding ``_xpuperf_dataset.json`` or a URL
    (``s3://…``, any fsspec protocol: not checked here, reading it says what is wrong)."""
    text = os.fspath(path)
    if _is_url(text):
        return True
    return Path(text, MARKER).is_file()


def read_info(path: str | os.PathLike, storage_options: dict | None = None) -> DatasetInfo:
    """Load ``_xpuperf_dataset.json`` of a dataset (local folder or fsspec URL).

    Raises:
        InputError: the marker is missing, unreadable, not JSON or of another schema.
    """
    text = os.fspath(path)
    where = marker_path(text)
    try:
        if _is_url(text):
            import fsspec  # an optional dependency of dask; only needed for URLs

            with fsspec.open(where, "rt", **(storage_options or {})) as fh:
                raw = fh.read()
        else:
            raw = Path(where).read_text(encoding="utf-8")
        doc = json.loads(raw)
    except ImportError as exc:
        raise UsageError(
            f"reading {text} needs fsspec (and s3fs for s3://): pip install 'xpuperf[dask]' s3fs"
        ) from exc
    except (OSError, ValueError) as exc:
        raise InputError(
            f"not an xpuperf dataset ({MARKER} unreadable: {exc}); write one with "
            "`xpuperf ingest LOGS -o DIR`",
            text,
        ) from exc
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InputError(f"{MARKER} is not of schema {SCHEMA}; re-run xpuperf ingest", where)
    try:
        return DatasetInfo(
            path=text,
            rows=int(doc["rows"]),
            ranks=int(doc["ranks"]),
            ranks_per_partition=int(doc["ranks_per_partition"]),
            columns=[str(c) for c in doc["columns"]],
            sources=[str(s) for s in doc.get("sources", [])],
            warnings=[str(w) for w in doc.get("warnings", [])],
            job_level_cards=None
            if doc.get("job_level_cards") is None
            else int(doc["job_level_cards"]),
            sampled_rows=bool(doc.get("sampled_rows", False)),
            notes=[str(n) for n in doc.get("notes", [])],
            cards_unknown=None if doc.get("cards_unknown") is None else str(doc["cards_unknown"]),
            warmup_rows=int(doc.get("warmup_rows", 0)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(
            f"{MARKER} lacks or mangles field {exc}; re-run xpuperf ingest", where
        ) from None


def check_output_dir(out: str | os.PathLike, inputs: list[str]) -> Path:
    """The folder to write a dataset into: new or empty, not an input nor inside one.

    Raises:
        UsageError: it exists and is not an empty folder; it is, or lies inside, an input.
    """
    target = Path(out).resolve()
    for p in inputs:
        src = Path(p).resolve()
        if target == src or src in target.parents or target in src.parents:
            raise UsageError(
                f"refusing to write the dataset to {out}: it overlaps the input {p}; "
                "choose a folder outside the inputs"
            )
    if target.exists():
        if not target.is_dir():
            raise UsageError(f"-o {out} exists and is not a folder; choose a new folder name")
        if any(target.iterdir()):
            raise UsageError(
                f"-o {out} is a folder that is not empty; choose a new or empty folder "
                "(xpuperf never writes over existing files)"
            )
    elif not target.parent.is_dir():
        raise UsageError(f"cannot create {out}: folder {target.parent} does not exist")
    else:  # can it be created? (/proc, /sys and read-only mounts say writable but refuse)
        try:
            target.mkdir()
            target.rmdir()
        except OSError as exc:
            raise UsageError(
                f"cannot create the dataset folder {out}: {exc.strerror or exc}; choose a folder "
                "you can write to"
            ) from None
    return target


def ranks_per_partition(table: pd.DataFrame, target_rows: int = ROWS_PER_PARTITION) -> int:
    """max(1, ``target_rows`` // rows of the longest rank)."""
    longest = int(table["rank"].value_counts().max()) if len(table) else 1
    return max(1, target_rows // max(1, longest))


def write_dataset(
    table: pd.DataFrame,
    out: Path,
    *,
    sources: list[str],
    warnings: list[str],
    per_partition: int | None = None,
    job_level_cards: int | None = None,
    sampled_rows: bool = False,
    notes: list[str] | None = None,
    cards_unknown: str | None = None,
    warmup_rows: int = 0,
) -> DatasetInfo:
    """Write a validated canonical step table as a dataset into the empty folder ``out``.

    The marker is written last: a dataset interrupted while writing has no marker and is not
    taken for a dataset.
    """
    table = st.validate(table, source="step table")
    k = per_partition or ranks_per_partition(table)
    rank = table["rank"].to_numpy()
    lo = (rank // k) * k
    width = max(6, len(str(int(rank.max()) + k)))
    # one label per rank block, e.g. "000000-000063"
    blocks, inverse = np.unique(lo, return_inverse=True)
    labels = np.array([f"{b:0{width}d}-{b + k - 1:0{width}d}" for b in blocks])
    arrow = pa.Table.from_pandas(table, preserve_index=False)
    arrow = arrow.append_column(
        PARTITION_FIELD, pa.DictionaryArray.from_arrays(inverse.astype("int32"), labels)
    )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the dataset folder {out}: {exc.strerror or exc}") from None
    pads.write_dataset(
        arrow,
        out,
        format="parquet",
        partitioning=pads.partitioning(
            pa.schema([(PARTITION_FIELD, pa.dictionary(pa.int32(), pa.string()))]),
            flavor="hive",
        ),
        basename_template="part-{i}.parquet",
        existing_data_behavior="error",
        max_rows_per_group=1 << 20,
    )
    info = DatasetInfo(
        str(out),
        len(table),
        int(table["rank"].nunique()),
        k,
        [str(c) for c in table.columns],
        list(sources),
        list(warnings),
        job_level_cards,
        sampled_rows,
        list(notes or []),
        cards_unknown,
        warmup_rows,
    )
    doc = {
        "schema": SCHEMA,
        "rows": info.rows,
        "ranks": info.ranks,
        "ranks_per_partition": k,
        "columns": info.columns,
        "sources": info.sources,
        "warnings": info.warnings,
        "job_level_cards": job_level_cards,
        "sampled_rows": sampled_rows,
        "notes": info.notes,
        "cards_unknown": cards_unknown,
        "warmup_rows": warmup_rows,
    }
    (out / MARKER).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return info


def restore_dtypes(df: pd.DataFrame) -> pd.DataFrame:
    """Drop the partition column and give the canonical dtypes back (node: ``string``)."""
    if PARTITION_FIELD in df.columns:
        df = df.drop(columns=PARTITION_FIELD)
    return st.coerce(df)
