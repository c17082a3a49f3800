"""Input checks shared by the cost model, and its one error class.

Every bad input raises :class:`CostModelError`: a :class:`~xpuperf.errors.UsageError` (the CLI
exits 2 with one line) that is also a :class:`ValueError` (library callers may catch either).
"""

from __future__ import annotations

import math

from xpuperf.errors import UsageError


class CostModelError(UsageError, ValueError):
    """A cost-model input that is out of range or contradictory (exit code 2)."""


def positive_int(name: str, value: int) -> int:
    """``value`` as an int ≥ 1; raises :class:`CostModelError` otherwise."""
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise CostModelError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def nonneg(name: str, value: float) -> float:
    """``value`` as a finite float ≥ 0; raises :class:`CostModelError` otherwise."""
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise CostModelError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def positive(name: str, value: float) -> float:
    """``value`` as a float > 0 (``math.inf`` allowed); raises :class:`CostModelError`."""
    v = float(value)
    if math.isnan(v) or v <= 0:
        raise CostModelError(f"{name} must be > 0, got {value!r}")
    return v


def split_nodes(n_ranks: int, cards_per_node: int) -> int:
    """Number of nodes M = N / G; raises :class:`CostModelError` unless G divides N."""
    n = positive_int("n_ranks", n_ranks)
    g = positive_int("cards_per_node", cards_per_node)
    if n % g:
        raise CostModelError(
            f"{n} ranks do not fill nodes of {g} cards; use a multiple of {g} (or --cards-per-node)"
        )
    return n // g


def is_pow2(n: int) -> bool:
    """True when ``n`` ≥ 1 is a power of two."""
    return n >= 1 and n & (n - 1) == 0
