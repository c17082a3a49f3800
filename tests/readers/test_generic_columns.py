"""The CSV fast path fills numpy columns batch by batch (readers/arrowcols.py ``Columns``).

The same file read plain (buffers sized by the file's byte bound), gzipped (size unknown: the
buffers grow) and with a tiny start capacity must give the same table, values as written.
"""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd

from xpuperf.readers import arrowcols, read_logs


def _write(tmp_path, n_ranks=3, n_steps=40_000):
    rank = np.repeat(np.arange(n_ranks), n_steps)
    step = np.tile(np.arange(1, n_steps + 1), n_ranks)
    t = 0.2 + 0.001 * ((rank * 7 + step * 13) % 17)  # exact decimal values
    text = "rank,step,step_time_s,node,comm_s\n" + "".join(
        f"{r},{s},{v:.3f},host{r // 2},{'' if s % 5 == 0 else '0.010'}\n"
        for r, s, v in zip(rank, step, t, strict=True)
    )
    plain = tmp_path / "run.csv"
    plain.write_text(text)
    packed = tmp_path / "gz" / "run.csv.gz"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(text.encode()))
    return plain, packed, rank, step, t


def test_plain_gzip_and_growing_buffers_read_the_same(tmp_path, monkeypatch):
    plain, packed, rank, step, t = _write(tmp_path)
    a = read_logs([plain]).table
    b = read_logs([packed]).table
    pd.testing.assert_frame_equal(a, b)
    np.testing.assert_array_equal(a["rank"], rank)
    np.testing.assert_array_equal(a["step"], step)
    np.testing.assert_array_equal(a["step_time_s"], np.round(t, 3))
    assert a["comm_s"].isna().sum() == 3 * 40_000 // 5  # empty cells stay unknown
    assert a["node"].tolist()[:1] + a["node"].tolist()[-1:] == ["host0", "host1"]
    small = arrowcols.Columns.__init__

    def tiny(self, schema, cap):  # start far below the row count: the buffers must grow
        small(self, schema, 7)

    monkeypatch.setattr(arrowcols.Columns, "__init__", tiny)
    pd.testing.assert_frame_equal(read_logs([plain]).table, a)
