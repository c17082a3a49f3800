"""The Dask engine: the dataset is read and the per-step job series aggregated on a
dask.distributed cluster (an existing one by address, or a LocalCluster of worker processes).

What runs where:

- workers: reading and decoding the Parquet partitions (from local disk or object storage through
  fsspec), dtype coercion, and the per-step aggregation — the exact median of step time over
  ranks (a shuffle by step, then pandas' median per step), ranks per step and Σ samples per step
  (a tree reduction);
- client: the per-rank analyses on the gathered step table (straggler test, decomposition),
  which need each rank's whole series; the client needs memory for the table (about 8 bytes per
  value) and the analyses' rank × step matrices.

Results equal the pandas engine's (tests/engine/); Σ samples per step is summed in another order,
so FPS values may differ in the last bits (relative 1e-12 is the tolerance the tests use).
"""

from __future__ import annotations

import logging
import threading

from xpuperf import steps as st
from xpuperf.engine import dataset as dsmod
from xpuperf.engine.base import Reduced, job_frame
from xpuperf.errors import InputError, UsageError

INSTALL = "pip install 'xpuperf[dask]'"


def _import_dask():
    try:
        import dask
        import dask.dataframe as dd
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:
        raise UsageError(
            f"--engine dask needs dask and distributed, which are not installed: {INSTALL} "
            "(the 'dask' extra), or use --engine pandas"
        ) from exc
    return dask, dd, Client, LocalCluster


CONNECT_TIMEOUT_S = 15.0
"""Longest wait for a scheduler to answer (Dask's own 10 s timeout does not cover a server that
accepts the connection and then says nothing, e.g. a web server)."""


def _connect(client_cls, address: str):
    """A dask.distributed ``Client`` for ``address``, or :class:`UsageError` (exit 2).

    The connection is made in a daemon thread and given :data:`CONNECT_TIMEOUT_S`: a service
    that is not a Dask scheduler may answer garbage (read by distributed as a message length —
    a break-it pass got "Unable to allocate 3.07 EiB") or never answer at all.
    """
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["client"] = client_cls(address, timeout="10s")
        except BaseException as exc:  # reported to the caller below
            box["error"] = exc

    t = threading.Thread(target=run, name="xpuperf-dask-connect", daemon=True)
    t.start()
    t.join(CONNECT_TIMEOUT_S)
    hint = "check the address (tcp://HOST:8786, the scheduler's port, not the dashboard's) and "
    hint += "that a Dask scheduler is running there"
    if t.is_alive():
        raise UsageError(
            f"no Dask scheduler answered at {address} within {CONNECT_TIMEOUT_S:g} s; {hint}"
        )
    if "error" in box:
        exc = box["error"]
        if isinstance(exc, KeyboardInterrupt):
            raise exc
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, MemoryError | OverflowError):  # garbage read as a message length
            why = "the service there does not speak the Dask protocol"
        raise UsageError(f"cannot use {address} as a Dask scheduler ({why}); {hint}") from exc
    return box["client"]


class DaskEngine:
    """Runs on ``scheduler`` (``tcp://host:8786``) or on a LocalCluster of ``workers`` processes
    with one thread each, started and stopped here."""

    name = "dask"

    def __init__(
        self,
        scheduler: str | None = None,
        *,
        workers: int = 2,
        storage_options: dict | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.workers = workers
        self.storage_options = storage_options
        _import_dask()  # fail early, before any reading, when dask is missing

    def _client(self):
        _, _, Client, LocalCluster = _import_dask()
        if self.scheduler:
            return _connect(Client, self.scheduler.strip()), None
        try:
            cluster = LocalCluster(
                n_workers=self.workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
        except (OSError, RuntimeError, TimeoutError) as exc:
            raise UsageError(
                f"cannot start a local Dask cluster ({exc}); pass --scheduler ADDRESS of a "
                "running one, or use --engine pandas"
            ) from exc
        return Client(cluster), cluster

    def reduce(self, dataset: str) -> Reduced:
        """See :class:`xpuperf.engine.base.Engine`.

        Raises:
            InputError: not a dataset, unreadable Parquet, or a table breaking the contract.
            UsageError: dask missing, or the scheduler cannot be reached.
        """
        dask, dd, _, _ = _import_dask()
        info = dsmod.read_info(dataset, self.storage_options)
        # Ctrl-C cancels pending gathers; asyncio would log each one as a traceback at exit
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        logging.getLogger("distributed").setLevel(logging.ERROR)
        client, cluster = self._client()
        try:
            try:
                ddf = dd.read_parquet(
                    dataset,
                    columns=info.columns,
                    storage_options=self.storage_options,
                )
            except (OSError, ValueError) as exc:
                raise InputError(
                    f"cannot read the dataset's Parquet files ({exc}); write it again with "
                    "xpuperf ingest",
                    dataset,
                ) from exc
            g = ddf.groupby("step")
            median = g["step_time_s"].median(shuffle_method="tasks")
            ranks = g["rank"].count()  # = distinct ranks: (rank, step) is unique
            samples = g["samples"].sum(min_count=1) if "samples" in info.columns else None
            parts = [median, ranks, ddf] + ([samples] if samples is not None else [])
            try:
                got = dask.compute(*parts)
            except (OSError, ValueError) as exc:
                raise InputError(
                    f"cannot read the dataset on the cluster ({exc}); check that every worker "
                    "can read it, or write it again with xpuperf ingest",
                    dataset,
                ) from exc
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        median_s, ranks_s, table = got[0], got[1], got[2]
        samples_s = got[3] if samples is not None else None
        table = st.validate(dsmod.restore_dtypes(table), source=f"dataset {dataset}")
        return Reduced(table, job_frame(median_s, ranks_s, samples_s), info.sources, info.warnings,
                       info.job_level_cards, info.sampled_rows, info.notes,
                       info.cards_unknown, info.warmup_rows)  # fmt: skip
