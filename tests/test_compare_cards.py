"""compare of runs with different card counts judges per card and says so (QA: MXNet 8 → 16
GPUs read as "+73 % throughput, improvement, no regression detected" while per card fell
2,598 → 2,242, −13.7 %). Samples are written here; the expected values are worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.compare import PER_CARD, compare_paths


def _run(tmp_path: Path, name: str, ranks: int, times: tuple[float, float]) -> Path:
    """``ranks`` ranks × 40 steps of 32 samples each; step times alternate between ``times``."""
    lines = ["rank,step,step_time_s,samples"]
    for r in range(ranks):
        for s in range(40):
            lines.append(f"{r},{s},{times[s % 2]},32")
    p = tmp_path / f"{name}.csv"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_different_card_counts_are_judged_per_card(tmp_path: Path) -> None:
    base = _run(tmp_path, "base", 2, (0.500, 0.502))
    cur = _run(tmp_path, "cur", 4, (0.625, 0.627))
    res = compare_paths(base, cur, warmup=0)
    card = res.metric("throughput_per_card")
    # per card: 32 samples / mean step 0.501 s → 32 / 0.626 s: 0.501 / 0.626 − 1 = −19.97 %
    assert card.base == pytest.approx(32 / 0.501)
    assert card.current == pytest.approx(32 / 0.626)
    assert card.change == pytest.approx(0.501 / 0.626 - 1)
    assert card.verdict == "regression"
    # the job's throughput rose (2 × 63.9 → 4 × 51.1 samples/s) but is not judged
    job = res.metric("throughput")
    assert job.change == pytest.approx(4 * 0.501 / (2 * 0.626) - 1)
    assert job.verdict == "not judged"
    assert res.metric("step_time_median").verdict == "not judged"
    assert res.gated == PER_CARD
    assert [m.name for m in res.regressions()] == list(PER_CARD)
    assert any("base has 2 cards, current 4: compared per card" in n for n in res.notes)


def test_same_card_counts_keep_every_gate_and_show_per_card(tmp_path: Path) -> None:
    base = _run(tmp_path, "base", 2, (0.500, 0.502))
    cur = _run(tmp_path, "cur", 2, (0.500, 0.502))
    res = compare_paths(base, cur, warmup=0)
    assert res.metric("throughput_per_card").base == pytest.approx(32 / 0.501)
    assert res.metric("throughput").verdict == "no significant change"
    assert "step_time_median" in res.gated
    assert not res.regressions()
