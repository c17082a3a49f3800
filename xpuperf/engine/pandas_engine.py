"""The in-process engine: pyarrow.dataset reads every partition (multi-threaded), pandas
aggregates."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as pads

from xpuperf import steps as st
from xpuperf.analysis.series import job_steps
from xpuperf.engine import dataset as dsmod
from xpuperf.engine.base import Reduced
from xpuperf.errors import InputError, UsageError


class PandasEngine:
    """Reads the whole dataset into one process. Memory: the step table (≈ 8 bytes per value)."""

    name = "pandas"

    def __init__(self, storage_options: dict | None = None) -> None:
        self.storage_options = storage_options

    def reduce(self, dataset: str) -> Reduced:
        """See :class:`xpuperf.engine.base.Engine`.

        Raises:
            InputError: not a dataset, unreadable Parquet, or a table breaking the contract.
            UsageError: a URL (object storage needs the dask engine).
        """
        if "://" in dataset:
            raise UsageError(
                f"--engine pandas reads a local dataset folder, not {dataset}: use --engine dask "
                "(with s3fs or another fsspec driver installed) for object storage"
            )
        info = dsmod.read_info(dataset, self.storage_options)
        try:
            ds = pads.dataset(dataset, format="parquet", partitioning="hive")
            table = ds.to_table(columns=info.columns).to_pandas(
                split_blocks=True, self_destruct=True
            )
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(
                f"cannot read the dataset's Parquet files ({exc}); write it again with "
                "xpuperf ingest",
                dataset,
            ) from exc
        table = st.validate(dsmod.restore_dtypes(table), source=f"dataset {dataset}")
        return Reduced(table, job_steps(table), info.sources, info.warnings,
                       info.job_level_cards, info.sampled_rows, info.notes,
                       info.cards_unknown, info.warmup_rows)  # fmt: skip
