"""Scaling analysis of tables that hold more than one baseline (issue 16 QA): several models in
one table, one-card rows that disagree or repeat, and the advice for a table without one-card
row. Values are worked out by hand from the fixtures (comments give the sums)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.analysis.scaling import analyze_scaling, analyze_scaling_groups
from xpuperf.errors import InputError
from xpuperf.readers.scaling import read_scaling_table

DATA = Path(__file__).resolve().parent.parent / "data"


def refusal(name: str) -> str:
    """The one-line InputError message analyze_scaling raises on the fixture ``name``."""
    with pytest.raises(InputError) as exc:
        analyze_scaling(read_scaling_table(DATA / name))
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_each_model_is_compared_with_its_own_one_card_row() -> None:
    res = analyze_scaling_groups(read_scaling_table(DATA / "scaling_two_models/table.md"))
    assert [r.group for r in res] == ["ResNet-50", "VGG-16"]
    # ResNet-50: 1520/4/400 = 0.95, 2960/8/400 = 0.925; VGG-16: 1200/8/200 = 0.75
    assert res[0].rows["efficiency"].tolist() == pytest.approx([1.0, 0.95, 0.925])
    assert res[1].rows["efficiency"].tolist() == pytest.approx([1.0, 0.75])
    assert [f.code for f in res[0].findings] == []  # 0.925 >= 0.90 ("one server": one node)
    # VGG-16 per-card time 1 -> 1 / 0.75 = 1.333 x grows with the processes: XP313 too
    assert {f.code for f in res[1].findings} == {"XP310", "XP311", "XP313"}
    assert res[1].location == "inside one node"


def test_a_table_of_several_models_is_refused_as_one_ladder() -> None:
    with pytest.raises(InputError, match=r"2 configurations in column 'Network' \(ResNet-50"):
        analyze_scaling(read_scaling_table(DATA / "scaling_two_models/table.md"))


def test_one_card_rows_that_disagree_are_refused() -> None:
    msg = refusal("scaling_one_card_disagree/table.md")
    # 400 / 300 - 1 = 0.333 > 0.05: the rows are named, with the spread and what to do
    assert "table.md:4: the one-card rows disagree: line 3 gives 400 samples/s" in msg
    assert "line 4 300 samples/s (33% apart" in msg
    assert "add a column naming them" in msg


def test_one_card_repeats_within_5_percent_are_pooled() -> None:
    res = analyze_scaling(read_scaling_table(DATA / "scaling_one_card_repeats/table.md"))
    # median(400, 396) = 398; 3000 / 8 / 398 = 0.942211
    assert res.largest["efficiency"] == pytest.approx(3000 / 8 / 398)
    assert any("(1.0% apart, within 5%)" in n for n in res.notes)  # 400/396 - 1 = 0.0101


def test_step_time_one_card_rows_disagree_in_seconds() -> None:
    text = "| GPUs | s/it |\n|-|-|\n| 1 | 0.50 |\n| 1 | 0.40 |\n| 2 | 0.52 |"
    with pytest.raises(InputError, match=r"line 4 gives 0.4 s/step, line 3 0.5 s/step \(25%"):
        analyze_scaling(read_scaling_table(text))  # 1/0.4 ÷ 1/0.5 - 1 = 0.25


def test_no_one_card_row_advice_names_commands_that_exist() -> None:
    msg = refusal("scaling_tsv_no_baseline/table.tsv")
    assert "add the one-card run to the table as a row" in msg
    assert "xpuperf plan --measured" in msg
    assert "--baseline ITEMS_PER_S" in msg
    assert "as a baseline" not in msg  # analyze --baseline takes a log, not a number


def test_a_configuration_without_one_card_row_is_named_in_a_note() -> None:
    text = ("| Model | GPUs | img/s |\n|-|-|-|\n| A | 1 | 100 |\n| A | 2 | 190 |\n"
            "| B | 2 | 50 |\n| B | 4 | 90 |")  # fmt: skip
    res = analyze_scaling_groups(read_scaling_table(text))
    assert [r.group for r in res] == ["A"]
    assert res[0].largest["efficiency"] == pytest.approx(0.95)  # 190 / 2 / 100
    assert any(n.startswith("not analysed — Model 'B': no one-card row") for n in res[0].notes)
