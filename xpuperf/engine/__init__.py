"""Engines: where the step table of an xpuperf dataset is read and aggregated.

- ``pandas`` (:mod:`~xpuperf.engine.pandas_engine`): in this process.
- ``dask`` (:mod:`~xpuperf.engine.dask_engine`): on a dask.distributed cluster (the optional
  ``dask`` extra).

Both implement :class:`~xpuperf.engine.base.Engine`; :func:`analyze_dataset` runs the existing
analyses (:func:`xpuperf.analysis.analyze`) on what the engine returns. A dataset is written by
``xpuperf ingest`` (:mod:`~xpuperf.engine.dataset`).
"""

from __future__ import annotations

import os

from xpuperf.analysis import analyze
from xpuperf.analysis.results import AnalyzeResult
from xpuperf.engine.base import Engine, Reduced
from xpuperf.engine.dataset import is_dataset
from xpuperf.errors import UsageError

ENGINES = ("pandas", "dask")

__all__ = ["ENGINES", "Engine", "Reduced", "analyze_dataset", "get_engine", "is_dataset"]


def get_engine(
    name: str,
    *,
    scheduler: str | None = None,
    workers: int = 2,
    storage_options: dict | None = None,
) -> Engine:
    """The engine called ``name`` (``"pandas"`` or ``"dask"``).

    Raises:
        UsageError: unknown name; ``scheduler`` with the pandas engine; dask not installed.
    """
    key = name.strip().lower()
    if key == "pandas":
        if scheduler:
            raise UsageError("--scheduler needs --engine dask")
        from xpuperf.engine.pandas_engine import PandasEngine

        return PandasEngine(storage_options)
    if key == "dask":
        from xpuperf.engine.dask_engine import DaskEngine

        return DaskEngine(scheduler, workers=workers, storage_options=storage_options)
    raise UsageError(f"unknown engine {name!r}: use one of {', '.join(ENGINES)}")


def analyze_dataset(
    dataset: str | os.PathLike,
    *,
    engine: str | Engine = "pandas",
    scheduler: str | None = None,
    baseline: str | os.PathLike | None = None,
    fmt: str | None = None,
    batch_size: float | None = None,
    warmup: int | None = None,
    straggler_threshold: float = 0.05,
    storage_options: dict | None = None,
) -> AnalyzeResult:
    """Analyse a dataset written by ``xpuperf ingest`` with the chosen engine.

    Args:
        dataset: the dataset folder, or an fsspec URL (``s3://bucket/run1``).
        engine: ``"pandas"``, ``"dask"`` or an :class:`Engine` instance.
        scheduler: Dask scheduler address; None starts a LocalCluster (dask engine only).
        baseline, fmt, batch_size: the single-card baseline log and how to read it (as
            :func:`xpuperf.pipeline.analyze_logs`).
        warmup, straggler_threshold: as :func:`xpuperf.analysis.analyze`.
        storage_options: fsspec options for URLs (e.g. ``{"anon": True}``).

    Raises:
        InputError, UsageError: bad dataset, engine or options (exit code 2 in the CLI).
    """
    from xpuperf.analysis.checks import not_checked_sources
    from xpuperf.pipeline import read_baseline

    eng = (
        get_engine(engine, scheduler=scheduler, storage_options=storage_options)
        if isinstance(engine, str)
        else engine
    )
    red = eng.reduce(os.fspath(dataset))
    base_table, base_warnings, base_notes = read_baseline(baseline, fmt=fmt, batch_size=batch_size)
    result = analyze(
        red.table,
        job=red.job,
        baseline=base_table,
        warmup=warmup,
        straggler_threshold=straggler_threshold,
        sources=red.sources,
        read_warnings=[*red.warnings, *base_warnings],
        job_level_cards=red.job_level_cards,
        sampled_rows=red.sampled_rows,
        cards_unknown=red.cards_unknown,
        warmup_rows=red.warmup_rows,
    )
    result.read_warnings += [*red.notes, *base_notes]  # how the logs were read: not XP401
    # a dataset holds step records only: no framework output, no NCCL lines (docs/diagnosis.md)
    result.checks += not_checked_sources(has_nccl=False, has_text=False)
    return result


def dataset_input(logs: list[str], engine: str | None, scheduler: str | None = None) -> str | None:
    """The dataset ``xpuperf analyze`` should hand to an engine, or None for ordinary logs.

    One argument that is a dataset folder (it holds ``_xpuperf_dataset.json``) or a URL
    (``s3://…``) is a dataset; ``--engine`` / ``--scheduler`` require one.

    Raises:
        UsageError: ``--engine``/``--scheduler`` with logs that are not one dataset; an empty
            ``--scheduler``.
    """
    if scheduler is not None and not scheduler.strip():
        raise UsageError(
            "--scheduler is empty: give the Dask scheduler address (tcp://HOST:8786), or leave "
            "it out to start a local cluster"
        )
    if len(logs) == 1 and is_dataset(logs[0]):
        return logs[0]
    if engine is not None or scheduler is not None:
        flag = "--engine" if engine is not None else "--scheduler"
        raise UsageError(
            f"{flag} reads one dataset written by `xpuperf ingest LOGS -o DIR`, but "
            f"{', '.join(logs[:3])} is not one; run xpuperf ingest first, then "
            "xpuperf analyze DIR --engine dask"
        )
    return None
