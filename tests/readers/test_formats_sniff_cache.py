"""The framework sniffers' line cache never hands one list's lines to another (issue 16 QA)."""

from __future__ import annotations

from xpuperf.readers.formats import FRAMEWORK_FORMATS

MEGATRON = (
    " iteration       10/    1000 | consumed samples:          640 | elapsed time per iteration "
    "(ms): 812.3 | learning rate: 1.000E-04 | global batch size:    64 | lm loss: 7.1E+00 |"
)


def test_a_short_lived_list_does_not_poison_the_next_sniff() -> None:
    megatron = next(f for f in FRAMEWORK_FORMATS if f.name == "megatron")
    for _ in range(50):  # short-lived lists: CPython reuses their ids at once
        assert not megatron.sniff(["hello"])
        assert megatron.sniff([MEGATRON])
