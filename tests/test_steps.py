"""The canonical step table contract (xpuperf/steps.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from xpuperf import steps as st
from xpuperf.errors import InputError


def table(**cols) -> pd.DataFrame:
    base = {"rank": [0, 0, 1, 1], "step": [1, 2, 1, 2], "step_time_s": [1.0, 1.2, 1.0, 1.2]}
    base.update(cols)
    return pd.DataFrame(base)


def test_coerce_dtypes_and_derived_compute() -> None:
    df = st.coerce(
        table(forward_s=[0.2] * 4, backward_s=[0.5] * 4, optimizer_s=[0.1] * 4, x=[1] * 4)
    )
    assert df["rank"].dtype == "int32"
    assert df["step"].dtype == "int64"
    assert "x" not in df.columns
    # compute = forward + backward + optimizer = 0.2 + 0.5 + 0.1
    assert df["compute_s"].tolist() == pytest.approx([0.8] * 4)


def test_validate_sorts_and_rejects_duplicates() -> None:
    df = st.validate(table().iloc[::-1])
    assert df["rank"].tolist() == [0, 0, 1, 1]
    assert df["step"].tolist() == [1, 2, 1, 2]
    with pytest.raises(InputError, match="duplicate"):
        st.validate(pd.concat([table(), table().iloc[:1]]))


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan, np.inf])
def test_validate_rejects_bad_step_time(bad: float) -> None:
    with pytest.raises(InputError, match="step_time_s"):
        st.validate(table(step_time_s=[1.0, bad, 1.0, 1.0]))


def test_validate_rejects_missing_column_and_empty() -> None:
    with pytest.raises(InputError, match="step_time_s"):
        st.validate(table().drop(columns="step_time_s"))
    with pytest.raises(InputError, match="no rows"):
        st.validate(st.empty())


def test_phase_frame_other_is_remainder() -> None:
    df = table(compute_s=[0.7] * 4, comm_s=[0.2] * 4, data_s=[0.05] * 4)
    ph = st.phase_frame(df)
    # other = step − (compute + comm + data): 1.0 − 0.95 and 1.2 − 0.95
    assert ph["other_s"].tolist() == pytest.approx([0.05, 0.25, 0.05, 0.25])
    assert st.phase_frame(table()) is None


def test_work_series_priorities() -> None:
    w, src = st.work_series(table(comm_s=[0.3] * 4, compute_s=[0.1] * 4))
    assert src == "step_time-comm"
    assert w.tolist() == pytest.approx([0.7, 0.9, 0.7, 0.9])
    w, src = st.work_series(table(compute_s=[0.6] * 4, data_s=[0.1] * 4))
    assert src == "compute+data"
    assert w.tolist() == pytest.approx([0.7] * 4)
    _, src = st.work_series(table())
    assert src == "step_time"
