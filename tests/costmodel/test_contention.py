"""Flow collisions: expected max load of hashed flows (balls into bins) and exact loads."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from xpuperf.costmodel import contention as ct
from xpuperf.costmodel.checks import CostModelError


def brute_force(n: int, m: int) -> float:
    total = 0
    for assignment in itertools.product(range(m), repeat=n):
        total += max(Counter(assignment).values())
    return total / m**n


@pytest.mark.parametrize(("n", "m"), [(1, 1), (2, 2), (3, 3), (4, 4), (5, 3), (3, 5), (6, 2)])
def test_expected_max_load_exact(n: int, m: int) -> None:
    assert ct.expected_max_load(n, m) == pytest.approx(brute_force(n, m), rel=1e-9)


def test_expected_max_load_by_hand() -> None:
    assert ct.expected_max_load(2, 2) == pytest.approx(1.5)  # same link with prob. 1/2
    assert ct.expected_max_load(0, 4) == 0.0
    assert ct.expected_max_load(5, 1) == 5.0


def test_groups_take_the_max_over_independent_leaves() -> None:
    # two leaves of 2 flows on 2 links: P(max = 1) = 1/4 → E = 2 − 1/4
    assert ct.expected_max_load(2, 2, groups=2) == pytest.approx(1.75)


def test_poisson_approximation_close_to_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    exact = ct.expected_max_load(512, 512)
    monkeypatch.setattr(ct, "EXACT_LIMIT", 0)
    ct.expected_max_load.cache_clear()
    approx = ct.expected_max_load(512, 512)
    ct.expected_max_load.cache_clear()
    assert approx == pytest.approx(exact, rel=0.01)


def test_max_load_grows_slowly_with_scale() -> None:
    loads = [ct.expected_max_load(n, n) for n in (16, 256, 4096, 65536)]
    assert loads == sorted(loads)
    assert 2 < loads[0] < 4
    assert loads[-1] < 9


def test_exact_loads_for_a_mapping() -> None:
    # HDRM-like: every flow on its own source link → load 1 on every step
    assert ct.hd_step_loads(16, lambda s, d: [("up", s)]) == [1, 1, 1, 1]
    # everything through one spine link → load N on every step
    assert ct.hd_step_loads(8, lambda s, d: ["spine"]) == [8, 8, 8]
    # two leaves of 4 ranks, one uplink each: only the distance-4 step uses the uplinks
    loads = ct.hd_step_loads(8, lambda s, d: [] if s // 4 == d // 4 else [("up", s // 4)])
    assert loads == [1, 1, 4]
    assert ct.max_link_load([]) == 0


def test_bad_inputs() -> None:
    with pytest.raises(CostModelError):
        ct.expected_max_load(-1, 4)
    with pytest.raises(CostModelError):
        ct.expected_max_load(4, 0)
    with pytest.raises(CostModelError):
        ct.hd_step_pairs(6, 0)
