"""Shared fixtures: bundled samples and synthetic runs with known truth."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"


@pytest.fixture
def samples() -> Path:
    return SAMPLES
