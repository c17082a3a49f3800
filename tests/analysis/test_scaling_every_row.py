"""``scaling.efficiency`` judges every row, not only the largest (QA: a 16-card row at 0.875 was
hidden behind a superlinear 32-card row and the check said clean).

Tables are written here; efficiency = (job throughput / cards) / one card's, by hand:
100 samples/s on one card; 760 / 8 = 95 → 0.950; 1400 / 16 = 87.5 → 0.875; 5000 / 32 = 156.25
→ 1.5625; 2944 / 32 = 92 → 0.920; 3008 / 32 = 94 → 0.940; 1520 / 16 = 95 → 0.950;
3400 / 32 = 106.25 → 1.0625.
"""

from __future__ import annotations

import pytest

from xpuperf.analysis.scaling import analyze_scaling
from xpuperf.findings import CheckStatus
from xpuperf.readers.scaling import read_scaling_table


def _run(*rows: tuple[int, float]):
    text = "cards,throughput\n" + "".join(f"{c},{t}\n" for c, t in ((1, 100), *rows))
    return analyze_scaling(read_scaling_table(text))


def _check(res):
    return next(c for c in res.checks if c.name == "scaling.efficiency")


def test_a_row_below_the_threshold_is_not_hidden_by_a_superlinear_largest_row() -> None:
    res = _run((8, 760), (16, 1400), (32, 5000))
    assert res.largest["efficiency"] == pytest.approx(1.5625)
    check = _check(res)
    assert check.status is CheckStatus.PROBLEM
    assert check.codes == ("XP310",)
    assert "lowest 0.875 at 16 cards (line 4)" in check.evidence
    (f,) = [f for f in res.findings if f.code == "XP310"]
    assert "below 0.90 in 1 of 3 row(s)" in f.message
    assert "0.875 at 16 cards (job throughput 14.00× one card's, line 4)" in f.message
    assert "1.562 at 32 cards (line 5) is above 1.05 (XP316)" in f.message
    assert f.data["rows"] == [{"cards": 16.0, "efficiency": pytest.approx(0.875), "line": 4}]
    assert "XP316" in {f.code for f in res.findings}


def test_a_middle_row_below_the_threshold_with_a_good_largest_row() -> None:
    res = _run((8, 760), (16, 1400), (32, 2944))
    check = _check(res)
    assert check.status is CheckStatus.PROBLEM
    assert "the largest run: 0.920 at 32 cards" in check.evidence
    (f,) = [f for f in res.findings if f.code == "XP310"]
    assert f.data["cards"] == 16
    assert f.data["efficiency"] == pytest.approx(0.875)


def test_two_rows_below_are_both_named_and_the_largest_is_marked() -> None:
    res = _run((8, 640), (16, 1400))  # 640 / 8 = 80 → 0.800; 0.875 at 16
    (f,) = [f for f in res.findings if f.code == "XP310"]
    assert "below 0.90 in 2 of 2 row(s)" in f.message
    assert "0.800 at 8 cards (job throughput 6.40× one card's, line 3)" in f.message
    assert "0.875 at 16 cards (job throughput 14.00× one card's, line 4, the largest run)" in (
        f.message
    )
    assert f.data["efficiency"] == pytest.approx(0.8)  # the worst row


def test_every_row_superlinear_gives_no_verdict() -> None:
    res = _run((8, 880), (16, 1760))  # 880 / 8 = 110 → 1.100; 1760 / 16 = 110 → 1.100
    check = _check(res)
    assert check.status is CheckStatus.NOT_CHECKED
    assert check.evidence.startswith("no verdict: 1.100 at 8 cards (line 3) is above 1.05")
    assert "the one-card row looks slow" in check.evidence
    (f,) = [f for f in res.findings if f.code == "XP316"]
    assert "remeasure the one-card row" in f.message
    assert f.data["suspect"] == "one-card row"


def test_a_superlinear_largest_row_with_agreeing_rows_is_the_outlier() -> None:
    res = _run((8, 780), (16, 1520), (32, 3400))  # 0.975, 0.950, 1.0625 > 1.05
    check = _check(res)
    assert check.status is CheckStatus.CLEAN  # judged on 8 and 16 cards
    assert check.evidence.startswith("every other row at or above the threshold: lowest 0.950 ")
    assert "left out, inconsistent with the other rows (XP316): 1.062 at 32 cards (line 5)" in (
        check.evidence
    )
    assert "XP310" not in {f.code for f in res.findings}


def test_a_superlinear_middle_row_is_named_not_the_one_card_row() -> None:
    # QA table: 1/8/16/32 cards at 400/3,100/9,000/12,000 samples/s; by hand: 3100 / 8 / 400 =
    # 0.96875, 9000 / 16 / 400 = 1.40625, 12000 / 32 / 400 = 0.9375
    text = "cards,throughput\n1,400\n8,3100\n16,9000\n32,12000\n"
    res = analyze_scaling(read_scaling_table(text))
    (f,) = [f for f in res.findings if f.code == "XP316"]
    assert f.message.startswith("efficiency 1.406 at 16 cards (line 4) is above 1.05 while the ")
    assert "(0.969 at 8 cards (line 3), 0.938 at 32 cards (line 5))" in f.message
    assert "remeasure that row" in f.message
    assert "one-card row the same way" not in f.message
    assert f.data["suspect"] == "rows"
    assert f.data["rows"] == [{"cards": 16.0, "efficiency": pytest.approx(1.40625), "line": 4}]
    check = _check(res)
    assert check.status is CheckStatus.CLEAN
    assert "lowest 0.938 at 32 cards, the largest run" in check.evidence
    assert "1.406 at 16 cards (line 4)" in check.evidence
    # a row below the threshold beside the outlier is still the problem it is
    res = _run((8, 3100 / 4), (16, 2250), (32, 2800))  # 0.969, 1.406, 0.875
    assert _check(res).status is CheckStatus.PROBLEM
    assert "lowest 0.875 at 32 cards" in _check(res).evidence


def test_every_row_at_or_above_the_threshold_is_clean() -> None:
    res = _run((8, 780), (16, 1520), (32, 3008))  # 0.975, 0.950, 0.940
    check = _check(res)
    assert check.status is CheckStatus.CLEAN
    assert check.evidence.startswith(
        "every row at or above the threshold: lowest 0.940 at 32 cards, the largest run ("
    )
    res = _run((8, 740), (16, 1520))  # 740 / 8 = 92.5 → 0.925 below the largest's 0.950
    assert _check(res).evidence.startswith(
        "every row at or above the threshold: lowest 0.925 at 8 cards; the largest run: 0.950 "
        "at 16 cards ("
    )
