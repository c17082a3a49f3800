"""HF Trainer console logs whose dict lines carry no time: the Trainer's tqdm bar is read instead;
a log holding only a validation bar is said to be one.

The samples are written here: a bar without description (the Trainer's), total 120 optimizer
steps, one display per step with step i shown at elapsed floor(0.5 i) s (0.5 s per step), and a
``{'loss': …}`` dict line every 40 steps on its own line (tqdm.write).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.errors import InputError
from xpuperf.readers import read_logs

BANNER = [
    "***** Running training *****",
    "  Instantaneous batch size per device = 8",
    "  Gradient Accumulation steps = 2",
    "  Total optimization steps = 120",
]
SUMMARY = (
    "{'train_runtime': 60.0, 'train_samples_per_second': 32.0, 'train_steps_per_second': 2.0, "
    "'train_loss': 0.41, 'epoch': 1.0}"
)


def _display(i: int) -> str:
    e = i // 2  # floor(0.5 i) s
    return f"{100 * i // 120:3d}%|#         | {i}/120 [{e // 60:02d}:{e % 60:02d}<00:10,  2.00it/s]"


def _console(tmp_path: Path, summary: bool) -> Path:
    lines, bar = list(BANNER), []
    for i in range(121):
        bar.append(_display(i))
        if i and i % 40 == 0:
            dict_line = f"{{'loss': 0.42, 'learning_rate': 9.99e-06, 'epoch': {i / 120:.2f}}}"
            lines += ["\r".join(bar), dict_line]
            bar = []
    lines += [SUMMARY] if summary else []
    path = tmp_path / "trainer.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("summary", [False, True])
def test_untimed_dict_lines_read_the_bar(tmp_path: Path, summary: bool) -> None:
    got = read_logs([_console(tmp_path, summary)])
    t = got.table
    # windows of ≥ 20 s of the clock: step 40 at 20 s, 80 at 40 s, 120 at 60 s → 40 steps per
    # 20 s each; samples = per-device 8 × accumulation 2 = 16 per optimizer step
    assert list(t["step"]) == [40, 80, 120]
    assert list(t["step_time_s"]) == pytest.approx([0.5, 0.5, 0.5])
    assert list(t["samples"]) == [16, 16, 16]
    assert any("the steps are the Trainer's tqdm bar" in n for n in got.notes)
    assert any("Trainer summary: train_runtime 60.0" in n for n in got.notes) is summary


def test_untimed_dict_lines_without_bar_quote_a_real_line(tmp_path: Path) -> None:
    path = tmp_path / "trainer.log"
    lines = ["loading model"] + [
        f"{{'loss': 0.5, 'learning_rate': 2e-05, 'epoch': 0.1, 'step': {s}}}" for s in (7, 14)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=r"first step line reads: \{'loss': 0\.5,.*'step': 7\}"
    ) as e:
        read_logs([path])
    assert e.value.line == 2  # the quoted line's number


def test_a_validation_bar_alone_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "val.log"
    bar = "Validation DataLoader 0: {}%|{:10}| {}/100 [00:{:02d}<00:07,  8.00it/s]"
    val = "".join("\r" + bar.format(n, "#" * (n // 10), n, e) for n, e in ((40, 5), (100, 12)))
    path.write_text(f"GPU available: True (cuda), used: True\n{val}\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_logs([path])
    assert e.value.message.startswith(
        "cannot tell the format: only a validation/evaluation bar ('Validation DataLoader 0'), "
        "no training bar; "
    )
