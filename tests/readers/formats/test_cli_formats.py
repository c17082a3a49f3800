"""``xpuperf formats`` lists every registered format with its example line."""

from __future__ import annotations

import pytest

from xpuperf.cli.formats import formats
from xpuperf.readers import FORMATS


def test_formats_lists_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    formats()
    out = capsys.readouterr().out
    for f in FORMATS:
        assert f"\n{f.name}" in out
        assert f.example.split()[0] in out
    assert out.index("megatron") < out.index("mlperf") < out.index("\ncsv")
