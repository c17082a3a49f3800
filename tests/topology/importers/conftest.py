"""Shared helpers: the copied corpus fixtures (tests/data/topology_import_<name>/)."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "data"


def fixture_path(folder: str, prefix: str) -> Path:
    """The one fixture in ``tests/data/topology_import_<folder>/`` whose name starts ``prefix``."""
    (path,) = (DATA / f"topology_import_{folder}").glob(f"{prefix}_*")
    return path


def all_fixtures() -> list[Path]:
    """Every copied corpus file, sorted."""
    return sorted(p for p in DATA.glob("topology_import_*/*") if p.is_file())


@pytest.fixture
def read():
    """``read(folder, prefix)`` → (text, path as str)."""

    def _read(folder: str, prefix: str) -> tuple[str, str]:
        p = fixture_path(folder, prefix)
        return p.read_text(encoding="utf-8"), str(p)

    return _read
