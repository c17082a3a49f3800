"""The canonical step table: the one DataFrame contract between readers and analyses.

Every reader produces it; every analysis consumes it. One row per (rank, step).

=============  ==========  ===========================================================
column         dtype       meaning (units)
=============  ==========  ===========================================================
rank           int32       global rank, 0-based (required)
step           int64       training step / iteration number, increasing per rank (required)
step_time_s    float64     wall time of this step on this rank, seconds (required, > 0)
t_end_s        float64     timestamp at the end of the step, seconds (Unix epoch or relative;
                           float64 epoch seconds resolve ~0.24 µs, ample for step times)
samples        float64     samples processed by this rank in this step (per-card batch)
tokens         float64     tokens processed by this rank in this step (language models: per-card
                           batch × sequence length); throughput in tokens/s comes from it
mfu            float64     model FLOPs utilisation of this rank in this step, a fraction 0…1 as
                           the framework printed it (nanoGPT ``mfu 41.2%`` → 0.412)
node           string      host / node name the rank runs on
data_s         float64     time waiting for input data (data loader, H2D copy), seconds
forward_s      float64     forward pass, seconds
backward_s     float64     backward pass, seconds (compute only, comm excluded)
comm_s         float64     time blocked in collectives (exposed communication + waiting), seconds
optimizer_s    float64     optimizer step, seconds
compute_s      float64     compute on the card: forward + backward + optimizer when not given
=============  ==========  ===========================================================

Optional columns are absent (not all-NaN) when a log does not carry them. NaN inside a present
optional column means "not known for this row".

Time in a step: ``step_time_s = compute_s + comm_s + data_s + other``; ``other`` (host overhead,
launch gaps) is derived by :func:`phase_frame`, never stored.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from xpuperf.errors import InputError

REQUIRED: tuple[str, ...] = ("rank", "step", "step_time_s")
PHASES: tuple[str, ...] = (
    "data_s",
    "forward_s",
    "backward_s",
    "comm_s",
    "optimizer_s",
    "compute_s",
)
OPTIONAL: tuple[str, ...] = ("t_end_s", "samples", "tokens", "mfu", "node", *PHASES)
COLUMNS: tuple[str, ...] = (*REQUIRED, *OPTIONAL)

DTYPES: dict[str, str] = {
    "rank": "int32",
    "step": "int64",
    "step_time_s": "float64",
    "t_end_s": "float64",
    "samples": "float64",
    "tokens": "float64",
    "mfu": "float64",
    "node": "string",
    **dict.fromkeys(PHASES, "float64"),
}


CHUNK = 1 << 20
"""Rows per chunk of element-wise work on whole columns (temporaries stay ~8 MiB)."""


def empty() -> pd.DataFrame:
    """An empty step table with the required columns and their dtypes."""
    return pd.DataFrame({c: pd.Series(dtype=DTYPES[c]) for c in REQUIRED})


def coerce(df: pd.DataFrame) -> pd.DataFrame:
    """Cast known columns to their canonical dtypes, drop unknown ones, order columns.

    Returns a new frame; ``df`` is not modified. Raises :class:`InputError` if a required column is
    missing.
    """
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise InputError(f"step table lacks required column(s) {', '.join(missing)}")
    out = pd.DataFrame(index=df.index)
    for col in COLUMNS:
        if col in df.columns:
            out[col] = df[col].astype(DTYPES[col])
    if "compute_s" not in out.columns:
        parts = [c for c in ("forward_s", "backward_s") if c in out.columns]
        if parts:
            comp = out[parts].sum(axis=1, min_count=len(parts))
            if "optimizer_s" in out.columns:
                comp = comp + out["optimizer_s"].fillna(0.0)
            out["compute_s"] = comp.astype("float64")
    return out.reset_index(drop=True)


def validate(df: pd.DataFrame, source: str = "step table") -> pd.DataFrame:
    """Check the contract; return ``df`` sorted by (rank, step) with a fresh index.

    Raises:
        InputError: required column missing, table empty, negative/NaN/inf step time,
            negative phase time, or a duplicate (rank, step) pair. Readers drop such rows with a
            counted warning before calling this, so an error here means a reader bug or a
            hand-built table.
    """
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise InputError(f"{source} lacks required column(s) {', '.join(missing)}")
    if df.empty:
        raise InputError(f"{source} has no rows with a usable step time")
    st = df["step_time_s"].to_numpy(dtype="float64")
    if not (st.min() > 0 and st.max() < np.inf):  # min/max are NaN when a NaN is present
        raise InputError(f"{source}: step_time_s must be finite and > 0 in every row")
    for col in PHASES:
        if col in df.columns:
            v = df[col].to_numpy(dtype="float64")
            if np.fmin.reduce(v) < 0 and np.any(v[np.isfinite(v)] < 0):  # fmin skips NaN
                raise InputError(f"{source}: {col} has negative values")
    r, s = df["rank"].to_numpy(), df["step"].to_numpy()
    dr = np.diff(r)
    if len(r) > 1 and dr.min() >= 0 and np.all((dr > 0) | (s[1:] > s[:-1])):
        return df.reset_index(drop=True)  # sorted, no duplicate: readers emit (rank, step) order
    if len(r) > 1 and np.all(r[1:] >= r[:-1]) and np.all((r[1:] > r[:-1]) | (s[1:] >= s[:-1])):
        out = df.reset_index(drop=True)  # already sorted: readers emit (rank, step) order
    else:
        out = df.sort_values(["rank", "step"], kind="stable").reset_index(drop=True)
        r, s = out["rank"].to_numpy(), out["step"].to_numpy()
    if np.any((r[1:] == r[:-1]) & (s[1:] == s[:-1])):
        raise InputError(f"{source}: duplicate (rank, step) rows")
    return out


def phase_frame(df: pd.DataFrame) -> pd.DataFrame | None:
    """Per-row split of step time into compute / comm / data / other, seconds.

    Returns a frame with columns ``compute_s, comm_s, data_s, other_s`` aligned to ``df``, or None
    when the table has no phase column at all. Unknown phases count as 0; ``other_s`` is the
    remainder ``step_time_s − (compute + comm + data)`` clipped at 0.
    """
    have = [c for c in ("compute_s", "comm_s", "data_s") if c in df.columns]
    if not have:
        return None
    out = pd.DataFrame(index=df.index)
    for c in ("compute_s", "comm_s", "data_s"):
        out[c] = df[c].fillna(0.0) if c in df.columns else 0.0
    rest = df["step_time_s"] - out[["compute_s", "comm_s", "data_s"]].sum(axis=1)
    out["other_s"] = rest.clip(lower=0.0)
    return out


def work_series(df: pd.DataFrame) -> tuple[pd.Series, str]:
    """Per-row time a rank spends on its own work (not waiting on others), seconds.

    In synchronous data parallelism a slow rank makes every other rank wait inside the
    collective, so step times equalise and only a rank's own work reveals the culprit.

    Returns ``(work_s, source)``:

    - ``comm_s`` known: ``step_time_s − comm_s`` (compute + data wait + host overhead), source
      ``"step_time-comm"``;
    - else ``compute_s`` known: ``compute_s + data_s`` (data_s when present), source ``"compute"``
      or ``"compute+data"``;
    - else ``step_time_s``, source ``"step_time"`` (a weak signal: synchronous collectives equalise
      it).
    """
    if "comm_s" in df.columns and df["comm_s"].notna().any():
        # = (step_time_s − comm_s.fillna(0)).clip(lower=0), in chunks: no full-size temporaries
        t = df["step_time_s"].to_numpy(dtype=np.float64)
        c = df["comm_s"].to_numpy(dtype=np.float64, na_value=np.nan)
        w = np.empty(len(t))
        for i in range(0, len(t), CHUNK):
            k = slice(i, i + CHUNK)
            np.subtract(t[k], np.where(np.isnan(c[k]), 0.0, c[k]), out=w[k])
            np.maximum(w[k], 0.0, out=w[k])
        return pd.Series(w, index=df.index, copy=False), "step_time-comm"
    if "compute_s" in df.columns and df["compute_s"].notna().any():
        if "data_s" in df.columns and df["data_s"].notna().any():
            return df["compute_s"] + df["data_s"].fillna(0.0), "compute+data"
        return df["compute_s"].copy(), "compute"
    return df["step_time_s"].copy(), "step_time"
