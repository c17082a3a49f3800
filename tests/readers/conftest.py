"""Helpers for reader tests: write small logs into tmp_path and read them back."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from xpuperf.synth import Scenario, generate


@pytest.fixture(scope="module")
def truth() -> pd.DataFrame:
    """A small synthetic run (4 ranks on 2 nodes, 12 steps) with every canonical column."""
    return generate(Scenario(ranks=4, cards_per_node=2, steps=12, first_step=1, seed=7))


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str | bytes], Path]:
    """``write(name, content)`` creates ``tmp_path/name`` (text or bytes) and returns its path."""

    def _write(name: str, content: str | bytes) -> Path:
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
        return p

    return _write
