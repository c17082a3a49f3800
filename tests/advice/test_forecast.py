"""``plan --measured`` model (xpuperf/advice/forecast.py, ladder.py): hand-computed fits."""

from __future__ import annotations

import math

import pytest

from xpuperf.advice.forecast import SIGMA_REL, Z, forecast_ladder
from xpuperf.advice.ladder import Ladder, Rung, read_ladder
from xpuperf.errors import InputError


def _ladder(pairs, t1=0.1):
    return Ladder(tuple(Rung(c, m, s, None, f"r{c}") for c, m, s in pairs), t1, 32.0)


def test_one_intra_rung_fits_the_fixed_cost_exactly_with_its_interval() -> None:
    # t1 = 0.1 s, s8 = 0.8 -> t8 = 0.125 s, a = 0.025 s (one rung, one parameter: exact);
    # sd = sqrt(var_a + (σ t8)²) = sqrt(2)·0.02·0.125 = 3.5355 ms; 90 %: ± 1.645 sd
    fc = forecast_ladder(_ladder([(1, 1, 1.0), (8, 1, 0.8)]), [1, 8], 8, lambda n: 0.0)
    (a,) = fc.fitted
    assert a.name == "intra_fixed_s"
    assert a.value == pytest.approx(0.025)
    assert a.stderr == pytest.approx(SIGMA_REL * 0.125)
    p = fc.points[1]
    sd = math.sqrt(2) * 0.02 * 0.125
    assert p.speedup == pytest.approx(0.8)
    assert p.low == pytest.approx(0.1 / (0.125 + Z * sd))  # 0.7644
    assert p.high == pytest.approx(0.1 / (0.125 - Z * sd))  # 0.8390
    assert p.breakdown["intra_node_s"] == pytest.approx(0.025)


def test_model_comm_and_sync_are_taken_out_before_the_residual() -> None:
    # comm 4 ms and sync 0.01 × t1 = 1 ms of the 25 ms loss: a = 20 ms
    fc = forecast_ladder(_ladder([(1, 1, 1.0), (8, 1, 0.8)]), [8], 8, lambda n: 0.004,
                         lambda n: 0.01)  # fmt: skip
    assert fc.fitted[0].value == pytest.approx(0.020)
    r = fc.measured[1]
    assert (r.loss_s, r.comm_s, r.sync_s, r.residual_s) == pytest.approx((0.025, 0.004, 0.001,
                                                                          0.020))  # fmt: skip


def test_two_levels_separate_and_a_third_node_count_is_asked_for() -> None:
    # t8 = 0.1/0.8 = 0.125 (a = 25 ms); t16 = 0.1/0.625 = 0.16 (b = 35 ms)
    lad = _ladder([(1, 1, 1.0), (8, 1, 0.8), (16, 2, 0.625)])
    fc = forecast_ladder(lad, [16], 8, lambda n: 0.0)
    got = {f.name: f.value for f in fc.fitted}
    assert got == pytest.approx({"intra_fixed_s": 0.025, "inter_fixed_s": 0.035})
    assert fc.points[0].speedup == pytest.approx(0.625)
    with pytest.raises(InputError, match=r"measure 4 nodes \(32 cards\) next"):
        forecast_ladder(lad, [1024], 8, lambda n: 0.0)


def test_growth_across_nodes_extrapolates_with_a_wider_band() -> None:
    lad = _ladder([(1, 1, 1.0), (8, 1, 0.8), (16, 2, 0.7), (32, 4, 0.65)])
    fc = forecast_ladder(lad, [32, 1024], 8, lambda n: 0.0)
    p32, p1024 = fc.points
    assert "inter_per_doubling_s" in {f.name for f in fc.fitted}
    assert p1024.speedup < p32.speedup
    assert p1024.high - p1024.low > p32.high - p32.low


@pytest.mark.parametrize(("pairs", "cards", "match"), [
    ([(1, 1, 1.0), (16, 2, 0.7)], 16, r"measure one full node \(8 cards\)"),
    ([(1, 1, 1.0), (8, 1, 0.8)], 16, r"measure 2 nodes \(16 cards\) next"),
    ([(1, 1, 1.0), (2, 1, 0.95)], 8, r"measure 8 cards on one node next"),
])  # fmt: skip
def test_refusals_name_the_rung_to_measure(pairs, cards, match) -> None:
    with pytest.raises(InputError, match=match):
        forecast_ladder(_ladder(pairs), [cards], 8, lambda n: 0.0)


def test_contradictory_repeats_are_refused() -> None:
    # 8 cards at 0.80 and 0.90: 0.1 / 0.85 = 12 % apart > 4 × 2 %
    read = read_ladder(["tests/data/ladder_contradictory/scaling.md"], batch_size=32)
    with pytest.raises(InputError, match="contradictory ladder: 8 cards"):
        forecast_ladder(read, [8], 8, lambda n: 0.0)


def test_a_rung_the_fitted_ladder_cannot_reach_is_refused() -> None:
    # t1 = 0.1 s; t8 = 0.125 (a = 25 ms, σ8 = 2.5 ms); t16 = 0.5 (s = 0.2, loss 0.4, σ16 = 10 ms);
    # t32 = 0.125 (loss 25 ms, σ32 = 2.5 ms). Rows: 16 = a + b + c, 32 = a + b + 2c: c would be
    # -0.375 s, so c = 0 at its bound and u = a + b is the weighted mean of 0.4 and 0.025:
    # (0.4/1e-4 + 0.025/6.25e-6) / (1/1e-4 + 1/6.25e-6) = 8000/170000 = 0.047059 s.
    # Fitted s16 = 0.1/0.147059 = 0.680; z16 = (0.4 - 0.047059)/0.01 = 35.3 σ (the worst).
    # Before: forecast from it with an interval nothing widened (3 rungs, 3 parameters).
    lad = _ladder([(1, 1, 1.0), (8, 1, 0.8), (16, 2, 0.2), (32, 4, 0.8)])
    with pytest.raises(InputError, match=r"16 cards measured at speedup 0\.200 \(r16\), but "
                       r"the model .* puts it at 0\.680, 35\.3 σ away"):  # fmt: skip
        forecast_ladder(lad, [64], 8, lambda n: 0.0)


@pytest.mark.parametrize(("s8", "refused"), [(1.05, False), (1.09, True)])
def test_a_superlinear_rung_beyond_noise_is_refused(s8: float, refused: bool) -> None:
    # same per-card batch: more than 1 + 4 × 2 % = 1.08 is not noise; 1.05 is (a < 0 fitted)
    lad = _ladder([(1, 1, 1.0), (8, 1, s8)])
    if not refused:
        assert forecast_ladder(lad, [8], 8, lambda n: 0.0).points[0].speedup == pytest.approx(s8)
        return
    with pytest.raises(InputError, match=r"8 cards measured at speedup 1\.090 .* 9% above one"):
        forecast_ladder(lad, [8], 8, lambda n: 0.0)


def test_table_ladder_reads_speedups_and_the_one_card_step() -> None:
    # 640 / (8 × 100) = 0.8; 1000 / (16 × 100) = 0.625; t1 = 32 / 100 = 0.32 s
    lad = read_ladder(["tests/data/ladder_two_nodes/scaling.csv"])
    assert [(r.cards, r.nodes, round(r.speedup, 4)) for r in lad.rungs] == [
        (1, 1, 1.0), (8, 1, 0.8), (16, 2, 0.625)]  # fmt: skip
    assert lad.one_card_step_s == pytest.approx(0.32)


def test_no_one_card_figure_and_no_rung_above_one_are_refused() -> None:
    with pytest.raises(InputError, match="no one-card row"):
        read_ladder(["tests/data/scaling_tsv_no_baseline/table.tsv"])
    with pytest.raises(InputError, match="measure one full node"):
        read_ladder(["1=sample_logs/single_card"])
