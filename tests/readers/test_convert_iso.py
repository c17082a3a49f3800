"""ISO timestamps and clock times: a broken date with a 'T' is NaN, never a pandas warning."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from xpuperf.readers.convert import parse_iso


def test_broken_dates_are_nan_without_a_warning() -> None:
    # pandas 2.2 parsed '…T0:00:0Z' as a timedelta with unit 'T' and warned (FutureWarning):
    # only clock times (h:mm[:ss[.f]]) may reach to_timedelta
    text = ["20240-01T0:00:0Z", "0-050T10:0:00.500Z", "12:00:01.5", "2024-01-01T00:00:01Z"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = parse_iso(pd.Series(text))
    assert np.isnan(got[0])
    assert np.isnan(got[1])
    assert got[2] == pytest.approx(12 * 3600 + 1.5)  # seconds since midnight
    assert got[3] == pytest.approx(1704067201.0)  # 2024-01-01T00:00:01Z
