"""``xpuperf plan --cards``: whole numbers >= 1 separated by commas, or a one-line error naming
the bad item (exit 2); ``1,,8`` was read as ``1,8`` without a word."""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import Run

BASE = ["plan", "--topology", "dgx-a100", "--params", "100000000", "--step-time", "0.1"]


@pytest.mark.parametrize(
    ("cards", "message"),
    [
        (
            "1,,8",
            "--cards '1,,8': item 2 is empty; give card counts separated by commas, e.g. 1,8,64",
        ),
        (
            "1,8,",
            "--cards '1,8,': item 3 is empty; give card counts separated by commas, e.g. 1,8,64",
        ),
        (",8", "--cards ',8': item 1 is empty; give card counts separated by commas, e.g. 1,8,64"),
        ("", "--cards '': item 1 is empty; give card counts separated by commas, e.g. 1,8,64"),
        ("0", "--cards '0': '0' is not a card count (a whole number >= 1); give e.g. 1,8,64"),
        ("-8", "--cards '-8': '-8' is not a card count (a whole number >= 1); give e.g. 1,8,64"),
        ("8.5", "--cards '8.5': '8.5' is not a card count (a whole number >= 1); give e.g. 1,8,64"),
        ("abc", "--cards 'abc': 'abc' is not a card count (a whole number >= 1); give e.g. 1,8,64"),
        (
            "1,0,8",
            "--cards '1,0,8': '0' is not a card count (a whole number >= 1); give e.g. 1,8,64",
        ),
        (
            "1_000",
            "--cards '1_000': '1_000' is not a card count (a whole number >= 1); give e.g. 1,8,64",
        ),
    ],
)
def test_bad_card_lists_are_one_line_errors(xp: Run, cards: str, message: str) -> None:
    code, out, err = xp(*BASE, f"--cards={cards}", "--json", "-")
    assert code == 2
    assert out == ""
    assert err == f"xpuperf: error: {message}\n"


def test_blanks_around_counts_are_fine(xp: Run) -> None:
    code, out, err = xp(*BASE, "--cards", " 1, 8 ,16", "--json", "-")
    assert code == 0, err
    assert [r["cards"] for r in json.loads(out)["scaling"]] == [1, 8, 16]
