"""Validation of the default plan against 72 published data-parallel scaling points
(tests/data/validation_published/: sources in its README.md), ONE global set of defaults.

Targets (issue 20): mean |error| <= 5 points overall and at >= 64 cards, |signed mean| <= 2
points. The table is docs/plan.md §15 (``python benchmarks/validation_published.py``).
"""

from __future__ import annotations

import pytest

from tests.costmodel.published import load_points, run_all, summarize


@pytest.fixture(scope="module")
def results():
    return run_all()


def test_points_as_written() -> None:
    """The data file: >= 60 points, >= 15 at >= 64 cards, efficiencies computed from the
    published throughputs as worked out by hand (README.md)."""
    pts = {p.id: p for p in load_points()}
    assert len(pts) >= 60
    assert sum(p.cards >= 64 for p in pts.values()) >= 15
    # 16621 img/s at 8 GPUs over 8 x 2470 at one: 0.8411
    assert pts["pt-rn50-a100-amp-8"].published == pytest.approx(0.8411, abs=1e-4)
    # (77479.87 / 256) / (2871.89 / 8) = 302.66 / 358.99 = 0.8431
    assert pts["tf-bert-a100-s128-amp-256"].published == pytest.approx(0.8431, abs=1e-4)
    # (188088.32 / 1024) / (3379.2 / 16) = 183.68 / 211.2 = 0.8697
    assert pts["pt-bert-dgx2h-s128-amp-1024"].published == pytest.approx(0.8697, abs=1e-4)
    # a paper's stated efficiency is taken as is
    assert pts["goyal-rn50-256"].published == 0.90
    for p in pts.values():
        assert 0.5 < p.published < 1.1, p.id
        assert p.cards % p.base_cards == 0 or p.cards < 8, p.id


@pytest.mark.xfail(strict=True, reason=(
    "first increment (no straggler tax, accumulation or global batch in the default plan): "
    "mean |error| 4.58, signed mean +4.26 overall; at >= 64 cards mean 5.60, signed +5.43 — "
    "one-sided optimistic"))  # fmt: skip
def test_targets(results) -> None:
    """Mean |error| <= 5 points overall and at >= 64 cards; |signed mean| <= 2 points."""
    errs = [100 * (m - p.published) for p, m in results]
    big = [100 * (m - p.published) for p, m in results if p.cards >= 64]
    s, s64 = summarize(errs), summarize(big)
    assert s.mean_abs <= 5
    assert s64.mean_abs <= 5
    assert abs(s.signed_mean) <= 2
    assert abs(s64.signed_mean) <= 2
