"""Data-wait column names frameworks print (issue 18 §2): Megatron-LM's timer and its
TensorBoard scalar map to ``data_s`` with their units."""

from __future__ import annotations

import pytest

from xpuperf.readers.columns import match


@pytest.mark.parametrize(
    ("name", "factor"),
    [
        ("batch-generator-time", 1.0),  # Timers.write: seconds, exported from TensorBoard
        ("batch-generator", 1.0),
        ("batch_generator_ms", 1e-3),  # the log line's milliseconds, with the unit in the name
    ],
)
def test_megatron_batch_generator_is_data_wait(name: str, factor: float) -> None:
    (m,) = match(name)
    assert (m.role, m.factor) == ("data_s", factor)
