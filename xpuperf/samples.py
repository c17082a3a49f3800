"""Locate the bundled sample logs (``sample_logs/`` in the source tree, packaged into the wheel)."""

from __future__ import annotations

from pathlib import Path

from xpuperf.errors import InputError

DEFAULT_RUN = "slow_rank_16rank"
DEFAULT_BASELINE = "single_card"


def samples_dir() -> Path:
    """The directory holding the bundled samples.

    Raises:
        InputError: the installation carries no samples (a broken install).
    """
    pkg = Path(__file__).resolve().parent
    for cand in (pkg / "sample_logs", pkg.parent / "sample_logs"):
        if (cand / DEFAULT_RUN).is_dir():
            return cand
    raise InputError("bundled sample logs not found; reinstall xpuperf or pass log paths")
