"""Arrow record batches → pandas columns without holding both (the CSV fast path's sink)."""

from __future__ import annotations

import mmap

import numpy as np
import pandas as pd
import pyarrow as pa


def empty(n: int) -> np.ndarray:
    """``np.empty(n)`` (float64) in an anonymous memory map of its own: 4 KiB pages, faulted in
    as written and returned to the system when the array goes.

    Not ``np.empty``: numpy asks the kernel for transparent huge pages on large arrays, and with
    ``defrag`` set to ``madvise`` (a common default) the first write may stall while the kernel
    compacts memory — measured here 0.2 to 1.8 s to fill 7 × 80 MB, against a steady 0.3 s with
    4 KiB pages (docs/performance.md).
    """
    if n < 1 << 16:
        return np.empty(n)
    try:
        buf = mmap.mmap(-1, 8 * n)
    except (OSError, ValueError):  # refused (address space, overcommit): as numpy does it
        return np.empty(n)
    return np.frombuffer(buf, dtype=np.float64)


class Columns:
    """Record batches → numpy columns, filled in place.

    float64 columns go into buffers of ``cap`` values (:func:`empty`), ``cap`` an upper bound on
    the rows (pages never written are never committed, so the bound costs address space, not
    memory); the batch is released as soon as it is copied. Other columns (text, timestamps)
    keep their Arrow chunks and are converted at the end as ``Table.to_pandas`` converts them.
    ``cap`` None (unknown size, e.g. gzip) or too small: the buffers grow geometrically.
    """

    def __init__(self, schema: pa.Schema, cap: int | None) -> None:
        self.schema, self.n = schema, 0
        start = cap if cap is not None else 1 << 16
        self.buf = {f.name: empty(start) for f in schema if pa.types.is_float64(f.type)}
        self.chunks: dict[str, list[pa.Array]] = {
            f.name: [] for f in schema if f.name not in self.buf
        }

    def add(self, batch: pa.RecordBatch) -> None:
        k = batch.num_rows
        for name, buf in self.buf.items():
            if self.n + k > len(buf):
                grown = empty(max(2 * len(buf), self.n + k))
                grown[: self.n] = buf[: self.n]
                self.buf[name] = buf = grown
            col = batch.column(name)
            buf[self.n : self.n + k] = col.to_numpy(zero_copy_only=False)  # nulls → NaN
        for name, chunks in self.chunks.items():
            chunks.append(batch.column(name))
        self.n += k

    def frame(self) -> pd.DataFrame:
        other = pd.DataFrame(index=pd.RangeIndex(self.n))
        if self.chunks:
            table = pa.table(
                {n: pa.chunked_array(c, self.schema.field(n).type) for n, c in self.chunks.items()}
            )
            self.chunks.clear()
            other = table.to_pandas(split_blocks=True, self_destruct=True, date_as_object=False)
        data = {}
        for f in self.schema:
            data[f.name] = self.buf[f.name][: self.n] if f.name in self.buf else other[f.name]
        pa.default_memory_pool().release_unused()  # the batches' memory, back to the system
        return pd.DataFrame(data, index=pd.RangeIndex(self.n), copy=False)
