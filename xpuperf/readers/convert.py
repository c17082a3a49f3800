"""Vectorised value conversion: text or numbers → float64 seconds / epoch seconds / labels.

Every converter returns ``(values, bad)`` where ``bad`` marks cells that hold something (not empty,
not a null word such as ``NA``/``null``/``nan``) that is not a valid value; ``bad`` is None when no
cell can be bad (the column was already numeric).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

NULL_WORDS: frozenset[str] = frozenset(
    {"", "#n/a", "#n/a n/a", "#na", "-1.#ind", "-1.#qnan", "-nan", "1.#ind", "1.#qnan"}
    | {"n/a", "na", "nan", "null", "none", "nil", "-"}
)
"""Cell contents (trimmed, lower-cased) that mean "no value"."""
_NUMBER = (
    r"^[-+]?((\d+\.?\d*|\.\d+)([eE][-+]?\d+)?"
    r"|[iI][nN][fF]([iI][nN][iI][tT][yY])?|[nN][aA][nN])$"
)
_NULLS = pa.array(sorted(NULL_WORDS), pa.string())
SAMPLE = 10_000


def _writable(a: np.ndarray) -> np.ndarray:
    return a if a.flags.writeable else a.copy()


def _is_datetime(s: pd.Series) -> bool:
    return isinstance(s.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_any_dtype(s.dtype)


def is_duration(s: pd.Series) -> bool:
    """A timedelta column (an Arrow ``duration`` read through pandas): values carry their unit."""
    return pd.api.types.is_timedelta64_dtype(s.dtype) or (
        isinstance(s.dtype, pd.ArrowDtype) and pa.types.is_duration(s.dtype.pyarrow_dtype)
    )


def _duration_seconds(s: pd.Series) -> np.ndarray:
    secs = pd.Series(s).astype("timedelta64[ns]") / pd.Timedelta(1, "s")
    return np.array(secs.to_numpy(dtype=np.float64, na_value=np.nan))


def _is_number(s: pd.Series) -> bool:
    dt = s.dtype
    return pd.api.types.is_numeric_dtype(dt) or pd.api.types.is_bool_dtype(dt)


def _object_to_float(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    out = np.full(len(s), np.nan)
    bad = np.zeros(len(s), dtype=bool)
    for i, v in enumerate(s.to_numpy(dtype=object)):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            continue
        if isinstance(v, (bool, int, float, np.number)):
            try:
                out[i] = float(v)
            except OverflowError:  # an integer beyond float range, e.g. 10**400 in JSON
                out[i] = np.inf if v > 0 else -np.inf
            continue
        text = str(v).strip()
        if text.lower() in NULL_WORDS:
            continue
        try:
            out[i] = float(text)
        except (ValueError, OverflowError):
            bad[i] = True
    return out, bad


def to_float(s: pd.Series) -> tuple[np.ndarray, np.ndarray | None]:
    """Column → float64 array (NaN where empty) and the mask of non-numeric cells.

    Numeric columns are used as they are; text columns are parsed with pyarrow (no per-row Python
    loop); object columns (mixed JSON values) element by element.
    """
    if is_duration(s):
        return _duration_seconds(s), None
    if _is_number(s):
        return s.to_numpy(dtype=np.float64, na_value=np.nan), None
    if _is_datetime(s):
        return np.full(len(s), np.nan), np.array(s.notna().to_numpy(), dtype=bool)
    try:
        arr = pa.array(s, from_pandas=True)
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            arr = arr.cast(pa.string())
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return _object_to_float(s)  # OverflowError: a JSON integer beyond 64 bits
    t = pc.utf8_trim_whitespace(arr)
    null = pc.or_(pc.is_null(t), pc.fill_null(pc.is_in(pc.utf8_lower(t), value_set=_NULLS), True))
    ok = pc.fill_null(pc.match_substring_regex(t, _NUMBER), False)
    vals = pc.cast(pc.if_else(ok, t, pa.scalar(None, t.type)), pa.float64())
    out = np.asarray(vals.to_numpy(zero_copy_only=False), dtype=np.float64)
    bad = ~np.asarray(ok, dtype=bool) & ~np.asarray(null, dtype=bool)
    return out, bad


def _epoch_seconds(dt: pd.Series) -> np.ndarray:
    """Date-times → epoch seconds (NaN for NaT), through microseconds: every year from 1 to
    9999 fits there, where nanoseconds (``dt - Timestamp(0)``) would overflow."""
    if isinstance(dt.dtype, pd.DatetimeTZDtype):
        dt = dt.dt.tz_convert("UTC").dt.tz_localize(None)
    us = np.asarray(dt.to_numpy(), dtype="datetime64[us]")
    secs = us.astype(np.int64) / 1e6
    secs[np.isnat(us)] = np.nan
    return secs


def parse_iso(s: pd.Series) -> np.ndarray:
    """ISO 8601 date-times → epoch seconds, times of day (``12:00:01.5``) → seconds since
    midnight; NaN where unparsable. Naive date-times are taken as UTC; ``,`` before fractions is
    accepted."""
    text = s.astype("string").str.strip().str.replace(",", ".", regex=False)
    dt = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
    out = _epoch_seconds(pd.Series(dt))
    miss = np.isnan(out) & text.notna().to_numpy()
    if miss.any():  # only clock times go to to_timedelta: '…T0:00' would parse 'T' as a unit
        rest = text[miss]
        clock = rest.str.fullmatch(r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?").fillna(False)
        tod = pd.to_timedelta(rest.where(clock), errors="coerce") / pd.Timedelta(1, "s")
        out[miss] = tod.to_numpy(dtype=np.float64, na_value=np.nan)
    return out


def _sample(values: np.ndarray) -> np.ndarray:
    finite = values[: SAMPLE * 10]
    return finite[np.isfinite(finite)][:SAMPLE]


def auto_epoch_factor(values: np.ndarray) -> float:
    """Factor to seconds for unitless epoch numbers: ms, µs and ns epochs are recognised by size.

    Epoch seconds today are ~1.7e9; a typical value above 1e11 is milliseconds, above 1e14
    microseconds, above 1e17 nanoseconds.
    """
    sample = _sample(values)
    if len(sample) == 0:
        return 1.0
    with np.errstate(over="ignore"):  # two values near 1e308 average to inf: fine here
        med = float(np.median(np.abs(sample)))
    if med > 1e17:
        return 1e-9
    if med > 1e14:
        return 1e-6
    if med > 1e11:
        return 1e-3
    return 1.0


def to_epoch(s: pd.Series, factor: float, unit: str | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Timestamp column → seconds (epoch or relative) and the mask of unusable cells.

    Accepts datetimes, numbers (× ``factor``; without a unit suffix ms/µs/ns epochs are detected by
    magnitude, see :func:`auto_epoch_factor`) and ISO 8601 strings.
    """
    if _is_datetime(s):
        return _epoch_seconds(s), None
    vals, bad = to_float(s)
    if is_duration(s):
        return vals, bad  # time since some start, already in seconds
    k = factor if unit is not None else auto_epoch_factor(vals)
    if k != 1.0:
        vals = vals * k
    if bad is not None and bad.any():
        vals = _writable(vals)
        idx = np.flatnonzero(bad)
        iso = parse_iso(s.iloc[idx])
        ok = np.isfinite(iso)
        vals[idx[ok]] = iso[ok]
        bad[idx[ok]] = False
    return vals, bad


def looks_like_timestamp(s: pd.Series, factor: float) -> bool:
    """For an ambiguous ``time`` column: ISO strings or values above 1e8 s mean a timestamp."""
    if _is_datetime(s):
        return True
    head = s.iloc[: SAMPLE * 10]
    vals, bad = to_float(head)
    sample = _sample(vals)
    if len(sample):
        with np.errstate(over="ignore"):  # near 1e308: the median may be inf
            return float(np.median(sample)) * factor > 1e8
    if bad is not None and bad.any():
        iso = parse_iso(head[bad])
        return bool(np.isfinite(iso).mean() > 0.5)
    return False


def to_index(s: pd.Series) -> tuple[np.ndarray, np.ndarray | None]:
    """Rank-like column → float64: numbers, or the trailing number of text such as ``worker-3``,
    ``rank_3`` or ``cuda:3``."""
    vals, bad = to_float(s)
    if bad is not None and bad.any() and not _is_datetime(s):
        vals = _writable(vals)
        idx = np.flatnonzero(bad)
        text = s.iloc[idx].astype("string").str.strip()
        num = text.str.extract(r"(\d+)$", expand=False).astype("float64")
        got = num.to_numpy(dtype=np.float64, na_value=np.nan)
        ok = np.isfinite(got)
        vals[idx[ok]] = got[ok]
        bad[idx[ok]] = False
    return vals, bad


def to_label(s: pd.Series) -> pd.Series:
    """Node names as pandas ``string``: integral numbers without ``.0``, blanks → missing."""
    if _is_number(s):
        v = s.to_numpy(dtype=np.float64, na_value=np.nan)
        fin = np.isfinite(v) & (np.abs(v) < 2.0**63)  # beyond int64: label the float text
        if np.all(fin == np.isfinite(v)) and np.all(v[fin] == np.round(v[fin])):
            out = pd.Series(pd.array(np.where(fin, v, 0).astype(np.int64)), index=s.index)
            out = out.astype("string")
            out[~fin] = pd.NA
            return out
    out = s.astype("string").str.strip()
    return out.mask(out == "", pd.NA)
