"""Validation of the default plan against 72 published data-parallel scaling points
(tests/data/validation_published/: sources in its README.md), ONE global set of defaults.

Targets (issue 20): mean |error| <= 5 points overall and at >= 64 cards, |signed mean| <= 2
points — not met (strict xfail, reason there); the figures reached are guarded against
regression. The table is docs/plan.md §15 (``python benchmarks/validation_published.py``).
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


def _summaries(results):
    errs = [100 * (m - p.published) for p, m in results]
    big = [100 * (m - p.published) for p, m in results if p.cards >= 64]
    return summarize(errs), summarize(big)


@pytest.mark.xfail(strict=True, reason=(
    "not met with defaults we can source (docs/plan.md §15): mean |error| 4.35 overall (<= 5 "
    "met), 5.14 at >= 64 cards, signed mean +4.10 / +5.00 — still optimistic. The misses are "
    "losses with no communication behind them: TensorFlow BERT on one DGX-1 at 512-8192 "
    "accumulation steps per allreduce (8 points, +3 to +17), PyTorch BERT on 4 and 16 DGX-1 at "
    "32-128 steps (+10 to +12), ResNet-50 mixed precision on one node (+4 to +15; "
    "likely host data loading at 1000-2500 img/s per GPU, not in a topology), TensorFlow BERT "
    "on 16-32 DGX A100 (+7 to +12: the tables imply 120-340 ms per optimizer step, 20-50x a "
    "fused optimizer's memory time) and Horovod VGG-16 "
    "(+12, a 2017 RoCE network at 74 % of line rate). A 5 % per-rank spread would meet all "
    "three targets (signed +1.2, >= 64 mean 4.75); the only figure near it is the SC'22 "
    "abstract's 32 %; the later arXiv v3 text states the 8 % the default comes from"))  # fmt: skip
def test_targets(results) -> None:
    """Mean |error| <= 5 points overall and at >= 64 cards; |signed mean| <= 2 points."""
    s, s64 = _summaries(results)
    assert s.mean_abs <= 5
    assert s64.mean_abs <= 5
    assert abs(s.signed_mean) <= 2
    assert abs(s64.signed_mean) <= 2


def test_no_regression(results) -> None:
    """The figures of docs/plan.md §15 (2nd increment), so that a model change that makes them
    worse fails: mean |error| 4.35 (first increment 4.58), signed +4.10 (+4.26); at >= 64 cards
    5.14 (5.60) and +5.00 (+5.43); 50 of 72 points within 5."""
    s, s64 = _summaries(results)
    assert s.n == 72
    assert s64.n == 20
    assert s.mean_abs <= 4.36
    assert s.signed_mean <= 4.11
    assert s64.mean_abs <= 5.15
    assert s64.signed_mean <= 5.01
    assert s.within5 >= 50


def test_new_terms_move_the_error_towards_zero() -> None:
    """Each term of issue 20 lowers the one-sided error: without the synchronisation tax
    (spread 0) the signed mean is +5.10 (>= 64: +6.25); with it +4.10 (+5.00)."""
    pts = load_points()
    no_tax = _summaries(run_all(pts, compute_cv=0.0))
    with_tax = _summaries(run_all(pts))
    assert no_tax[0].signed_mean == pytest.approx(5.10, abs=0.01)
    assert with_tax[0].signed_mean < no_tax[0].signed_mean - 0.9
    assert with_tax[1].signed_mean < no_tax[1].signed_mean - 1.0
