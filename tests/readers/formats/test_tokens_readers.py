"""Readers that fill ``tokens`` and ``mfu`` (issue 18), with values worked out from the lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.readers import read_logs

DATA = Path(__file__).resolve().parents[2] / "data"


def test_torchtitan_tps_and_mfu() -> None:
    (path,) = (DATA / "formats_torchtitan").iterdir()
    t = read_logs([path]).table
    first = t.iloc[0]
    # step 5 at 19:46:19,145, step 4 at 19:46:17,508: 1.637 s; 'tps: 10,007' → 10 007 × 1.637
    assert first["step"] == 5
    assert first["step_time_s"] == pytest.approx(1.637)
    assert first["tokens"] == pytest.approx(10_007 * 1.637)  # 16 381.46 tokens of this device
    assert first["mfu"] == pytest.approx(0.1393)  # 'mfu: 13.93%'
